// The NCCL Communicator (see nccl.h): per-group NCCL communicators created lazily with
// non-blocking init, collectives enqueued on the current stream and polled to completion with
// async-error checks, and ncclCommAbort on timeout, peer failure or Abort().
#include "comm/nccl.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/error.h"
#include "comm/collective_trace_internal.h"
#include "comm/nccl_layout.h"

#ifdef ONEFLOW_HAVE_NCCL
#include <nccl.h>

#include "comm/nccl_api.h"

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#endif

namespace oneflow {

#ifdef ONEFLOW_HAVE_NCCL
namespace {

static_assert(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 && ncclInternalError == 3 &&
                  ncclInvalidArgument == 4 && ncclInvalidUsage == 5 && ncclRemoteError == 6 && ncclInProgress == 7,
              "nccl_layout.cc names ncclResult_t by value");

using Clock = std::chrono::steady_clock;
using nccl::GroupText;

ncclDataType_t NcclSumType(DType t) {
  switch (t) {
    case DType::kFloat32: return ncclFloat32;
    case DType::kFloat64: return ncclFloat64;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    case DType::kInt32: return ncclInt32;
    case DType::kInt64: return ncclInt64;
    case DType::kInt8: return ncclInt8;
    case DType::kUInt8: return ncclUint8;
    default:
      Fail(ErrorCode::kUnsupported, "NCCL sum collectives support float16/bfloat16/float32/float64 and "
           "int8/uint8/int32/int64, not ", DTypeName(t));
  }
}

// Polling: yield for the first iterations (short collectives finish in microseconds), then sleep.
void Pause(int spin) {
  if (spin < 200) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(spin < 2000 ? 20 : 200));
}

class NcclComm final : public Communicator {
 public:
  NcclComm(int rank, int size, int device, std::shared_ptr<RendezvousStore> store, int64_t timeout_ms,
           std::string prefix)
      : api_(nccl::LoadApi()), rank_(rank), size_(size), device_(device), timeout_(timeout_ms),
        store_(std::move(store)), prefix_(std::move(prefix)) {}

  // Abort rather than finalize: ncclCommFinalize waits until the whole group is quiescent, which
  // deadlocks when the ranks of one process are destroyed one after another on one thread. Every
  // call has completed before it returned, so nothing of ours is in flight here.
  ~NcclComm() override {
    std::lock_guard<std::mutex> lock(mutex_);
    AbortAll();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  Memory memory() const override { return Memory::kCuda; }
  int device() const override { return device_; }

  void AllReduceSum(void* buf, int64_t count, DType dtype, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-reduce");
    if (trace) TraceCollective(trace, *this, static_cast<size_t>(count) * DTypeSize(dtype), group);
    const ncclDataType_t type = NcclSumType(dtype);
    Run("all-reduce", group, [&](ncclComm_t comm, cudaStream_t stream, size_t, const Op& op) {
      Check(api_.AllReduce(buf, buf, static_cast<size_t>(count), type, ncclSum, comm, stream), comm, "ncclAllReduce", op);
    });
  }

  // Uneven sizes: pad + compact rather than grouped send/recv. Boxing's segments differ by at most
  // one row, so the padding costs almost nothing, and the collective keeps NCCL's ring/tree/NVLS
  // algorithms and needs no point-to-point connections between every pair of ranks.
  void AllGather(const void* send, void* recv, const std::vector<size_t>& sizes, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-gather");
    if (trace) TraceCollective(trace, *this, SumOf(sizes), group);
    OF_REQUIRE(sizes.size() == group.size(), "all-gather: ", sizes.size(), " sizes for a group of ", group.size());
    Run("all-gather", group, [&](ncclComm_t comm, cudaStream_t stream, size_t me, const Op& op) {
      const size_t unit = nccl::PaddedUnit(sizes);
      if (unit == 0) return;
      if (nccl::AllEqual(sizes)) {
        Check(api_.AllGather(send, recv, unit, ncclUint8, comm, stream), comm, "ncclAllGather", op);
        return;
      }
      auto tmp = cuda::AllocateDeviceStorage(unit * sizes.size(), device_, stream);
      nccl::PaddedAllGather(send, recv, sizes, me, static_cast<char*>(tmp->data()), Ops(comm, stream, me, op, ncclUint8, 1));
    });
  }

  // Uneven counts: the same padding (nccl::PaddedReduceScatter).
  void ReduceScatterSum(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype,
                        const std::vector<int>& group) override {
    TraceScope trace("comm", "reduce-scatter");
    if (trace) TraceCollective(trace, *this, SumOf(counts, DTypeSize(dtype)), group);
    OF_REQUIRE(counts.size() == group.size(), "reduce-scatter: ", counts.size(), " counts for a group of ", group.size());
    const ncclDataType_t type = NcclSumType(dtype);
    const size_t es = DTypeSize(dtype);
    std::vector<size_t> bytes;
    for (int64_t c : counts) bytes.push_back(static_cast<size_t>(c) * es);
    Run("reduce-scatter", group, [&](ncclComm_t comm, cudaStream_t stream, size_t me, const Op& op) {
      const size_t unit = nccl::PaddedUnit(bytes);
      if (unit == 0) return;
      if (nccl::AllEqual(bytes)) {
        Check(api_.ReduceScatter(send, recv, unit / es, type, ncclSum, comm, stream), comm, "ncclReduceScatter", op);
        return;
      }
      auto tmp = cuda::AllocateDeviceStorage(unit * bytes.size(), device_, stream);
      nccl::PaddedReduceScatter(send, recv, bytes, me, static_cast<char*>(tmp->data()), Ops(comm, stream, me, op, type, es));
    });
  }

  // Grouped send/recv (what ncclAlltoAll does itself, without its equal-count restriction); the
  // rank's own segment is a device copy.
  void AllToAll(const void* send, const std::vector<size_t>& send_sizes, void* recv,
                const std::vector<size_t>& recv_sizes, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-to-all");
    if (trace) TraceCollective(trace, *this, SumOf(send_sizes), group);
    OF_REQUIRE(send_sizes.size() == group.size() && recv_sizes.size() == group.size(), "all-to-all: ",
               send_sizes.size(), " send and ", recv_sizes.size(), " receive sizes for a group of ", group.size());
    const size_t self = Index(group);
    OF_REQUIRE(send_sizes[self] == recv_sizes[self], "all-to-all: rank ", rank_, " sends itself ", send_sizes[self],
               " bytes but expects ", recv_sizes[self]);
    Run("all-to-all", group, [&](ncclComm_t comm, cudaStream_t stream, size_t me, const Op& op) {
      const std::vector<size_t> so = nccl::CompactOffsets(send_sizes), ro = nccl::CompactOffsets(recv_sizes);
      const char* s = static_cast<const char*>(send);
      char* r = static_cast<char*>(recv);
      if (send_sizes[me])
        OF_CUDA_CHECK(cudaMemcpyAsync(r + ro[me], s + so[me], send_sizes[me], cudaMemcpyDeviceToDevice, stream));
      GroupCall(comm, "ncclSend/ncclRecv", op, [&] {
        ncclResult_t res = ncclSuccess;
        for (size_t j = 0; j < group.size() && res == ncclSuccess; ++j) {
          if (j == me) continue;
          const int peer = static_cast<int>(j);
          if (send_sizes[j]) res = api_.Send(s + so[j], send_sizes[j], ncclUint8, peer, comm, stream);
          if (res == ncclSuccess && recv_sizes[j]) res = api_.Recv(r + ro[j], recv_sizes[j], ncclUint8, peer, comm, stream);
        }
        return res;
      });
    });
  }

  void Broadcast(void* buf, size_t bytes, int root_index, const std::vector<int>& group) override {
    TraceScope trace("comm", "broadcast");
    if (trace) TraceCollective(trace, *this, bytes, group);
    OF_REQUIRE(root_index >= 0 && static_cast<size_t>(root_index) < group.size(), "broadcast: root index ", root_index,
               " is outside group ", GroupText(group));
    Run("broadcast", group, [&](ncclComm_t comm, cudaStream_t stream, size_t, const Op& op) {
      Check(api_.Broadcast(buf, buf, bytes, ncclUint8, root_index, comm, stream), comm, "ncclBroadcast", op);
    });
  }

  // A pair of ranks gets its own communicator, so a send/recv involves only the two of them.
  void Send(const void* buf, size_t bytes, int peer) override {
    TraceScope trace("comm", "send");
    if (trace) TracePointToPoint(trace, *this, bytes, peer);
    Run("send", Pair(peer), [&](ncclComm_t comm, cudaStream_t stream, size_t me, const Op& op) {
      Check(api_.Send(buf, bytes, ncclUint8, static_cast<int>(1 - me), comm, stream), comm, "ncclSend", op);
    });
  }
  void Recv(void* buf, size_t bytes, int peer) override {
    TraceScope trace("comm", "recv");
    if (trace) TracePointToPoint(trace, *this, bytes, peer);
    Run("recv", Pair(peer), [&](ncclComm_t comm, cudaStream_t stream, size_t me, const Op& op) {
      Check(api_.Recv(buf, bytes, ncclUint8, static_cast<int>(1 - me), comm, stream), comm, "ncclRecv", op);
    });
  }

  void Barrier(const std::vector<int>& group) override {
    TraceScope trace("comm", "barrier");
    if (trace) TraceCollective(trace, *this, 0, group);
    Run("barrier", group, [&](ncclComm_t comm, cudaStream_t stream, size_t, const Op& op) {
      auto one = cuda::AllocateDeviceStorage(sizeof(int32_t), device_, stream);
      OF_CUDA_CHECK(cudaMemsetAsync(one->data(), 0, sizeof(int32_t), stream));
      Check(api_.AllReduce(one->data(), one->data(), 1, ncclInt32, ncclSum, comm, stream), comm, "ncclAllReduce", op);
    });
  }

  // Marks the rank aborted and tells the peers through the store; the communicators are aborted
  // now when no call is running, else by the running call within one poll interval (it owns them
  // until it returns).
  void Abort(const std::string& why) override {
    SetCause(why.empty() ? "aborted" : why);
    Publish(StrCat("rank ", rank_, ": ", Cause()));
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (lock.owns_lock()) AbortAll();
  }

 private:
  struct Op {
    const char* what;
    const std::vector<int>* group;
    Clock::time_point deadline;
    mutable Clock::time_point next_peer_check;  // the store is read at most every 100 ms
  };

  size_t Index(const std::vector<int>& group) const {
    std::set<int> seen;
    size_t me = group.size();
    for (size_t i = 0; i < group.size(); ++i) {
      OF_REQUIRE(group[i] >= 0 && group[i] < size_ && seen.insert(group[i]).second, "group ", GroupText(group),
                 " is not a list of distinct ranks below ", size_);
      if (group[i] == rank_) me = i;
    }
    OF_REQUIRE(me < group.size(), "rank ", rank_, " called a collective on group ", GroupText(group),
               " it is not part of");
    return me;
  }
  std::vector<int> Pair(int peer) const {
    OF_REQUIRE(peer >= 0 && peer < size_ && peer != rank_, "rank ", rank_, ": no peer rank ", peer, " (world of ",
               size_, ")");
    return {std::min(rank_, peer), std::max(rank_, peer)};
  }

  void SetCause(const std::string& cause) {
    std::lock_guard<std::mutex> lock(cause_mutex_);
    if (cause_.empty()) cause_ = cause;
    aborted_ = true;
  }
  std::string Cause() {
    std::lock_guard<std::mutex> lock(cause_mutex_);
    return cause_;
  }
  // The job-wide abort record: the first failing rank's cause, which every peer polls for while it
  // waits (a peer stuck in a collective with a dead rank stops at once instead of at its timeout).
  std::string AbortKey() const { return prefix_ + "abort"; }
  void Publish(const std::string& text) {
    try {
      if (!store_->Check(AbortKey())) {
        store_->Set(AbortKey(), std::vector<char>(text.begin(), text.end()));
      }
    } catch (const std::exception&) {
      // The store is gone too: the peers will run into their timeouts.
    }
  }
  // Whether a peer published an abort; adopts its cause.
  bool PeerAborted() {
    if (!store_->Check(AbortKey())) return false;
    std::vector<char> v = store_->Get(AbortKey(), 1);
    SetCause(StrCat("aborted by ", std::string(v.begin(), v.end())));
    return true;
  }
  void AbortAll() {
    if (comms_.empty()) return;
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device_);
    for (auto& entry : comms_) api_.CommAbort(entry.second);  // best effort: nothing to report to
    comms_.clear();
    cudaSetDevice(previous);
  }

  [[noreturn]] void Raise(ncclResult_t r, ncclComm_t comm, const char* call, const Op& op) {
    const char* last = api_.GetLastError(comm);
    throw Error(nccl::NcclErrorCode(r), nccl::NcclErrorMessage(rank_, StrCat(op.what, " (", call, ")"), *op.group, r,
                                                               api_.GetErrorString(r), last ? last : ""));
  }
  // Between polls: a requested abort or the deadline ends the wait.
  void CheckProgress(const Op& op, const char* waiting_for) {
    const Clock::time_point now = Clock::now();
    if (now >= op.next_peer_check) {
      op.next_peer_check = now + std::chrono::milliseconds(100);
      PeerAborted();
    }
    if (aborted_)
      Fail(ErrorCode::kRuntime, "rank ", rank_, ": ", op.what, " on group ", GroupText(*op.group), " aborted while ",
           waiting_for, ": ", Cause());
    if (Clock::now() > op.deadline)
      Fail(ErrorCode::kRuntime, "rank ", rank_, ": ", op.what, " on group ", GroupText(*op.group), " timed out after ",
           timeout_.count(), " ms waiting for ", waiting_for, " (a peer did not take part or is too slow); NCCL "
           "communicators aborted");
  }
  // A non-blocking communicator may answer ncclInProgress: poll its state until it settles.
  void WaitReady(ncclComm_t comm, const char* call, const Op& op) {
    for (int spin = 0;; ++spin) {
      ncclResult_t state = ncclInProgress;
      ncclResult_t q = api_.CommGetAsyncError(comm, &state);
      if (q != ncclSuccess) Raise(q, comm, "ncclCommGetAsyncError", op);
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) Raise(state, comm, call, op);
      CheckProgress(op, call);
      Pause(spin);
    }
  }
  void Check(ncclResult_t r, ncclComm_t comm, const char* call, const Op& op) {
    if (r == ncclSuccess) return;
    if (r == ncclInProgress && comm) return WaitReady(comm, call, op);
    Raise(r, comm, call, op);
  }
  // The primitives of nccl::PaddedAllGather / PaddedReduceScatter on this stream and communicator
  // (`type` and `es` are the reduce-scatter's element type and size).
  nccl::PaddedCollectiveOps Ops(ncclComm_t comm, cudaStream_t stream, size_t me, const Op& op, ncclDataType_t type,
                                size_t es) {
    nccl::PaddedCollectiveOps ops;
    ops.copy = [stream](void* dst, const void* src, size_t bytes) {
      OF_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    };
    ops.zero = [stream](void* dst, size_t bytes) { OF_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream)); };
    ops.all_gather = [this, comm, stream, me, &op](char* buf, size_t unit) {
      Check(api_.AllGather(buf + me * unit, buf, unit, ncclUint8, comm, stream), comm, "ncclAllGather", op);
    };
    ops.reduce_scatter = [this, comm, stream, me, type, es, &op](char* buf, size_t unit) {
      Check(api_.ReduceScatter(buf, buf + me * unit, unit / es, type, ncclSum, comm, stream), comm, "ncclReduceScatter",
            op);
    };
    return ops;
  }
  // ncclGroupStart ... ncclGroupEnd around `body`, the group always closed even when a call in it failed.
  template <typename Body>
  void GroupCall(ncclComm_t comm, const char* call, const Op& op, Body&& body) {
    Check(api_.GroupStart(), comm, "ncclGroupStart", op);
    ncclResult_t r = body();
    ncclResult_t end = api_.GroupEnd();
    Check(r, comm, call, op);
    Check(end, comm, "ncclGroupEnd", op);
  }
  // The stream reaches the event recorded after our work, unless NCCL reports an error first.
  void WaitStream(ncclComm_t comm, cudaStream_t stream, const Op& op) {
    cuda::Event done;
    done.Record(stream);
    for (int spin = 0; !done.Done(); ++spin) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t q = api_.CommGetAsyncError(comm, &state);
      if (q != ncclSuccess) Raise(q, comm, "ncclCommGetAsyncError", op);
      if (state != ncclSuccess && state != ncclInProgress) Raise(state, comm, "completion", op);
      CheckProgress(op, "the collective to complete on the device");
      Pause(spin);
    }
  }

  // The group's NCCL communicator, created on first use: member 0 draws a unique id and publishes
  // it; everyone initializes without blocking and polls until the communicator is ready.
  ncclComm_t Comm(const std::vector<int>& group, size_t me, const Op& op) {
    auto it = comms_.find(group);
    if (it != comms_.end()) return it->second;
    ncclUniqueId id;
    const std::string key = prefix_ + "id" + GroupText(group);
    if (me == 0) {
      Check(api_.GetUniqueId(&id), nullptr, "ncclGetUniqueId", op);
      store_->Set(key, std::vector<char>(id.internal, id.internal + sizeof id.internal));
    } else {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(op.deadline - Clock::now()).count();
      std::vector<char> v = store_->Get(key, std::max<int64_t>(left, 1));
      OF_CHECK(v.size() == sizeof id.internal, kRuntime, "rank ", rank_, ": the NCCL id of group ", GroupText(group),
               " in the store has ", v.size(), " bytes, not ", sizeof id.internal);
      std::memcpy(id.internal, v.data(), v.size());
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    ncclResult_t r = api_.CommInitRankConfig(&comm, static_cast<int>(group.size()), id, static_cast<int>(me), &config);
    try {
      Check(r, comm, "ncclCommInitRankConfig", op);
    } catch (...) {
      if (comm) api_.CommAbort(comm);
      throw;
    }
    comms_[group] = comm;
    return comm;
  }

  template <typename Fn>
  void Run(const char* what, const std::vector<int>& group, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t me = Index(group);
    if (aborted_ || PeerAborted()) {
      AbortAll();
      Fail(ErrorCode::kRuntime, "rank ", rank_, ": ", what, " on group ", GroupText(group),
           ": the NCCL communicator was aborted: ", Cause());
    }
    const Op op{what, &group, Clock::now() + timeout_, Clock::now() + std::chrono::milliseconds(100)};
    cuda::DeviceGuard guard(device_);
    cudaStream_t stream = cuda::CurrentStream();
    try {
      ncclComm_t comm = Comm(group, me, op);
      fn(comm, stream, me, op);
      WaitStream(comm, stream, op);
    } catch (const std::exception& e) {
      // Peers may be stuck in this collective: abort and tell them, so they fail too instead of hanging.
      SetCause(e.what());
      Publish(Cause());
      AbortAll();
      throw;
    }
  }

  const nccl::Api& api_;
  const int rank_, size_, device_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<RendezvousStore> store_;
  const std::string prefix_;
  std::mutex mutex_;  // one call at a time; guards comms_
  std::map<std::vector<int>, ncclComm_t> comms_;
  std::mutex cause_mutex_;
  std::string cause_;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::shared_ptr<Communicator> CreateNcclCommunicator(int rank, int world_size, int device,
                                                     std::shared_ptr<RendezvousStore> store, int64_t timeout_ms,
                                                     const std::string& prefix) {
  OF_REQUIRE(world_size >= 1 && rank >= 0 && rank < world_size, "NCCL rank ", rank, " of world size ", world_size,
             " is out of range");
  OF_REQUIRE(timeout_ms > 0, "the NCCL timeout must be positive");
  OF_REQUIRE(store != nullptr, "the NCCL communicator needs a rendezvous store");
  cuda::RequireDevice(device);
  return std::make_shared<NcclComm>(rank, world_size, device, std::move(store), timeout_ms, prefix);
}

std::shared_ptr<Communicator> CreateNcclCommunicatorFromEnv(int64_t timeout_ms) {
  const LaunchEnv env = ReadLaunchEnv(timeout_ms);
  std::string why;
  const int count = cuda::DeviceCount(&why);
  OF_CHECK(count > 0, kUnsupported, "no CUDA device: ", why, " (NCCL rank ", env.rank, " of ", env.world_size, ")");
  return CreateNcclCommunicator(env.rank, env.world_size, env.local_rank % count, JobStore(env), env.timeout_ms);
}

std::vector<std::shared_ptr<Communicator>> CreateNcclGroup(const std::vector<int>& devices, int64_t timeout_ms) {
  OF_REQUIRE(!devices.empty(), "an NCCL group needs at least one device");
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      OF_CHECK(devices[i] != devices[j], kUnsupported, "NCCL cannot run two ranks of one group on the same GPU "
               "(ranks ", j, " and ", i, " on device ", devices[i], "; NCCL rejects it as 'Duplicate GPU detected')");
  auto store = CreateInMemoryStore();
  std::vector<std::shared_ptr<Communicator>> comms;
  for (size_t i = 0; i < devices.size(); ++i)
    comms.push_back(CreateNcclCommunicator(static_cast<int>(i), static_cast<int>(devices.size()), devices[i], store,
                                           timeout_ms));
  return comms;
}

#else  // !ONEFLOW_HAVE_NCCL

std::shared_ptr<Communicator> CreateNcclCommunicator(int rank, int world_size, int, std::shared_ptr<RendezvousStore>,
                                                     int64_t, const std::string&) {
  Fail(ErrorCode::kUnsupported, "this build of OneFlow has no NCCL backend (build with CUDA and libnccl-dev); rank ",
       rank, " of ", world_size);
}
std::shared_ptr<Communicator> CreateNcclCommunicatorFromEnv(int64_t timeout_ms) {
  const LaunchEnv env = ReadLaunchEnv(timeout_ms);
  return CreateNcclCommunicator(env.rank, env.world_size, 0, nullptr, env.timeout_ms, "");
}
std::vector<std::shared_ptr<Communicator>> CreateNcclGroup(const std::vector<int>& devices, int64_t) {
  Fail(ErrorCode::kUnsupported, "this build of OneFlow has no NCCL backend (build with CUDA and libnccl-dev); ",
       devices.size(), " device(s) requested");
}

#endif  // ONEFLOW_HAVE_NCCL

}  // namespace oneflow
