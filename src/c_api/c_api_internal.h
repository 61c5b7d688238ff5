// Internals shared by the C ABI's source files: the opaque handle structs and the guard that turns
// exceptions into statuses. Each area of the ABI (core, serialization, training, ...) has its own
// c_api_*.cc file; all of them include this header and nothing outside src/c_api does.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/distributed_session.h"
#include "engine/session.h"
#include "oneflow_c.h"
#include "train/training_session.h"

using namespace oneflow;  // the ABI files are thin wrappers over the engine's namespace

struct oneflow_status_s {
  oneflow_code_t code;
  std::string message;
};

struct oneflow_env_s {
  int unused = 0;
};

struct oneflow_tensor_s {
  Tensor tensor;
  // Where the bytes live (oneflow_tensor_create_device_borrowed, device outputs): the host unless
  // set. Only oneflow_session_run_device accepts device tensors; nothing else reads their bytes.
  oneflow_device_kind_t device = ONEFLOW_DEVICE_CPU;
  int32_t device_index = 0;
};

// The names, dims and symbol pointers handed out by *_get_*_info live here, owned by the handle.
struct ValueInfoStore {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<const char*>> dim_names;
  std::vector<DType> dtypes;
  std::vector<int64_t> ranks;

  void Add(const Value& v) {
    names.push_back(v.name);
    dtypes.push_back(v.type.dtype);
    ranks.push_back(v.type.has_rank ? v.type.rank() : -1);
    std::vector<int64_t> d;
    std::vector<const char*> n;
    for (const Dim& dim : v.type.dims) {
      d.push_back(dim.known() ? dim.value : -1);
      n.push_back(dim.symbol.empty() ? nullptr : dim.symbol.c_str());  // points into the graph
    }
    dims.push_back(std::move(d));
    dim_names.push_back(std::move(n));
  }
  void Fill(size_t i, oneflow_value_info_t* out) const {
    out->name = names[i].c_str();
    out->dtype = static_cast<oneflow_dtype_t>(dtypes[i]);
    out->rank = ranks[i];
    out->dims = dims[i].empty() ? nullptr : dims[i].data();
    out->dim_names = dim_names[i].empty() ? nullptr : dim_names[i].data();
  }
};

struct IoInfo {
  ValueInfoStore inputs, outputs;
  void Build(const Graph& g) {
    for (int v : g.inputs) inputs.Add(g.values[static_cast<size_t>(v)]);
    for (int v : g.outputs) outputs.Add(g.values[static_cast<size_t>(v)]);
  }
};

struct oneflow_graph_s {
  std::shared_ptr<const Graph> graph;
  IoInfo io;
};

struct oneflow_session_s {
  std::unique_ptr<Session> session;  // inference sessions
  IoInfo io;
  // Training sessions (oneflow_training_session_create) have this instead of `session`.
  std::unique_ptr<oneflow::train::TrainingSession> training;
  std::atomic<oneflow::train::RunMode> mode{oneflow::train::RunMode::kTrain};  // set_run_mode may race a run
};

static_assert(static_cast<int>(ErrorCode::kInternal) == ONEFLOW_INTERNAL, "error codes must match the ABI");
static_assert(static_cast<int>(DType::kBFloat16) == ONEFLOW_DTYPE_BF16, "dtypes must match the ABI");

namespace oneflow::capi {

// Statuses for when allocating a status fails; never freed.
inline oneflow_status_s g_oom_status{ONEFLOW_OUT_OF_MEMORY, "out of memory"};

inline oneflow_status_t MakeStatus(oneflow_code_t code, const char* message) {
  try {
    return new oneflow_status_s{code, message};
  } catch (...) {
    return &g_oom_status;
  }
}

// Runs `fn`, converting any exception into a status: nothing crosses the ABI.
template <typename Fn>
oneflow_status_t Guard(Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const Error& e) {
    return MakeStatus(static_cast<oneflow_code_t>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return MakeStatus(ONEFLOW_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return MakeStatus(ONEFLOW_INTERNAL, e.what());
  } catch (...) {
    return MakeStatus(ONEFLOW_INTERNAL, "unknown internal error");
  }
}

// Wraps a loaded (so validated: serialize/model_io.h) graph in a handle.
inline oneflow_graph_t* WrapGraph(Graph g) {
  auto h = std::make_unique<oneflow_graph_s>();
  h->graph = std::make_shared<const Graph>(std::move(g));
  h->io.Build(*h->graph);
  return h.release();
}

inline Shape ToShape(const int64_t* shape, size_t rank) {
  OF_REQUIRE(shape != nullptr || rank == 0, "shape is NULL but rank is ", rank);
  OF_REQUIRE(rank <= 64, "rank ", rank, " is too large (at most 64)");
  Shape s(shape, shape + rank);
  for (size_t i = 0; i < rank; ++i) OF_REQUIRE(s[i] >= 0, "dim ", i, " is negative (", s[i], ")");
  return s;
}

// The int32_t a C caller passed in an enum-typed parameter (or stored in an enum-typed field), read
// as bytes rather than loaded as the C++ enum: C lets a caller pass any int there (7, -1), and
// loading a value outside the enum's range through the C++ enum type is undefined
// (-fsanitize=enum), so it is validated as an integer first. Every oneflow_*_t enum is int-sized.
template <typename E>
int32_t RawEnum(const E& value) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int32_t), "the C ABI's enums are int-sized");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

inline void CheckInfoStruct(const oneflow_value_info_t* info) {
  OF_REQUIRE(info != nullptr, "out_info is NULL");
  OF_REQUIRE(info->struct_size >= sizeof(oneflow_value_info_t),
             "out_info.struct_size is too small; initialize it with oneflow_value_info_init");
}


// The arguments shared by the run calls (oneflow_session_run, oneflow_dist_session_run), checked.
// The session options of the C ABI (NULL: defaults), as oneflow_session_create reads them.
inline SessionOptions ReadSessionOptions(const oneflow_session_options_t* options) {
  SessionOptions opts;
  if (options) {
    OF_REQUIRE(options->struct_size >= offsetof(oneflow_session_options_t, optimization_level) + sizeof(int32_t),
               "options.struct_size is too small; initialize options with oneflow_session_options_init");
    opts.intra_op_threads = options->intra_op_threads;
    opts.optimization_level = options->optimization_level;
  }
  return opts;
}

struct RunArguments {
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<std::string> fetches;
};

inline RunArguments ReadRunArguments(const char* const* input_names, const oneflow_tensor_t* const* inputs,
                                     size_t num_inputs, const char* const* output_names, size_t num_output_names,
                                     oneflow_tensor_t** out_outputs) {
  OF_REQUIRE(num_inputs == 0 || (input_names != nullptr && inputs != nullptr),
             "input_names or inputs is NULL with num_inputs = ", num_inputs);
  OF_REQUIRE(num_output_names == 0 || output_names != nullptr, "output_names is NULL with num_output_names = ",
             num_output_names);
  OF_REQUIRE(out_outputs != nullptr, "out_outputs is NULL");
  RunArguments a;
  for (size_t i = 0; i < num_inputs; ++i) {
    OF_REQUIRE(input_names[i] != nullptr, "input_names[", i, "] is NULL");
    OF_REQUIRE(inputs[i] != nullptr, "inputs[", i, "] (for '", input_names[i], "') is NULL");
    OF_REQUIRE(inputs[i]->device == ONEFLOW_DEVICE_CPU, "inputs[", i, "] (for '", input_names[i],
               "') is a CUDA device tensor; device tensors go to oneflow_session_run_device");
    a.feeds.emplace_back(input_names[i], inputs[i]->tensor);
  }
  for (size_t i = 0; i < num_output_names; ++i) {
    OF_REQUIRE(output_names[i] != nullptr, "output_names[", i, "] is NULL");
    a.fetches.emplace_back(output_names[i]);
  }
  return a;
}

inline void CheckOutputCapacity(size_t out_capacity, size_t expected) {
  OF_REQUIRE(out_capacity >= expected, "out_outputs has room for ", out_capacity, " tensors but the run returns ",
             expected);
}

// Wraps a run's results in new handles; all are allocated before any is handed out, so a failure
// leaves `out_outputs` untouched. Results are fresh tensors: they never alias engine memory.
inline void HandOutOutputs(std::vector<std::pair<std::string, Tensor>>& results, oneflow_tensor_t** out_outputs) {
  std::vector<std::unique_ptr<oneflow_tensor_s>> handles;
  for (auto& r : results) {
    handles.push_back(std::make_unique<oneflow_tensor_s>());
    handles.back()->tensor = std::move(r.second);
  }
  for (size_t i = 0; i < handles.size(); ++i) out_outputs[i] = handles[i].release();
}

// Option structs shared by several areas (c_api_plan.cc, c_api_train.cc), checked and converted.
DistributedOptions ToDistOptions(const oneflow_plan_options_t* o);
train::TrainingOptions ConvertOptions(const oneflow_session_options_t* so, const oneflow_training_options_t* to);

}  // namespace oneflow::capi
