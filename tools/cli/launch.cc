// `oneflow launch [--nnodes M --node-rank R --master-addr A --master-port P] -n N -- PROGRAM
// ARGS...`: starts this host's N processes of a job of M*N ranks, each with torchrun's variables
// (RANK = R*N + local rank, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
// MASTER_PORT); the ranks meet through the TCP store that rank 0 serves at A:P (comm/tcp_store.h).
// One host (M = 1) without --master-port gets a free port, so jobs side by side do not collide.
// When one process fails the rest are stopped; SIGTERM and SIGINT sent to the launcher are passed
// on to every process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "cli.h"
#include "comm/launch_env.h"

namespace oneflow {
namespace cli {
namespace {

// A SIGTERM or SIGINT sent to the launcher is passed on to every rank (a server drains on it).
volatile sig_atomic_t g_forward_signal = 0;
void RecordSignal(int sig) { g_forward_signal = sig; }

}  // namespace

int LaunchCommand(const std::vector<std::string>& args) {
  size_t dash = 0;
  while (dash < args.size() && args[dash] != "--") ++dash;
  if (dash + 1 >= args.size()) throw UsageError("launch needs '-- PROGRAM [ARGS...]' (see 'oneflow help')");
  std::vector<std::string> own(args.begin(), args.begin() + static_cast<long>(dash));
  for (std::string& s : own)  // `-n N` as torchrun and mpirun spell it
    if (s == "-n") s = "--n";
  ParsedArgs a = ParseArgs("launch", own, {"n", "nnodes", "node-rank", "master-addr", "master-port", "grace-s"});
  if (!a.positionals.empty()) throw UsageError("unexpected '" + a.positionals[0] + "' before '--'");
  const int n = a.GetInt("n", 0, 1, 1024);
  if (n == 0) throw UsageError("launch needs -n N (processes on this host)");
  const int nnodes = a.GetInt("nnodes", 1, 1, 65536);
  const int node_rank = a.GetInt("node-rank", 0, 0, 65535);
  if (node_rank >= nnodes)
    throw UsageError("--node-rank " + std::to_string(node_rank) + " is not below --nnodes " + std::to_string(nnodes));
  const std::string master = a.Get("master-addr", "127.0.0.1");
  if (master.empty()) throw UsageError("--master-addr is empty");
  if (nnodes > 1 && !a.Has("master-addr"))
    throw UsageError("a job of " + std::to_string(nnodes) + " hosts needs --master-addr (the address of node 0, "
                     "where rank 0 serves the rendezvous store)");
  const int port = a.Has("master-port") ? a.GetInt("master-port", 29500, 1, 65535) : nnodes == 1 ? PickFreePort() : 29500;
  const int grace = a.GetInt("grace-s", 10, 0, 3600);
  const int world = nnodes * n;
  std::vector<std::string> cmd(args.begin() + static_cast<long>(dash) + 1, args.end());

  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    OF_CHECK(pid >= 0, kRuntime, "fork failed: ", std::strerror(errno));
    if (pid == 0) {
      setenv("RANK", std::to_string(node_rank * n + r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("GROUP_RANK", std::to_string(node_rank).c_str(), 1);
      setenv("MASTER_ADDR", master.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      std::vector<char*> argv;
      for (std::string& s : cmd) argv.push_back(s.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "oneflow: error: cannot run '%s': %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
  }
  struct sigaction forward {};
  forward.sa_handler = RecordSignal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGTERM, &forward, nullptr);
  sigaction(SIGINT, &forward, nullptr);
  // Wait for all; after the first failure give the others `grace` seconds, then stop them.
  int status_out = 0, left = n;
  auto deadline = std::chrono::steady_clock::time_point::max();
  while (left > 0) {
    int st = 0;
    pid_t done = waitpid(-1, &st, WNOHANG);
    if (done > 0) {
      --left;
      int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (code != 0 && status_out == 0) {
        status_out = code;
        int rank = 0;
        while (rank < n && pids[static_cast<size_t>(rank)] != done) ++rank;
        std::fprintf(stderr, "oneflow: launch: rank %d exited with status %d\n", node_rank * n + rank, code);
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace);
      }
      continue;
    }
    if (int sig = g_forward_signal) {
      g_forward_signal = 0;
      for (pid_t p : pids) kill(p, sig);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (pid_t p : pids) kill(p, SIGTERM);
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_out;
}

}  // namespace cli
}  // namespace oneflow
