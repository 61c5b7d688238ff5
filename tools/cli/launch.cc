// `oneflow launch -n N -- PROGRAM ARGS...`: starts a local N-process job, each process with the
// launcher variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
// and a fresh shared Gloo store directory; when one process fails the rest are stopped. SIGTERM
// and SIGINT sent to the launcher are passed on to every process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "cli.h"

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
  ParsedArgs a = ParseArgs("launch", own, {"n", "master-port", "grace-s"});
  if (!a.positionals.empty()) throw UsageError("unexpected '" + a.positionals[0] + "' before '--'");
  const int n = a.GetInt("n", 0, 1, 1024);
  if (n == 0) throw UsageError("launch needs -n N (processes)");
  const int port = a.GetInt("master-port", 29500, 1, 65535);
  const int grace = a.GetInt("grace-s", 10, 0, 3600);
  std::vector<std::string> cmd(args.begin() + static_cast<long>(dash) + 1, args.end());

  char store[] = "/tmp/oneflow-launch-XXXXXX";
  OF_CHECK(mkdtemp(store) != nullptr, kIo, "cannot create the rendezvous directory: ", std::strerror(errno));
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    OF_CHECK(pid >= 0, kRuntime, "fork failed: ", std::strerror(errno));
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("ONEFLOW_GLOO_STORE", store, 1);
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
        std::fprintf(stderr, "oneflow: launch: rank %d exited with status %d\n", rank, code);
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
  std::string rm = std::string("rm -rf '") + store + "'";
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "oneflow: launch: could not remove %s\n", store);
  return status_out;
}

}  // namespace cli
}  // namespace oneflow
