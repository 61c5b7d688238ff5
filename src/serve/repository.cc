#include "serve/repository.h"

#include <algorithm>
#include <filesystem>

#include "serialize/model_io.h"
#include "serve/log.h"
#include "serve/status.h"

namespace oneflow {
namespace serve {
namespace {

namespace fs = std::filesystem;

// A version directory's name: a non-negative decimal integer.
bool ParseVersion(const std::string& name, int64_t* version) {
  if (name.empty() || name.size() > 18 || !std::all_of(name.begin(), name.end(), ::isdigit)) return false;
  *version = std::stoll(name);
  return true;
}

const char* PlatformOf(const std::string& file) {
  return FormatFromExtension(file) == ModelFormat::kNative ? "oneflow_native" : "oneflow_onnx";
}

// Repositories written for Triton name onnxruntime as the platform or backend; those models are
// ONNX files we serve ourselves. Any other platform (TensorRT plans, TorchScript, ...) is refused.
void CheckPlatform(const inference::ModelConfig& config) {
  static const char* const kAccepted[] = {"", "onnxruntime_onnx", "onnxruntime", "onnx", "oneflow", "oneflow_onnx",
                                          "oneflow_native"};
  for (const std::string& p : {config.platform(), config.backend()})
    if (std::find(std::begin(kAccepted), std::end(kAccepted), p) == std::end(kAccepted))
      Fail(ErrorCode::kUnsupported, "platform/backend '", p,
           "' is not one oneflow serve runs (it serves ONNX and .ofm models)");
}

}  // namespace

std::string FindModelFile(const std::filesystem::path& version_dir, const inference::ModelConfig& config) {
  std::error_code ec;
  if (!config.default_model_filename().empty()) {
    fs::path p = version_dir / config.default_model_filename();
    return fs::is_regular_file(p, ec) ? p.string() : "";
  }
  for (const char* name : {"model.onnx", "model.ofm"}) {
    fs::path p = version_dir / name;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

ModelRepository::ModelRepository(RepositoryOptions options) : options_(std::move(options)) {
  std::error_code ec;
  OF_CHECK(fs::is_directory(options_.root, ec), kNotFound, "model repository '", options_.root,
           "' is not a directory");
}

ModelRepository::~ModelRepository() { UnloadAll(Clock::now()); }

std::vector<std::string> ModelRepository::ModelDirectories() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(options_.root, ec)) {
    std::string name = e.path().filename().string();
    if (e.is_directory(ec) && !name.empty() && name[0] != '.') names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::shared_ptr<std::mutex> ModelRepository::ModelLock(const std::string& model) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& m = model_locks_[model];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

void ModelRepository::LoadAll() {
  for (const std::string& name : ModelDirectories()) {
    try {
      Load(name);
    } catch (const ServeError&) {
      // Recorded in the model's entry (state and reason) and logged by Load.
    }
  }
}

void ModelRepository::Load(const std::string& model) {
  std::error_code ec;
  const fs::path dir = fs::path(options_.root) / model;
  if (model.empty() || model.find('/') != std::string::npos || model == "." || model == ".." ||
      !fs::is_directory(dir, ec))
    Refuse(StatusCode::kNotFound, "model '", model, "' is not in the repository");
  std::shared_ptr<std::mutex> model_lock = ModelLock(model);
  std::lock_guard<std::mutex> serialize_loads(*model_lock);

  auto mark_unavailable = [&](const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ModelEntry& entry = models_[model];
      entry.state = "UNAVAILABLE";
      entry.reason = reason;
      entry.unloaded = false;
    }
    Log("model '", model, "' failed to load: ", reason);
    Refuse(StatusCode::kInvalidArgument, "failed to load model '", model, "': ", reason);
  };

  ModelConfigFile config;
  std::vector<int64_t> chosen;
  std::map<int64_t, std::string> files;
  try {
    config = ReadModelConfig((dir / "config.pbtxt").string());
    for (const std::string& w : config.warnings) Log("model '", model, "': ", w);
    CheckPlatform(config.config);
    std::vector<int64_t> available;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      int64_t v = 0;
      if (!e.is_directory(ec) || !ParseVersion(e.path().filename().string(), &v)) continue;
      std::string file = FindModelFile(e.path(), config.config);
      if (file.empty()) continue;
      available.push_back(v);
      files[v] = file;
    }
    std::sort(available.begin(), available.end());
    OF_CHECK(!available.empty(), kNotFound, "no version directory with a model file (",
             config.config.default_model_filename().empty() ? "model.onnx or model.ofm"
                                                            : config.config.default_model_filename(),
             ") under ", dir.string());
    chosen = SelectVersions(config.config, available);
  } catch (const Error& e) {
    mark_unavailable(e.what());
  }

  // Mark the chosen versions as loading (a version already ready keeps serving until replaced).
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ModelEntry& entry = models_[model];
    entry.unloaded = false;
    entry.state = "LOADING";
    entry.reason.clear();
    for (int64_t v : chosen) {
      VersionSlot& slot = entry.versions[v];
      if (!slot.scheduler) slot.state = "LOADING";
    }
  }

  std::map<int64_t, std::shared_ptr<ModelScheduler>> loaded;
  std::map<int64_t, std::string> failures;
  for (int64_t v : chosen) {
    try {
      Graph graph = LoadModelFile(files[v]);
      ModelSettings settings =
          ResolveModelSettings(config.config, config.present, model, graph, PlatformOf(files[v]), dir.string());
      loaded[v] = std::make_shared<ModelScheduler>(model, v, std::move(settings), graph, options_.threads,
                                                   next_load_id_.fetch_add(1));
      Log("model '", model, "' version ", v, " ready (", files[v], ", ", loaded[v]->settings().instance_count,
          " instance(s) x ", loaded[v]->threads_per_instance(), " thread(s), max_batch_size ",
          loaded[v]->settings().max_batch_size, loaded[v]->settings().dynamic_batching ? ", dynamic batching" : "",
          loaded[v]->settings().placement.empty() ? "" : ", sharded over " + loaded[v]->settings().placement,
          loaded[v]->warmup_report().empty() ? "" : ", warmed up: " + loaded[v]->warmup_report(), ")");
    } catch (const std::exception& e) {
      failures[v] = e.what();
      Log("model '", model, "' version ", v, " failed to load: ", e.what());
    }
  }

  // Swap the new schedulers in; retire replaced versions and versions the policy no longer selects.
  std::vector<std::shared_ptr<ModelScheduler>> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ModelEntry& entry = models_[model];
    for (auto it = entry.versions.begin(); it != entry.versions.end();) {
      if (std::find(chosen.begin(), chosen.end(), it->first) == chosen.end()) {
        if (it->second.scheduler) retired.push_back(it->second.scheduler);
        it = entry.versions.erase(it);
        continue;
      }
      VersionSlot& slot = it->second;
      if (loaded.count(it->first)) {
        if (slot.scheduler) retired.push_back(slot.scheduler);
        slot.scheduler = loaded[it->first];
        slot.state = "READY";
        slot.reason.clear();
      } else if (!slot.scheduler) {
        slot.state = "UNAVAILABLE";
        slot.reason = failures[it->first];
      }
      ++it;
    }
    entry.state = loaded.empty() ? "UNAVAILABLE" : "READY";
    if (loaded.empty() && !failures.empty()) entry.reason = failures.begin()->second;
  }
  // Requests already queued on a replaced scheduler finish there (the deadline bounds the wait).
  for (auto& s : retired) s->Drain(Clock::now() + std::chrono::seconds(30));
  if (loaded.empty()) {
    std::string reason;
    for (const auto& [v, why] : failures) reason += StrCat(reason.empty() ? "" : "; ", "version ", v, ": ", why);
    Refuse(StatusCode::kInvalidArgument, "failed to load model '", model, "': ", reason);
  }
}

void ModelRepository::Unload(const std::string& model, Clock::time_point deadline) {
  std::shared_ptr<std::mutex> model_lock = ModelLock(model);
  std::lock_guard<std::mutex> serialize_loads(*model_lock);
  std::vector<std::shared_ptr<ModelScheduler>> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = models_.find(model);
    if (it == models_.end()) Refuse(StatusCode::kNotFound, "model '", model, "' is not in the repository");
    for (auto& [v, slot] : it->second.versions)
      if (slot.scheduler) retired.push_back(slot.scheduler);
    it->second.versions.clear();
    it->second.state = "UNAVAILABLE";
    it->second.reason = "unloaded";
    it->second.unloaded = true;
  }
  for (auto& s : retired) s->Drain(deadline);
  Log("model '", model, "' unloaded");
}

void ModelRepository::LoadOrUnload(const std::string& model, bool load) {
  if (load) Load(model);
  else Unload(model, Clock::now() + std::chrono::seconds(30));
}

void ModelRepository::UnloadAll(Clock::time_point deadline) {
  std::vector<std::shared_ptr<ModelScheduler>> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [name, entry] : models_)
      for (auto& [v, slot] : entry.versions)
        if (slot.scheduler) retired.push_back(slot.scheduler);
  }
  // Stop every queue first, then wait: the models drain side by side.
  std::vector<std::thread> drains;
  for (auto& s : retired) drains.emplace_back([s, deadline] { s->Drain(deadline); });
  for (auto& t : drains) t.join();
  std::lock_guard<std::mutex> lock(mutex_);
  models_.clear();
}

std::shared_ptr<ModelScheduler> ModelRepository::Find(const std::string& model, const std::string& version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(model);
  if (it == models_.end()) Refuse(StatusCode::kNotFound, "unknown model '", model, "'");
  const ModelEntry& entry = it->second;
  if (version.empty()) {
    for (auto v = entry.versions.rbegin(); v != entry.versions.rend(); ++v)
      if (v->second.scheduler) return v->second.scheduler;
    Refuse(StatusCode::kUnavailable, "model '", model, "' is not ready",
           entry.reason.empty() ? std::string() : ": " + entry.reason);
  }
  int64_t v = 0;
  if (!ParseVersion(version, &v)) Refuse(StatusCode::kNotFound, "model '", model, "' has no version '", version, "'");
  auto slot = entry.versions.find(v);
  if (slot == entry.versions.end())
    Refuse(StatusCode::kNotFound, "model '", model, "' has no version '", version, "' loaded");
  if (!slot->second.scheduler)
    Refuse(StatusCode::kUnavailable, "model '", model, "' version ", version, " is ", slot->second.state,
           slot->second.reason.empty() ? std::string() : ": " + slot->second.reason);
  return slot->second.scheduler;
}

void ModelRepository::Submit(const std::string& model, const std::string& version, InferRequest&& request,
                             InferCallback&& done) const {
  for (int attempt = 0;; ++attempt) {
    std::shared_ptr<ModelScheduler> scheduler = Find(model, version);
    try {
      scheduler->Submit(std::move(request), std::move(done));
      return;
    } catch (const ServeError&) {
      // A reload swaps the scheduler in and drains the old one after Find returned it: look again.
      if (attempt < 3 && scheduler->stopping()) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = models_.find(model);
        if (it != models_.end() && !it->second.unloaded) continue;
      }
      throw;
    }
  }
}

std::vector<int64_t> ModelRepository::ReadyVersions(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = models_.find(model);
  if (it == models_.end()) Refuse(StatusCode::kNotFound, "unknown model '", model, "'");
  std::vector<int64_t> versions;
  for (const auto& [v, slot] : it->second.versions)
    if (slot.scheduler) versions.push_back(v);
  return versions;
}

std::vector<ModelIndexEntry> ModelRepository::Index(bool ready_only) const {
  std::vector<ModelIndexEntry> index;
  std::map<std::string, bool> listed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, entry] : models_) {
      listed[name] = true;
      if (entry.versions.empty()) {
        if (!ready_only) index.push_back({name, "", entry.state, entry.reason});
        continue;
      }
      for (const auto& [v, slot] : entry.versions)
        if (!ready_only || slot.scheduler)
          index.push_back({name, std::to_string(v), slot.scheduler ? "READY" : slot.state, slot.reason});
    }
  }
  // Directories never loaded (added after start) are listed too, as Triton does.
  if (!ready_only)
    for (const std::string& name : ModelDirectories())
      if (!listed.count(name)) index.push_back({name, "", "UNAVAILABLE", "not loaded"});
  return index;
}

std::vector<LabeledMetrics> ModelRepository::Metrics() const {
  std::vector<LabeledMetrics> all;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, entry] : models_)
    for (const auto& [v, slot] : entry.versions)
      if (slot.scheduler) all.push_back({name, std::to_string(v), slot.scheduler->metrics()});
  return all;
}

bool ModelRepository::AllReady() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, entry] : models_)
    if (!entry.unloaded && entry.state != "READY") return false;
  return true;
}

}  // namespace serve
}  // namespace oneflow
