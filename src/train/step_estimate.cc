// Training step estimates under the planner's cost model: the optimizer update and the pipeline's
// 1F1B schedule (see step_estimate.h).
#include "train/step_estimate.h"

#include <algorithm>

#include "passes/passes.h"
#include "kernels/node_runner.h"

namespace oneflow::train {

namespace {

// A 1-D placement of `n` devices: where the costs of one stage's collectives are computed (the
// cost model does not depend on which devices they are).
Placement Devices(int n) {
  Placement p;
  p.hierarchy = {n};
  for (int i = 0; i < n; ++i) p.devices.push_back(i);
  return p;
}

Shape ShapeOrOnes(const TensorType& t) {
  Shape s;
  if (!t.has_rank) return s;
  for (const Dim& d : t.dims) s.push_back(d.known() ? std::max<int64_t>(d.value, 1) : 1);
  return s;
}

double Bytes(const Shape& s, DType dtype) {
  return static_cast<double>(NumElements(s)) * static_cast<double>(DTypeSize(dtype));
}

// `g` planned on one device with every input at a concrete shape (`known` by name, else its
// declared type with symbolic dims as 1): the planner's per-op compute costs and its peak memory.
Plan PlanOnOneDevice(const Graph& g, const std::map<std::string, Shape>& known, const CostModel& cost) {
  PlanOptions po;
  po.placement = Devices(1);
  po.cost = cost;
  for (int v : g.inputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    auto it = known.find(val.name);
    po.input_shapes[val.name] = it != known.end() ? it->second : ShapeOrOnes(val.type);
  }
  return MakePlan(g, po);
}

// The all-reduce of a gradient of `shape` over `n` devices, as the planner's boxing prices it.
double AllReduceSeconds(const Shape& shape, int n, const CostModel& cost) {
  if (n <= 1) return 0;
  double s = 0;
  for (const BoxingStep& b : PlanBoxing(shape, DType::kFloat32, {Sbp::P()}, {Sbp::B()}, Devices(n), cost)) s += b.seconds;
  return s;
}

double Transfer(double bytes, const CostModel& cost) {
  return bytes > 0 ? cost.link_latency_s + bytes / cost.link_bytes_per_s : 0.0;
}

}  // namespace

double OptimizerUpdateSeconds(double elements, int states, const CostModel& cost) {
  return elements * 4.0 * (3.0 + 2.0 * states) / cost.memory_bytes_per_s;
}

PipelineEstimate EstimatePipeline(const std::vector<PipelineStage>& stages, const std::vector<PipelineParam>& params,
                                  const std::map<std::string, Shape>& block_inputs, const PipelineLayout& layout) {
  const CostModel& cost = layout.cost;
  const int S = static_cast<int>(stages.size()), M = layout.micro_batches;
  PipelineEstimate e;
  e.stages.resize(stages.size());
  Shape boundary;           // the previous stage's output at the block's shapes
  double received = 0;      // its bytes
  for (int k = 0; k < S; ++k) {
    const PipelineStage& st = stages[static_cast<size_t>(k)];
    StageEstimate& f = e.stages[static_cast<size_t>(k)];
    for (const PipelineParam& p : params)
      if (std::find(p.stages.begin(), p.stages.end(), k) != p.stages.end() || (p.stages.empty() && k == 0)) {
        f.param_bytes += Bytes(p.shape, DType::kFloat32);
        // Reduced over the stage's data-parallel group, then over the stages sharing it (tied
        // weights); a parameter no stage reads has a zero gradient and is not reduced.
        if (!p.stages.empty()) f.all_reduce_seconds += AllReduceSeconds(p.shape, layout.data_parallel, cost);
        f.all_reduce_seconds += AllReduceSeconds(p.shape, static_cast<int>(p.stages.size()), cost);
      }
    f.state_bytes = f.param_bytes * layout.optimizer_states;
    f.optimizer_seconds = OptimizerUpdateSeconds(f.param_bytes / 4, layout.optimizer_states, cost);

    // Forward at the block's shapes; backward's inputs take the shapes forward gives them.
    std::map<std::string, Shape> shapes = block_inputs;
    if (!st.input.empty() && !boundary.empty()) shapes[st.input] = boundary;
    Graph fg = st.forward;
    for (int v : fg.inputs) {
      Value& val = fg.values[static_cast<size_t>(v)];
      auto it = shapes.find(val.name);
      val.type = TensorType::Of(val.type.dtype, it != shapes.end() ? it->second : ShapeOrOnes(val.type));
    }
    InferShapes(fg);
    const Plan fwd = PlanOnOneDevice(fg, shapes, cost);
    {
      ThreadPool pool(1);
      FoldConstants(fg, pool, EvaluateOnCpu);  // shapes forward computes and backward reads (Shape of an activation)
    }
    std::map<std::string, Shape> bwd_shapes;
    for (const Value& v : fg.values)
      if (v.type.fully_known()) bwd_shapes[v.name] = v.type.ToShape();
    const Value& out = fg.values[static_cast<size_t>(fg.FindValue(st.output))];
    bwd_shapes[st.output_grad] = out.type.ToShape();
    Graph bg = st.backward;
    for (auto it = bg.inputs.begin(); it != bg.inputs.end();) {
      Value& v = bg.values[static_cast<size_t>(*it)];
      const int f = fg.FindValue(v.name);
      if (f != kNoValue && fg.values[static_cast<size_t>(f)].constant.defined()) {
        v.constant = fg.values[static_cast<size_t>(f)].constant;
        v.type = TensorType::Of(v.constant.dtype(), v.constant.shape());
        it = bg.inputs.erase(it);
      } else {
        ++it;
      }
    }
    const Plan bwd = PlanOnOneDevice(bg, bwd_shapes, cost);

    for (const NodePlan& n : fwd.nodes) f.flops += n.flops;
    f.forward_seconds = fwd.compute_seconds;
    f.backward_seconds = bwd.compute_seconds;
    for (const std::string& s : st.saved) {
      auto it = bwd_shapes.find(s);
      const int v = fg.FindValue(s);
      if (it != bwd_shapes.end() && v != kNoValue) f.saved_bytes += Bytes(it->second, fg.values[static_cast<size_t>(v)].type.dtype);
    }
    // The plans count the parameters either as parameters or as live inputs: either way not transient.
    auto transient = [&](const Plan& p) {
      return std::max(0.0, static_cast<double>(p.activation_bytes + p.param_bytes) - f.param_bytes);
    };
    f.transient_bytes = std::max(transient(fwd), transient(bwd));
    f.boundary_bytes = k + 1 < S ? Bytes(out.type.ToShape(), out.type.dtype) : 0;
    f.send_seconds = Transfer(f.boundary_bytes, cost) + Transfer(received, cost);
    f.in_flight = std::min(S - k, M);
    // One micro-batch's saved values are inside the backward run's peak already.
    f.memory_bytes = 2 * f.param_bytes + f.state_bytes + f.saved_bytes * std::max(f.in_flight - 1, 0) + f.transient_bytes;
    boundary = out.type.ToShape();
    received = f.boundary_bytes;
  }
  // 1F1B: (M + S - 1) slots of the slowest stage's forward + backward + sends (blocking, not
  // overlapped), then the slowest stage's gradient all-reduce and update. The bubble is the S - 1
  // slots of warm-up and cool-down.
  for (const StageEstimate& f : e.stages) {
    const double slot = f.forward_seconds + f.backward_seconds + f.send_seconds;
    if (slot > e.slot_seconds) {
      e.slot_seconds = slot;
      e.compute_seconds = M * (f.forward_seconds + f.backward_seconds);
      e.send_seconds = M * f.send_seconds;
    }
    e.reduce_seconds = std::max(e.reduce_seconds, f.all_reduce_seconds + f.optimizer_seconds);
    e.memory_bytes = std::max(e.memory_bytes, f.memory_bytes);
  }
  e.step_seconds = (M + S - 1) * e.slot_seconds + e.reduce_seconds;
  e.bubble_fraction = static_cast<double>(S - 1) / (M + S - 1);
  return e;
}

}  // namespace oneflow::train
