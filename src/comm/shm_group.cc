// The shared-memory transport (shm_group.h). Layout of a segment: a header (magic, member count,
// slot size, the abort word, and per member an arrival counter and its pid, each on its own cache
// line), then one slot of slot_bytes per member. Members meet at barriers made of the arrival
// counters: a member bumps its counter and wakes its waiters (a futex on the shared word); it
// waits for each peer's counter to reach its own, sleeping in slices so that it notices an abort,
// a peer's exit or the deadline.
#include "comm/shm_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "base/error.h"
#include "comm/launch_env.h"

namespace oneflow {

namespace {

constexpr uint64_t kMagic = 0x6f6e65666c6f7731ULL;  // "oneflow1"
constexpr size_t kPage = 4096;
constexpr const char* kPrefix = "oneflow-shm-";

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

void FutexWait(std::atomic<uint32_t>* word, uint32_t seen, int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}
void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// The block of member `m` when `n` elements are split over `members` (the first n % members get one more).
std::pair<int64_t, int64_t> Share(int64_t n, int64_t members, int64_t m) {
  const int64_t q = n / members, rem = n % members;
  return {m * q + std::min(m, rem), q + (m < rem ? 1 : 0)};
}

// Copies `len` bytes from src + src_off to dst + dst_off (CopyBytes: disjoint, MoveBytes: may
// overlap). A zero-length copy touches neither pointer: a member with nothing to send or receive
// may hand in null buffers (an empty vector's data()), and memcpy from or to null, or offsetting
// null, is undefined even when no byte is copied.
void CopyBytes(void* dst, size_t dst_off, const void* src, size_t src_off, size_t len) {
  if (len == 0) return;
  std::memcpy(static_cast<char*>(dst) + dst_off, static_cast<const char*>(src) + src_off, len);
}
void MoveBytes(void* dst, size_t dst_off, const void* src, size_t src_off, size_t len) {
  if (len == 0) return;
  std::memmove(static_cast<char*>(dst) + dst_off, static_cast<const char*>(src) + src_off, len);
}

// dst = s[0] + s[1] + ... + s[n-1], added in that order (dst is none of the sources).
template <typename T>
void SumInOrder(T* dst, const T* const* s, int n, int64_t len) {
  if (len <= 0) return;  // dst and the sources may be null then
  if (n == 1) {
    std::memcpy(dst, s[0], static_cast<size_t>(len) * sizeof(T));
    return;
  }
  const T* a = s[0];
  const T* b = s[1];
  for (int64_t i = 0; i < len; ++i) dst[i] = a[i] + b[i];
  for (int r = 2; r < n; ++r) {
    const T* c = s[r];
    for (int64_t i = 0; i < len; ++i) dst[i] += c[i];
  }
}

void Sum(DType dtype, void* dst, const std::vector<const char*>& srcs, int64_t len) {
  const int n = static_cast<int>(srcs.size());
  switch (dtype) {
    case DType::kFloat32: SumInOrder(static_cast<float*>(dst), reinterpret_cast<const float* const*>(srcs.data()), n, len); break;
    case DType::kFloat64: SumInOrder(static_cast<double*>(dst), reinterpret_cast<const double* const*>(srcs.data()), n, len); break;
    case DType::kInt32: SumInOrder(static_cast<int32_t*>(dst), reinterpret_cast<const int32_t* const*>(srcs.data()), n, len); break;
    case DType::kInt64: SumInOrder(static_cast<int64_t*>(dst), reinterpret_cast<const int64_t* const*>(srcs.data()), n, len); break;
    default: Fail(ErrorCode::kInternal, "unchecked dtype ", DTypeName(dtype));
  }
}

size_t SumElementSize(DType dtype) {
  OF_CHECK(dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kInt32 || dtype == DType::kInt64,
           kUnsupported, "sum collectives support float32/64 and int32/64, not ", DTypeName(dtype));
  return DTypeSize(dtype);
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string Link(const std::string& path) {
  char buf[256] = {0};
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Segments named after a creator that no longer runs: left by a job that crashed while joining.
void RemoveStaleSegments() {
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  const size_t plen = std::strlen(kPrefix);
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, plen) != 0) continue;
    const long pid = std::strtol(e->d_name + plen, nullptr, 10);
    if (pid > 0 && ProcessExited(pid)) shm_unlink(("/" + std::string(e->d_name)).c_str());
  }
  closedir(d);
}

}  // namespace

struct alignas(64) MemberState {
  std::atomic<uint32_t> arrivals;
  int32_t pid;
};

struct ShmSegmentHeader {
  uint64_t magic;
  uint64_t members;
  uint64_t slot_bytes;
  alignas(64) std::atomic<int32_t> aborted_by;  // -1, or the global rank that aborted
  MemberState member[1];                        // `members` of them
};

namespace {
size_t HeaderBytes(size_t members) {
  return RoundUp(sizeof(ShmSegmentHeader) + sizeof(MemberState) * members, kPage);
}
}  // namespace

std::string ShmHostIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "|" + ReadSmallFile("/proc/sys/kernel/random/boot_id") + "|" +
         Link("/proc/self/ns/mnt") + "|" + Link("/proc/self/ns/pid");
}

bool ShmTransportEnabled() {
  const char* v = std::getenv("ONEFLOW_COMM_SHM");
  return !(v && std::string(v) == "0");
}

size_t ShmSlotBytes() {
  const char* v = std::getenv("ONEFLOW_COMM_SHM_SLOT_BYTES");
  size_t bytes = size_t{4} << 20;
  if (v && *v) {
    char* end = nullptr;
    long long x = std::strtoll(v, &end, 10);
    OF_REQUIRE(*end == '\0' && x >= 4096 && x <= (1LL << 32), "ONEFLOW_COMM_SHM_SLOT_BYTES='", v,
               "' is not a byte count in [4096, 2^32]");
    bytes = static_cast<size_t>(x);
  }
  return RoundUp(bytes, kPage);
}

std::unique_ptr<ShmGroup> ShmGroup::Join(int index, const std::vector<int>& ranks, size_t slot_bytes,
                                         int64_t timeout_ms, const ShmRendezvous& rendezvous) {
  const size_t n = ranks.size();
  slot_bytes = RoundUp(std::max<size_t>(slot_bytes, kPage), kPage);
  const size_t total = HeaderBytes(n) + n * slot_bytes;
  char name[64] = {0};
  int fd = -1;
  if (index == 0) {
    RemoveStaleSegments();
    std::random_device rd;
    std::snprintf(name, sizeof name, "/%s%ld-%08x%08x", kPrefix, static_cast<long>(getpid()), rd(), rd());
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    // Reserve the pages now: a /dev/shm too small for the segment (containers default to 64 MiB)
    // then means TCP for this group, not a SIGBUS on first touch.
    if (fd >= 0 && posix_fallocate(fd, 0, static_cast<off_t>(total)) != 0) {
      close(fd);
      shm_unlink(name);
      fd = -1;
    }
    if (fd < 0) name[0] = '\0';
  }
  // The creator unlinks the name once everyone has mapped it, or when the rendezvous fails (throws).
  struct Unlink {
    char* name;
    void Now() {
      if (name && name[0]) shm_unlink(name);
      name = nullptr;
    }
    ~Unlink() { Now(); }
  } unlink{index == 0 ? name : nullptr};
  rendezvous.broadcast_from_first(name, sizeof name);
  name[sizeof name - 1] = '\0';
  if (index != 0 && name[0]) fd = shm_open(name, O_RDWR, 0);
  struct Mapping {  // unmapped unless handed to the group
    void* base = MAP_FAILED;
    size_t bytes = 0;
    ~Mapping() {
      if (base != MAP_FAILED) munmap(base, bytes);
    }
  } map;
  map.bytes = total;
  if (fd >= 0) {
    struct stat st{};
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == total)
      map.base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
  }
  const bool mapped = map.base != MAP_FAILED;
  auto* h = static_cast<ShmSegmentHeader*>(map.base);
  if (mapped && index == 0) {
    h->members = n;
    h->slot_bytes = slot_bytes;
    h->aborted_by.store(-1);
    for (size_t m = 0; m < n; ++m) h->member[m].arrivals.store(0);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    h->magic = kMagic;
  }
  // Everyone has mapped the segment (or failed to) once this returns; the creator initialized it first.
  bool ok = rendezvous.all(mapped);
  unlink.Now();  // mapped by all (or abandoned): nothing to leave behind
  ok = rendezvous.all(ok && h->magic == kMagic && h->members == n && h->slot_bytes == slot_bytes);
  if (!ok) return nullptr;
  h->member[index].pid = static_cast<int32_t>(getpid());
  rendezvous.all(true);  // every pid is published
  void* base = map.base;
  map.base = MAP_FAILED;
  return std::unique_ptr<ShmGroup>(new ShmGroup(index, ranks, base, total, slot_bytes, timeout_ms));
}

ShmGroup::ShmGroup(int index, const std::vector<int>& ranks, void* base, size_t mapped, size_t slot_bytes,
                   int64_t timeout_ms)
    : me_(index), ranks_(ranks), base_(base), mapped_(mapped), slot_bytes_(slot_bytes), timeout_ms_(timeout_ms),
      header_(static_cast<ShmSegmentHeader*>(base)) {}

ShmGroup::~ShmGroup() { munmap(base_, mapped_); }

char* ShmGroup::Slot(int member) const {
  return static_cast<char*>(base_) + HeaderBytes(ranks_.size()) + static_cast<size_t>(member) * slot_bytes_;
}

void ShmGroup::Abort() {
  int32_t none = -1;
  header_->aborted_by.compare_exchange_strong(none, ranks_[static_cast<size_t>(me_)]);
  for (size_t m = 0; m < ranks_.size(); ++m) FutexWakeAll(&header_->member[m].arrivals);
}

void ShmGroup::WaitFor(int member, uint32_t target) {
  std::atomic<uint32_t>& word = header_->member[member].arrivals;
  auto arrived = [&](uint32_t v) { return static_cast<int32_t>(v - target) >= 0; };
  // Spin first (a peer that is close behind arrives without a sleep and a wake-up, which on a VM
  // costs tens of microseconds), then sleep on the peer's word. When every member can have a core
  // of its own, spin up to 1 ms (2 ranks on 2 cores, MLP at batch 256: 1.43x -> 1.51x one process);
  // when members outnumber the cores, a spinning member would take a core from the one it waits
  // for, so spin only ~50 us.
  using Clock = std::chrono::steady_clock;
  static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto spin_budget = std::chrono::microseconds(ranks_.size() <= cores ? 1000 : 50);
  const auto start = Clock::now();
  for (int spin = 1;; ++spin) {
    if (arrived(word.load(std::memory_order_acquire))) return;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (spin % 64 == 0 && Clock::now() - start > spin_budget) break;
  }
  const auto deadline = start + std::chrono::milliseconds(timeout_ms_);
  auto next_check = start + std::chrono::milliseconds(20);  // reading /proc is not free: not on every wait
  const int rank = ranks_[static_cast<size_t>(member)];
  for (;;) {
    const uint32_t v = word.load(std::memory_order_acquire);
    if (arrived(v)) return;
    const int32_t aborted = header_->aborted_by.load(std::memory_order_acquire);
    if (aborted >= 0) throw ShmFailure(StrCat("shared-memory collective aborted by rank ", aborted));
    const auto now = Clock::now();
    if (now >= next_check) {  // a peer that exited never arrives: say so at once
      const int32_t pid = header_->member[member].pid;
      if (pid > 0 && ProcessExited(pid))
        throw ShmFailure(StrCat("rank ", rank, " (pid ", pid, ") exited during a shared-memory collective"));
      next_check = now + std::chrono::milliseconds(20);
    }
    if (now >= deadline)
      throw ShmFailure(StrCat("rank ", rank, " did not reach the shared-memory collective within ", timeout_ms_, " ms"));
    const int64_t left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
    FutexWait(&word, v, std::min<int64_t>(left, 10000000));
  }
}

void ShmGroup::Sync() {
  const int32_t aborted = header_->aborted_by.load(std::memory_order_acquire);
  if (aborted >= 0) throw ShmFailure(StrCat("shared-memory collective aborted by rank ", aborted));
  ++arrivals_;
  std::atomic<uint32_t>& mine = header_->member[me_].arrivals;
  mine.store(arrivals_, std::memory_order_release);
  FutexWakeAll(&mine);
  for (int m = 0; m < static_cast<int>(ranks_.size()); ++m)
    if (m != me_) WaitFor(m, arrivals_);
  peers_may_read_ = false;  // every peer is past whatever it did before this barrier
}

// Per chunk, each member copies the shares of the others into its slot (share m of every chunk
// in region m, at the same place for every dtype); after a barrier it sums its own share over
// every member (its own straight from `buf`) into region me_ of its slot and into `buf`; after a
// second barrier it copies the others' summed shares out of their slots. A member writes region
// me_ only after the next chunk's first barrier, when every peer has copied out; a collective of
// another kind, which may write anywhere in the slot, first waits for that (Settle).
void ShmGroup::AllReduceSum(void* buf, int64_t count, DType dtype) {
  const size_t es = SumElementSize(dtype);
  const int n = static_cast<int>(ranks_.size());
  const size_t region = slot_bytes_ / static_cast<size_t>(n) / 64 * 64;
  const int64_t cap = static_cast<int64_t>(region / es) * n;  // every share fits its region
  char* data = static_cast<char*>(buf);
  char* mine = Slot(me_);
  std::vector<const char*> srcs(static_cast<size_t>(n));
  for (int64_t c0 = 0; c0 < count; c0 += cap) {
    const int64_t len = std::min(cap, count - c0);
    char* chunk = data + static_cast<size_t>(c0) * es;
    for (int m = 0; m < n; ++m) {
      if (m == me_) continue;
      auto [st, sz] = Share(len, n, m);
      CopyBytes(mine, static_cast<size_t>(m) * region, chunk, static_cast<size_t>(st) * es, static_cast<size_t>(sz) * es);
    }
    Sync();
    auto [st, sz] = Share(len, n, me_);
    const size_t off = static_cast<size_t>(st) * es, at = static_cast<size_t>(me_) * region;
    for (int m = 0; m < n; ++m) srcs[static_cast<size_t>(m)] = m == me_ ? chunk + off : Slot(m) + at;
    Sum(dtype, mine + at, srcs, sz);  // into the slot: no source is overwritten while read
    CopyBytes(chunk, off, mine, at, static_cast<size_t>(sz) * es);
    Sync();
    for (int m = 0; m < n; ++m) {
      if (m == me_) continue;
      auto [mst, msz] = Share(len, n, m);
      CopyBytes(chunk, static_cast<size_t>(mst) * es, Slot(m), static_cast<size_t>(m) * region, static_cast<size_t>(msz) * es);
    }
    peers_may_read_ = true;
  }
}

void ShmGroup::Settle() {
  if (peers_may_read_) Sync();
}

// Each slot holds one region per member; per chunk of segment positions a member copies the
// others' segments into its regions, and after a barrier sums its own from every slot.
void ShmGroup::ReduceScatterSum(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype) {
  const size_t es = SumElementSize(dtype);
  Settle();
  const int n = static_cast<int>(ranks_.size());
  OF_CHECK(counts.size() == static_cast<size_t>(n), kInvalidArgument, "reduce-scatter needs one count per member (",
           n, "), got ", counts.size());
  const int64_t region = static_cast<int64_t>(slot_bytes_ / es) / n;
  std::vector<int64_t> start(static_cast<size_t>(n), 0);
  for (int m = 1; m < n; ++m) start[static_cast<size_t>(m)] = start[static_cast<size_t>(m - 1)] + counts[static_cast<size_t>(m - 1)];
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  const char* in = static_cast<const char*>(send);
  char* mine = Slot(me_);
  std::vector<const char*> srcs(static_cast<size_t>(n));
  auto piece = [&](int m, int64_t k0) { return std::clamp<int64_t>(counts[static_cast<size_t>(m)] - k0, 0, region); };
  for (int64_t k0 = 0; k0 < longest; k0 += region) {
    for (int m = 0; m < n; ++m)
      if (m != me_)
        CopyBytes(mine, static_cast<size_t>(m * region) * es, in, static_cast<size_t>(start[static_cast<size_t>(m)] + k0) * es,
                  static_cast<size_t>(piece(m, k0)) * es);
    Sync();
    // A member whose segment is exhausted (or empty, with a null `recv`) sums nothing.
    if (const int64_t len = piece(me_, k0); len > 0) {
      for (int m = 0; m < n; ++m)
        srcs[static_cast<size_t>(m)] = m == me_ ? in + static_cast<size_t>(start[static_cast<size_t>(me_)] + k0) * es
                                                : Slot(m) + static_cast<size_t>(me_ * region) * es;
      Sum(dtype, static_cast<char*>(recv) + static_cast<size_t>(k0) * es, srcs, len);
    }
    Sync();
  }
}

void ShmGroup::AllGather(const void* send, void* recv, const std::vector<size_t>& sizes) {
  Settle();
  const int n = static_cast<int>(ranks_.size());
  OF_CHECK(sizes.size() == static_cast<size_t>(n), kInvalidArgument, "all-gather needs one size per member (", n,
           "), got ", sizes.size());
  std::vector<size_t> start(static_cast<size_t>(n), 0);
  for (int m = 1; m < n; ++m) start[static_cast<size_t>(m)] = start[static_cast<size_t>(m - 1)] + sizes[static_cast<size_t>(m - 1)];
  const size_t longest = *std::max_element(sizes.begin(), sizes.end());
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  auto piece = [&](int m, size_t b0) {
    const size_t s = sizes[static_cast<size_t>(m)];
    return s > b0 ? std::min(s - b0, slot_bytes_) : size_t{0};
  };
  for (size_t b0 = 0; b0 < longest; b0 += slot_bytes_) {
    CopyBytes(Slot(me_), 0, in, b0, piece(me_, b0));
    MoveBytes(out, start[static_cast<size_t>(me_)] + b0, in, b0, piece(me_, b0));
    Sync();
    for (int m = 0; m < n; ++m)
      if (m != me_) CopyBytes(out, start[static_cast<size_t>(m)] + b0, Slot(m), 0, piece(m, b0));
    Sync();
  }
}

// Each slot holds one region per destination; per chunk of segment positions a member copies
// what it sends to each peer into the peer's region of its slot, and after a barrier reads what
// every peer sent it from its own region of their slots.
void ShmGroup::AllToAll(const void* send, const std::vector<size_t>& send_sizes, void* recv,
                        const std::vector<size_t>& recv_sizes) {
  Settle();
  const int n = static_cast<int>(ranks_.size());
  OF_CHECK(send_sizes.size() == static_cast<size_t>(n) && recv_sizes.size() == static_cast<size_t>(n), kInvalidArgument,
           "all-to-all needs one send and one receive size per member (", n, ")");
  const size_t region = slot_bytes_ / static_cast<size_t>(n);
  std::vector<size_t> sstart(static_cast<size_t>(n), 0), rstart(static_cast<size_t>(n), 0);
  for (int m = 1; m < n; ++m) {
    sstart[static_cast<size_t>(m)] = sstart[static_cast<size_t>(m - 1)] + send_sizes[static_cast<size_t>(m - 1)];
    rstart[static_cast<size_t>(m)] = rstart[static_cast<size_t>(m - 1)] + recv_sizes[static_cast<size_t>(m - 1)];
  }
  // Every member loops over the same chunks: the longest segment anyone sends.
  uint64_t longest = *std::max_element(send_sizes.begin(), send_sizes.end());
  std::vector<uint64_t> longests(static_cast<size_t>(n));
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  std::memcpy(Slot(me_), &longest, sizeof longest);
  Sync();
  for (int m = 0; m < n; ++m) longest = std::max(longest, *reinterpret_cast<const uint64_t*>(Slot(m)));
  Sync();
  auto piece = [&](size_t size, size_t b0) { return size > b0 ? std::min(size - b0, region) : size_t{0}; };
  for (size_t b0 = 0; b0 < longest; b0 += region) {
    for (int m = 0; m < n; ++m) {
      const size_t len = piece(send_sizes[static_cast<size_t>(m)], b0);
      if (m == me_) CopyBytes(out, rstart[static_cast<size_t>(m)] + b0, in, sstart[static_cast<size_t>(m)] + b0, len);
      else CopyBytes(Slot(me_), static_cast<size_t>(m) * region, in, sstart[static_cast<size_t>(m)] + b0, len);
    }
    Sync();
    for (int m = 0; m < n; ++m)
      if (m != me_)
        CopyBytes(out, rstart[static_cast<size_t>(m)] + b0, Slot(m), static_cast<size_t>(me_) * region,
                  piece(recv_sizes[static_cast<size_t>(m)], b0));
    Sync();
  }
}

void ShmGroup::Broadcast(void* buf, size_t bytes, int root_index) {
  Settle();
  OF_CHECK(root_index >= 0 && root_index < static_cast<int>(ranks_.size()), kInvalidArgument, "broadcast root index ",
           root_index, " is outside the group of ", ranks_.size());
  char* data = static_cast<char*>(buf);
  for (size_t b0 = 0; b0 < bytes; b0 += slot_bytes_) {
    const size_t len = std::min(slot_bytes_, bytes - b0);
    if (me_ == root_index) std::memcpy(Slot(root_index), data + b0, len);
    Sync();
    if (me_ != root_index) std::memcpy(data + b0, Slot(root_index), len);
    Sync();
  }
}

void ShmGroup::Barrier() { Sync(); }

}  // namespace oneflow
