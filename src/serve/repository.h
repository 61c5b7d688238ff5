// The model repository: Triton's layout, DIR/<model>/[config.pbtxt]/<version>/model.{onnx,ofm}.
// Every model found is loaded at start; the repository API loads, reloads and unloads one model at
// a time while the others keep serving. A model that fails to load stays listed as UNAVAILABLE with
// the reason. docs/serving.md, "Model repository".
#pragma once

#include <filesystem>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serve/metrics.h"
#include "serve/scheduler.h"

namespace oneflow {
namespace serve {

struct RepositoryOptions {
  std::string root;
  int threads = 0;  // the server's compute threads, shared among the instances of a model
};

// The model file of a version directory: the config's default_model_filename, else model.onnx or
// model.ofm; empty when there is none.
std::string FindModelFile(const std::filesystem::path& version_dir, const inference::ModelConfig& config);

// One row of /v2/repository/index.
struct ModelIndexEntry {
  std::string name;
  std::string version;  // empty for a model that has no loadable version
  std::string state;    // "READY", "LOADING", "UNLOADING", "UNAVAILABLE"
  std::string reason;
};

class ModelRepository {
 public:
  explicit ModelRepository(RepositoryOptions options);
  ~ModelRepository();

  // Scans the root and loads every model directory (failures are recorded, not thrown).
  void LoadAll();
  // (Re)loads `model` from disk: versions the policy selects are loaded (or kept), the others
  // drained and unloaded. Throws ServeError(kNotFound) for a model the repository lacks and
  // ServeError(kInvalidArgument) naming the problem when no version loads.
  void Load(const std::string& model);
  // Unloads every version of `model`, letting queued requests finish until `deadline`.
  void Unload(const std::string& model, Clock::time_point deadline);
  // What the repository API's load and unload calls do: Load, or Unload with a 30 s drain.
  void LoadOrUnload(const std::string& model, bool load);
  // Drains and unloads everything (server shutdown).
  void UnloadAll(Clock::time_point deadline);

  // The scheduler of `model` at `version` ("" = the newest ready version). ServeError: kNotFound
  // for an unknown model or version, kUnavailable when it is not ready (with the reason).
  std::shared_ptr<ModelScheduler> Find(const std::string& model, const std::string& version) const;
  // Find, then ModelScheduler::Submit. A request that finds a version just as a reload replaces it
  // goes to the replacement instead of being refused. Throws like both.
  void Submit(const std::string& model, const std::string& version, InferRequest&& request, InferCallback&& done) const;
  // The ready versions of `model`, ascending; throws like Find.
  std::vector<int64_t> ReadyVersions(const std::string& model) const;

  std::vector<ModelIndexEntry> Index(bool ready_only) const;
  std::vector<LabeledMetrics> Metrics() const;
  bool AllReady() const;  // every model that is not explicitly unloaded is ready
  const RepositoryOptions& options() const { return options_; }

 private:
  struct VersionSlot {
    std::shared_ptr<ModelScheduler> scheduler;  // set when ready
    std::string state;
    std::string reason;
  };
  struct ModelEntry {
    std::map<int64_t, VersionSlot> versions;
    std::string state;   // of the model as a whole when it has no version slot ("UNAVAILABLE", ...)
    std::string reason;  // why the whole model is unavailable
    bool unloaded = false;
  };

  std::vector<std::string> ModelDirectories() const;
  std::shared_ptr<std::mutex> ModelLock(const std::string& model);

  RepositoryOptions options_;
  mutable std::mutex mutex_;  // guards models_ (not held while loading or draining)
  std::map<std::string, ModelEntry> models_;
  std::map<std::string, std::shared_ptr<std::mutex>> model_locks_;
  std::atomic<uint64_t> next_load_id_{1};  // one load/unload per model at a time
};

}  // namespace serve
}  // namespace oneflow
