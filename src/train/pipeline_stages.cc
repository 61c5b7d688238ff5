// CutIntoStages: separators of the forward order, flops-balanced cuts, per-stage graphs with a
// surrogate objective seeding backward.
#include "train/pipeline_stages.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"
#include "graph/autodiff.h"
#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "passes/passes.h"
#include "plan/plan.h"
#include "train/graph_split.h"

namespace oneflow::train {

namespace {

Shape ShapeOrOnes(const TensorType& t) {
  Shape s;
  if (!t.has_rank) return s;
  for (const Dim& d : t.dims) s.push_back(d.known() ? std::max<int64_t>(d.value, 1) : 1);
  return s;
}

double NodeFlops(const Graph& g, const Node& n) {
  std::vector<Shape> in, out;
  for (int v : n.inputs) in.push_back(v == kNoValue ? Shape{} : ShapeOrOnes(g.values[static_cast<size_t>(v)].type));
  for (int v : n.outputs) out.push_back(v == kNoValue ? Shape{} : ShapeOrOnes(g.values[static_cast<size_t>(v)].type));
  return EstimateFlops(n, in, out);
}

// Chooses stages - 1 separators (indices into `seps`, increasing) whose prefix flops are closest
// to even shares, leaving enough separators after each choice for the cuts still to make.
std::vector<size_t> ChooseCuts(const std::vector<Separator>& seps, const std::vector<double>& prefix, int stages) {
  std::vector<size_t> cuts;
  const double total = prefix.back();
  size_t lo = 0;
  for (int c = 1; c < stages; ++c) {
    const double target = total * c / stages;
    const size_t hi = seps.size() - static_cast<size_t>(stages - 1 - c);  // exclusive
    size_t best = lo;
    for (size_t i = lo; i < hi; ++i)
      if (std::fabs(prefix[seps[i].position + 1] - target) < std::fabs(prefix[seps[best].position + 1] - target))
        best = i;
    cuts.push_back(best);
    lo = best + 1;
  }
  return cuts;
}

PipelineStage BuildStage(const TrainingGraph& t, const std::vector<int>& nodes, int in_v, int out_v, bool last) {
  const Graph& g = t.graph;
  const std::vector<int> producer = g.Producers();
  std::vector<char> here(g.nodes.size(), 0);
  for (int n : nodes) here[static_cast<size_t>(n)] = 1;
  PipelineStage st;
  st.forward_nodes = nodes.size();
  std::vector<int> outs = {out_v};
  for (int u : t.user_outputs) {
    const int p = producer[static_cast<size_t>(u)];
    if (p != kNoValue && here[static_cast<size_t>(p)] && u != out_v) outs.push_back(u);
  }
  std::vector<int> inputs = t.data_inputs;
  inputs.insert(inputs.end(), t.params.begin(), t.params.end());
  if (in_v != kNoValue) inputs.push_back(in_v);
  Graph sg = ExtractSubgraph(g, nodes, inputs, outs);
  for (const Node& n : sg.nodes) st.flops_estimate += NodeFlops(sg, n);
  st.input = in_v == kNoValue ? "" : t.name(in_v);
  st.output = t.name(out_v);
  for (int u : outs)
    if (std::find(t.user_outputs.begin(), t.user_outputs.end(), u) != t.user_outputs.end()) st.user_outputs.push_back(t.name(u));

  std::vector<int> params, data;  // ids in sg
  for (int p : t.params) {
    const int v = sg.FindValue(t.name(p));
    if (v != kNoValue && std::find(sg.inputs.begin(), sg.inputs.end(), v) != sg.inputs.end()) {
      params.push_back(v);
      st.params.push_back(t.name(p));
    }
  }
  for (int v : sg.inputs)
    if (std::find(params.begin(), params.end(), v) == params.end()) data.push_back(v);
  const std::vector<int> sg_outputs = sg.outputs;

  // Eval: the forward nodes only; on the last stage without the loss (labels are not fed then).
  std::vector<int> eval_outputs;
  for (int v : sg_outputs)
    if (!(last && sg.values[static_cast<size_t>(v)].name == st.output &&
          std::find(st.user_outputs.begin(), st.user_outputs.end(), st.output) == st.user_outputs.end()))
      eval_outputs.push_back(v);
  std::vector<int> fwd_order = sg.TopologicalOrder();
  st.eval = ExtractSubgraph(sg, fwd_order, sg.inputs, eval_outputs);

  // Surrogate objective sum(output * output_grad): its gradient with respect to output is output_grad.
  const int out_id = sg.FindValue(st.output);
  const size_t first_surrogate = sg.nodes.size();
  const int grad_in = sg.AddValue(sg.UniqueName(st.output + "/pipeline_grad"), sg.values[static_cast<size_t>(out_id)].type);
  sg.inputs.push_back(grad_in);
  st.output_grad = sg.values[static_cast<size_t>(grad_in)].name;
  const int prod = AppendTypedNode(sg, binary::Mul::kName, {out_id, grad_in}, sg.UniqueName(st.output + "/pipeline_weighted"));
  AttrMap keep;
  keep.set("keepdims", Attribute::Int(0));
  const int objective = AppendTypedNode(sg, op::kReduceSum, {prod}, sg.UniqueName(st.output + "/pipeline_objective"), keep);

  std::vector<std::string> wrt = st.params;
  if (!st.input.empty()) wrt.push_back(st.input);
  GradientInfo info = BuildGradients(sg, sg.values[static_cast<size_t>(objective)].name, wrt);

  SplitRequest req;
  // The surrogate nodes count as backward: forward cannot compute them (output_grad arrives later).
  req.first_backward_node = first_surrogate;
  req.data_inputs = data;
  req.data_inputs.push_back(grad_in);
  req.params = params;
  req.user_outputs = sg_outputs;
  req.loss = kNoValue;
  for (const std::string& w : wrt) req.gradients.push_back(sg.FindValue(info.gradients.at(w)));
  TrainingGraphs tg = SplitForTraining(sg, req);
  st.forward = std::move(tg.forward);
  st.backward = std::move(tg.backward);
  st.saved = std::move(tg.saved);
  return st;
}

}  // namespace

std::vector<PipelineParam> StageParams(const TrainingGraph& t, const std::vector<PipelineStage>& stages) {
  std::vector<PipelineParam> out;
  for (size_t i = 0; i < t.params.size(); ++i) {
    PipelineParam p{t.name(t.params[i]), t.initial[i].shape(), {}};
    for (size_t k = 0; k < stages.size(); ++k)
      if (std::find(stages[k].params.begin(), stages[k].params.end(), p.name) != stages[k].params.end())
        p.stages.push_back(static_cast<int>(k));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<PipelineStage> CutIntoStages(const TrainingGraph& t, int stages) {
  const Graph& g = t.graph;
  OF_REQUIRE(stages >= 2, "a pipeline needs at least 2 stages, got ", stages);
  OF_REQUIRE(g.values[static_cast<size_t>(t.loss)].type.dtype == DType::kFloat32, "pipeline training needs a float32 loss, '",
             t.name(t.loss), "' is ", g.values[static_cast<size_t>(t.loss)].type.ToString());
  std::vector<int> order;
  for (int n : g.TopologicalOrder())
    if (static_cast<size_t>(n) < t.info.first_backward_node) order.push_back(n);
  std::vector<double> prefix(order.size() + 1, 0.0);
  for (size_t i = 0; i < order.size(); ++i) prefix[i + 1] = prefix[i] + NodeFlops(g, g.nodes[static_cast<size_t>(order[i])]);

  // The last stage computes the loss: cuts lie before its producer.
  const int loss_producer = g.Producers()[static_cast<size_t>(t.loss)];
  const size_t loss_pos = static_cast<size_t>(std::find(order.begin(), order.end(), loss_producer) - order.begin());
  std::vector<Separator> seps;
  for (const Separator& s : SingleValueSeparators(g, order))
    if (g.values[static_cast<size_t>(s.value)].type.dtype == DType::kFloat32 && s.position < loss_pos) seps.push_back(s);
  if (seps.size() + 1 < static_cast<size_t>(stages)) {
    std::string names;
    for (const Separator& s : seps) names += (names.empty() ? "" : ", ") + t.name(s.value);
    Fail(ErrorCode::kInvalidArgument, "cannot cut the model into ", stages, " pipeline stages: its forward graph has ",
         seps.size(), " float32 value(s) that alone separate it", names.empty() ? "" : " (" + names + ")",
         "; a stage boundary must be the only activation crossing it (e.g. the output of a layer, or the residual "
         "stream between transformer blocks), so at most ", seps.size() + 1, " stage(s) are possible");
  }
  const std::vector<size_t> cuts = ChooseCuts(seps, prefix, stages);

  std::vector<PipelineStage> out;
  size_t begin = 0;
  for (int k = 0; k < stages; ++k) {
    const bool last = k == stages - 1;
    const size_t end = last ? order.size() : seps[cuts[static_cast<size_t>(k)]].position + 1;
    std::vector<int> nodes(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end));
    const int in_v = k == 0 ? kNoValue : seps[cuts[static_cast<size_t>(k - 1)]].value;
    const int out_v = last ? t.loss : seps[cuts[static_cast<size_t>(k)]].value;
    out.push_back(BuildStage(t, nodes, in_v, out_v, last));
    begin = end;
  }

  // Every model output is computed by some stage.
  for (int u : t.user_outputs) {
    bool found = false;
    for (const PipelineStage& st : out)
      found |= std::find(st.user_outputs.begin(), st.user_outputs.end(), t.name(u)) != st.user_outputs.end();
    OF_CHECK(found, kUnsupported, "model output '", t.name(u), "' is not computed by a node (an input or constant "
             "passed through); pipeline training does not support it");
  }
  return out;
}

}  // namespace oneflow::train
