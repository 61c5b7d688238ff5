// The pipeline strategy of DistributedTrainer (docs/pipeline.md): stages on consecutive groups of
// a 1-D placement, data parallel inside a stage, micro-batches scheduled 1F1B, boundary
// activations and their gradients sent between stage peers. Shared by pipeline_trainer.cc (setup,
// training, inference, parameters) and pipeline_explain.cc (Explain).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/device_group.h"
#include "train/distributed_trainer.h"
#include "train/pipeline_stages.h"
#include "train/step_estimate.h"
#include "train/training_impl.h"

namespace oneflow::train {

class PipelineTrainer final : public DistributedTrainer {
 public:
  PipelineTrainer(const Graph& model, const DistributedTrainingOptions& options);
  const Graph& interface_graph() const override { return interface_; }
  TrainStepResult TrainStep(const std::vector<std::pair<std::string, Tensor>>& feeds) override;
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches) override;
  const std::vector<std::string>& parameter_names() const override { return param_names_; }
  Tensor GetParameter(const std::string& name) override;
  int64_t step() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return step_;
  }
  std::string Explain(bool json) const override;
  void Prepare(const std::map<std::string, Shape>& input_shapes) override;

 private:
  // One trained parameter: the stages reading it (the first owns it: reports it, counts it in the
  // norm); a parameter no stage reads lives on stage 0 with a zero gradient.
  using ParamInfo = PipelineParam;
  struct Device {
    int stage = 0, dp = 0;
    std::shared_ptr<ThreadPool> pool;
    std::unique_ptr<Part> forward, backward, eval;
    std::vector<ParamState> params;  // the parameters its stage reads (ParamInfo order)
    std::vector<int> param_index;    // per entry of `params`: index into params_
    std::vector<int> grad_index;     // per entry: index among backward's outputs, -1 = none
    std::vector<std::string> backward_inputs;
    // Measured by the last TrainStep (for Explain).
    size_t sent_bytes = 0;        // boundary activation bytes of the largest micro-batch block
    size_t saved_peak_bytes = 0;  // activations kept for in-flight micro-batches, at the peak
  };
  struct StepOutcome {
    TrainStepResult result;
    std::string refused;  // non-empty: the NaN policy refused the step
  };

  std::map<std::string, Tensor> CheckFeeds(const std::vector<std::pair<std::string, Tensor>>& feeds, bool train,
                                           int64_t& batch) const;
  void TrainOnDevice(size_t slot, const std::map<std::string, Tensor>& feeds, int64_t batch, StepOutcome& out);
  void EvalOnDevice(size_t slot, const std::map<std::string, Tensor>& feeds, int64_t batch,
                    const std::vector<std::string>& fetches, std::vector<std::pair<std::string, Tensor>>& out);
  std::vector<int> StageGroup(int stage) const;  // global ranks of a stage's devices
  int Peer(int stage, int dp) const;             // global rank of a stage's dp-th device
  int OutputStage(const std::string& name) const;

  DistributedTrainingOptions options_;
  std::shared_ptr<Communicator> process_comm_;
  Graph interface_;
  std::vector<std::string> param_names_, data_inputs_, model_outputs_;
  std::string loss_name_;
  std::vector<ParamInfo> params_;
  std::vector<PipelineStage> stages_;
  LocalDevices devices_;
  std::vector<Device> device_;  // per slot
  int num_stages_ = 0, dp_ = 0;
  int64_t step_ = 0, skipped_ = 0;
  std::map<std::string, Shape> last_block_shapes_;  // data inputs of the largest block of the last step
  mutable std::mutex mutex_;  // calls are serialized: a trainer is a state machine
};

}  // namespace oneflow::train
