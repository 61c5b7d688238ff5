// The C ABI's CUDA section: device enumeration and device selection for sessions. Compiled in every
// build; without ONEFLOW_HAVE_CUDA it reports that the library was built without CUDA.
#include <algorithm>
#include <cstring>

#include "c_api/c_api_internal.h"
#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

using namespace oneflow::capi;

namespace {

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

void oneflow_cuda_device_info_init(oneflow_cuda_device_info_t* info) {
  if (!info) return;
  std::memset(info, 0, sizeof(*info));
  info->struct_size = sizeof(*info);
}

oneflow_status_t oneflow_cuda_get_device_info(int32_t index, oneflow_cuda_device_info_t* out_info) {
  return Guard([&] {
    OF_REQUIRE(out_info != nullptr, "out_info is NULL");
    OF_REQUIRE(out_info->struct_size >= offsetof(oneflow_cuda_device_info_t, multiprocessors) + sizeof(int32_t),
               "out_info.struct_size is too small; initialize it with oneflow_cuda_device_info_init");
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
  if (device == ONEFLOW_DEVICE_CPU) {
    if (index != 0)
      return Guard([&] { OF_REQUIRE(false, "CPU device index must be 0, got ", index); });
    return oneflow_session_create(env, graph, options, out_session);
  }
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(out_session != nullptr, "out_session is NULL");
    OF_REQUIRE(device == ONEFLOW_DEVICE_CUDA, "unknown device kind ", static_cast<int>(device));
    RequireCudaDevice(index);
    Fail(ErrorCode::kUnsupported, "CUDA device ", index,
         " is present, but sessions cannot run on CUDA yet: the executor places every tensor in host memory "
         "(see docs/cuda.md); the CUDA kernels are usable through the kernel registry");
  });
}
