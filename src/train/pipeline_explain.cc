// PipelineTrainer::Explain: stages, bytes sent, per-device memory and the estimated step time of
// the 1F1B schedule under the plan options' cost model.
#include <algorithm>
#include <sstream>

#include "graph/passes/passes.h"
#include "train/pipeline_trainer.h"

namespace oneflow::train {

namespace {

double Bytes(const TensorType& t) {
  if (!t.has_rank) return 0;
  double n = static_cast<double>(DTypeSize(t.dtype));
  for (const Dim& d : t.dims) n *= d.known() ? static_cast<double>(std::max<int64_t>(d.value, 1)) : 1.0;
  return n;
}

std::string Quote(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      o += ' ';
      continue;
    }
    o += ch;
  }
  return o + "\"";
}

// Byte and flop counts print as integers.
int64_t I(double x) { return static_cast<int64_t>(x); }

struct StageFigures {
  std::vector<int> ranks;
  double flops = 0;           // forward flops of one micro-batch block
  double boundary_bytes = 0;  // activation sent per micro-batch block (and its gradient back)
  double param_bytes = 0, state_bytes = 0, saved_bytes = 0;  // saved: per micro-batch block
  int in_flight = 0;          // micro-batches whose activations a device holds at the peak
  double measured_sent = 0, measured_saved = 0;  // from the last step (0 before any)
  double fwd_s = 0, bwd_s = 0, send_s = 0, allreduce_s = 0;
};

}  // namespace

std::string PipelineTrainer::Explain(bool json) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const CostModel& cost = options_.dist.plan.cost;
  const int S = num_stages_, M = options_.micro_batches;
  const bool shapes_known = !last_block_shapes_.empty();
  const size_t num_state = OptimizerStateNames(options_.training.optimizer).size();
  std::vector<StageFigures> fig(static_cast<size_t>(S));
  Shape boundary;  // the previous stage's output shape at the last step's block size
  for (int k = 0; k < S; ++k) {
    const PipelineStage& st = stages_[static_cast<size_t>(k)];
    StageFigures& f = fig[static_cast<size_t>(k)];
    f.ranks = StageGroup(k);
    // Concrete shapes of the largest block of the last step, inferred through the stage.
    Graph g = st.forward;
    for (int v : g.inputs) {
      Value& val = g.values[static_cast<size_t>(v)];
      auto it = last_block_shapes_.find(val.name);
      if (it != last_block_shapes_.end()) val.type = TensorType::Of(val.type.dtype, it->second);
      if (val.name == st.input && !boundary.empty()) val.type = TensorType::Of(val.type.dtype, boundary);
    }
    if (shapes_known) InferShapes(g);
    f.flops = EstimateGraphFlops(g);
    const Value& out = g.values[static_cast<size_t>(g.FindValue(st.output))];
    boundary = out.type.fully_known() ? out.type.ToShape() : Shape{};
    if (k + 1 < S) f.boundary_bytes = Bytes(out.type);
    for (const std::string& s : st.saved) f.saved_bytes += Bytes(g.values[static_cast<size_t>(g.FindValue(s))].type);
    for (const ParamInfo& p : params_)
      if (std::find(p.stages.begin(), p.stages.end(), k) != p.stages.end() || (p.stages.empty() && k == 0))
        f.param_bytes += static_cast<double>(ShapeProduct(p.shape, 0, p.shape.size()) * 4);
    f.state_bytes = f.param_bytes * static_cast<double>(num_state);
    f.in_flight = std::min(S - k, M);
    for (const Device& d : device_)
      if (d.stage == k) {
        f.measured_sent = std::max(f.measured_sent, static_cast<double>(d.sent_bytes));
        f.measured_saved = std::max(f.measured_saved, static_cast<double>(d.saved_peak_bytes));
      }
    // Backward costs about twice the forward (a gradient for each matmul operand).
    f.fwd_s = f.flops / cost.flops_per_s;
    f.bwd_s = 2 * f.fwd_s;
    // What the stage sends per micro-batch: its activation forward and the gradient of what it
    // received back (as many bytes as the previous stage's activation).
    auto transfer = [&](double bytes) { return bytes > 0 ? cost.link_latency_s + bytes / cost.link_bytes_per_s : 0.0; };
    f.send_s = transfer(f.boundary_bytes) + (k > 0 ? transfer(fig[static_cast<size_t>(k - 1)].boundary_bytes) : 0.0);
    if (dp_ > 1)
      f.allreduce_s = 2.0 * (dp_ - 1) * (cost.link_latency_s + f.param_bytes / dp_ / cost.link_bytes_per_s);
  }
  // 1F1B: (M + S - 1) slots of the slowest stage's forward + backward + its sends, then the
  // data-parallel all-reduce of the slowest stage. The bubble is the (S - 1) slots of warm-up and
  // cool-down: (S - 1) / (M + S - 1) of the step.
  double slot = 0, allreduce = 0, compute = 0, sends = 0;
  for (const StageFigures& f : fig) {
    slot = std::max(slot, f.fwd_s + f.bwd_s + f.send_s);
    allreduce = std::max(allreduce, f.allreduce_s);
  }
  for (const StageFigures& f : fig) {
    if (f.fwd_s + f.bwd_s + f.send_s == slot) {
      compute = M * (f.fwd_s + f.bwd_s);
      sends = M * f.send_s;
    }
  }
  const double total = (M + S - 1) * slot + allreduce;
  const double bubble = static_cast<double>(S - 1) / (M + S - 1);

  std::ostringstream o;
  if (json) {
    o << "{\"strategy\":\"pipeline\",\"estimated_step_seconds\":" << total << ",\"placement\":" << Quote(devices_.placement.ToString()) << ",\"stages\":" << S
      << ",\"data_parallel\":" << dp_ << ",\"micro_batches\":" << M << ",\"schedule\":\"1F1B\",\"steps\":" << step_
      << ",\"skipped_steps\":" << skipped_ << ",\"shapes\":"
      << (shapes_known ? "\"last step\"" : "\"symbolic dims as 1\"") << ",\"stage_list\":[";
    for (int k = 0; k < S; ++k) {
      const PipelineStage& st = stages_[static_cast<size_t>(k)];
      const StageFigures& f = fig[static_cast<size_t>(k)];
      o << (k ? "," : "") << "{\"stage\":" << k << ",\"ranks\":[";
      for (size_t i = 0; i < f.ranks.size(); ++i) o << (i ? "," : "") << f.ranks[i];
      o << "],\"ops\":" << st.forward_nodes << ",\"parameters\":" << st.params.size() << ",\"input\":"
        << Quote(st.input) << ",\"output\":" << Quote(st.output) << ",\"flops_per_micro_batch\":" << I(f.flops)
        << ",\"bytes_sent_per_micro_batch\":" << I(f.boundary_bytes) << ",\"measured_bytes_sent\":" << I(f.measured_sent)
        << ",\"memory\":{\"parameters\":" << I(f.param_bytes) << ",\"gradients\":" << I(f.param_bytes)
        << ",\"optimizer_state\":" << I(f.state_bytes) << ",\"saved_activations\":" << I(f.saved_bytes * f.in_flight)
        << ",\"in_flight_micro_batches\":" << f.in_flight << ",\"measured_saved_activations\":" << I(f.measured_saved)
        << "},\"seconds\":{\"forward\":" << f.fwd_s << ",\"backward\":" << f.bwd_s << ",\"send\":" << f.send_s
        << ",\"all_reduce\":" << f.allreduce_s << "}}";
    }
    o << "],\"estimate\":{\"step_seconds\":" << total << ",\"compute_seconds\":" << compute
      << ",\"send_seconds\":" << sends << ",\"all_reduce_seconds\":" << allreduce << ",\"bubble_fraction\":" << bubble
      << "}}";
    return o.str();
  }
  o << "pipeline: " << S << " stages x " << dp_ << " data-parallel device(s) on " << devices_.placement.ToString()
    << ", " << M << " micro-batch(es), 1F1B; " << step_ << " step(s) applied, " << skipped_ << " skipped\n";
  o << "shapes: " << (shapes_known ? "the last step's largest micro-batch block" : "symbolic dims taken as 1 (no step yet)")
    << "\n";
  for (int k = 0; k < S; ++k) {
    const PipelineStage& st = stages_[static_cast<size_t>(k)];
    const StageFigures& f = fig[static_cast<size_t>(k)];
    o << "stage " << k << " on ranks [";
    for (size_t i = 0; i < f.ranks.size(); ++i) o << (i ? "," : "") << f.ranks[i];
    o << "]: " << st.forward_nodes << " ops, " << st.params.size() << " parameters, " << I(f.flops)
      << " flops forward per micro-batch block";
    if (!st.input.empty()) o << ", receives '" << st.input << "'";
    if (k + 1 < S) o << ", sends '" << st.output << "' (" << I(f.boundary_bytes) << " B per micro-batch block, its gradient back)";
    o << "\n  memory per device: parameters " << I(f.param_bytes) << " B, gradients " << I(f.param_bytes)
      << " B, optimizer state " << I(f.state_bytes) << " B, saved activations " << I(f.saved_bytes * f.in_flight) << " B ("
      << f.in_flight << " in-flight micro-batch(es) x " << I(f.saved_bytes) << " B)";
    if (f.measured_saved > 0) o << "; last step: " << I(f.measured_saved) << " B saved at the peak";
    o << "\n";
  }
  o << "estimated step time: " << total << " s = " << (M + S - 1) << " slots x " << slot << " s (compute " << compute
    << " s, sends " << sends << " s over the micro-batches) + all-reduce " << allreduce << " s; bubble (s-1)/(m+s-1) = "
    << bubble << "\n";
  return o.str();
}

}  // namespace oneflow::train
