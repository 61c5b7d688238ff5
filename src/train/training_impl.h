// Internals of TrainingSession shared by its source files (session, checkpoints, loss): the compiled
// parts, the per-parameter state and the session's mutable state.
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "train/mixed_precision.h"
#include "train/optimizer.h"
#include "train/training_device.h"
#include "train/training_session.h"

namespace oneflow::train {

// One compiled graph (forward, backward or eval) on the session's shared thread pool.
struct Part {
  std::shared_ptr<const Graph> graph;
  std::unique_ptr<Executor> executor;
  // Feeds graph inputs by name; throws kInvalidArgument naming a missing one. On a device executor,
  // the feeds named in `device_feeds` are device tensors, and `outputs_on_device` keeps the results
  // in device memory.
  std::vector<Tensor> Run(const std::map<std::string, Tensor>& named, const std::set<std::string>& device_feeds = {},
                          bool outputs_on_device = false) const;
};

// Optimizes `g` at `level` for `device` (parameters are graph inputs, so nothing folds across them)
// and builds its executor there.
std::unique_ptr<Part> CompilePart(Graph g, int level, const std::shared_ptr<ThreadPool>& pool,
                                  const ExecutorDevice& device = {});

struct ParamState {
  std::string name;
  ParamSlot slot;         // value, accumulated gradient, optimizer state
  bool has_grad = false;  // false: the gradient is zero (slot.grad holds zeros)
};

struct TrainingSession::Impl {
  // Device sessions only (null on the CPU). Declared first, so destroyed last: the device tensors
  // below return their memory to pools of its stream.
  std::unique_ptr<TrainingDevice> device;
  std::mutex mutex;
  Graph model;  // as given: what ExportModel returns with current parameter values
  std::vector<ParamState> params;
  std::string loss_name;
  std::vector<std::string> saved_names, checkpoints;
  size_t recomputed_nodes = 0;
  std::set<std::string> backward_reads_inputs;  // data inputs (e.g. labels) backward reads
  std::shared_ptr<ThreadPool> pool;
  std::unique_ptr<Part> forward, backward, eval;

  std::map<std::string, Tensor> pending;  // kept by the last train-mode run for backward
  bool has_pending = false;
  size_t saved_bytes = 0;  // bytes kept by the last train-mode run
  double last_loss = std::numeric_limits<double>::quiet_NaN();
  double last_grad_norm = std::numeric_limits<double>::quiet_NaN();
  bool nonfinite_loss = false;
  int64_t backward_count = 0;  // backward calls since the last step
  int64_t step = 0;
  int64_t skipped = 0;
  // f16 loss scaling: the backward graph's scale input and the scale's state (null otherwise).
  std::string loss_scale_name;
  std::unique_ptr<DynamicLossScale> scaler;

  // Parameter, gradient and state tensors as the host sees them: the tensor itself on the CPU, a
  // host copy on a device (HostView); always a copy (HostCopy); `dst` overwritten with host `src`.
  Tensor HostView(const Tensor& t) const { return device ? device->Download(t) : t; }
  Tensor HostCopy(const Tensor& t) const { return device ? device->Download(t) : t.Clone(); }
  void Assign(const Tensor& dst, const Tensor& src) const;

  const ParamState* Find(const std::string& name) const;
  const ParamState& Get(const std::string& name) const;  // kNotFound naming the parameter
  void ZeroGradients();
};

}  // namespace oneflow::train
