// The C ABI's CUDA section: device enumeration, sessions on a CUDA device, device tensors. Compiled
// in every build; without ONEFLOW_HAVE_CUDA it reports that the library was built without CUDA.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "c_api/c_api_internal.h"
#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

using namespace oneflow::capi;

namespace {

// A device kind argument: ONEFLOW_INVALID_ARGUMENT naming `what` and the value unless it is one.
void RequireDeviceKind(int32_t raw, const char* what) {
  OF_REQUIRE(raw == ONEFLOW_DEVICE_CPU || raw == ONEFLOW_DEVICE_CUDA, what, ": unknown device kind ", raw,
             " (expected ONEFLOW_DEVICE_CPU or ONEFLOW_DEVICE_CUDA)");
}

// A dtype argument, validated: ONEFLOW_INVALID_ARGUMENT naming `what` and the value.
DType ReadDType(int32_t raw, const char* what) {
  OF_REQUIRE(IsKnownDType(raw), what, ": unknown dtype ", raw, " (not a oneflow_dtype_t value)");
  return static_cast<DType>(raw);
}

// The number of devices and, when 0, why.
int32_t CountDevices(std::string* why) {
#ifdef ONEFLOW_HAVE_CUDA
  return static_cast<int32_t>(oneflow::cuda::DeviceCount(why));
#else
  *why = "liboneflow was built without CUDA (ONEFLOW_WITH_CUDA=OFF)";
  return 0;
#endif
}

void RequireCudaDevice(int32_t index) {
  std::string why;
  const int32_t count = CountDevices(&why);
  OF_CHECK(count > 0, kUnsupported, "no CUDA device: ", why);
  OF_REQUIRE(index >= 0 && index < count, "CUDA device ", index, " does not exist (", count, " device",
             count == 1 ? "" : "s", ")");
}

CudaGraphMode ReadGraphMode(const oneflow_device_session_options_t* o) {
  if (o == nullptr) return CudaGraphMode::kAuto;
  CheckSizedInput(o, "device_options", "oneflow_device_session_options_init");
  const int32_t mode = RawEnum(o->cuda_graphs);
  switch (mode) {
    case ONEFLOW_CUDA_GRAPHS_AUTO: return CudaGraphMode::kAuto;
    case ONEFLOW_CUDA_GRAPHS_ON: return CudaGraphMode::kOn;
    case ONEFLOW_CUDA_GRAPHS_OFF: return CudaGraphMode::kOff;
  }
  Fail(ErrorCode::kInvalidArgument, "device_options.cuda_graphs is ", mode,
       "; expected ONEFLOW_CUDA_GRAPHS_AUTO, _ON or _OFF");
}

// Part of the struct since ABI 3 (ReadGraphMode checked its size).
bool ReadAllowRuntimeFallback(const oneflow_device_session_options_t* o) {
  if (o == nullptr) return false;
  OF_REQUIRE(o->allow_runtime_fallback == 0 || o->allow_runtime_fallback == 1,
             "device_options.allow_runtime_fallback is ", o->allow_runtime_fallback, "; expected 0 or 1");
  return o->allow_runtime_fallback == 1;
}

// Checks that `data` is memory of CUDA device `index` (cuda::RequireDevicePointer); a build without
// CUDA has no device memory to check (and no device session to hand it to).
void RequireDevicePointer(const void* data, int32_t index) {
#ifdef ONEFLOW_HAVE_CUDA
  cuda::RequireDevicePointer(data, index);
#else
  (void)data;
  (void)index;
#endif
}

// oneflow_session_create_on_device(_ex) with the device kind as the caller's raw int32_t.
oneflow_status_t CreateSessionOnDevice(oneflow_env_t* env, const oneflow_graph_t* graph,
                                       const oneflow_session_options_t* options, int32_t raw_device, int32_t index,
                                       const oneflow_device_session_options_t* device_options,
                                       oneflow_session_t** out_session) {
  if (raw_device == ONEFLOW_DEVICE_CPU) {
    if (index != 0)
      return Guard([&] { OF_REQUIRE(false, "CPU device index must be 0, got ", index); });
    return oneflow_session_create(env, graph, options, out_session);
  }
  return Guard([&] {
    RequireDeviceKind(raw_device, "device");
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(out_session != nullptr, "out_session is NULL");
    RequireCudaDevice(index);
    SessionOptions opts = ReadSessionOptions(options);
    ApplyEnv(env, opts.intra_op_threads, opts.pool);
    opts.device = DeviceType::kCuda;
    opts.device_index = index;
    opts.cuda_graphs = ReadGraphMode(device_options);
    opts.cuda_allow_runtime_fallback = ReadAllowRuntimeFallback(device_options);
    auto h = std::make_unique<oneflow_session_s>();
    h->session = std::make_unique<Session>(*graph->graph, opts);
    h->io.Build(h->session->model());
    *out_session = h.release();
  });
}

}  // namespace

oneflow_status_t oneflow_cuda_device_count(int32_t* out_count, char* reason, size_t reason_capacity) {
  return Guard([&] {
    OF_REQUIRE(out_count != nullptr, "out_count is NULL");
    std::string why;
    *out_count = CountDevices(&why);
    if (*out_count > 0) why.clear();
    if (reason != nullptr && reason_capacity > 0) {
      const size_t n = std::min(why.size(), reason_capacity - 1);
      std::memcpy(reason, why.data(), n);
      reason[n] = '\0';
    }
  });
}

oneflow_status_t oneflow_cuda_device_info_init_sized(oneflow_cuda_device_info_t* info, size_t struct_size) {
  return InitSizedStruct(info, struct_size, "oneflow_cuda_device_info_t", [](oneflow_cuda_device_info_t&) {});
}

oneflow_status_t oneflow_cuda_get_device_info(int32_t index, oneflow_cuda_device_info_t* out_info) {
  return Guard([&] {
    CheckSizedOutput(out_info, "out_info", "oneflow_cuda_device_info_init");
    RequireCudaDevice(index);
#ifdef ONEFLOW_HAVE_CUDA
    const oneflow::cuda::DeviceProps p = oneflow::cuda::GetDeviceProps(index);
    const size_t n = std::min(p.name.size(), sizeof(out_info->name) - 1);
    std::memcpy(out_info->name, p.name.data(), n);
    out_info->name[n] = '\0';
    out_info->major = p.major;
    out_info->minor = p.minor;
    out_info->total_memory = p.total_memory;
    out_info->multiprocessors = p.multiprocessors;
#endif
  });
}

oneflow_status_t oneflow_session_create_on_device(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                  const oneflow_session_options_t* options,
                                                  oneflow_device_kind_t device, int32_t index,
                                                  oneflow_session_t** out_session) {
  return CreateSessionOnDevice(env, graph, options, RawEnum(device), index, nullptr, out_session);
}

oneflow_status_t oneflow_device_session_options_init_sized(oneflow_device_session_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_device_session_options_t", [](oneflow_device_session_options_t& o) {
    o.cuda_graphs = ONEFLOW_CUDA_GRAPHS_AUTO;
    o.allow_runtime_fallback = 0;
  });
}

oneflow_status_t oneflow_session_create_on_device_ex(oneflow_env_t* env, const oneflow_graph_t* graph,
                                                     const oneflow_session_options_t* options,
                                                     oneflow_device_kind_t device, int32_t index,
                                                     const oneflow_device_session_options_t* device_options,
                                                     oneflow_session_t** out_session) {
  return CreateSessionOnDevice(env, graph, options, RawEnum(device), index, device_options, out_session);
}

oneflow_status_t oneflow_session_device_stats_init_sized(oneflow_session_device_stats_t* stats, size_t struct_size) {
  return InitSizedStruct(stats, struct_size, "oneflow_session_device_stats_t", [](oneflow_session_device_stats_t&) {});
}

oneflow_status_t oneflow_session_get_device_stats(const oneflow_session_t* session,
                                                  oneflow_session_device_stats_t* out_stats) {
  return Guard([&] {
    OF_REQUIRE(session != nullptr, "session is NULL");
    CheckSizedOutput(out_stats, "out_stats", "oneflow_session_device_stats_init");
    OF_REQUIRE(session->session != nullptr,
               "oneflow_session_get_device_stats reports inference sessions, not training sessions");
    const Executor& e = session->session->executor();
    const CudaFallbackStats fb = e.cuda_fallbacks();
    out_stats->cuda_graphs_captured = e.cuda_graphs_captured();
    out_stats->planned_fallback_nodes = fb.planned;
    out_stats->runtime_fallback_nodes = fb.runtime;
  });
}

oneflow_status_t oneflow_tensor_create_device_borrowed(oneflow_dtype_t dtype, const int64_t* shape, size_t rank,
                                                       oneflow_device_kind_t device, int32_t index, void* data,
                                                       size_t byte_size, oneflow_deleter_fn deleter, void* user_data,
                                                       oneflow_tensor_t** out_tensor) {
  const int32_t raw_device = RawEnum(device), raw_dtype = RawEnum(dtype);
  if (raw_device == ONEFLOW_DEVICE_CPU) {
    if (index != 0)
      return Guard([&] { OF_REQUIRE(false, "CPU device index must be 0, got ", index); });
    // Forwarded as an enum only once it is known to be one of the enum's values.
    if (!IsKnownDType(raw_dtype)) return Guard([&] { ReadDType(raw_dtype, "dtype"); });
    return oneflow_tensor_create_borrowed(static_cast<oneflow_dtype_t>(raw_dtype), shape, rank, data, byte_size,
                                          deleter, user_data, out_tensor);
  }
  return Guard([&] {
    RequireDeviceKind(raw_device, "device");
    OF_REQUIRE(out_tensor != nullptr, "out_tensor is NULL");
    const DType dt = ReadDType(raw_dtype, "dtype");
    const Shape s = ToShape(shape, rank);
    const size_t needed = static_cast<size_t>(NumElements(s)) * DTypeSize(dt);
    OF_REQUIRE(data != nullptr || needed == 0, "data is NULL for a tensor of ", needed, " bytes");
    OF_REQUIRE(byte_size >= needed, "buffer of ", byte_size, " bytes is too small for ", DTypeName(dt),
               ShapeToString(s), " (", needed, " bytes)");
    RequireCudaDevice(index);
    if (data != nullptr) RequireDevicePointer(data, index);
    std::function<void()> release;
    if (deleter) release = [deleter, data, user_data] { deleter(data, user_data); };
    auto t = std::make_unique<oneflow_tensor_s>();
    t->tensor = Tensor(dt, s, Storage::Borrow(data, byte_size, std::move(release)));
    t->device = ONEFLOW_DEVICE_CUDA;
    t->device_index = index;
    *out_tensor = t.release();
  });
}

oneflow_device_kind_t oneflow_tensor_device_kind(const oneflow_tensor_t* tensor) {
  return tensor ? tensor->device : ONEFLOW_DEVICE_CPU;
}

int32_t oneflow_tensor_device_index(const oneflow_tensor_t* tensor) { return tensor ? tensor->device_index : 0; }

oneflow_status_t oneflow_tensor_record_stream(const oneflow_tensor_t* tensor, void* cuda_stream) {
  return Guard([&] {
    OF_REQUIRE(tensor != nullptr, "tensor is NULL");
#ifdef ONEFLOW_HAVE_CUDA
    if (tensor->device == ONEFLOW_DEVICE_CUDA)
      oneflow::cuda::RecordStream(tensor->tensor, static_cast<cudaStream_t>(cuda_stream));
#else
    (void)cuda_stream;
    OF_CHECK(false, kUnsupported, "liboneflow was built without CUDA (ONEFLOW_WITH_CUDA=OFF)");
#endif
  });
}

oneflow_status_t oneflow_session_run_device(oneflow_session_t* session, const char* const* input_names,
                                            const oneflow_tensor_t* const* inputs, size_t num_inputs,
                                            const char* const* output_names, size_t num_output_names,
                                            int32_t outputs_on_device, oneflow_tensor_t** out_outputs,
                                            size_t out_capacity) {
  return Guard([&] {
    OF_REQUIRE(session != nullptr, "session is NULL");
    OF_REQUIRE(session->session != nullptr, "oneflow_session_run_device runs inference sessions, not training sessions");
    const Session& s = *session->session;
    const bool cuda_session = s.options().device == DeviceType::kCuda;
    OF_REQUIRE(num_inputs == 0 || (input_names != nullptr && inputs != nullptr),
               "input_names or inputs is NULL with num_inputs = ", num_inputs);
    OF_REQUIRE(num_output_names == 0 || output_names != nullptr, "output_names is NULL with num_output_names = ",
               num_output_names);
    OF_REQUIRE(out_outputs != nullptr, "out_outputs is NULL");
    std::vector<std::pair<std::string, Tensor>> feeds;
    std::vector<char> on_device(num_inputs, 0);
    for (size_t i = 0; i < num_inputs; ++i) {
      OF_REQUIRE(input_names[i] != nullptr, "input_names[", i, "] is NULL");
      OF_REQUIRE(inputs[i] != nullptr, "inputs[", i, "] (for '", input_names[i], "') is NULL");
      if (inputs[i]->device == ONEFLOW_DEVICE_CUDA) {
        OF_REQUIRE(cuda_session, "inputs[", i, "] (for '", input_names[i],
                   "') is a CUDA device tensor but the session runs on the CPU");
        OF_REQUIRE(inputs[i]->device_index == s.options().device_index, "inputs[", i, "] (for '", input_names[i],
                   "') is on CUDA device ", inputs[i]->device_index, " but the session runs on device ",
                   s.options().device_index);
        on_device[i] = 1;
      }
      feeds.emplace_back(input_names[i], inputs[i]->tensor);
    }
    OF_REQUIRE(cuda_session || !outputs_on_device, "outputs_on_device is set but the session runs on the CPU");
    std::vector<std::string> fetches;
    for (size_t i = 0; i < num_output_names; ++i) {
      OF_REQUIRE(output_names[i] != nullptr, "output_names[", i, "] is NULL");
      fetches.emplace_back(output_names[i]);
    }
    CheckOutputCapacity(out_capacity, num_output_names ? num_output_names : s.optimized().outputs.size());
    auto results = s.Run(feeds, fetches, on_device, outputs_on_device != 0);
    std::vector<std::unique_ptr<oneflow_tensor_s>> handles;
    for (auto& r : results) {
      handles.push_back(std::make_unique<oneflow_tensor_s>());
      handles.back()->tensor = std::move(r.second);
      if (outputs_on_device) {
        handles.back()->device = ONEFLOW_DEVICE_CUDA;
        handles.back()->device_index = s.options().device_index;
      }
    }
    for (size_t i = 0; i < handles.size(); ++i) out_outputs[i] = handles[i].release();
  });
}
