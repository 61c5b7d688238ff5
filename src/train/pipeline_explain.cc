// PipelineTrainer::Explain: stages, bytes sent, per-device memory and the estimated step time of
// the 1F1B schedule (train/step_estimate.h: the planner's cost model).
#include <algorithm>
#include <sstream>

#include "base/json_text.h"
#include "train/pipeline_trainer.h"

namespace oneflow::train {

namespace {

// Byte and flop counts print as integers.
int64_t I(double x) { return static_cast<int64_t>(x); }

}  // namespace

std::string PipelineTrainer::Explain(bool json) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int S = num_stages_, M = options_.micro_batches;
  const bool shapes_known = !last_block_shapes_.empty();
  PipelineLayout layout;
  layout.data_parallel = dp_;
  layout.micro_batches = M;
  layout.optimizer_states = static_cast<int>(OptimizerStateNames(options_.training.optimizer).size());
  layout.cost = options_.dist.plan.cost;
  const PipelineEstimate e = EstimatePipeline(stages_, params_, last_block_shapes_, layout);
  // Measured by the last step: the largest boundary block sent and the saved activations' peak.
  std::vector<double> measured_sent(static_cast<size_t>(S), 0), measured_saved(static_cast<size_t>(S), 0);
  for (const Device& d : device_) {
    const size_t k = static_cast<size_t>(d.stage);
    measured_sent[k] = std::max(measured_sent[k], static_cast<double>(d.sent_bytes));
    measured_saved[k] = std::max(measured_saved[k], static_cast<double>(d.saved_peak_bytes));
  }
  std::ostringstream o;
  if (json) {
    o << "{\"strategy\":\"pipeline\",\"estimated_step_seconds\":" << e.step_seconds << ",\"placement\":"
      << JsonQuote(devices_.placement.ToString()) << ",\"stages\":" << S << ",\"data_parallel\":" << dp_
      << ",\"micro_batches\":" << M << ",\"schedule\":\"1F1B\",\"steps\":" << step_ << ",\"skipped_steps\":" << skipped_
      << ",\"shapes\":" << (shapes_known ? "\"last step\"" : "\"symbolic dims as 1\"") << ",\"stage_list\":[";
    for (int k = 0; k < S; ++k) {
      const PipelineStage& st = stages_[static_cast<size_t>(k)];
      const StageEstimate& f = e.stages[static_cast<size_t>(k)];
      const std::vector<int> ranks = StageGroup(k);
      o << (k ? "," : "") << "{\"stage\":" << k << ",\"ranks\":[";
      for (size_t i = 0; i < ranks.size(); ++i) o << (i ? "," : "") << ranks[i];
      o << "],\"ops\":" << st.forward_nodes << ",\"parameters\":" << st.params.size() << ",\"input\":"
        << JsonQuote(st.input) << ",\"output\":" << JsonQuote(st.output) << ",\"flops_per_micro_batch\":" << I(f.flops)
        << ",\"bytes_sent_per_micro_batch\":" << I(f.boundary_bytes)
        << ",\"measured_bytes_sent\":" << I(measured_sent[static_cast<size_t>(k)])
        << ",\"memory\":{\"total\":" << I(f.memory_bytes) << ",\"parameters\":" << I(f.param_bytes)
        << ",\"gradients\":" << I(f.param_bytes) << ",\"optimizer_state\":" << I(f.state_bytes)
        << ",\"saved_activations\":" << I(f.saved_bytes * f.in_flight) << ",\"in_flight_micro_batches\":" << f.in_flight
        << ",\"transient\":" << I(f.transient_bytes)
        << ",\"measured_saved_activations\":" << I(measured_saved[static_cast<size_t>(k)])
        << "},\"seconds\":{\"forward\":" << f.forward_seconds << ",\"backward\":" << f.backward_seconds
        << ",\"send\":" << f.send_seconds << ",\"all_reduce\":" << f.all_reduce_seconds
        << ",\"optimizer\":" << f.optimizer_seconds << "}}";
    }
    o << "],\"estimate\":{\"step_seconds\":" << e.step_seconds << ",\"slot_seconds\":" << e.slot_seconds
      << ",\"compute_seconds\":" << e.compute_seconds << ",\"send_seconds\":" << e.send_seconds
      << ",\"reduce_and_update_seconds\":" << e.reduce_seconds << ",\"bubble_fraction\":" << e.bubble_fraction
      << ",\"memory_bytes\":" << I(e.memory_bytes) << "}}";
    return o.str();
  }
  o << "pipeline: " << S << " stages x " << dp_ << " data-parallel device(s) on " << devices_.placement.ToString()
    << ", " << M << " micro-batch(es), 1F1B; " << step_ << " step(s) applied, " << skipped_ << " skipped\n";
  o << "shapes: " << (shapes_known ? "the last step's largest micro-batch block" : "symbolic dims taken as 1 (no step yet)")
    << "; costs: the planner's cost model (per-op compute, link bandwidth and latency)\n";
  for (int k = 0; k < S; ++k) {
    const PipelineStage& st = stages_[static_cast<size_t>(k)];
    const StageEstimate& f = e.stages[static_cast<size_t>(k)];
    const std::vector<int> ranks = StageGroup(k);
    o << "stage " << k << " on ranks [";
    for (size_t i = 0; i < ranks.size(); ++i) o << (i ? "," : "") << ranks[i];
    o << "]: " << st.forward_nodes << " ops, " << st.params.size() << " parameters, " << I(f.flops)
      << " flops forward per micro-batch block";
    if (!st.input.empty()) o << ", receives '" << st.input << "'";
    if (k + 1 < S) o << ", sends '" << st.output << "' (" << I(f.boundary_bytes) << " B per micro-batch block, its gradient back)";
    o << "\n  per micro-batch: forward " << f.forward_seconds * 1e6 << " us, backward " << f.backward_seconds * 1e6
      << " us, sends " << f.send_seconds * 1e6 << " us; per step: gradient all-reduce " << f.all_reduce_seconds * 1e6
      << " us, optimizer update " << f.optimizer_seconds * 1e6 << " us";
    o << "\n  memory per device " << I(f.memory_bytes) << " B: parameters " << I(f.param_bytes) << " B, gradients "
      << I(f.param_bytes) << " B, optimizer state " << I(f.state_bytes) << " B, saved activations "
      << I(f.saved_bytes * f.in_flight) << " B (" << f.in_flight << " in-flight micro-batch(es) x " << I(f.saved_bytes)
      << " B), transient peak of one run " << I(f.transient_bytes) << " B";
    if (measured_saved[static_cast<size_t>(k)] > 0)
      o << "; last step: " << I(measured_saved[static_cast<size_t>(k)]) << " B saved at the peak";
    o << "\n";
  }
  o << "estimated step time: " << e.step_seconds << " s = " << (M + S - 1) << " slots x " << e.slot_seconds
    << " s (compute " << e.compute_seconds << " s, sends " << e.send_seconds
    << " s over the micro-batches) + gradient all-reduce and update " << e.reduce_seconds
    << " s; bubble (s-1)/(m+s-1) = " << e.bubble_fraction << "\n";
  return o.str();
}

}  // namespace oneflow::train
