// Session creation (optimization pipeline) and input validation.
#include "engine/session.h"

#include <map>

#include "base/trace.h"
#include "passes/pipeline.h"
#include "kernels/node_runner.h"

namespace oneflow {

void OptimizeForDevice(Graph& g, int level, ThreadPool& pool, DeviceType device, bool fuse_elementwise) {
  PipelineOptions options;
  options.level = level;
  options.channels_last = device == DeviceType::kCpu;
  options.fuse_attention = device == DeviceType::kCuda;
  options.fuse_qdq = device == DeviceType::kCpu;  // the integer kernels are the CPU's
  options.fuse_elementwise = fuse_elementwise;
  OptimizeGraph(g, options, pool, EvaluateOnCpu);
}

void CheckSessionOptions(const SessionOptions& options) {
  OF_REQUIRE(options.intra_op_threads >= 0 && options.intra_op_threads <= 1024,
             "intra_op_threads must be in [0, 1024], got ", options.intra_op_threads);
  OF_REQUIRE(options.optimization_level >= 0 && options.optimization_level <= 2,
             "optimization_level must be 0, 1 or 2, got ", options.optimization_level);
  OF_REQUIRE(options.device == DeviceType::kCpu || options.device == DeviceType::kCuda, "unknown device ",
             static_cast<int>(options.device));
  OF_REQUIRE(options.cuda_graphs == CudaGraphMode::kAuto || options.cuda_graphs == CudaGraphMode::kOn ||
                 options.cuda_graphs == CudaGraphMode::kOff,
             "unknown CUDA graph mode ", static_cast<int>(options.cuda_graphs));
  if (options.device == DeviceType::kCpu)
    OF_REQUIRE(options.device_index == 0, "CPU device index must be 0, got ", options.device_index);
  else
    OF_REQUIRE(options.device_index >= 0, "CUDA device index must be >= 0, got ", options.device_index);
}

Session::Session(const Graph& model, const SessionOptions& options) : model_(model), options_(options) {
  CheckSessionOptions(options);
  TraceScope trace("session", "create session");
  trace.Arg("graph", model_.name).Arg("nodes", model_.nodes.size());
  optimized_ = std::make_shared<Graph>(model_);
  {
    TraceScope optimize("session", "optimize");  // constant folding's node runs nest in it
    ThreadPool fold_pool(1);
    OptimizeForDevice(*optimized_, options.optimization_level, fold_pool, options.device);
  }
  std::shared_ptr<ThreadPool> pool = options.pool ? options.pool : std::make_shared<ThreadPool>(options.intra_op_threads);
  if (options.device == DeviceType::kCpu) {
    OF_REQUIRE(options.device_index == 0, "CPU device index must be 0, got ", options.device_index);
    executor_ = std::make_unique<Executor>(optimized_, std::move(pool));
  } else {
    executor_ = std::make_unique<Executor>(
        optimized_, std::move(pool),
        ExecutorDevice{options.device, options.device_index, options.cuda_graphs, options.cuda_allow_runtime_fallback});
  }
}

// Checks one feed against the declared type; binds symbolic dims to sizes across feeds.
static void CheckFeed(const Value& decl, const Tensor& t, std::map<std::string, int64_t>& symbols) {
  OF_REQUIRE(t.defined(), "input '", decl.name, "' is an empty tensor handle");
  if (!decl.type.is_tensor() || !t.is_tensor()) {  // sequences and optionals
    OF_REQUIRE(decl.type.Admits(t), "input '", decl.name, "' is ", DescribeValue(t), ", the model expects ",
               decl.type.ToString());
    return;
  }
  OF_REQUIRE(decl.type.dtype == DType::kUndefined || t.dtype() == decl.type.dtype, "input '", decl.name,
             "' has dtype ", DTypeName(t.dtype()), ", the model expects ", DTypeName(decl.type.dtype));
  if (!decl.type.has_rank) return;
  OF_REQUIRE(t.rank() == decl.type.rank(), "input '", decl.name, "' has rank ", t.rank(), " (shape ",
             ShapeToString(t.shape()), "), the model expects ", decl.type.ToString());
  for (size_t i = 0; i < decl.type.dims.size(); ++i) {
    const Dim& d = decl.type.dims[i];
    int64_t got = t.shape()[i];
    if (d.known()) {
      OF_REQUIRE(got == d.value, "input '", decl.name, "' has shape ", ShapeToString(t.shape()),
                 ", the model expects ", decl.type.ToString(), " (dim ", i, " differs)");
    } else if (!d.symbol.empty()) {
      auto [it, inserted] = symbols.emplace(d.symbol, got);
      OF_REQUIRE(inserted || it->second == got, "input '", decl.name, "' binds dim '", d.symbol, "' to ", got,
                 " but another input bound it to ", it->second);
    }
  }
}

std::vector<std::pair<std::string, Tensor>> Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                         const std::vector<std::string>& fetches) const {
  return Run(feeds, fetches, {}, false);
}

std::vector<std::pair<std::string, Tensor>> Session::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                         const std::vector<std::string>& fetches,
                                                         const std::vector<char>& feed_on_device,
                                                         bool outputs_on_device) const {
  const Graph& g = *optimized_;
  OF_REQUIRE(feed_on_device.empty() || feed_on_device.size() == feeds.size(), "feed_on_device has ",
             feed_on_device.size(), " entries for ", feeds.size(), " feeds");
  RunIo io;
  io.outputs_on_device = outputs_on_device;
  bool device_io = outputs_on_device;
  std::vector<Tensor> ordered(g.inputs.size());
  std::map<std::string, int64_t> symbols;
  for (size_t f = 0; f < feeds.size(); ++f) {
    const auto& [name, tensor] = feeds[f];
    size_t slot = g.inputs.size();
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.values[static_cast<size_t>(g.inputs[i])].name == name) slot = i;
    if (slot == g.inputs.size()) {
      std::string names;
      for (int in : g.inputs) names += (names.empty() ? "" : ", ") + g.values[static_cast<size_t>(in)].name;
      Fail(ErrorCode::kNotFound, "the model has no input named '", name, "' (inputs: ", names, ")");
    }
    OF_REQUIRE(!ordered[slot].defined(), "input '", name, "' is given twice");
    CheckFeed(g.values[static_cast<size_t>(g.inputs[slot])], tensor, symbols);
    ordered[slot] = tensor;
    if (!feed_on_device.empty() && feed_on_device[f]) {
      if (io.feed_on_device.empty()) io.feed_on_device.assign(g.inputs.size(), 0);
      io.feed_on_device[slot] = 1;
      device_io = true;
    }
  }
  for (size_t i = 0; i < g.inputs.size(); ++i)
    OF_REQUIRE(ordered[i].defined(), "input '", g.values[static_cast<size_t>(g.inputs[i])].name, "' is missing");

  std::vector<size_t> wanted;
  if (fetches.empty()) {
    for (size_t i = 0; i < g.outputs.size(); ++i) wanted.push_back(i);
  } else {
    for (const std::string& name : fetches) {
      size_t slot = g.outputs.size();
      for (size_t i = 0; i < g.outputs.size(); ++i)
        if (g.values[static_cast<size_t>(g.outputs[i])].name == name) slot = i;
      OF_CHECK(slot < g.outputs.size(), kNotFound, "the model has no output named '", name, "'");
      wanted.push_back(slot);
    }
  }
  std::vector<Tensor> results = device_io ? executor_->Run(ordered, io) : executor_->Run(ordered);
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t slot : wanted) out.emplace_back(g.values[static_cast<size_t>(g.outputs[slot])].name, results[slot]);
  return out;
}

}  // namespace oneflow
