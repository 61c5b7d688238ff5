// Runs materialized ONNX backend node tests through the engine and compares with the expected
// outputs at each case's tolerance (numpy.allclose semantics, NaN equal to NaN).
//
//   oneflow_conformance DATA_DIR [--filter SUBSTR] [--expected FILE] [--write-passing FILE] [-v] [--via-native]
//
// --via-native also converts each model to the native format in memory, loads that, runs both, and
// fails the case unless the native model's outputs are bit-identical to the ONNX model's.
//
// Each case runs in a forked child so a crash or a hang fails that case, not the suite. Prints
// "passed N, failed N, unsupported N". With --expected, exits 1 when a listed case does not pass.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/session.h"
#include "serialize/native_format.h"
#include "serialize/onnx_import.h"

namespace fs = std::filesystem;
using namespace oneflow;

namespace {

enum Outcome { kPass = 0, kFail = 1, kUnsupported = 2 };

bool g_via_native = false;

// "" when `a` and `b` have the same dtype, shape and bytes.
std::string BitDiff(const Tensor& a, const Tensor& b) {
  if (a.kind() != b.kind()) return StrCat(DescribeValue(b), " != ", DescribeValue(a));
  if (a.is_sequence()) {
    if (a.elements().size() != b.elements().size()) return StrCat(DescribeValue(b), " != ", DescribeValue(a));
    for (size_t i = 0; i < a.elements().size(); ++i) {
      std::string diff = BitDiff(a.elements()[i], b.elements()[i]);
      if (!diff.empty()) return StrCat("element ", i, ": ", diff);
    }
    return "";
  }
  if (a.dtype() != b.dtype() || a.shape() != b.shape())
    return StrCat(DTypeName(b.dtype()), ShapeToString(b.shape()), " != ", DTypeName(a.dtype()), ShapeToString(a.shape()));
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.strings()[i] != b.strings()[i]) return StrCat("string ", i, " differs");
    return "";
  }
  const auto* x = static_cast<const unsigned char*>(a.raw());
  const auto* y = static_cast<const unsigned char*>(b.raw());
  for (size_t i = 0; i < a.nbytes(); ++i)
    if (x[i] != y[i]) return StrCat("byte ", i, " differs");
  return "";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A test value of static type `type` (a TensorProto, SequenceProto or OptionalProto file).
Tensor ReadValue(const fs::path& p, const TensorType& type) {
  std::string bytes = ReadFile(p);
  return LoadOnnxValueBytes(bytes.data(), bytes.size(), type);
}

// Returns "" when `got` matches `want`, else a description of the first mismatch.
std::string Compare(const Tensor& want, const Tensor& got, double rtol, double atol) {
  if (want.kind() != got.kind()) return StrCat(DescribeValue(got), " != expected ", DescribeValue(want));
  if (want.is_none()) return "";
  if (want.is_sequence()) {
    if (want.elements().size() != got.elements().size())
      return StrCat(DescribeValue(got), " != expected ", DescribeValue(want));
    for (size_t i = 0; i < want.elements().size(); ++i) {
      std::string diff = Compare(want.elements()[i], got.elements()[i], rtol, atol);
      if (!diff.empty()) return StrCat("element ", i, " of the sequence: ", diff);
    }
    return "";
  }
  if (want.dtype() != got.dtype())
    return StrCat("dtype ", DTypeName(got.dtype()), " != expected ", DTypeName(want.dtype()));
  if (want.shape() != got.shape())
    return StrCat("shape ", ShapeToString(got.shape()), " != expected ", ShapeToString(want.shape()));
  if (want.dtype() == DType::kString) {  // strings match exactly, byte for byte
    for (int64_t i = 0; i < want.numel(); ++i)
      if (want.strings()[i] != got.strings()[i])
        return StrCat("element ", i, ": got \"", got.strings()[i], "\", expected \"", want.strings()[i], "\"");
    return "";
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = want.GetAsDouble(i), g = got.GetAsDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && w == g) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w)))
      return StrCat("element ", i, ": got ", g, ", expected ", w);
  }
  return "";
}

// Runs one case in the current process. Prints a reason on failure.
Outcome RunCase(const fs::path& dir, std::string& reason) {
  double rtol = 1e-3, atol = 1e-7;
  {
    std::ifstream tol(dir / "tolerance.txt");
    if (tol) tol >> rtol >> atol;
  }
  std::unique_ptr<Session> session, native_session;
  Graph loaded;
  try {
    loaded = LoadOnnxFile((dir / "model.onnx").string());
    Graph g = loaded;
    PrepareGraph(g);
    session = std::make_unique<Session>(g, SessionOptions{1, 2});
  } catch (const Error& e) {
    reason = e.what();
    return e.code() == ErrorCode::kUnsupported ? kUnsupported : kFail;
  }
  if (g_via_native) {
    try {
      std::string bytes = SerializeNativeModel(loaded);
      Graph n = ReadNativeModelMemory(bytes.data(), bytes.size());
      PrepareGraph(n);
      native_session = std::make_unique<Session>(n, SessionOptions{1, 2});
    } catch (const Error& e) {
      reason = std::string("via native: ") + e.what();
      return kFail;
    }
  }
  const Graph& model = session->model();
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  for (const fs::path& ds : sets) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < model.inputs.size(); ++i) {
      fs::path p = ds / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) { reason = "input " + std::to_string(i) + " is not a tensor"; return kUnsupported; }
      const Value& decl = model.values[static_cast<size_t>(model.inputs[i])];
      feeds.emplace_back(decl.name, ReadValue(p, decl.type));
    }
    std::vector<std::pair<std::string, Tensor>> results;
    try {
      results = session->Run(feeds, {});
    } catch (const Error& e) {
      reason = e.what();
      return e.code() == ErrorCode::kUnsupported ? kUnsupported : kFail;
    }
    if (native_session) {
      std::vector<std::pair<std::string, Tensor>> native_results;
      try {
        native_results = native_session->Run(feeds, {});
      } catch (const Error& e) {
        reason = std::string("via native: ") + e.what();
        return kFail;
      }
      for (size_t i = 0; i < results.size(); ++i) {
        std::string diff = BitDiff(results[i].second, native_results[i].second);
        if (!diff.empty()) {
          reason = "via native: output '" + results[i].first + "' " + diff;
          return kFail;
        }
      }
    }
    for (size_t i = 0; i < results.size(); ++i) {
      fs::path p = ds / ("output_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) { reason = "output " + std::to_string(i) + " is not a tensor"; return kUnsupported; }
      const Value& decl = model.values[static_cast<size_t>(model.outputs[i])];
      std::string diff = Compare(ReadValue(p, decl.type), results[i].second, rtol, atol);
      if (!diff.empty()) {
        reason = "output '" + results[i].first + "' " + diff;
        return kFail;
      }
    }
  }
  return kPass;
}

// Forks, runs the case in the child with a time limit, and reads back outcome and reason.
Outcome RunIsolated(const fs::path& dir, std::string& reason) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return RunCase(dir, reason);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    alarm(60);
    std::string r;
    Outcome o = kFail;
    try {
      o = RunCase(dir, r);
    } catch (const std::exception& e) {
      r = std::string("exception: ") + e.what();
    }
    std::string msg = std::to_string(static_cast<int>(o)) + " " + r;
    ssize_t ignored = write(pipefd[1], msg.data(), msg.size());
    (void)ignored;
    _exit(0);
  }
  close(pipefd[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) msg.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (msg.empty()) {
    reason = WIFSIGNALED(status) ? "crashed with signal " + std::to_string(WTERMSIG(status)) : "no result";
    return kFail;
  }
  reason = msg.size() > 2 ? msg.substr(2) : "";
  return static_cast<Outcome>(msg[0] - '0');
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR [--filter SUBSTR] [--expected FILE] [--write-passing FILE] [-v] [--via-native]\n", argv[0]);
    return 2;
  }
  fs::path data_dir = argv[1];
  std::string filter, expected_file, write_file;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--expected" && i + 1 < argc) expected_file = argv[++i];
    else if (a == "--write-passing" && i + 1 < argc) write_file = argv[++i];
    else if (a == "-v") verbose = true;
    else if (a == "--via-native") g_via_native = true;
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (!fs::is_directory(data_dir)) {
    std::fprintf(stderr, "%s is not a directory (run tests/conformance/materialize_node_tests.py)\n", argv[1]);
    return 2;
  }
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(data_dir))
    if (e.is_directory() && e.path().filename().string().find(filter) != std::string::npos) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  std::set<std::string> expected;
  if (!expected_file.empty()) {
    std::ifstream in(expected_file);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  int counts[3] = {0, 0, 0};
  std::vector<std::string> passing, regressions;
  for (const fs::path& c : cases) {
    std::string name = c.filename().string(), reason;
    Outcome o = RunIsolated(c, reason);
    ++counts[o];
    if (o == kPass) passing.push_back(name);
    else if (expected.count(name)) regressions.push_back(name + ": " + reason);
    if (verbose || (o != kPass && expected.count(name)))
      std::printf("%-12s %s%s%s\n", o == kPass ? "PASS" : o == kFail ? "FAIL" : "UNSUPPORTED", name.c_str(),
                  reason.empty() ? "" : "  -- ", reason.substr(0, 300).c_str());
  }
  if (!write_file.empty()) {
    std::ofstream out(write_file);
    out << "# ONNX node tests expected to pass (tests/conformance/README.md says how to update)\n";
    for (const auto& p : passing) out << p << "\n";
  }
  std::printf("conformance: passed %d, failed %d, unsupported %d (of %zu)\n", counts[0], counts[1], counts[2],
              cases.size());
  if (!regressions.empty()) {
    std::printf("%zu expected-to-pass tests regressed:\n", regressions.size());
    for (const auto& r : regressions) std::printf("  %s\n", r.substr(0, 300).c_str());
    return 1;
  }
  int newly = 0;
  for (const auto& p : passing) newly += expected.count(p) ? 0 : 1;
  if (!expected_file.empty() && newly) std::printf("%d tests pass that are not in the expected list yet\n", newly);
  return 0;
}
