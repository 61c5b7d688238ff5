// Command-line argument helpers shared by the subcommands.
#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "cli.h"

namespace oneflow {
namespace cli {

static bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

ParsedArgs ParseArgs(const std::string& command, const std::vector<std::string>& args,
                     const std::vector<std::string>& value_options, const std::vector<std::string>& flags) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a.compare(0, 2, "--") != 0 || a == "--") {
      if (!a.empty() && a[0] == '-' && a.size() > 1)
        throw UsageError("unknown option '" + a + "' for 'oneflow " + command + "'");
      out.positionals.push_back(a);
      continue;
    }
    size_t eq = a.find('=');
    std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (Contains(flags, name)) {
      if (eq != std::string::npos) throw UsageError("option '--" + name + "' takes no value");
      out.options.emplace_back(name, "");
    } else if (Contains(value_options, name)) {
      if (eq != std::string::npos) {
        out.options.emplace_back(name, a.substr(eq + 1));
      } else {
        if (i + 1 >= args.size()) throw UsageError("option '--" + name + "' needs a value");
        out.options.emplace_back(name, args[++i]);
      }
    } else {
      throw UsageError("unknown option '--" + name + "' for 'oneflow " + command + "' (see 'oneflow help')");
    }
  }
  return out;
}

std::vector<std::string> ParsedArgs::All(const std::string& name) const {
  std::vector<std::string> v;
  for (const auto& [k, val] : options)
    if (k == name) v.push_back(val);
  return v;
}

bool ParsedArgs::Has(const std::string& name) const {
  for (const auto& kv : options)
    if (kv.first == name) return true;
  return false;
}

std::string ParsedArgs::Get(const std::string& name, const std::string& fallback) const {
  std::string v = fallback;
  for (const auto& [k, val] : options)
    if (k == name) v = val;
  return v;
}

int ParsedArgs::GetInt(const std::string& name, int fallback, int min, int max) const {
  if (!Has(name)) return fallback;
  std::string s = Get(name);
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < min || v > max)
    throw UsageError("--" + name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                     "], got '" + s + "'");
  return static_cast<int>(v);
}

std::pair<std::string, std::string> SplitAssignment(const std::string& option, const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError("--" + option + " expects NAME=VALUE, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string SanitizeFileName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) c = '_';
  }
  if (out.empty()) out = "_";
  return out;
}

}  // namespace cli
}  // namespace oneflow
