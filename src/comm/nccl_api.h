// NCCL loaded at run time (dlopen, RTLD_LOCAL) instead of linked into liboneflow: a process that
// loads us and then another NCCL user (PyTorch ships its own libnccl.so.2, with symbols the
// system's may lack) must not get our copy bound in place of its own; and processes that never
// create an NCCL communicator never load NCCL at all. Built only with ONEFLOW_HAVE_NCCL.
#pragma once

#include <nccl.h>

#include <string>

namespace oneflow::nccl {

// The NCCL entry points the communicator uses.
struct Api {
  decltype(&::ncclGetVersion) GetVersion;
  decltype(&::ncclGetUniqueId) GetUniqueId;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig;
  decltype(&::ncclCommAbort) CommAbort;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&::ncclGetErrorString) GetErrorString;
  decltype(&::ncclGetLastError) GetLastError;
  decltype(&::ncclAllReduce) AllReduce;
  decltype(&::ncclAllGather) AllGather;
  decltype(&::ncclReduceScatter) ReduceScatter;
  decltype(&::ncclBroadcast) Broadcast;
  decltype(&::ncclSend) Send;
  decltype(&::ncclRecv) Recv;
  decltype(&::ncclGroupStart) GroupStart;
  decltype(&::ncclGroupEnd) GroupEnd;
  int version = 0;       // ncclGetVersion's code, e.g. 22809 for 2.28.9
  std::string library;   // what was loaded
};

// The process's NCCL, loaded once: "libnccl.so.2" (the copy already in the process, or the
// system's), else the library CMake found. Throws kUnsupported naming the library and dlerror()
// when none loads, lacks a function, or is older than 2.14 (non-blocking communicators).
const Api& LoadApi();

}  // namespace oneflow::nccl
