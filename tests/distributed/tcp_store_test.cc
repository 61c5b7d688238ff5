// The TCP rendezvous store (comm/tcp_store.h): keys across ranks, waiting for a store that starts
// later, and each refusal a job can meet (a world-size disagreement, a rank joining twice, a port
// in use, an unreachable master), with the message that names it; and lost ranks: a rank process
// that exits without leaving is named by the others, one that leaves is not.
//
// Ranks are threads of this process, except the ones that must die: those are this binary run
// again (TCP_STORE_CHILD=port:rank:how), so no process forks with gRPC's threads running.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "base/error.h"
#include "comm/tcp_store.h"

extern char** environ;

namespace oneflow {
namespace {

// A TCP socket bound to a port the kernel picks on `address`; its port in `*port`.
int BoundSocket(uint32_t address, int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(address);
  socklen_t len = sizeof a;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

int FreePort() { return PickFreePort(); }

TcpStoreOptions Options(int port, int rank, int world, int64_t timeout_ms = 10000) {
  TcpStoreOptions o;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.rank = rank;
  o.world_size = world;
  o.timeout_ms = timeout_ms;
  o.serve = rank == 0;
  o.host = "host-of-rank-" + std::to_string(rank);
  return o;
}

// The error ConnectTcpStore throws for `o` (fails the test when it succeeds).
Error ConnectError(const TcpStoreOptions& o) {
  try {
    ConnectTcpStore(o);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "rank " << o.rank << " joined";
  return Error(ErrorCode::kOk, "");
}

void ExpectHas(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(TcpStore, KeysReachEveryRankAndARankMayStartBeforeTheStore) {
  const int port = FreePort();
  // Rank 1 connects first and waits for rank 0's store to come up.
  auto rank1 = std::async(std::launch::async, [&] {
    auto s = ConnectTcpStore(Options(port, 1, 3));
    s->Set("from/1", {'b'});
    EXPECT_EQ(s->Get("from/0", 10000), (std::vector<char>{'a', '\0', 'z'}));
    return s;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto s0 = ConnectTcpStore(Options(port, 0, 3));
  s0->Set("from/0", {'a', '\0', 'z'});  // values are bytes, not strings
  EXPECT_EQ(s0->Get("from/1", 10000), (std::vector<char>{'b'}));
  auto s1 = rank1.get();
  EXPECT_TRUE(s1->Check("from/0"));
  EXPECT_FALSE(s1->Check("from/2"));
  // A key published after the reader started waiting.
  auto late = std::async(std::launch::async, [&] { return s1->Get("late", 10000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s0->Set("late", {'!'});
  EXPECT_EQ(late.get(), (std::vector<char>{'!'}));
  try {
    s1->Get("never", 200);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    ExpectHas(e.what(), "rendezvous key 'never' was not published within 200 ms");
  }
  EXPECT_EQ(s0->LostRanks({0, 1, 2}), "2 (never joined)");
  auto s2 = ConnectTcpStore(Options(port, 2, 3));
  EXPECT_EQ(s0->LostRanks({0, 1, 2}), "");
  s2->Leave();
  s1->Leave();
  EXPECT_EQ(s0->LostRanks({0, 1, 2}), "") << "ranks that left are not lost";
  s0->Leave();  // every other rank has left: returns at once
}

TEST(TcpStore, RefusesRanksThatDisagreeOrRepeat) {
  const int port = FreePort();
  auto s0 = ConnectTcpStore(Options(port, 0, 2));
  Error e = ConnectError(Options(port, 1, 3));
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  ExpectHas(e.what(), "refused rank 1: rank 1 (host-of-rank-1) says the job has 3 ranks; rank 0 says 2");
  e = ConnectError(Options(port, 0, 2));  // a second rank 0: its store cannot serve the same port
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  ExpectHas(e.what(), "cannot serve the rendezvous store on port " + std::to_string(port));
  TcpStoreOptions twice = Options(port, 0, 2);
  twice.serve = false;  // a second process that believes it is rank 0, reaching the first's store
  e = ConnectError(twice);
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  ExpectHas(e.what(), "rank 0 joined twice: from host-of-rank-0 and now from host-of-rank-0");
  auto s1 = ConnectTcpStore(Options(port, 1, 2));
  s1->Leave();
  s0->Leave();
}

TEST(TcpStore, APortInUseAndAnUnreachableMasterAreNamed) {
  int busy = 0;
  int fd = BoundSocket(INADDR_ANY, &busy);
  ASSERT_EQ(listen(fd, 1), 0);
  Error e = ConnectError(Options(busy, 0, 2));
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  ExpectHas(e.what(), "port is in use");
  close(fd);

  const int nobody = FreePort();
  auto start = std::chrono::steady_clock::now();
  e = ConnectError(Options(nobody, 1, 2, 400));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(e.code(), ErrorCode::kRuntime);
  ExpectHas(e.what(), "rank 1 could not reach the rendezvous store at 127.0.0.1:" + std::to_string(nobody) +
                          " within 400 ms");
  EXPECT_LT(seconds, 5.0) << "the timeout bounds the wait";
}

// Runs this binary as rank `rank` of a 3-rank job whose store is at `port`; `how`: "die" joins and
// exits without leaving (a crash), "leave" joins, leaves and exits.
pid_t SpawnRank(int port, int rank, const std::string& how) {
  std::string var = "TCP_STORE_CHILD=" + std::to_string(port) + ":" + std::to_string(rank) + ":" + how;
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  env.push_back(var.data());
  env.push_back(nullptr);
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data()), 0);
  return pid;
}

TEST(TcpStore, ARankThatExitsWithoutLeavingIsLost) {
  const int port = FreePort();
  auto s0 = ConnectTcpStore(Options(port, 0, 3));
  int st = 0;
  pid_t leaver = SpawnRank(port, 1, "leave");
  ASSERT_EQ(waitpid(leaver, &st, 0), leaver);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  pid_t dier = SpawnRank(port, 2, "die");
  ASSERT_EQ(waitpid(dier, &st, 0), dier);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 7) << st;
  // The store notices the closed connection shortly after the exit.
  std::string lost;
  for (int i = 0; i < 100 && lost.empty(); ++i) {
    lost = s0->LostRanks({0, 1, 2});
    if (lost.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(lost, "2 on host-of-rank-2");
  EXPECT_EQ(s0->LostRanks({0, 1}), "") << "only ranks of the group asked about";
  s0->Leave();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  if (const char* child = std::getenv("TCP_STORE_CHILD")) {
    int port = 0, rank = 0;
    char how[16] = {0};
    if (std::sscanf(child, "%d:%d:%15s", &port, &rank, how) != 3) return 2;
    try {
      auto s = oneflow::ConnectTcpStore(oneflow::Options(port, rank, 3));
      s->Set("child/" + std::to_string(rank), {'1'});
      if (std::string(how) == "die") _exit(7);  // no Leave, no destructors: as a crash
      s->Leave();
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child rank %d: %s\n", rank, e.what());
      return 1;
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
