// The Gloo backend: one process per rank, TCP pairs, rendezvous through the job's store (the TCP
// store rank 0 serves, or a Gloo FileStore in a shared directory: launch_env.h's JobStore). Each
// group of ranks gets its own Gloo context, connected on first use (every member reaches its
// first collective on a group in the same order, so the lazy rendezvous is SPMD-safe). A group
// whose members share a host also joins a shared-memory segment (comm/shm_group.h) at that
// point, agreed over its Gloo context; its collectives then run there; TCP carries send/recv and
// every group spanning hosts.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "base/error.h"
#include "comm/collective_trace_internal.h"
#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "comm/shm_group.h"

#ifdef ONEFLOW_WITH_GLOO
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace oneflow {

#ifdef ONEFLOW_WITH_GLOO
namespace {

// The job's store as Gloo's rendezvous sees stores. Failures leave as std::runtime_error, not
// Error, so that the collective that met them reports which ranks were lost (GlooComm::Run).
class GlooStoreView final : public gloo::rendezvous::Store {
 public:
  GlooStoreView(std::shared_ptr<RendezvousStore> store, std::chrono::milliseconds timeout)
      : store_(std::move(store)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    AsRuntimeError([&] { store_->Set(key, data); });
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<char> value;
    AsRuntimeError([&] { value = store_->Get(key, timeout_.count()); });
    return value;
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (const std::string& key : keys) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      AsRuntimeError([&] { store_->Get(key, std::max<int64_t>(left.count(), 1)); });
    }
  }

 private:
  template <typename Fn>
  static void AsRuntimeError(Fn&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      throw std::runtime_error(e.what());
    }
  }

  const std::shared_ptr<RendezvousStore> store_;
  const std::chrono::milliseconds timeout_;
};

std::string GroupText(const std::vector<int>& group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i) s += (i ? "," : "") + std::to_string(group[i]);
  return s + "]";
}

class GlooComm final : public Communicator {
 public:
  GlooComm(int rank, int size, std::shared_ptr<RendezvousStore> store, const std::string& host, int64_t timeout_ms)
      : rank_(rank), size_(size), timeout_(timeout_ms), store_(std::move(store)), gloo_store_(store_, timeout_) {
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    device_ = gloo::transport::tcp::CreateDevice(attr);
    // Every rank records its host and pid so that, after a failure, peers on the same host can
    // name the dead even where the store cannot tell (a file store).
    std::string pid = std::to_string(getpid()), where = ShmHostIdentity();
    store_->Set("host/" + std::to_string(rank_), std::vector<char>(where.begin(), where.end()));
    store_->Set("pid/" + std::to_string(rank_), std::vector<char>(pid.begin(), pid.end()));
  }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string backend() const override { return "gloo"; }

  void AllReduceSum(void* buf, int64_t count, DType dtype, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-reduce");
    if (trace) TraceCollective(trace, *this, static_cast<size_t>(count) * DTypeSize(dtype), group);
    Run("all-reduce", group, [&](const std::shared_ptr<gloo::Context>& ctx) {
      if (ShmGroup* shm = Shm(group, ctx)) return shm->AllReduceSum(buf, count, dtype);
      gloo::AllreduceOptions o(ctx);
      o.setTimeout(timeout_);
      switch (dtype) {
        case DType::kFloat32: Reduce<float>(o, buf, count); break;
        case DType::kFloat64: Reduce<double>(o, buf, count); break;
        case DType::kInt32: Reduce<int32_t>(o, buf, count); break;
        case DType::kInt64: Reduce<int64_t>(o, buf, count); break;
        default: Fail(ErrorCode::kUnsupported, "sum collectives support float32/64 and int32/64, not ", DTypeName(dtype));
      }
      gloo::allreduce(o);
    });
  }

  void AllGather(const void* send, void* recv, const std::vector<size_t>& sizes, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-gather");
    if (trace) TraceCollective(trace, *this, SumOf(sizes), group);
    Run("all-gather", group, [&](const std::shared_ptr<gloo::Context>& ctx) {
      if (ShmGroup* shm = Shm(group, ctx)) return shm->AllGather(send, recv, sizes);
      gloo::AllgathervOptions o(ctx);
      o.setTimeout(timeout_);
      size_t before = 0;
      for (size_t m = 0; m < Index(group); ++m) before += sizes[m];
      if (send != static_cast<char*>(recv) + before)  // else in place: Gloo gathers around our segment
        o.setInput(static_cast<uint8_t*>(const_cast<void*>(send)), sizes[Index(group)]);
      o.setOutput(static_cast<uint8_t*>(recv), sizes);
      gloo::allgatherv(o);
    });
  }

  // Over TCP: Gloo's reduce-scatter is an old-style algorithm class; a full all-reduce of a copy
  // and taking our segment is correct and simple (2x the bytes of a ring reduce-scatter).
  void ReduceScatterSum(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype,
                        const std::vector<int>& group) override {
    TraceScope trace("comm", "reduce-scatter");
    if (trace) TraceCollective(trace, *this, SumOf(counts, DTypeSize(dtype)), group);
    bool done = false;
    Run("reduce-scatter", group, [&](const std::shared_ptr<gloo::Context>& ctx) {
      if (ShmGroup* shm = Shm(group, ctx)) {
        shm->ReduceScatterSum(send, recv, counts, dtype);
        done = true;
      }
    });
    if (done) return;
    int64_t total = 0, before = 0;
    size_t me = Index(group);
    for (size_t i = 0; i < counts.size(); ++i) {
      if (i < me) before += counts[i];
      total += counts[i];
    }
    const size_t es = DTypeSize(dtype);
    std::vector<char> tmp(static_cast<size_t>(total) * es);
    std::memcpy(tmp.data(), send, tmp.size());
    AllReduceSum(tmp.data(), total, dtype, group);
    std::memcpy(recv, tmp.data() + static_cast<size_t>(before) * es, static_cast<size_t>(counts[me]) * es);
  }

  void AllToAll(const void* send, const std::vector<size_t>& send_sizes, void* recv,
                const std::vector<size_t>& recv_sizes, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-to-all");
    if (trace) TraceCollective(trace, *this, SumOf(send_sizes), group);
    Run("all-to-all", group, [&](const std::shared_ptr<gloo::Context>& ctx) {
      if (ShmGroup* shm = Shm(group, ctx)) return shm->AllToAll(send, send_sizes, recv, recv_sizes);
      gloo::AlltoallvOptions o(ctx);
      o.setTimeout(timeout_);
      o.setInput(static_cast<uint8_t*>(const_cast<void*>(send)), std::vector<int64_t>(send_sizes.begin(), send_sizes.end()));
      o.setOutput(static_cast<uint8_t*>(recv), std::vector<int64_t>(recv_sizes.begin(), recv_sizes.end()));
      gloo::alltoallv(o);
    });
  }

  void Broadcast(void* buf, size_t bytes, int root_index, const std::vector<int>& group) override {
    TraceScope trace("comm", "broadcast");
    if (trace) TraceCollective(trace, *this, bytes, group);
    Run("broadcast", group, [&](const std::shared_ptr<gloo::Context>& ctx) {
      if (ShmGroup* shm = Shm(group, ctx)) return shm->Broadcast(buf, bytes, root_index);
      gloo::BroadcastOptions o(ctx);
      o.setTimeout(timeout_);
      o.setOutput(static_cast<uint8_t*>(buf), bytes);
      o.setRoot(root_index);
      gloo::broadcast(o);
    });
  }

  void Send(const void* buf, size_t bytes, int peer) override {
    TraceScope trace("comm", "send");
    if (trace) TracePointToPoint(trace, *this, bytes, peer);
    Run("send", World(), [&](const std::shared_ptr<gloo::Context>& ctx) {
      auto ub = ctx->createUnboundBuffer(const_cast<void*>(buf), bytes);
      ub->send(peer, Slot(rank_, peer));
      OF_CHECK(ub->waitSend(timeout_), kRuntime, "send to rank ", peer, " timed out");
    });
  }
  void Recv(void* buf, size_t bytes, int peer) override {
    TraceScope trace("comm", "recv");
    if (trace) TracePointToPoint(trace, *this, bytes, peer);
    Run("recv", World(), [&](const std::shared_ptr<gloo::Context>& ctx) {
      auto ub = ctx->createUnboundBuffer(buf, bytes);
      ub->recv(peer, Slot(peer, rank_));
      OF_CHECK(ub->waitRecv(timeout_), kRuntime, "receive from rank ", peer, " timed out");
    });
  }
  void Barrier(const std::vector<int>& group) override {
    TraceScope trace("comm", "barrier");
    if (trace) TraceCollective(trace, *this, 0, group);
    Run("barrier", group, [&](const std::shared_ptr<gloo::Context>& ctx) {
      if (ShmGroup* shm = Shm(group, ctx)) return shm->Barrier();
      gloo::BarrierOptions o(ctx);
      o.setTimeout(timeout_);
      gloo::barrier(o);
    });
  }
  void Abort(const std::string& why) override {
    {  // peers waiting in a shared-memory collective stop at once (not only after the timeout)
      std::lock_guard<std::mutex> lock(shm_mutex_);
      for (auto& [group, shm] : shm_)
        if (shm) shm->Abort();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = why.empty() ? "aborted" : why;
  }

 private:
  template <typename T>
  static void Reduce(gloo::AllreduceOptions& o, void* buf, int64_t count) {
    o.setOutput(static_cast<T*>(buf), static_cast<size_t>(count));
    void (*fn)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
    o.setReduceFunction(fn);
  }
  std::vector<int> World() const {
    std::vector<int> w;
    for (int r = 0; r < size_; ++r) w.push_back(r);
    return w;
  }
  size_t Index(const std::vector<int>& group) const {
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == rank_) return i;
    Fail(ErrorCode::kInvalidArgument, "rank ", rank_, " called a collective on group ", GroupText(group),
         " it is not part of");
  }
  // Send/recv slots: one per ordered pair, advanced per message.
  uint64_t Slot(int from, int to) { return (static_cast<uint64_t>(from) * 4096 + to) * 65536 + (seq_[{from, to}]++ % 65536); }

  std::shared_ptr<gloo::Context> Context(const std::vector<int>& group) {
    auto it = contexts_.find(group);
    if (it != contexts_.end()) return it->second;
    auto ctx = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(Index(group)), static_cast<int>(group.size()));
    ctx->setTimeout(timeout_);
    gloo::rendezvous::PrefixStore prefix("group" + GroupText(group), gloo_store_);
    ctx->connectFullMesh(prefix, device_);
    contexts_[group] = ctx;
    return ctx;
  }

  // The group's shared-memory segment, joined on its first collective when every member runs on
  // this host (null: the group stays on TCP). The members agree over the group's Gloo context.
  ShmGroup* Shm(const std::vector<int>& group, const std::shared_ptr<gloo::Context>& ctx) {
    {
      std::lock_guard<std::mutex> lock(shm_mutex_);
      auto it = shm_.find(group);
      if (it != shm_.end()) return it->second.get();
    }
    std::unique_ptr<ShmGroup> shm;
    if (group.size() > 1 && ShmTransportEnabled()) {
      constexpr size_t kIdBytes = 512;
      std::string id = ShmHostIdentity().substr(0, kIdBytes);
      std::vector<char> mine(kIdBytes, 0), all(kIdBytes * group.size());
      std::memcpy(mine.data(), id.data(), id.size());
      gloo::AllgathervOptions g(ctx);
      g.setTimeout(timeout_);
      g.setInput(reinterpret_cast<uint8_t*>(mine.data()), kIdBytes);
      g.setOutput(reinterpret_cast<uint8_t*>(all.data()), std::vector<size_t>(group.size(), kIdBytes));
      gloo::allgatherv(g);
      bool one_host = true;
      for (size_t m = 0; m < group.size(); ++m) one_host &= std::memcmp(all.data() + m * kIdBytes, mine.data(), kIdBytes) == 0;
      ShmRendezvous rv;
      rv.broadcast_from_first = [&](void* buf, size_t bytes) {
        gloo::BroadcastOptions o(ctx);
        o.setTimeout(timeout_);
        o.setOutput(static_cast<uint8_t*>(buf), bytes);
        o.setRoot(0);
        gloo::broadcast(o);
      };
      rv.all = [&](bool ok) {
        int32_t failed = ok ? 0 : 1;
        gloo::AllreduceOptions o(ctx);
        o.setTimeout(timeout_);
        Reduce<int32_t>(o, &failed, 1);
        gloo::allreduce(o);
        return failed == 0;
      };
      if (one_host) shm = ShmGroup::Join(static_cast<int>(Index(group)), group, ShmSlotBytes(), timeout_.count(), rv);
    }
    std::lock_guard<std::mutex> lock(shm_mutex_);
    return (shm_[group] = std::move(shm)).get();
  }

  // Ranks of `group` that were lost: the store saw their process go without leaving, or they
  // never joined; where the store cannot tell (a file store), those whose recorded process died
  // on this host without reporting a failure of its own (ranks that failed because of a lost peer
  // record "failed/<rank>" first). A peer's connection closes while it exits, so this waits up to
  // a second for the exit to show. Empty when none is known.
  std::string LostRanks(const std::vector<int>& group) {
    std::string lost;
    const std::string here = ShmHostIdentity();
    for (int attempt = 0; attempt < 20 && lost.empty(); ++attempt) {
      if (attempt) usleep(50000);
      lost = store_->LostRanks(group);
      if (!lost.empty()) {  // a host's ranks go together: give the others' exits a moment to show
        usleep(200000);
        std::string later = store_->LostRanks(group);
        return later.empty() ? lost : later;
      }
      for (int r : group) {
        if (r == rank_) continue;
        std::string id = std::to_string(r);
        if (!store_->Check("pid/" + id)) {
          lost += (lost.empty() ? "" : ", ") + id + " (never joined)";
          continue;
        }
        std::vector<char> host = store_->Get("host/" + id, timeout_.count());
        if (std::string(host.begin(), host.end()) != here) continue;  // its process is not ours to see
        std::vector<char> pid = store_->Get("pid/" + id, timeout_.count());
        long p = std::strtol(std::string(pid.begin(), pid.end()).c_str(), nullptr, 10);
        if (p > 0 && ProcessExited(p) && !store_->Check("failed/" + id)) lost += (lost.empty() ? "" : ", ") + id;
      }
    }
    return lost;
  }

  template <typename Fn>
  void Run(const char* what, const std::vector<int>& group, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_.empty()) Fail(ErrorCode::kRuntime, "collective aborted: ", aborted_);
    Index(group);
    try {
      fn(Context(group));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string dead;
      try {
        store_->Set("failed/" + std::to_string(rank_), std::vector<char>{'1'});
        dead = LostRanks(group);
      } catch (const std::exception& store_failure) {  // the store is gone too (its host was lost)
        dead = store_->LostRanks(group);
      }
      aborted_ = StrCat(what, " on group ", GroupText(group), " failed: ", e.what());
      Fail(ErrorCode::kRuntime, "rank ", rank_, ": ", what, " on group ", GroupText(group), " failed",
           dead.empty() ? std::string(" (a peer failed or timed out)") : "; lost rank(s): " + dead, ": ", e.what());
    }
  }

  const int rank_, size_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<RendezvousStore> store_;
  GlooStoreView gloo_store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::map<std::vector<int>, std::shared_ptr<gloo::Context>> contexts_;
  std::map<std::pair<int, int>, uint64_t> seq_;
  std::mutex mutex_;      // one collective at a time
  std::mutex shm_mutex_;  // shm_ (Abort reaches it while a collective waits)
  std::map<std::vector<int>, std::unique_ptr<ShmGroup>> shm_;
  std::string aborted_;
};

}  // namespace
#endif  // ONEFLOW_WITH_GLOO

#ifdef ONEFLOW_WITH_GLOO
namespace {

// Gloo's FileStore with its (protected) non-waiting key check made reachable.
struct CheckableFileStore : gloo::rendezvous::FileStore {
  using gloo::rendezvous::FileStore::FileStore;
  using gloo::rendezvous::FileStore::check;
};

class GlooFileStore final : public RendezvousStore {
 public:
  explicit GlooFileStore(const std::string& dir) : store_(MakeDir(dir)) {}
  void Set(const std::string& key, const std::vector<char>& value) override {
    try {
      store_.set(key, value);
    } catch (const std::exception& e) {
      Fail(ErrorCode::kIo, "cannot write rendezvous key '", key, "': ", e.what());
    }
  }
  std::vector<char> Get(const std::string& key, int64_t timeout_ms) override {
    try {
      store_.wait({key}, std::chrono::milliseconds(timeout_ms));
      return store_.get(key);
    } catch (const std::exception& e) {
      Fail(ErrorCode::kRuntime, "rendezvous key '", key, "' was not published within ", timeout_ms, " ms: ", e.what());
    }
  }
  bool Check(const std::string& key) override { return store_.check({key}); }

 private:
  static const std::string& MakeDir(const std::string& dir) {
    OF_CHECK(mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST, kIo, "cannot create the rendezvous directory ", dir, ": ",
             std::strerror(errno));
    return dir;
  }
  CheckableFileStore store_;
};

}  // namespace
#endif

std::shared_ptr<RendezvousStore> CreateFileStore(const std::string& dir) {
#ifdef ONEFLOW_WITH_GLOO
  return std::make_shared<GlooFileStore>(dir);
#else
  Fail(ErrorCode::kUnsupported, "this build of OneFlow has no Gloo (install libgloo-dev and rebuild): no file store at ",
       dir);
#endif
}

namespace {

// One communicator per process and job: a second rendezvous in the same store would collide with
// the first one's keys, so every session and trainer of this process shares it.
std::mutex g_by_job_mutex;
std::map<std::string, std::shared_ptr<Communicator>>& CommunicatorsByJob() {
  static std::map<std::string, std::shared_ptr<Communicator>> by_job;
  return by_job;
}

}  // namespace

void ReleaseGlooCommunicators() {
  std::map<std::string, std::shared_ptr<Communicator>> released;
  {
    std::lock_guard<std::mutex> lock(g_by_job_mutex);
    released.swap(CommunicatorsByJob());
  }
}  // the communicators nothing else holds close here

std::shared_ptr<Communicator> CreateGlooCommunicatorFromEnv(int64_t timeout_ms) {
  const LaunchEnv env = ReadLaunchEnv(timeout_ms);
#ifdef ONEFLOW_WITH_GLOO
  std::lock_guard<std::mutex> lock(g_by_job_mutex);
  auto& by_job = CommunicatorsByJob();
  const std::string job = JobKey(env);
  auto it = by_job.find(job);
  if (it != by_job.end()) return it->second;
  return by_job[job] = std::make_shared<GlooComm>(env.rank, env.world_size, JobStore(env), env.host, env.timeout_ms);
#else
  Fail(ErrorCode::kUnsupported, "this build of OneFlow has no Gloo backend (install libgloo-dev and rebuild); rank ",
       env.rank, " of ", env.world_size, " cannot join ", JobKey(env));
#endif
}

}  // namespace oneflow
