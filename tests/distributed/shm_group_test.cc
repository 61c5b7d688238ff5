// The shared-memory transport (comm/shm_group.h) with its members as threads of this
// process (and, for a member that dies, a forked process): every collective against a reference
// computed here in plain loops, on odd sizes, uneven splits and slots small enough that every call
// runs in several chunks; every member must get bit-identical results. Also: a member that never
// arrives, one that aborts and one that exits make the others fail naming it within the timeout,
// and a segment left by a crashed job is removed by the next.
#include <gtest/gtest.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "base/error.h"
#include "comm/communicator.h"
#include "comm/shm_group.h"

namespace oneflow {
namespace {

constexpr size_t kSmallSlot = 4096;  // 1024 floats: the larger cases below take several chunks

// Runs `body(member, group)` on `n` threads joined in one segment (rendezvous over the in-process
// communicator); rethrows the first failure.
void OnMembers(int n, int64_t timeout_ms, const std::function<void(int, ShmGroup&)>& body,
               size_t slot = kSmallSlot) {
  auto comms = CreateInProcessGroup(n);
  std::vector<int> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int m = 0; m < n; ++m)
    threads.emplace_back([&, m] {
      try {
        Communicator& c = *comms[static_cast<size_t>(m)];
        ShmRendezvous rv;
        rv.broadcast_from_first = [&](void* buf, size_t bytes) { c.Broadcast(buf, bytes, 0, ranks); };
        rv.all = [&](bool ok) {
          int32_t failed = ok ? 0 : 1;
          c.AllReduceSum(&failed, 1, DType::kInt32, ranks);
          return failed == 0;
        };
        std::unique_ptr<ShmGroup> g = ShmGroup::Join(m, ranks, slot, timeout_ms, rv);
        if (!g) throw std::runtime_error("could not join the segment");
        body(m, *g);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(m)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int m = 0; m < n; ++m) EXPECT_EQ(errors[static_cast<size_t>(m)], "") << "member " << m;
}

template <typename T>
std::vector<T> Values(int member, int64_t count, int salt) {
  std::mt19937 rng(static_cast<unsigned>(member * 1000 + salt));
  std::uniform_real_distribution<double> d(-100, 100);
  std::vector<T> v(static_cast<size_t>(count));
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <typename T>
void CheckAllReduce(DType dtype, int n, int64_t count) {
  std::vector<std::vector<T>> got(static_cast<size_t>(n));
  OnMembers(n, 20000, [&](int m, ShmGroup& g) {
    got[static_cast<size_t>(m)] = Values<T>(m, count, 1);
    g.AllReduceSum(got[static_cast<size_t>(m)].data(), count, dtype);
  });
  std::vector<T> want = Values<T>(0, count, 1);  // summed in group order, as the transport promises
  for (int m = 1; m < n; ++m) {
    std::vector<T> v = Values<T>(m, count, 1);
    for (int64_t i = 0; i < count; ++i) want[static_cast<size_t>(i)] += v[static_cast<size_t>(i)];
  }
  for (int m = 0; m < n; ++m)
    ASSERT_EQ(std::memcmp(got[static_cast<size_t>(m)].data(), want.data(), want.size() * sizeof(T)), 0)
        << "member " << m << " of " << n << ", " << count << " elements";
}

TEST(ShmGroup, AllReduceMatchesTheSumInGroupOrderOnEveryMember) {
  for (int n : {2, 3})
    for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{1025}, int64_t{12345}}) {
      CheckAllReduce<float>(DType::kFloat32, n, count);
      CheckAllReduce<double>(DType::kFloat64, n, count);
    }
  CheckAllReduce<int32_t>(DType::kInt32, 3, 3001);
  CheckAllReduce<int64_t>(DType::kInt64, 2, 999);
}

// Collectives of different kinds and dtypes back to back, many times: a member that is still
// copying an all-reduce's results out of a peer's slot must not see them overwritten by the
// peer's next collective.
TEST(ShmGroup, MixedCollectivesBackToBack) {
  const int n = 3;
  std::vector<std::string> wrong(n);
  OnMembers(n, 20000, [&](int m, ShmGroup& g) {
    for (int it = 0; it < 300 && wrong[static_cast<size_t>(m)].empty(); ++it) {
      const int64_t count = 700 + (it * 37) % 900;  // one or two chunks of the small slot
      std::vector<float> f(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) f[static_cast<size_t>(i)] = static_cast<float>((m + 1) * (i + it));
      g.AllReduceSum(f.data(), count, DType::kFloat32);
      std::vector<size_t> sizes(n, 2000);
      std::vector<char> mine(2000, static_cast<char>(m + it)), all(2000 * n);
      g.AllGather(mine.data(), all.data(), sizes);
      double d[3] = {static_cast<double>(m), 1.0, static_cast<double>(it)};
      g.AllReduceSum(d, 3, DType::kFloat64);
      int32_t b[600];
      for (int i = 0; i < 600; ++i) b[i] = m == 1 ? it * 1000 + i : -1;
      g.Broadcast(b, sizeof b, 1);
      for (int64_t i = 0; i < count; ++i)
        if (f[static_cast<size_t>(i)] != static_cast<float>(6 * (i + it))) wrong[static_cast<size_t>(m)] = "all-reduce";
      for (int q = 0; q < n; ++q)
        if (all[static_cast<size_t>(q) * 2000 + 1999] != static_cast<char>(q + it)) wrong[static_cast<size_t>(m)] = "all-gather";
      if (d[0] != 3 || d[1] != 3 || d[2] != 3.0 * it) wrong[static_cast<size_t>(m)] = "double all-reduce";
      for (int i = 0; i < 600; ++i)
        if (b[i] != it * 1000 + i) wrong[static_cast<size_t>(m)] = "broadcast";
      if (!wrong[static_cast<size_t>(m)].empty()) wrong[static_cast<size_t>(m)] += " at iteration " + std::to_string(it);
    }
  });
  for (int m = 0; m < n; ++m) EXPECT_EQ(wrong[static_cast<size_t>(m)], "") << "member " << m;
}

TEST(ShmGroup, ReduceScatterUnevenSegments) {
  const std::vector<int64_t> counts{5, 0, 3001};  // longer than a slot's region, one empty
  const int64_t total = 3006;
  std::vector<std::vector<float>> got(3);
  OnMembers(3, 20000, [&](int m, ShmGroup& g) {
    std::vector<float> send = Values<float>(m, total, 2);
    got[static_cast<size_t>(m)].assign(static_cast<size_t>(counts[static_cast<size_t>(m)]), -1.f);
    g.ReduceScatterSum(send.data(), got[static_cast<size_t>(m)].data(), counts, DType::kFloat32);
  });
  int64_t start = 0;
  for (int m = 0; m < 3; ++m) {
    std::vector<float> want(static_cast<size_t>(counts[static_cast<size_t>(m)]), 0.f);
    for (int q = 0; q < 3; ++q) {
      std::vector<float> v = Values<float>(q, total, 2);
      for (size_t i = 0; i < want.size(); ++i) want[i] = q == 0 ? v[static_cast<size_t>(start) + i] : want[i] + v[static_cast<size_t>(start) + i];
    }
    EXPECT_EQ(got[static_cast<size_t>(m)], want) << "member " << m;
    start += counts[static_cast<size_t>(m)];
  }
}

TEST(ShmGroup, AllGatherAllToAllAndBroadcastUnevenSizes) {
  const std::vector<size_t> sizes{3, 10000, 0};  // bytes; one longer than a slot
  const size_t total = 10003;
  std::vector<std::vector<char>> gathered(3), exchanged(3), broadcast(3);
  auto bytes = [](int from, int to, size_t k) { return static_cast<char>(from * 31 + to * 7 + static_cast<int>(k % 101)); };
  // All-to-all: member f sends (f + t) * 1500 + 1 bytes to member t (up to 6001: several chunks).
  auto a2a = [](int f, int t) { return static_cast<size_t>((f + t) * 1500 + 1); };
  OnMembers(3, 20000, [&](int m, ShmGroup& g) {
    std::vector<char> mine(sizes[static_cast<size_t>(m)]);
    for (size_t k = 0; k < mine.size(); ++k) mine[k] = bytes(m, 0, k);
    gathered[static_cast<size_t>(m)].assign(total, 0);
    g.AllGather(mine.data(), gathered[static_cast<size_t>(m)].data(), sizes);
    std::vector<size_t> ssz, rsz;
    std::vector<char> send;
    for (int t = 0; t < 3; ++t) {
      ssz.push_back(a2a(m, t));
      rsz.push_back(a2a(t, m));
      for (size_t k = 0; k < a2a(m, t); ++k) send.push_back(bytes(m, t, k));
    }
    exchanged[static_cast<size_t>(m)].assign(std::accumulate(rsz.begin(), rsz.end(), size_t{0}), 0);
    g.AllToAll(send.data(), ssz, exchanged[static_cast<size_t>(m)].data(), rsz);
    broadcast[static_cast<size_t>(m)].assign(9000, static_cast<char>(m));
    if (m == 1)
      for (size_t k = 0; k < 9000; ++k) broadcast[1][k] = bytes(1, 1, k);
    g.Broadcast(broadcast[static_cast<size_t>(m)].data(), 9000, 1);
    g.Barrier();
  });
  std::vector<char> want_gather;
  for (int q = 0; q < 3; ++q)
    for (size_t k = 0; k < sizes[static_cast<size_t>(q)]; ++k) want_gather.push_back(bytes(q, 0, k));
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(gathered[static_cast<size_t>(m)], want_gather) << "all-gather, member " << m;
    std::vector<char> want;
    for (int f = 0; f < 3; ++f)
      for (size_t k = 0; k < a2a(f, m); ++k) want.push_back(bytes(f, m, k));
    EXPECT_EQ(exchanged[static_cast<size_t>(m)], want) << "all-to-all, member " << m;
    EXPECT_EQ(broadcast[static_cast<size_t>(m)], broadcast[1]) << "broadcast, member " << m;
  }
  for (size_t k = 0; k < 9000; ++k) ASSERT_EQ(broadcast[0][k], bytes(1, 1, k));
}

TEST(ShmGroup, UnsupportedDtypeIsAnError) {
  OnMembers(2, 20000, [&](int, ShmGroup& g) {
    uint8_t x[4] = {1, 2, 3, 4};
    try {
      g.AllReduceSum(x, 4, DType::kUInt8);
      throw std::runtime_error("uint8 sum was accepted");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported || std::string(e.what()).find("uint8") == std::string::npos) throw;
    }
    g.Barrier();  // the group is still usable
  });
}

// A member that never arrives: the others fail naming its rank, after the timeout and not much later.
TEST(ShmGroup, MissingMemberTimesOutNamingIt) {
  std::vector<std::string> errors(3);
  std::vector<double> seconds(3, 0);
  OnMembers(3, 300, [&](int m, ShmGroup& g) {
    if (m == 2) return;
    auto t0 = std::chrono::steady_clock::now();
    try {
      float v = 1;
      g.AllReduceSum(&v, 1, DType::kFloat32);
    } catch (const ShmFailure& e) {
      errors[static_cast<size_t>(m)] = e.what();
    }
    seconds[static_cast<size_t>(m)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  for (int m = 0; m < 2; ++m) {
    EXPECT_NE(errors[static_cast<size_t>(m)].find("rank 2 did not reach"), std::string::npos) << errors[static_cast<size_t>(m)];
    EXPECT_GE(seconds[static_cast<size_t>(m)], 0.29);
    EXPECT_LT(seconds[static_cast<size_t>(m)], 3.0);
  }
}

TEST(ShmGroup, AbortStopsThePeersAtOnce) {
  std::vector<std::string> errors(3);
  std::vector<double> seconds(3, 0);
  OnMembers(3, 60000, [&](int m, ShmGroup& g) {
    if (m == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      g.Abort();
      return;
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
      g.Barrier();
    } catch (const ShmFailure& e) {
      errors[static_cast<size_t>(m)] = e.what();
    }
    seconds[static_cast<size_t>(m)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  for (int m : {0, 2}) {
    EXPECT_NE(errors[static_cast<size_t>(m)].find("aborted by rank 1"), std::string::npos) << errors[static_cast<size_t>(m)];
    EXPECT_LT(seconds[static_cast<size_t>(m)], 5.0);
  }
}

// Two processes (this one and a child) meeting over pipes; the child leaves after one all-reduce.
TEST(ShmGroup, ExitedMemberIsNamedLongBeforeTheTimeout) {
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  auto rendezvous = [](int m, int out, int in) {
    ShmRendezvous rv;
    rv.broadcast_from_first = [m, out, in](void* buf, size_t bytes) {
      if (m == 0) {
        if (write(out, buf, bytes) != static_cast<ssize_t>(bytes)) throw std::runtime_error("pipe write");
      } else if (read(in, buf, bytes) != static_cast<ssize_t>(bytes)) {
        throw std::runtime_error("pipe read");
      }
    };
    rv.all = [out, in](bool ok) {
      char mine = ok ? 1 : 0, theirs = 0;
      if (write(out, &mine, 1) != 1 || read(in, &theirs, 1) != 1) throw std::runtime_error("pipe");
      return ok && theirs;
    };
    return rv;
  };
  const std::vector<int> ranks{4, 7};
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<ShmGroup> g = ShmGroup::Join(1, ranks, kSmallSlot, 60000, rendezvous(1, to_parent[1], to_child[0]));
    float v = 2;
    if (g) g->AllReduceSum(&v, 1, DType::kFloat32);
    _exit(v == 3 ? 0 : 1);
  }
  std::unique_ptr<ShmGroup> g = ShmGroup::Join(0, ranks, kSmallSlot, 60000, rendezvous(0, to_child[1], to_parent[0]));
  ASSERT_TRUE(g);
  float v = 1;
  g->AllReduceSum(&v, 1, DType::kFloat32);
  EXPECT_EQ(v, 3);
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  try {
    g->Barrier();
  } catch (const ShmFailure& e) {
    error = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(error.find("rank 7 (pid " + std::to_string(child) + ") exited"), std::string::npos) << error;
  EXPECT_LT(seconds, 5.0);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

int SegmentsOf(pid_t pid) {
  const std::string prefix = "oneflow-shm-" + std::to_string(pid) + "-";
  int count = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) count += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    closedir(d);
  }
  return count;
}

// A segment whose creator is gone (a job that crashed while joining) is removed when the next
// group is created; a joined group leaves no segment behind.
TEST(ShmGroup, StaleSegmentsAreRemovedAndNoneIsLeft) {
  pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string stale = "/oneflow-shm-" + std::to_string(gone) + "-deadbeefdeadbeef";
  int fd = shm_open(stale.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  OnMembers(2, 20000, [&](int, ShmGroup& g) { g.Barrier(); });
  fd = shm_open(stale.c_str(), O_RDWR, 0);
  EXPECT_LT(fd, 0) << "the stale segment " << stale << " is still there";
  if (fd >= 0) {
    close(fd);
    shm_unlink(stale.c_str());
  }
  // While joined, the segment is already unlinked: nothing named after this process is left.
  OnMembers(2, 20000, [&](int, ShmGroup& g) {
    g.Barrier();
    const int left = SegmentsOf(getpid());
    g.Barrier();
    if (left) throw std::runtime_error("a joined segment is still linked in /dev/shm");
  });
}

}  // namespace
}  // namespace oneflow
