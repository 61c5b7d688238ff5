// `oneflow run` and `oneflow bench`: load a model, feed .npy or random inputs, write or time outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include "base/thread_pool.h"
#include "base/trace.h"
#include "cli.h"
#include "engine/session.h"
#include "npy.h"
#include "progress.h"
#include "serialize/model_io.h"

namespace oneflow {
namespace cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string ModelPath(const ParsedArgs& a, const std::string& command) {
  if (a.positionals.empty()) throw UsageError("'oneflow " + command + "' needs a MODEL path (see 'oneflow help')");
  if (a.positionals.size() > 1)
    throw UsageError("'oneflow " + command + "' takes one MODEL; unexpected argument '" + a.positionals[1] + "'");
  return a.positionals[0];
}

// --device cpu | cuda | cuda:N and --cuda-graphs auto|on|off into session options.
void ApplyDevice(const ParsedArgs& a, SessionOptions& opts) {
  const std::string device = a.Has("device") ? a.Get("device") : "cpu";
  if (device == "cpu") {
    opts.device = DeviceType::kCpu;
  } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    opts.device = DeviceType::kCuda;
    const std::string index = device == "cuda" ? "0" : device.substr(5);
    const bool digits = !index.empty() && index.size() <= 4 &&
                        std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) throw UsageError("--device " + device + ": expected cpu, cuda or cuda:N (N a device index)");
    opts.device_index = std::stoi(index);
  } else {
    throw UsageError("--device " + device + ": expected cpu, cuda or cuda:N");
  }
  const std::string graphs = a.Has("cuda-graphs") ? a.Get("cuda-graphs") : "auto";
  if (graphs == "auto") opts.cuda_graphs = CudaGraphMode::kAuto;
  else if (graphs == "on") opts.cuda_graphs = CudaGraphMode::kOn;
  else if (graphs == "off") opts.cuda_graphs = CudaGraphMode::kOff;
  else throw UsageError("--cuda-graphs " + graphs + ": expected auto, on or off");
}

std::unique_ptr<Session> OpenSession(const std::string& path, const ParsedArgs& a) {
  SessionOptions opts;
  ApplyDevice(a, opts);
  opts.intra_op_threads = a.GetInt("threads", 0, 0, 1024);
  opts.optimization_level = a.GetInt("opt-level", 2, 0, 2);
  Graph g = LoadModelFile(path);
  return std::make_unique<Session>(g, opts);
}

const Value* FindInput(const Graph& g, const std::string& name) {
  for (int v : g.inputs)
    if (g.values[static_cast<size_t>(v)].name == name) return &g.values[static_cast<size_t>(v)];
  return nullptr;
}

std::string InputNames(const Graph& g) {
  std::string s;
  for (int v : g.inputs) s += (s.empty() ? "" : ", ") + g.values[static_cast<size_t>(v)].name;
  return s.empty() ? "none" : s;
}

// --input NAME=FILE.npy options, loaded; names are checked against the model.
std::vector<std::pair<std::string, Tensor>> LoadInputs(const ParsedArgs& a, const Graph& g) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::set<std::string> seen;
  for (const std::string& spec : a.All("input")) {
    auto [name, file] = SplitAssignment("input", spec);
    OF_CHECK(FindInput(g, name) != nullptr, kNotFound, "the model has no input named '", name,
             "' (inputs: ", InputNames(g), ")");
    if (!seen.insert(name).second) throw UsageError("input '" + name + "' is given twice");
    feeds.emplace_back(name, npy::ReadFile(file));
  }
  return feeds;
}

Shape ParseShape(const std::string& name, const std::string& text) {
  Shape s;
  if (text.empty() || text == "scalar") return s;  // rank 0
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, 'x')) {
    bool digits = !part.empty() && part.size() <= 15 &&
                  std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      throw UsageError("--shape " + name + "=" + text + ": dims must be non-negative integers joined by 'x' (e.g. 1x3x224x224)");
    s.push_back(std::stoll(part));
  }
  if (!text.empty() && text.back() == 'x') throw UsageError("--shape " + name + "=" + text + ": trailing 'x'");
  return s;
}

// Random data of a plausible range: floats in [-1, 1), integers in [0, 4) (small, so they work
// as indices too), bools 0/1.
Tensor RandomTensor(DType dtype, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::Uninitialized(dtype, shape);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  DispatchAll(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      double u = unit(rng);
      double v = IsFloatDType(dtype) ? 2.0 * u - 1.0 : dtype == DType::kBool ? (u < 0.5 ? 0.0 : 1.0) : std::floor(4 * u);
      p[i] = CastFromDouble<T>(v);
    }
  });
  return t;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
    else if (c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); out += buf; }
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("run", args, {"input", "output-dir", "threads", "opt-level", "device", "cuda-graphs"});
  std::string model = ModelPath(a, "run");
  if (!a.Has("output-dir")) throw UsageError("'oneflow run' needs --output-dir DIR");
  std::string out_dir = a.Get("output-dir");
  if (out_dir.empty()) throw UsageError("--output-dir is empty");
  a.GetInt("threads", 0, 0, 1024);  // validate options before the (slow) load
  a.GetInt("opt-level", 2, 0, 2);
  SessionOptions checked;
  ApplyDevice(a, checked);

  std::unique_ptr<Session> session = OpenSession(model, a);
  auto feeds = LoadInputs(a, session->model());
  auto results = session->Run(feeds, {});

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  OF_CHECK(fs::is_directory(out_dir), kIo, "cannot create output directory '", out_dir, "'",
           ec ? ": " + ec.message() : "");
  // Two names may sanitize to the same file; later ones get a numeric suffix instead of overwriting.
  std::set<std::string> used;
  for (const auto& [name, tensor] : results) {
    std::string base = SanitizeFileName(name);
    std::string file = base;
    for (int k = 1; used.count(file); ++k) file = base + "_" + std::to_string(k);
    used.insert(file);
    fs::path path = fs::path(out_dir) / (file + ".npy");
    npy::WriteFile(path.string(), tensor);
    std::printf("%s: %s%s -> %s\n", name.c_str(), DTypeName(tensor.dtype()), ShapeToString(tensor.shape()).c_str(),
                path.string().c_str());
  }
  return 0;
}

int BenchCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("bench", args, {"input", "shape", "threads", "warmup", "iters", "seed", "opt-level", "device",
                                           "cuda-graphs", "trace"});
  std::string model = ModelPath(a, "bench");
  int threads = a.GetInt("threads", 0, 0, 1024);
  int warmup = a.GetInt("warmup", 3, 0, 1000000);
  int iters = a.GetInt("iters", 20, 1, 1000000);
  int seed = a.GetInt("seed", 0, 0, 2147483647);
  a.GetInt("opt-level", 2, 0, 2);
  SessionOptions opts;
  ApplyDevice(a, opts);
  // --trace records everything from here on (session creation, warm-up, timed runs); a path that
  // cannot be written fails now, before the load.
  const std::string trace_path = a.Get("trace");
  if (a.Has("trace")) {
    if (trace_path.empty()) throw UsageError("--trace needs a file path");
    StartTrace(trace_path);
  }

  auto t0 = Clock::now();
  Graph g = LoadModelFile(model);
  double load_ms = MsSince(t0);
  opts.intra_op_threads = threads;
  opts.optimization_level = a.GetInt("opt-level", 2, 0, 2);
  t0 = Clock::now();
  Session session(g, opts);
  double create_ms = MsSince(t0);
  const Graph& m = session.model();

  auto feeds = LoadInputs(a, m);
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : a.All("shape")) {
    auto [name, text] = SplitAssignment("shape", spec);
    OF_CHECK(FindInput(m, name) != nullptr, kNotFound, "--shape names '", name, "', but the model has no such input (inputs: ",
             InputNames(m), ")");
    shapes[name] = ParseShape(name, text);
  }
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (int v : m.inputs) {
    const Value& in = m.values[static_cast<size_t>(v)];
    bool given = std::any_of(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == in.name; });
    if (given) continue;
    Shape shape;
    auto it = shapes.find(in.name);
    if (it != shapes.end()) {
      shape = it->second;
    } else {
      OF_REQUIRE(in.type.has_rank, "input '", in.name, "' has an unknown shape; give it with --shape ", in.name,
                 "=DIMS (e.g. 1x3x224x224) or --input ", in.name, "=FILE.npy");
      for (size_t d = 0; d < in.type.dims.size(); ++d) {
        const Dim& dim = in.type.dims[d];
        OF_REQUIRE(dim.known(), "input '", in.name, "' (", in.type.ToString(), ") has ",
                   dim.symbol.empty() ? "an unknown dim" : "symbolic dim '" + dim.symbol + "'", " at position ", d,
                   "; give its shape with --shape ", in.name, "=DIMS (e.g. --shape ", in.name, "=1x...)");
        shape.push_back(dim.value);
      }
    }
    OF_REQUIRE(in.type.dtype != DType::kUndefined, "input '", in.name, "' has no declared dtype; give it with --input");
    feeds.emplace_back(in.name, RandomTensor(in.type.dtype, shape, rng));
  }

  Progress progress("bench", warmup + iters);
  for (int i = 0; i < warmup; ++i) {
    TraceScope trace("cli", "warm-up run");
    session.Run(feeds, {});
    progress.Update(i + 1);
  }
  std::vector<double> times;
  times.reserve(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    TraceScope trace("cli", "timed run");
    trace.Arg("iteration", i);
    t0 = Clock::now();
    session.Run(feeds, {});
    times.push_back(MsSince(t0));
    progress.Update(warmup + i + 1);
  }
  progress.Finish();
  if (a.Has("trace")) {
    const std::string written = StopTrace();
    std::fprintf(stderr, "oneflow: trace written to %s (open it in ui.perfetto.dev or chrome://tracing)\n",
                 written.c_str());
  }
  double sum = 0;
  for (double t : times) sum += t;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank percentiles: the smallest sample with at least q of the samples at or below it.
  auto pct = [&](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
  };

  std::ostringstream js;
  js.precision(6);
  js << std::fixed;
  const std::string device_name =
      opts.device == DeviceType::kCpu ? "cpu" : "cuda:" + std::to_string(opts.device_index);
  js << "{\"model\": " << JsonString(model) << ", \"device\": " << JsonString(device_name) << ", \"threads\": " << (threads > 0 ? threads : ThreadPool::DefaultThreadCount())
     << ", \"warmup\": " << warmup << ", \"iters\": " << iters << ", \"mean_ms\": " << sum / iters
     << ", \"p50_ms\": " << pct(0.5) << ", \"p90_ms\": " << pct(0.9) << ", \"p99_ms\": " << pct(0.99)
     << ", \"min_ms\": " << sorted.front() << ", \"max_ms\": " << sorted.back()
     << ", \"planned_peak_bytes\": " << session.planned_peak_bytes() << ", \"load_ms\": " << load_ms
     << ", \"session_create_ms\": " << create_ms;
  if (a.Has("trace")) js << ", \"trace\": " << JsonString(trace_path);  // these timings include tracing
  if (opts.device == DeviceType::kCuda) js << ", \"cuda_graphs_captured\": " << session.executor().cuda_graphs_captured();
  js << ", \"inputs\": {";
  for (size_t i = 0; i < feeds.size(); ++i) {
    js << (i ? ", " : "") << JsonString(feeds[i].first) << ": {\"dtype\": " << JsonString(DTypeName(feeds[i].second.dtype()))
       << ", \"shape\": [";
    for (size_t d = 0; d < feeds[i].second.shape().size(); ++d) js << (d ? ", " : "") << feeds[i].second.shape()[d];
    js << "]}";
  }
  js << "}}";
  std::printf("%s\n", js.str().c_str());
  return 0;
}

}  // namespace cli
}  // namespace oneflow
