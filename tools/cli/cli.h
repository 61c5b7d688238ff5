// Shared pieces of the `oneflow` command-line tool: argument parsing and the subcommand entry points.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace oneflow {
namespace cli {

// A mistake on the command line (exit code 2); engine failures are oneflow::Error (exit code 1).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Splits a subcommand's arguments into positionals and `--name value` / `--name=value` options.
// `value_options` lists the options that take a value (and may repeat); `flags` those that don't.
struct ParsedArgs {
  std::vector<std::string> positionals;
  std::vector<std::pair<std::string, std::string>> options;  // in order; flags have value ""

  std::vector<std::string> All(const std::string& name) const;
  bool Has(const std::string& name) const;
  // The last value given for `name`, or `fallback`.
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  // An integer option in [min, max].
  int GetInt(const std::string& name, int fallback, int min, int max) const;
};
ParsedArgs ParseArgs(const std::string& command, const std::vector<std::string>& args,
                     const std::vector<std::string>& value_options, const std::vector<std::string>& flags = {});

// "NAME=VALUE" -> {NAME, VALUE}; a usage error naming `option` otherwise.
std::pair<std::string, std::string> SplitAssignment(const std::string& option, const std::string& text);

// Maps characters outside [A-Za-z0-9._-] to '_' so an output name is a safe file name.
std::string SanitizeFileName(const std::string& name);

int RunCommand(const std::vector<std::string>& args);
int PlanCommand(const std::vector<std::string>& args);
int LaunchCommand(const std::vector<std::string>& args);
int BenchCommand(const std::vector<std::string>& args);
int InfoCommand(const std::vector<std::string>& args);
int ConvertCommand(const std::vector<std::string>& args);
int ServeCommand(const std::vector<std::string>& args);

}  // namespace cli
}  // namespace oneflow
