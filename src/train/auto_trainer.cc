// The auto strategy (auto_layouts.h): planned and pipeline layouts estimated on one cost model,
// the cheapest within the memory budget trained. Until the first TrainStep or Prepare gives the
// batch's shapes, a planned trainer in auto mode stands in (interface, initial parameters); a
// pipeline choice replaces it with a pipeline trainer (under Gloo: a second communicator set up
// at that step, by every rank alike, as the decision is deterministic).
#include <cstdio>
#include <sstream>

#include "base/error.h"
#include "base/json_text.h"
#include "train/auto_layouts.h"
#include "train/optimizer.h"
#include "train/pipeline_stages.h"
#include "train/step_estimate.h"
#include "train/training_graph.h"

namespace oneflow::train {

bool Admissible(const LayoutCandidate& c, int64_t budget_bytes) {
  return c.error.empty() && (budget_bytes <= 0 || c.memory_bytes <= static_cast<double>(budget_bytes));
}

int CheapestCandidate(const std::vector<LayoutCandidate>& c, int64_t budget_bytes) {
  int best = -1;
  for (size_t i = 0; i < c.size(); ++i)
    if (Admissible(c[i], budget_bytes) && (best < 0 || c[i].step_seconds < c[static_cast<size_t>(best)].step_seconds))
      best = static_cast<int>(i);
  return best;
}

std::string DescribeCandidates(const std::vector<LayoutCandidate>& c, int64_t budget_bytes, const std::string& separator) {
  std::ostringstream o;
  for (size_t i = 0; i < c.size(); ++i) {
    o << (i ? separator : "") << c[i].label << ": ";
    if (!c[i].error.empty()) {
      o << c[i].error;
      continue;
    }
    char figures[96];
    std::snprintf(figures, sizeof figures, "%.3f ms, %.1f MiB", c[i].step_seconds * 1e3, c[i].memory_bytes / (1 << 20));
    o << figures << (Admissible(c[i], budget_bytes) ? "" : " (over the memory budget)");
  }
  return o.str();
}

std::string CandidatesJson(const std::vector<LayoutCandidate>& c, int64_t budget_bytes) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < c.size(); ++i) {
    o << (i ? "," : "") << "{\"label\":" << JsonQuote(c[i].label) << ",\"kind\":\""
      << (c[i].pipeline_stages > 1 ? "pipeline" : "planned") << "\",\"pipeline_stages\":" << c[i].pipeline_stages
      << ",\"micro_batches\":" << c[i].micro_batches << ",\"admissible\":" << (Admissible(c[i], budget_bytes) ? "true" : "false");
    if (c[i].error.empty())
      o << ",\"step_seconds\":" << c[i].step_seconds << ",\"memory_bytes\":" << static_cast<int64_t>(c[i].memory_bytes);
    else
      o << ",\"error\":" << JsonQuote(c[i].error);
    o << "}";
  }
  return o.str() + "]";
}

std::vector<LayoutCandidate> PipelineLayoutCandidates(const Graph& model, const DistributedTrainingOptions& options,
                                                      const std::map<std::string, Shape>& input_shapes) {
  const Placement& P = options.dist.plan.placement;
  if (options.zero_stage != 0 || P.ndim() != 1 || P.size() < 2) return {};
  const TrainingGraph t = BuildTrainingGraph(model, options.training);
  int64_t batch = -1;
  for (int v : t.data_inputs) {
    auto it = input_shapes.find(t.name(v));
    if (it == input_shapes.end() || it->second.empty() || (batch >= 0 && it->second[0] != batch)) return {};
    batch = it->second[0];
  }
  if (batch < 1) return {};
  PipelineLayout layout;
  layout.optimizer_states = static_cast<int>(OptimizerStateNames(options.training.optimizer).size());
  layout.cost = options.dist.plan.cost;
  std::vector<LayoutCandidate> out;
  for (int S = 2; S <= P.size(); ++S) {
    if (P.size() % S) continue;
    const int dp = P.size() / S;
    std::vector<PipelineStage> stages;
    std::string cut_error;
    try {
      stages = CutIntoStages(t, S);
    } catch (const Error& e) {
      cut_error = e.what();
    }
    for (int M : {2, 4, 8}) {
      if (batch % M || batch / M < dp) continue;  // micro-batches of whole rows, at least one per device
      LayoutCandidate c;
      c.pipeline_stages = S;
      c.micro_batches = M;
      c.label = "pipeline " + std::to_string(S) + " stages x " + std::to_string(dp) + " data parallel, " +
                std::to_string(M) + " micro-batches";
      c.error = cut_error;
      if (c.error.empty()) {
        layout.data_parallel = dp;
        layout.micro_batches = M;
        const int64_t rows = (batch / M + dp - 1) / dp;  // the largest block (the slice rule's first)
        std::map<std::string, Shape> block;
        for (int v : t.data_inputs) {
          Shape s = input_shapes.at(t.name(v));
          s[0] = rows;
          block[t.name(v)] = s;
        }
        try {
          const PipelineEstimate e = EstimatePipeline(stages, StageParams(t, stages), block, layout);
          c.step_seconds = e.step_seconds;
          c.memory_bytes = e.memory_bytes;
        } catch (const Error& e) {
          c.error = e.what();
        }
      }
      out.push_back(c);
    }
  }
  return out;
}

namespace {

class AutoTrainer final : public DistributedTrainer {
 public:
  AutoTrainer(const Graph& model, const DistributedTrainingOptions& options)
      : model_(model), options_(options), planned_(CreatePlannedTrainer(model, options)) {
    interface_ = planned_->interface_graph();
    names_ = planned_->parameter_names();  // both strategies list them in TrainingGraph order
  }

  const Graph& interface_graph() const override { return interface_; }
  TrainStepResult TrainStep(const std::vector<std::pair<std::string, Tensor>>& feeds) override {
    std::map<std::string, Shape> shapes;
    for (const auto& [name, t] : feeds)
      if (t.defined()) shapes[name] = t.shape();
    DecideIfComplete(shapes);
    return Active().TrainStep(feeds);
  }
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches) override {
    OF_CHECK(chosen_ >= 0, kInvalidArgument, "auto mode decides the layout at the first training step: run one first");
    return Active().Run(feeds, fetches);
  }
  const std::vector<std::string>& parameter_names() const override { return names_; }
  Tensor GetParameter(const std::string& name) override { return Active().GetParameter(name); }
  int64_t step() const override { return Active().step(); }
  void Prepare(const std::map<std::string, Shape>& input_shapes) override {
    DecideIfComplete(input_shapes);
    Active().Prepare(input_shapes);
  }
  std::string Explain(bool json) const override {
    const std::string inner = Active().Explain(json);  // throws before the first step, as the strategies do
    const int64_t budget = options_.dist.plan.memory_budget_bytes;
    const LayoutCandidate& chosen = candidates_[static_cast<size_t>(chosen_)];
    if (json)  // the chosen strategy's document with an "auto" member last
      return inner.substr(0, inner.size() - 1) + ",\"auto\":{\"chosen\":" + JsonQuote(chosen.label) +
             ",\"candidates\":" + CandidatesJson(candidates_, budget) + "}}";
    return "auto: layouts considered (estimated step time with the optimizer update, memory per device):\n  " +
           DescribeCandidates(candidates_, budget, "\n  ") + "\nchosen: " + chosen.label + "\n" + inner;
  }

 private:
  DistributedTrainer& Active() const { return pipeline_ ? *pipeline_ : *planned_; }

  // With a shape for every input, estimates every layout and builds the cheapest; with inputs
  // missing the stand-in reports them (as the planned trainer does).
  void DecideIfComplete(const std::map<std::string, Shape>& shapes) {
    if (chosen_ >= 0) return;
    for (int v : interface_.inputs)
      if (!shapes.count(interface_.values[static_cast<size_t>(v)].name)) return;
    std::vector<LayoutCandidate> all = PlannedLayoutCandidates(*planned_, shapes);
    const size_t planned = all.size();
    for (LayoutCandidate& c : PipelineLayoutCandidates(model_, options_, shapes)) all.push_back(std::move(c));
    const int64_t budget = options_.dist.plan.memory_budget_bytes;
    const int best = CheapestCandidate(all, budget);
    OF_REQUIRE(best >= 0, "auto mode: no layout could be planned within the memory budget: ",
               DescribeCandidates(all, budget, "; "));
    const LayoutCandidate& c = all[static_cast<size_t>(best)];
    if (static_cast<size_t>(best) < planned) {
      AdoptPlannedLayout(*planned_, static_cast<size_t>(best), shapes, "auto: " + c.label);
    } else {
      DistributedTrainingOptions o = options_;
      o.dist.plan.mode = PlanMode::kDataParallel;  // inside each stage
      o.pipeline_stages = c.pipeline_stages;
      o.micro_batches = c.micro_batches;
      pipeline_ = CreatePipelineTrainer(model_, o);
      planned_.reset();
    }
    candidates_ = std::move(all);
    chosen_ = best;
  }

  Graph model_;
  DistributedTrainingOptions options_;
  Graph interface_;
  std::vector<std::string> names_;
  std::unique_ptr<DistributedTrainer> planned_, pipeline_;  // one active: the pipeline once chosen
  std::vector<LayoutCandidate> candidates_;
  int chosen_ = -1;
};

}  // namespace

std::unique_ptr<DistributedTrainer> CreateAutoTrainer(const Graph& model, const DistributedTrainingOptions& options) {
  return std::make_unique<AutoTrainer>(model, options);
}

}  // namespace oneflow::train
