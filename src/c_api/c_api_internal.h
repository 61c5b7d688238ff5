// Internals shared by the C ABI's source files: the opaque handle structs and the guard that turns
// exceptions into statuses. Each area of the ABI (core, serialization, training, ...) has its own
// c_api_*.cc file; all of them include this header and nothing outside src/c_api does.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "base/thread_pool.h"
#include "engine/distributed_session.h"
#include "engine/session.h"
#include "oneflow_c.h"
#include "train/training_session.h"

using namespace oneflow;  // the ABI files are thin wrappers over the engine's namespace

struct oneflow_status_s {
  oneflow_code_t code;
  std::string message;
};

// What the sessions created with an environment share: the intra-op thread pool when the env's
// options asked for one (null: each session has a pool of its own).
struct oneflow_env_s {
  std::shared_ptr<ThreadPool> pool;
};

// The session options with the environment's shared pool applied: a session whose options leave
// intra_op_threads at 0 runs on the env's pool (and counts its threads, so deterministic training
// knows them); an explicit count gets a pool of its own.
inline void ApplyEnv(const oneflow_env_t* env, int& intra_op_threads, std::shared_ptr<ThreadPool>& pool) {
  if (env == nullptr || !env->pool || intra_op_threads != 0) return;
  pool = env->pool;
  intra_op_threads = env->pool->num_threads();
}

struct oneflow_tensor_s {
  Tensor tensor;
  // Where the bytes live (oneflow_tensor_create_device_borrowed, device outputs): the host unless
  // set. Only oneflow_session_run_device accepts device tensors; nothing else reads their bytes.
  oneflow_device_kind_t device = ONEFLOW_DEVICE_CPU;
  int32_t device_index = 0;
};

// Where `field` of caller-sized struct T ends: a field is read or written only when struct_size covers it.
#define OF_C_STRUCT_END(T, field) (offsetof(T, field) + sizeof(static_cast<T*>(nullptr)->field))

// The names, dims and symbol pointers handed out by *_get_*_info live here, owned by the handle.
struct ValueInfoStore {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<const char*>> dim_names;
  std::vector<DType> dtypes;
  std::vector<int64_t> ranks;
  std::vector<oneflow_type_kind_t> kinds;

  void Add(const Value& v) {
    names.push_back(v.name);
    dtypes.push_back(v.type.dtype);
    ranks.push_back(v.type.has_rank ? v.type.rank() : -1);
    kinds.push_back(v.type.is_optional ? (v.type.is_sequence ? ONEFLOW_TYPE_OPTIONAL_SEQUENCE : ONEFLOW_TYPE_OPTIONAL)
                                       : (v.type.is_sequence ? ONEFLOW_TYPE_SEQUENCE : ONEFLOW_TYPE_TENSOR));
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
    if (out->struct_size >= OF_C_STRUCT_END(oneflow_value_info_t, kind)) out->kind = kinds[i];  // ABI 5
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
static_assert(static_cast<int>(DType::kFloat8E4M3FN) == ONEFLOW_DTYPE_F8E4M3FN &&
                  static_cast<int>(DType::kFloat4E2M1) == ONEFLOW_DTYPE_F4E2M1 &&
                  static_cast<int>(DType::kInt2) == ONEFLOW_DTYPE_I2,
              "dtypes must match the ABI");

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

// ---- Structs sized by the caller (ABI 3) ----------------------------------------------------------
// Each option or info struct starts with `struct_size`, the caller's sizeof, passed by the header's
// `*_init` macro to `*_init_sized`. kAbi3Size<T> is where the struct ended in ABI 3: every caller's
// struct is at least that big. Later fields (appended) are read only when struct_size covers them.
template <typename T>
constexpr size_t kAbi3Size = sizeof(T);  // specialized below where padding would overstate it
template <>
constexpr size_t kAbi3Size<oneflow_value_info_t> = OF_C_STRUCT_END(oneflow_value_info_t, dim_names);
template <>
constexpr size_t kAbi3Size<oneflow_session_options_t> = OF_C_STRUCT_END(oneflow_session_options_t, optimization_level);
template <>
constexpr size_t kAbi3Size<oneflow_save_options_t> = OF_C_STRUCT_END(oneflow_save_options_t, checksums);
template <>
constexpr size_t kAbi3Size<oneflow_load_options_t> = OF_C_STRUCT_END(oneflow_load_options_t, external_data_dir);
template <>
constexpr size_t kAbi3Size<oneflow_training_options_t> = OF_C_STRUCT_END(oneflow_training_options_t, cuda_graphs);
template <>
constexpr size_t kAbi3Size<oneflow_plan_options_t> = OF_C_STRUCT_END(oneflow_plan_options_t, backend);
template <>
constexpr size_t kAbi3Size<oneflow_dist_training_options_t> = OF_C_STRUCT_END(oneflow_dist_training_options_t, max_states);
template <>
constexpr size_t kAbi3Size<oneflow_env_options_t> = OF_C_STRUCT_END(oneflow_env_options_t, intra_op_threads);
template <>
constexpr size_t kAbi3Size<oneflow_server_options_t> = OF_C_STRUCT_END(oneflow_server_options_t, access_log);

// `*_init_sized`: fills the caller's `struct_size` bytes with zeros and the defaults `set` writes into
// a library-sized copy, never a byte more; struct_size records the caller's size. Errors: NULL, or a
// size below the ABI 3 struct (a caller that did not use the macro).
template <typename T, typename SetDefaults>
oneflow_status_t InitSizedStruct(T* p, size_t struct_size, const char* type_name, SetDefaults&& set) {
  return Guard([&] {
    OF_REQUIRE(p != nullptr, type_name, " pointer is NULL");
    OF_REQUIRE(struct_size >= kAbi3Size<T>, type_name, ": struct_size ", struct_size, " is smaller than the struct of ABI 3 (",
               kAbi3Size<T>, " bytes); initialize it with the *_init macro, which passes sizeof");
    T defaults{};
    set(defaults);
    std::memset(static_cast<void*>(p), 0, struct_size);
    std::memcpy(static_cast<void*>(p), &defaults, std::min(struct_size, sizeof(T)));
    p->struct_size = struct_size;
  });
}

// Before reading a caller's options: big enough for ABI 3, and no field set that this library does
// not know (the caller was built against a newer header; its init left unknown fields zero, so a
// non-zero byte there is a setting that would otherwise be silently ignored). `what` names the
// argument, `init_name` the macro that initializes it.
template <typename T>
void CheckSizedInput(const T* p, const char* what, const char* init_name) {
  OF_REQUIRE(p->struct_size >= kAbi3Size<T>, what, ".struct_size (", p->struct_size,
             ") is too small; initialize it with ", init_name);
  const auto* bytes = reinterpret_cast<const unsigned char*>(p);
  for (size_t i = sizeof(T); i < p->struct_size; ++i)
    OF_CHECK(bytes[i] == 0, kUnsupported, what, " sets a field at byte offset ", i, " that this library (C ABI ",
             ONEFLOW_API_VERSION, ") does not have: the caller was built against a newer oneflow_c.h");
}

// Before writing into a caller's info struct: big enough for every field the library writes.
template <typename T>
void CheckSizedOutput(const T* p, const char* what, const char* init_name) {
  OF_REQUIRE(p != nullptr, what, " is NULL");
  OF_REQUIRE(p->struct_size >= kAbi3Size<T>, what, ".struct_size (", p->struct_size,
             ") is too small; initialize it with ", init_name);
}

inline void CheckInfoStruct(const oneflow_value_info_t* info) {
  CheckSizedOutput(info, "out_info", "oneflow_value_info_init");
}


// The arguments shared by the run calls (oneflow_session_run, oneflow_dist_session_run), checked.
// The session options of the C ABI (NULL: defaults), as oneflow_session_create reads them.
inline SessionOptions ReadSessionOptions(const oneflow_session_options_t* options) {
  SessionOptions opts;
  if (options) {
    CheckSizedInput(options, "session options", "oneflow_session_options_init");
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
