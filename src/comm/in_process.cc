// The in-process backend: ranks are threads of one process and meet in shared memory. Each
// collective is two barriers: after the first every member's buffers are visible to all; each
// member then computes its own result from the others' inputs; the second keeps every input
// alive until all have read it.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "base/error.h"
#include "comm/collective_trace_internal.h"
#include "comm/communicator.h"

namespace oneflow {
namespace {

std::string GroupText(const std::vector<int>& group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i) s += (i ? "," : "") + std::to_string(group[i]);
  return s + "]";
}

// What one member deposits for a collective.
struct Slot {
  const void* send = nullptr;
  void* recv = nullptr;
  const std::vector<size_t>* sizes = nullptr;  // send sizes (all-to-all), per member
};

class World;

// A reusable barrier for one group, with the members' slots.
class Rendezvous {
 public:
  explicit Rendezvous(std::vector<int> group) : group_(std::move(group)), slots_(group_.size()),
                                                arrived_(group_.size(), 0) {}
  const std::vector<int>& group() const { return group_; }
  std::vector<Slot>& slots() { return slots_; }
  // Blocks until every member arrived (or the world aborted / the timeout passed: throws).
  void Wait(World& world, size_t index);

 private:
  std::vector<int> group_;
  std::vector<Slot> slots_;
  std::vector<char> arrived_;
  size_t count_ = 0;
  uint64_t generation_ = 0;
};

class World {
 public:
  World(int n, int64_t timeout_ms) : n_(n), timeout_ms_(timeout_ms) {}
  int size() const { return n_; }

  Rendezvous& Group(const std::vector<int>& group, int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    CheckAborted();
    OF_REQUIRE(!group.empty(), "collective on an empty group");
    bool member = false;
    for (int r : group) {
      OF_REQUIRE(r >= 0 && r < n_, "collective group ", GroupText(group), " names rank ", r, " of a ", n_,
                 "-rank job");
      member |= r == rank;
    }
    OF_REQUIRE(member, "rank ", rank, " called a collective on group ", GroupText(group), " it is not part of");
    auto& slot = groups_[group];
    if (!slot) slot = std::make_unique<Rendezvous>(group);
    return *slot;
  }

  void Abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.empty()) aborted_ = why.empty() ? "aborted" : why;
    cv_.notify_all();
  }
  void CheckAborted() const {
    if (!aborted_.empty()) Fail(ErrorCode::kRuntime, "collective aborted: ", aborted_);
  }

  // Point-to-point mailboxes, one FIFO per (from, to).
  void Send(int from, int to, const void* buf, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    CheckAborted();
    OF_REQUIRE(to >= 0 && to < n_ && to != from, "rank ", from, " cannot send to rank ", to, " of a ", n_, "-rank job");
    const char* p = static_cast<const char*>(buf);
    mail_[{from, to}].emplace_back(p, p + bytes);
    cv_.notify_all();
  }
  void Recv(int from, int to, void* buf, size_t bytes) {
    OF_REQUIRE(from >= 0 && from < n_ && to != from, "rank ", to, " cannot receive from rank ", from, " of a ", n_,
               "-rank job");
    std::unique_lock<std::mutex> lock(mutex_);
    auto& box = mail_[{from, to}];
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms_), [&] { return !box.empty() || !aborted_.empty(); }))
      Fail(ErrorCode::kRuntime, "rank ", to, " timed out after ", timeout_ms_, " ms waiting for a message from rank ",
           from, " (lost rank ", from, ")");
    CheckAborted();
    OF_CHECK(box.front().size() == bytes, kRuntime, "rank ", to, " expected ", bytes, " bytes from rank ", from,
             ", got ", box.front().size());
    std::memcpy(buf, box.front().data(), bytes);
    box.pop_front();
  }

 private:
  friend class Rendezvous;
  const int n_;
  const int64_t timeout_ms_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string aborted_;
  std::map<std::vector<int>, std::unique_ptr<Rendezvous>> groups_;
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> mail_;
};

void Rendezvous::Wait(World& world, size_t index) {
  std::unique_lock<std::mutex> lock(world.mutex_);
  world.CheckAborted();
  uint64_t gen = generation_;
  arrived_[index] = 1;
  if (++count_ == group_.size()) {
    count_ = 0;
    std::fill(arrived_.begin(), arrived_.end(), 0);
    ++generation_;
    world.cv_.notify_all();
    return;
  }
  bool done = world.cv_.wait_for(lock, std::chrono::milliseconds(world.timeout_ms_),
                                 [&] { return generation_ != gen || !world.aborted_.empty(); });
  world.CheckAborted();
  if (!done) {
    std::string missing;
    for (size_t i = 0; i < group_.size(); ++i)
      if (!arrived_[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(group_[i]);
    std::string why = StrCat("rank ", group_[index], " timed out after ", world.timeout_ms_,
                             " ms in a collective on group ", GroupText(group_), "; lost rank(s): ", missing);
    world.aborted_ = why;
    world.cv_.notify_all();
    Fail(ErrorCode::kRuntime, why);
  }
}

template <typename T>
void SumInto(T* acc, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<T>(acc[i] + x[i]);
}

// acc (zero-initialized by the caller) += each member's segment, in group order.
void SumSegments(const std::vector<Slot>& slots, size_t byte_offset, int64_t count, DType dtype, void* out) {
  for (const Slot& s : slots) {
    const char* src = static_cast<const char*>(s.send) + byte_offset;
    switch (dtype) {
      case DType::kFloat32: SumInto(static_cast<float*>(out), reinterpret_cast<const float*>(src), count); break;
      case DType::kFloat64: SumInto(static_cast<double*>(out), reinterpret_cast<const double*>(src), count); break;
      case DType::kInt32: SumInto(static_cast<int32_t*>(out), reinterpret_cast<const int32_t*>(src), count); break;
      case DType::kInt64: SumInto(static_cast<int64_t*>(out), reinterpret_cast<const int64_t*>(src), count); break;
      default: Fail(ErrorCode::kUnsupported, "sum collectives support float32/64 and int32/64, not ", DTypeName(dtype));
    }
  }
}

class InProcessComm final : public Communicator {
 public:
  InProcessComm(std::shared_ptr<World> world, int rank) : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_->size(); }
  std::string backend() const override { return "in-process"; }

  void AllReduceSum(void* buf, int64_t count, DType dtype, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-reduce");
    if (trace) TraceCollective(trace, *this, static_cast<size_t>(count) * DTypeSize(dtype), group);
    size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
    std::vector<char> sum(bytes, 0);
    Collective(group, Slot{buf, nullptr, nullptr}, [&](std::vector<Slot>& slots, size_t) {
      SumSegments(slots, 0, count, dtype, sum.data());
    });
    std::memcpy(buf, sum.data(), bytes);  // after the second barrier: nobody reads `buf` any more
  }

  void AllGather(const void* send, void* recv, const std::vector<size_t>& sizes, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-gather");
    if (trace) TraceCollective(trace, *this, SumOf(sizes), group);
    OF_REQUIRE(sizes.size() == group.size(), "AllGather: ", sizes.size(), " sizes for a group of ", group.size());
    Collective(group, Slot{send, recv, nullptr}, [&](std::vector<Slot>& slots, size_t) {
      size_t off = 0;
      for (size_t i = 0; i < slots.size(); ++i) {
        char* to = static_cast<char*>(recv) + off;
        if (to != slots[i].send) std::memcpy(to, slots[i].send, sizes[i]);  // else in place
        off += sizes[i];
      }
    });
  }

  void ReduceScatterSum(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype,
                        const std::vector<int>& group) override {
    TraceScope trace("comm", "reduce-scatter");
    if (trace) TraceCollective(trace, *this, SumOf(counts, DTypeSize(dtype)), group);
    OF_REQUIRE(counts.size() == group.size(), "ReduceScatter: ", counts.size(), " counts for a group of ", group.size());
    Collective(group, Slot{send, recv, nullptr}, [&](std::vector<Slot>& slots, size_t me) {
      int64_t before = 0;
      for (size_t i = 0; i < me; ++i) before += counts[i];
      std::memset(recv, 0, static_cast<size_t>(counts[me]) * DTypeSize(dtype));
      SumSegments(slots, static_cast<size_t>(before) * DTypeSize(dtype), counts[me], dtype, recv);
    });
  }

  void AllToAll(const void* send, const std::vector<size_t>& send_sizes, void* recv,
                const std::vector<size_t>& recv_sizes, const std::vector<int>& group) override {
    TraceScope trace("comm", "all-to-all");
    if (trace) TraceCollective(trace, *this, SumOf(send_sizes), group);
    OF_REQUIRE(send_sizes.size() == group.size() && recv_sizes.size() == group.size(), "AllToAll: sizes for ",
               send_sizes.size(), "/", recv_sizes.size(), " members, group of ", group.size());
    Collective(group, Slot{send, recv, &send_sizes}, [&](std::vector<Slot>& slots, size_t me) {
      size_t off = 0;
      for (size_t i = 0; i < slots.size(); ++i) {
        const std::vector<size_t>& theirs = *slots[i].sizes;
        size_t src_off = 0;
        for (size_t j = 0; j < me; ++j) src_off += theirs[j];
        OF_CHECK(theirs[me] == recv_sizes[i], kRuntime, "AllToAll: rank ", group[i], " sends ", theirs[me],
                 " bytes to rank ", group[me], " which expects ", recv_sizes[i]);
        std::memcpy(static_cast<char*>(recv) + off, static_cast<const char*>(slots[i].send) + src_off, recv_sizes[i]);
        off += recv_sizes[i];
      }
    });
  }

  void Broadcast(void* buf, size_t bytes, int root_index, const std::vector<int>& group) override {
    TraceScope trace("comm", "broadcast");
    if (trace) TraceCollective(trace, *this, bytes, group);
    OF_REQUIRE(root_index >= 0 && root_index < static_cast<int>(group.size()), "Broadcast root index ", root_index,
               " outside the group ", GroupText(group));
    Collective(group, Slot{buf, buf, nullptr}, [&](std::vector<Slot>& slots, size_t me) {
      if (static_cast<int>(me) != root_index) std::memcpy(buf, slots[static_cast<size_t>(root_index)].send, bytes);
    });
  }

  void Send(const void* buf, size_t bytes, int peer) override {
    TraceScope trace("comm", "send");
    if (trace) TracePointToPoint(trace, *this, bytes, peer);
    world_->Send(rank_, peer, buf, bytes);
  }
  void Recv(void* buf, size_t bytes, int peer) override {
    TraceScope trace("comm", "recv");
    if (trace) TracePointToPoint(trace, *this, bytes, peer);
    world_->Recv(peer, rank_, buf, bytes);
  }
  void Barrier(const std::vector<int>& group) override {
    TraceScope trace("comm", "barrier");
    if (trace) TraceCollective(trace, *this, 0, group);
    Collective(group, Slot{}, [](std::vector<Slot>&, size_t) {});
  }
  void Abort(const std::string& why) override { world_->Abort(why); }

 private:
  template <typename Fn>
  void Collective(const std::vector<int>& group, Slot mine, Fn&& compute) {
    Rendezvous& rv = world_->Group(group, rank_);
    size_t me = static_cast<size_t>(std::find(group.begin(), group.end(), rank_) - group.begin());
    rv.slots()[me] = mine;
    rv.Wait(*world_, me);
    compute(rv.slots(), me);
    rv.Wait(*world_, me);
  }

  std::shared_ptr<World> world_;
  int rank_;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> CreateInProcessGroup(int world_size, int64_t timeout_ms) {
  OF_REQUIRE(world_size >= 1 && world_size <= 4096, "in-process world size must be in [1, 4096], got ", world_size);
  OF_REQUIRE(timeout_ms > 0, "collective timeout must be positive, got ", timeout_ms, " ms");
  auto world = std::make_shared<World>(world_size, timeout_ms);
  std::vector<std::shared_ptr<Communicator>> comms;
  for (int r = 0; r < world_size; ++r) comms.push_back(std::make_shared<InProcessComm>(world, r));
  return comms;
}

}  // namespace oneflow
