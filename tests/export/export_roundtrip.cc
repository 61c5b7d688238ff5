// Test driver: loads ONNX models with our importer (PrepareGraph included) and writes them back
// with SaveOnnxModel, for tests/export/test_export.py.
//
//   export_roundtrip [--external] [--via-native] IN OUT        one model
//   export_roundtrip [--external] [--via-native] --list FILE   "IN<TAB>OUT" per line, one process
// --via-native writes the loaded graph as a native .ofm image and loads that before exporting, so
// the test covers ONNX -> native -> ONNX.
// Prints "OK OUT" or "ERROR <code> <message>" per model (one line each); exits 1 if any failed.
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "engine/session.h"
#include "serialize/native_format.h"
#include "serialize/onnx_export.h"
#include "serialize/onnx_import.h"

namespace {

bool ExportOne(const std::string& in, const std::string& out, const oneflow::OnnxExportOptions& options,
               bool via_native) {
  try {
    oneflow::Graph g = oneflow::LoadOnnxFile(in);
    oneflow::PrepareGraph(g);
    if (via_native) {
      const std::string image = oneflow::SerializeNativeModel(g);
      g = oneflow::ReadNativeModelMemory(image.data(), image.size());  // copies: `image` dies here
      oneflow::PrepareGraph(g);
    }
    oneflow::SaveOnnxModel(g, out, options);
    std::cout << "OK " << out << "\n";
    return true;
  } catch (const oneflow::Error& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::cout << "ERROR " << oneflow::ErrorCodeName(e.code()) << " " << in << ": " << msg << "\n";
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  oneflow::OnnxExportOptions options;
  bool via_native = false;
  while (!args.empty() && (args[0] == "--external" || args[0] == "--via-native")) {
    if (args[0] == "--external") options.external_data = oneflow::OnnxExportOptions::ExternalData::kAlways;
    else via_native = true;
    args.erase(args.begin());
  }
  std::vector<std::pair<std::string, std::string>> jobs;
  if (args.size() == 2 && args[0] == "--list") {
    std::ifstream list(args[1]);
    if (!list) {
      std::cerr << "cannot read " << args[1] << "\n";
      return 2;
    }
    std::string line;
    while (std::getline(list, line)) {
      size_t tab = line.find('\t');
      if (tab != std::string::npos) jobs.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
  } else if (args.size() == 2) {
    jobs.emplace_back(args[0], args[1]);
  } else {
    std::cerr << "usage: export_roundtrip [--external] [--via-native] IN OUT | ... --list FILE\n";
    return 2;
  }
  bool all_ok = true;
  for (const auto& [in, out] : jobs) all_ok = ExportOne(in, out, options, via_native) && all_ok;
  return all_ok ? 0 : 1;
}
