// The launcher's environment for multi-process backends, and the in-memory rendezvous store.
#include "comm/launch_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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
#include <random>

#include "base/error.h"
#include "comm/tcp_store.h"

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
  e.master_addr = Env("MASTER_ADDR", "127.0.0.1");
  if (e.master_addr.size() > 2 && e.master_addr.front() == '[' && e.master_addr.back() == ']')
    e.master_addr = e.master_addr.substr(1, e.master_addr.size() - 2);  // "[::1]": an IPv6 literal
  e.master_port = static_cast<int>(EnvCount({"MASTER_PORT"}, 29500));
  OF_REQUIRE(e.master_port >= 1 && e.master_port <= 65535, "MASTER_PORT=", e.master_port, " is not a TCP port");
  e.store_dir = Env("ONEFLOW_GLOO_STORE", "");
  const bool local = e.master_addr == "localhost" || e.master_addr.rfind("127.", 0) == 0 || e.master_addr == "::1";
  e.host = Env("ONEFLOW_GLOO_HOST", local ? "127.0.0.1" : "");
  if (e.host.empty()) e.host = LocalAddressToward(e.master_addr);
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

int PickFreePort() {
  std::random_device seed;
  std::mt19937 rng(seed());
  std::uniform_int_distribution<int> pick(20000, 32767);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(rng);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    OF_CHECK(fd >= 0, kIo, "cannot open a socket: ", std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (free) return port;
  }
  Fail(ErrorCode::kIo, "no free TCP port in 20000-32767 for a rendezvous store");
}

std::string LocalAddressToward(const std::string& peer) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(peer.c_str(), "9", &hints, &found);
  OF_REQUIRE(rc == 0 && found, "MASTER_ADDR '", peer, "' does not resolve: ", gai_strerror(rc));
  // Connecting a UDP socket sends nothing; it only asks the kernel which local address routes there.
  int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  bool routed = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  routed = routed && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  const int err = errno;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  OF_CHECK(routed, kRuntime, "no route from this host to MASTER_ADDR '", peer, "': ", std::strerror(err),
           " (set ONEFLOW_GLOO_HOST to this host's address)");
  char text[INET6_ADDRSTRLEN] = {0};
  const void* a = local.ss_family == AF_INET6 ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
  OF_CHECK(inet_ntop(local.ss_family, a, text, sizeof text) != nullptr, kRuntime, "cannot print this host's address");
  return text;
}

std::shared_ptr<RendezvousStore> CreateInMemoryStore() { return std::make_shared<InMemoryStore>(); }

namespace {

// The job stores of this process. Never destroyed: they leave their jobs from an exit handler,
// which runs before the static objects gRPC's server and channels rely on are gone.
std::mutex g_job_stores_mutex;
std::map<std::string, std::shared_ptr<RendezvousStore>>* g_job_stores = nullptr;

pid_t g_leaving_pid = 0;  // the process that registered LeaveJobs (a forked child inherits it)

void LeaveJobs() {
  if (getpid() != g_leaving_pid) return;  // a fork of a rank is not that rank
  // Close the process's Gloo connections first: a peer still waiting on this rank in a collective
  // (this rank left main on an error) then fails at once instead of after its timeout.
  ReleaseGlooCommunicators();
  std::lock_guard<std::mutex> lock(g_job_stores_mutex);
  for (auto& [job, store] : *g_job_stores) {
    try {
      store->Leave();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oneflow: leaving the job's rendezvous store %s: %s\n", job.c_str(), e.what());
    }
  }
}

}  // namespace

std::string JobKey(const LaunchEnv& env) {
  return (env.store_dir.empty() ? "tcp://" + env.master_addr + ":" + std::to_string(env.master_port)
                                : "file:" + env.store_dir) +
         " rank " + std::to_string(env.rank) + "/" + std::to_string(env.world_size);
}

std::shared_ptr<RendezvousStore> JobStore(const LaunchEnv& env) {
  const std::string job = JobKey(env);
  std::lock_guard<std::mutex> lock(g_job_stores_mutex);
  if (!g_job_stores) g_job_stores = new std::map<std::string, std::shared_ptr<RendezvousStore>>;
  auto it = g_job_stores->find(job);
  if (it != g_job_stores->end()) return it->second;
  std::shared_ptr<RendezvousStore> store;
  if (!env.store_dir.empty()) {
    store = CreateFileStore(env.store_dir);
  } else {
    TcpStoreOptions o;
    o.master_addr = env.master_addr;
    o.master_port = env.master_port;
    o.rank = env.rank;
    o.world_size = env.world_size;
    o.timeout_ms = env.timeout_ms;
    o.serve = env.rank == 0;
    o.host = env.host;
    store = ConnectTcpStore(o);
  }
  // Registered after the first store exists: exit handlers and static destructors run in the
  // reverse order of their registration, so this one runs before gRPC's statics made above go.
  static bool leave_at_exit = false;
  if (!leave_at_exit) {
    g_leaving_pid = getpid();
    leave_at_exit = std::atexit(LeaveJobs) == 0;
  }
  return (*g_job_stores)[job] = store;
}

}  // namespace oneflow
