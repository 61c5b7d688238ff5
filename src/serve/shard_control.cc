#include "serve/shard_control.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/launch_env.h"
#include "serialize/model_io.h"
#include "serve/kserve_grpc_codec.h"
#include "serve/log.h"
#include "serve/model_runner.h"
#include "serve/repository.h"

namespace oneflow {
namespace serve {
namespace {

enum ControlKind : uint64_t { kHeartbeat = 0, kBatch = 1, kStop = 2 };

std::vector<int> AllRanks(const Communicator& comm) {
  std::vector<int> ranks(static_cast<size_t>(comm.world_size()));
  for (int r = 0; r < comm.world_size(); ++r) ranks[static_cast<size_t>(r)] = r;
  return ranks;
}

// One message: a header {kind, payload bytes} from rank 0, then the payload.
void SendControl(Communicator& comm, ControlKind kind, const std::string& payload) {
  uint64_t header[2] = {kind, payload.size()};
  comm.Broadcast(header, sizeof header, 0, AllRanks(comm));
  if (!payload.empty()) comm.Broadcast(const_cast<char*>(payload.data()), payload.size(), 0, AllRanks(comm));
}

ControlKind ReceiveControl(Communicator& comm, std::string* payload) {
  uint64_t header[2] = {0, 0};
  comm.Broadcast(header, sizeof header, 0, AllRanks(comm));
  OF_CHECK(header[0] <= kStop && header[1] < (uint64_t{1} << 40), kRuntime, "corrupt control message from rank 0");
  payload->resize(static_cast<size_t>(header[1]));
  if (header[1]) comm.Broadcast(payload->data(), payload->size(), 0, AllRanks(comm));
  return static_cast<ControlKind>(header[0]);
}

struct Leader {
  std::mutex channel;  // one control message (and the batch run after it) at a time
  std::shared_ptr<Communicator> comm;
  std::thread heartbeat;
  std::mutex state;
  std::condition_variable wake;
  bool stopped = false;
};

Leader& TheLeader() {
  static Leader* leader = new Leader;  // lives as long as the process: the heartbeat may outlive main's objects
  return *leader;
}

}  // namespace

bool InShardedJob() {
  const char* size = std::getenv("WORLD_SIZE");
  return size && std::atoi(size) > 1;
}

int ShardRank() {
  const char* rank = std::getenv("RANK");
  return rank ? std::atoi(rank) : 0;
}

void StartShardLeader() {
  if (!InShardedJob()) return;
  Leader& l = TheLeader();
  std::lock_guard<std::mutex> lock(l.channel);
  if (l.comm) return;
  const LaunchEnv env = ReadLaunchEnv(300000);
  l.comm = CreateGlooCommunicatorFromEnv(env.timeout_ms);
  OF_CHECK(l.comm->rank() == 0, kInternal, "the shard leader must be rank 0, this is rank ", l.comm->rank());
  // Idle followers wait inside a broadcast, which times out after the job's collective timeout:
  // a heartbeat well within it keeps them there.
  auto period = std::chrono::milliseconds(std::max<int64_t>(100, std::min<int64_t>(env.timeout_ms / 4, 10000)));
  l.heartbeat = std::thread([&l, period] {
    std::unique_lock<std::mutex> state(l.state);
    while (!l.stopped) {
      if (l.wake.wait_for(state, period, [&] { return l.stopped; })) break;
      state.unlock();
      try {
        std::lock_guard<std::mutex> channel(l.channel);
        if (l.comm) SendControl(*l.comm, kHeartbeat, "");
      } catch (const std::exception& e) {
        Log("shard heartbeat failed: ", e.what());
      }
      state.lock();
    }
  });
  Log("rank 0 of ", l.comm->world_size(), ": serving the front ends; sharded models run on every rank");
}

ShardBatchGuard::ShardBatchGuard(const std::string& request_bytes) {
  Leader& l = TheLeader();
  l.channel.lock();
  try {
    OF_CHECK(l.comm != nullptr, kInternal, "sharded batch before the shard leader started");
    SendControl(*l.comm, kBatch, request_bytes);
  } catch (...) {
    l.channel.unlock();
    throw;
  }
}

ShardBatchGuard::~ShardBatchGuard() { TheLeader().channel.unlock(); }

void StopShardFollowers() {
  if (!InShardedJob() || ShardRank() != 0) return;
  Leader& l = TheLeader();
  {
    std::lock_guard<std::mutex> state(l.state);
    if (l.stopped) return;
    l.stopped = true;
  }
  l.wake.notify_all();
  if (l.heartbeat.joinable()) l.heartbeat.join();
  std::lock_guard<std::mutex> channel(l.channel);
  try {
    if (!l.comm) l.comm = CreateGlooCommunicatorFromEnv(ReadLaunchEnv(300000).timeout_ms);
    SendControl(*l.comm, kStop, "");
  } catch (const std::exception& e) {
    Log("could not tell the other ranks to stop: ", e.what());
  }
}

int RunShardFollower(const std::string& repository, int threads) {
  const LaunchEnv env = ReadLaunchEnv(300000);
  std::shared_ptr<Communicator> comm = CreateGlooCommunicatorFromEnv(env.timeout_ms);
  Log("rank ", comm->rank(), " of ", comm->world_size(), ": running rank 0's batches of the sharded models in ",
      repository);
  // The runner of each (model, version, load) rank 0 has sent a batch for.
  std::map<std::string, std::unique_ptr<ModelRunner>> runners;
  for (;;) {
    std::string payload;
    ControlKind kind;
    try {
      kind = ReceiveControl(*comm, &payload);
    } catch (const std::exception& e) {
      Log("rank ", comm->rank(), ": lost rank 0: ", e.what());
      return 1;
    }
    if (kind == kStop) {
      Log("rank ", comm->rank(), ": stopped by rank 0");
      return 0;
    }
    if (kind == kHeartbeat) continue;
    inference::ModelInferRequest batch;
    if (!batch.ParseFromString(payload)) {
      Log("rank ", comm->rank(), ": unreadable batch from rank 0");
      return 1;
    }
    const std::string& model = batch.model_name();
    const std::string version = batch.model_version();
    const uint64_t load_id = batch.parameters().count("load_id") ? batch.parameters().at("load_id").uint64_param() : 0;
    const std::string key = model + "/" + version + "#" + std::to_string(load_id);
    try {
      auto it = runners.find(key);
      if (it == runners.end()) {
        // A new load of this model version replaces the older ones.
        const std::string prefix = model + "/" + version + "#";
        for (auto r = runners.begin(); r != runners.end();)
          r = r->first.rfind(prefix, 0) == 0 ? runners.erase(r) : std::next(r);
        const std::filesystem::path dir = std::filesystem::path(repository) / model;
        ModelConfigFile config = ReadModelConfig((dir / "config.pbtxt").string());
        std::string file = FindModelFile(dir / version, config.config);
        OF_CHECK(!file.empty(), kNotFound, "no model file for ", model, " version ", version, " under ", dir.string());
        Graph graph = LoadModelFile(file);
        ModelSettings settings = ResolveModelSettings(config.config, config.present, model, graph, "");
        it = runners.emplace(key, MakeFollowerRunner(settings, graph, threads)).first;
        Log("rank ", comm->rank(), ": loaded sharded model '", model, "' version ", version);
      }
      InferRequest request = DecodeGrpcInferRequest(batch);
      it->second->Run(request.inputs, request.outputs);
    } catch (const std::exception& e) {
      // Rank 0 fails the same batch (its collectives see this rank leave them) and answers the client.
      Log("rank ", comm->rank(), ": batch of '", model, "' failed: ", e.what());
    }
  }
}

}  // namespace serve
}  // namespace oneflow
