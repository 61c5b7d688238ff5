// `oneflow plan`: plans a model over a placement and prints the explanation (text or JSON).
#include <cstdio>
#include <cstdlib>

#include "cli.h"
#include "plan/plan.h"
#include "engine/session.h"
#include "train/distributed_trainer.h"
#include "serialize/model_io.h"

namespace oneflow {
namespace cli {

static double PositiveNumber(const ParsedArgs& a, const std::string& name, double fallback) {
  if (!a.Has(name)) return fallback;
  std::string text = a.Get(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e18)
    throw UsageError("--" + name + " needs a positive number, got '" + text + "'");
  return v;
}

// "8x784" -> {8, 784}.
static Shape ParseDims(const std::string& name, const std::string& text) {
  Shape s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t x = text.find('x', start);
    std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    bool ok = !part.empty() && part.size() <= 15 && part.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) throw UsageError("--shape " + name + "=" + text + ": dims must be non-negative integers joined by 'x'");
    s.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return s;
}

// `--train LOSS --logits OUTPUT`: the training plan (forward + backward + gradient reduction and
// optimizer state) the distributed trainer would run for a global batch of the given shapes.
static int PlanTraining(const ParsedArgs& a, const Graph& g, const PlanOptions& o) {
  train::DistributedTrainingOptions d;
  const std::string loss = a.Get("train");
  d.training.appended_loss = loss == "softmax_cross_entropy" ? train::AppendedLoss::kSoftmaxCrossEntropy
                             : loss == "mse"                 ? train::AppendedLoss::kMse
                             : loss == "l1"                  ? train::AppendedLoss::kL1
                                                             : train::AppendedLoss::kNone;
  if (d.training.appended_loss == train::AppendedLoss::kNone)
    throw UsageError("--train needs a loss: softmax_cross_entropy, mse or l1 (got '" + loss + "')");
  if (!a.Has("logits")) throw UsageError("--train needs --logits OUTPUT (the model output the loss reads)");
  d.training.logits_output = a.Get("logits");
  const std::string opt = a.Get("optimizer", "adam");
  if (opt == "sgd") d.training.optimizer.kind = train::OptimizerKind::kSgd;
  else if (opt == "adam") d.training.optimizer.kind = train::OptimizerKind::kAdam;
  else if (opt == "adamw") d.training.optimizer.kind = train::OptimizerKind::kAdamW;
  else throw UsageError("--optimizer must be sgd, adam or adamw, got '" + opt + "'");
  d.dist.plan = o;
  d.dist.plan.input_shapes.clear();
  d.zero_stage = a.GetInt("zero", 0, 0, 3);
  d.pipeline_stages = a.GetInt("pipeline", 1, 1, 4096);
  d.micro_batches = a.GetInt("micro-batches", d.pipeline_stages, 1, 1 << 20);
  std::unique_ptr<train::DistributedTrainer> t = train::DistributedTrainer::Create(g, d);
  t->Prepare(o.input_shapes);
  std::string out = t->Explain(a.Has("json"));
  if (out.empty() || out.back() != '\n') out += "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

int PlanCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("plan", args,
                           {"placement", "mode", "shape", "sbp", "memory-budget-mb", "link-gbps", "latency-us", "gflops",
                            "devices", "train", "logits", "optimizer", "zero", "pipeline", "micro-batches"},
                           {"json"});
  if (a.positionals.size() != 1) throw UsageError("plan needs exactly one MODEL (see 'oneflow help')");
  if (!a.Has("placement")) throw UsageError("plan needs --placement (e.g. --placement cpu:0-3)");
  PlanOptions o;
  o.placement = Placement::Parse(a.Get("placement"));
  o.mode = ParsePlanMode(a.Get("mode", "data"));
  o.available_devices = a.GetInt("devices", 0, 0, 4096);
  for (const std::string& spec : a.All("shape")) {
    auto [name, text] = SplitAssignment("shape", spec);
    o.input_shapes[name] = ParseDims(name, text);
  }
  for (const std::string& spec : a.All("sbp")) {
    auto [name, text] = SplitAssignment("sbp", spec);
    o.sbp[name] = ParseNdSbp(text);
  }
  o.memory_budget_bytes = static_cast<int64_t>(PositiveNumber(a, "memory-budget-mb", 0) * 1024 * 1024);
  o.cost.link_bytes_per_s = PositiveNumber(a, "link-gbps", o.cost.link_bytes_per_s / 1e9) * 1e9;
  o.cost.link_latency_s = PositiveNumber(a, "latency-us", o.cost.link_latency_s * 1e6) / 1e6;
  o.cost.flops_per_s = PositiveNumber(a, "gflops", o.cost.flops_per_s / 1e9) * 1e9;
  Graph g = LoadModelFile(a.positionals[0]);
  for (const auto& [name, shape] : o.input_shapes) {
    bool found = a.Has("train") && name == "labels";  // the appended loss's input
    for (int id : g.inputs) found |= g.values[static_cast<size_t>(id)].name == name;
    OF_CHECK(found, kNotFound, "--shape names '", name, "', but the model has no such input");
  }
  if (a.Has("train")) return PlanTraining(a, g, o);
  for (const char* opt : {"logits", "optimizer", "zero", "pipeline", "micro-batches"})
    if (a.Has(opt)) throw UsageError(std::string("--") + opt + " needs --train LOSS");
  Plan plan = MakePlan(g, o);
  std::string out = a.Has("json") ? plan.ToJson() + "\n" : plan.ToText();
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace cli
}  // namespace oneflow
