// TrainingSession checkpoints in the native container: parameters, optimizer state, accumulated
// gradients, the step counter and the options that shape the state. Loading is all-or-nothing.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "serialize/native_format.h"
#include "train/training_impl.h"

namespace oneflow::train {

namespace {

constexpr const char* kFormatKey = "oneflow.training";
constexpr const char* kFormatValue = "1";

std::string StateName(const std::string& param, const std::string& slot) { return param + "::" + slot; }

// Lists up to `limit` problems, then how many more there are.
std::string JoinProblems(const std::vector<std::string>& problems, size_t limit = 12) {
  std::string out;
  for (size_t i = 0; i < problems.size() && i < limit; ++i) out += "\n  " + problems[i];
  if (problems.size() > limit) out += StrCat("\n  ... and ", problems.size() - limit, " more");
  return out;
}

std::string Describe(const Tensor& t) { return StrCat(DTypeName(t.dtype()), ShapeToString(t.shape())); }

}  // namespace

void TrainingSession::SaveCheckpoint(const std::string& path) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const Impl& s = *impl_;
  Checkpoint ck;
  ck.step = s.step;
  const std::vector<std::string> slots = OptimizerStateNames(options_.optimizer);
  for (const ParamState& p : s.params) {
    // Host views: the tensors themselves on the CPU, copies read back from a device session.
    ck.tensors.push_back({p.name, TensorRole::kParameter, s.HostView(p.slot.value), "", ""});
    for (size_t k = 0; k < slots.size(); ++k)
      ck.tensors.push_back(
          {StateName(p.name, slots[k]), TensorRole::kOptimizerState, s.HostView(p.slot.state[k]), p.name, slots[k]});
    if (p.has_grad)
      ck.tensors.push_back({StateName(p.name, "grad"), TensorRole::kGradient, s.HostView(p.slot.grad), p.name, ""});
  }
  ck.metadata[kFormatKey] = kFormatValue;
  ck.metadata["optimizer"] = OptimizerKindName(options_.optimizer.kind);
  ck.metadata["optimizer_state"] = [&] {
    std::string j;
    for (const std::string& x : slots) j += (j.empty() ? "" : ",") + x;
    return j;
  }();
  ck.metadata["skipped_steps"] = std::to_string(s.skipped);
  ck.metadata["seed"] = std::to_string(options_.seed);
  ck.metadata["deterministic"] = options_.deterministic ? "1" : "0";
  if (s.scaler) {
    // Accumulated gradients are scaled by it: a resumed run must continue with the same scale.
    // %a round-trips the float exactly.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", static_cast<double>(s.scaler->scale()));
    ck.metadata["loss_scale"] = buf;
    ck.metadata["loss_scale_good_steps"] = std::to_string(s.scaler->good_steps());
  }
  WriteCheckpoint(ck, path);
}

void TrainingSession::LoadCheckpoint(const std::string& path) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Impl& s = *impl_;
  Checkpoint ck = ReadCheckpoint(path);
  auto meta = [&](const char* key) {
    auto it = ck.metadata.find(key);
    return it == ck.metadata.end() ? std::string() : it->second;
  };
  OF_REQUIRE(meta(kFormatKey) == kFormatValue, "'", path, "' is not a training checkpoint of this engine (metadata '",
             kFormatKey, "' is '", meta(kFormatKey), "')");
  const std::vector<std::string> slots = OptimizerStateNames(options_.optimizer);
  std::string our_slots;
  for (const std::string& x : slots) our_slots += (our_slots.empty() ? "" : ",") + x;
  OF_REQUIRE(meta("optimizer") == OptimizerKindName(options_.optimizer.kind) && meta("optimizer_state") == our_slots,
             "checkpoint '", path, "' holds state of optimizer '", meta("optimizer"), "' (", meta("optimizer_state"),
             "); this session uses '", OptimizerKindName(options_.optimizer.kind), "' (", our_slots, ")");
  OF_REQUIRE(ck.step >= 0, "checkpoint '", path, "' has a negative step ", ck.step);
  // A checkpoint without a loss scale (e.g. of an f32 run) keeps this session's current scale.
  float loss_scale = 0.0f;
  int64_t loss_scale_good = 0;
  const std::string scale_text = meta("loss_scale");
  if (s.scaler && !scale_text.empty()) {
    char* end = nullptr;
    loss_scale = std::strtof(scale_text.c_str(), &end);
    OF_REQUIRE(end && *end == '\0' && std::isfinite(loss_scale) && loss_scale > 0.0f, "checkpoint '", path,
               "' has a bad loss scale '", scale_text, "'");
    loss_scale_good = std::atoll(meta("loss_scale_good_steps").c_str());
    OF_REQUIRE(loss_scale_good >= 0, "checkpoint '", path, "' has a negative loss scale growth count");
  }

  // Validate everything first: a mismatch leaves the session untouched.
  std::vector<std::string> problems;
  std::set<std::string> ours;
  auto check = [&](const std::string& name, const Tensor& want, bool required) -> const Tensor* {
    ours.insert(name);
    const CheckpointTensor* t = ck.Find(name);
    if (!t) {
      if (required) problems.push_back(StrCat("'", name, "' (", Describe(want), ") is missing from the checkpoint"));
      return nullptr;
    }
    if (t->tensor.dtype() != want.dtype() || t->tensor.shape() != want.shape()) {
      problems.push_back(StrCat("'", name, "' is ", Describe(t->tensor), " in the checkpoint, ", Describe(want),
                                " in this model"));
      return nullptr;
    }
    return &t->tensor;
  };
  struct Copy {
    const Tensor* from;
    Tensor* to;
  };
  std::vector<Copy> copies;
  std::vector<std::pair<ParamState*, const Tensor*>> grads;
  for (ParamState& p : s.params) {
    if (const Tensor* t = check(p.name, p.slot.value, true)) copies.push_back({t, &p.slot.value});
    for (size_t k = 0; k < slots.size(); ++k)
      if (const Tensor* t = check(StateName(p.name, slots[k]), p.slot.state[k], true)) copies.push_back({t, &p.slot.state[k]});
    grads.emplace_back(&p, check(StateName(p.name, "grad"), p.slot.value, false));
  }
  for (const CheckpointTensor& t : ck.tensors)
    if (!ours.count(t.name))
      problems.push_back(StrCat("'", t.name, "' (", Describe(t.tensor), ") is in the checkpoint but not a trained "
                                "parameter of this model"));
  OF_REQUIRE(problems.empty(), "checkpoint '", path, "' does not match this training session (", problems.size(),
             " problem", problems.size() == 1 ? "" : "s", "):", JoinProblems(problems));
  if (s.scaler && scale_text.empty())
    for (auto& [p, t] : grads)
      OF_REQUIRE(t == nullptr, "checkpoint '", path, "' holds accumulated gradients but no loss scale; this session "
                 "scales its f16 loss, so they cannot be interpreted (zero them before saving)");

  for (const Copy& c : copies) s.Assign(*c.to, *c.from);
  s.ZeroGradients();
  for (auto& [p, t] : grads) {
    if (!t) continue;
    s.Assign(p->slot.grad, *t);
    p->has_grad = true;
    s.backward_count = 1;
  }
  s.step = ck.step;
  s.skipped = std::atoll(meta("skipped_steps").c_str());
  if (s.scaler && !scale_text.empty()) s.scaler->Restore(loss_scale, loss_scale_good);
  s.pending.clear();
  s.has_pending = false;
}

}  // namespace oneflow::train
