// The launcher's environment for multi-process backends, and the in-memory rendezvous store.
#include "comm/launch_env.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "base/error.h"

namespace oneflow {
namespace {

// The first of `names` that is set, parsed as a count in [0, 2^30); `fallback` when none is.
int64_t EnvCount(std::initializer_list<const char*> names, int64_t fallback) {
  for (const char* n : names) {
    const char* v = std::getenv(n);
    if (v && *v) {
      char* end = nullptr;
      long long x = std::strtoll(v, &end, 10);
      OF_REQUIRE(*end == '\0' && x >= 0 && x < (1LL << 30), "environment variable ", n, "='", v,
                 "' is not a valid count");
      return x;
    }
  }
  return fallback;
}

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

class InMemoryStore final : public RendezvousStore {
 public:
  void Set(const std::string& key, const std::vector<char>& value) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[key] = value;
    }
    cv_.notify_all();
  }
  std::vector<char> Get(const std::string& key, int64_t timeout_ms) override {
    std::unique_lock<std::mutex> lock(mutex_);
    bool found = cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return values_.count(key) > 0; });
    OF_CHECK(found, kRuntime, "rendezvous key '", key, "' was not published within ", timeout_ms, " ms");
    return values_[key];
  }
  bool Check(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return values_.count(key) > 0;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<char>> values_;
};

}  // namespace

LaunchEnv ReadLaunchEnv(int64_t default_timeout_ms) {
  LaunchEnv e;
  int64_t rank = EnvCount({"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}, -1);
  int64_t size = EnvCount({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, -1);
  OF_REQUIRE(rank >= 0 && size >= 1, "no rank/world size in the environment (set RANK and WORLD_SIZE, or launch "
             "with mpirun or srun)");
  OF_REQUIRE(rank < size, "RANK ", rank, " is not below WORLD_SIZE ", size);
  e.rank = static_cast<int>(rank);
  e.world_size = static_cast<int>(size);
  e.local_rank = static_cast<int>(
      EnvCount({"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}, rank));
  e.timeout_ms = EnvCount({"ONEFLOW_COMM_TIMEOUT_MS"}, std::min<int64_t>(default_timeout_ms, 1LL << 30));
  OF_REQUIRE(e.timeout_ms > 0, "the collective timeout must be positive");
  std::string master = Env("MASTER_ADDR", "127.0.0.1");
  e.store_dir = Env("ONEFLOW_GLOO_STORE", "/tmp/oneflow-gloo-" + master + "-" + Env("MASTER_PORT", "29500"));
  e.host = Env("ONEFLOW_GLOO_HOST", master == "localhost" || master == "127.0.0.1" ? "127.0.0.1" : "");
  if (e.host.empty()) {
    char name[256] = {0};
    gethostname(name, sizeof name - 1);
    e.host = name;
  }
  return e;
}

bool ProcessExited(long pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {0};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(buf, ')');
  return n > 0 && paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

std::shared_ptr<RendezvousStore> CreateInMemoryStore() { return std::make_shared<InMemoryStore>(); }

}  // namespace oneflow
