// Loading NCCL at run time (see nccl_api.h).
#ifdef ONEFLOW_HAVE_NCCL
#include "comm/nccl_api.h"

#include <dlfcn.h>

#include <mutex>

#include "base/error.h"

namespace oneflow::nccl {
namespace {

template <typename Fn>
void Bind(void* lib, const std::string& path, const char* name, Fn& fn) {
  void* sym = dlsym(lib, name);
  OF_CHECK(sym != nullptr, kUnsupported, path, " has no ", name, " (NCCL 2.14 or newer is needed)");
  fn = reinterpret_cast<Fn>(sym);
}

Api Load() {
  std::string tried;
  void* lib = nullptr;
  Api api;
  for (const char* path : {"libnccl.so.2", ONEFLOW_NCCL_LIBRARY}) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      api.library = path;
      break;
    }
    const char* why = dlerror();
    tried += StrCat(tried.empty() ? "" : "; ", why ? why : path);
  }
  OF_CHECK(lib != nullptr, kUnsupported, "cannot load NCCL: ", tried);
  Bind(lib, api.library, "ncclGetVersion", api.GetVersion);
  Bind(lib, api.library, "ncclGetUniqueId", api.GetUniqueId);
  Bind(lib, api.library, "ncclCommInitRankConfig", api.CommInitRankConfig);
  Bind(lib, api.library, "ncclCommAbort", api.CommAbort);
  Bind(lib, api.library, "ncclCommGetAsyncError", api.CommGetAsyncError);
  Bind(lib, api.library, "ncclGetErrorString", api.GetErrorString);
  Bind(lib, api.library, "ncclGetLastError", api.GetLastError);
  Bind(lib, api.library, "ncclAllReduce", api.AllReduce);
  Bind(lib, api.library, "ncclAllGather", api.AllGather);
  Bind(lib, api.library, "ncclReduceScatter", api.ReduceScatter);
  Bind(lib, api.library, "ncclBroadcast", api.Broadcast);
  Bind(lib, api.library, "ncclSend", api.Send);
  Bind(lib, api.library, "ncclRecv", api.Recv);
  Bind(lib, api.library, "ncclGroupStart", api.GroupStart);
  Bind(lib, api.library, "ncclGroupEnd", api.GroupEnd);
  OF_CHECK(api.GetVersion(&api.version) == ncclSuccess, kUnsupported, api.library, ": ncclGetVersion failed");
  OF_CHECK(api.version >= 21400, kUnsupported, api.library, " is NCCL ", api.version,
           "; non-blocking communicators need 2.14 or newer");
  return api;
}

}  // namespace

const Api& LoadApi() {
  // Loaded once; a failure is reported again on every call (nothing is cached but success).
  static std::mutex mutex;
  static Api* api = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!api) api = new Api(Load());  // lives as long as the process, like the library
  return *api;
}

}  // namespace oneflow::nccl
#endif  // ONEFLOW_HAVE_NCCL
