// Reverse-mode autodiff: walks the nodes between the `wrt` values and the loss in reverse
// topological order, sums the gradients flowing into each value and calls each op's rule.
#include "graph/autodiff.h"

#include <algorithm>
#include <set>

#include "graph/grad_context.h"
#include "graph/op_schema.h"
#include "graph/prepare.h"

namespace oneflow {
namespace {

bool IsFloating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

// Appends a node that is not part of any op's rule (the seed sum, the gradient outputs).
std::string AppendNode(Graph& g, const std::string& op, const std::vector<int>& inputs, const std::string& out_name,
                       const AttrMap& attrs = {}) {
  AppendTypedNode(g, op, inputs, out_name, attrs, "grad/" + out_name);
  return out_name;
}

// The total gradient of a value from its contributions ("" when none: zero).
std::string Accumulate(Graph& g, const std::vector<std::string>& parts, const std::string& value_name) {
  if (parts.size() <= 1) return parts.empty() ? std::string() : parts[0];
  std::vector<int> ids;
  for (const std::string& p : parts) ids.push_back(g.FindValue(p));
  return AppendNode(g, op::kSum, ids, g.UniqueName("grad/" + value_name + "/sum"));
}

bool IsScalarLike(const TensorType& t) {
  if (!t.has_rank) return false;
  for (const Dim& d : t.dims)
    if (d.value != 1) return false;
  return true;
}

}  // namespace

GradientInfo BuildGradients(Graph& graph, const std::string& loss, const std::vector<std::string>& wrt) {
  Graph g = graph;  // tensors share storage: cheap; `graph` stays untouched if we fail
  GradientInfo info;
  info.first_backward_node = g.nodes.size();
  info.first_backward_value = g.values.size();
  info.num_forward_outputs = g.outputs.size();

  const int loss_id = g.FindValue(loss);
  OF_REQUIRE(loss_id != kNoValue, "the loss '", loss, "' is not a value of the graph");
  const TensorType loss_type = g.values[static_cast<size_t>(loss_id)].type;
  OF_REQUIRE(IsFloating(loss_type.dtype), "the loss '", loss, "' must be a float tensor, it is ",
             DTypeName(loss_type.dtype));
  OF_REQUIRE(IsScalarLike(loss_type), "the loss '", loss, "' must be a scalar (one element), it is ",
             loss_type.ToString());

  std::vector<int> wrt_ids;
  for (const std::string& w : wrt) {
    const int id = g.FindValue(w);
    OF_REQUIRE(id != kNoValue, "cannot differentiate with respect to '", w, "': no such value in the graph");
    OF_REQUIRE(IsFloating(g.values[static_cast<size_t>(id)].type.dtype), "cannot differentiate with respect to '", w,
               "': it is ", DTypeName(g.values[static_cast<size_t>(id)].type.dtype), ", not a float tensor");
    OF_REQUIRE(std::find(wrt_ids.begin(), wrt_ids.end(), id) == wrt_ids.end(), "'", w, "' is listed twice in wrt");
    wrt_ids.push_back(id);
  }

  // Active values: float, reachable from a wrt value and reaching the loss.
  const std::vector<int> order = g.TopologicalOrder();
  const size_t num_values = g.values.size();
  std::vector<char> fwd(num_values, 0), bwd(num_values, 0);
  for (int id : wrt_ids) fwd[static_cast<size_t>(id)] = 1;
  auto floating = [&](int v) { return IsFloating(g.values[static_cast<size_t>(v)].type.dtype); };
  for (int idx : order) {
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    bool any = false;
    for (int v : n.inputs) any = any || (v != kNoValue && fwd[static_cast<size_t>(v)]);
    if (!any) continue;
    for (int v : n.outputs)
      if (v != kNoValue && floating(v)) fwd[static_cast<size_t>(v)] = 1;
  }
  bwd[static_cast<size_t>(loss_id)] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.nodes[static_cast<size_t>(*it)];
    bool any = false;
    for (int v : n.outputs) any = any || (v != kNoValue && bwd[static_cast<size_t>(v)]);
    if (!any) continue;
    for (int v : n.inputs)
      if (v != kNoValue && floating(v)) bwd[static_cast<size_t>(v)] = 1;
  }
  auto active = [&](int v) { return v != kNoValue && fwd[static_cast<size_t>(v)] && bwd[static_cast<size_t>(v)]; };

  std::vector<std::vector<std::string>> parts(num_values);
  if (active(loss_id)) {
    const std::string seed = g.UniqueName("grad/" + loss + "/seed");
    g.AddConstant(seed, Tensor::Scalar(loss_type.dtype, 1.0).Reshaped(loss_type.ToShape()));
    parts[static_cast<size_t>(loss_id)].push_back(seed);
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int idx = *it;
    std::vector<std::string> out_grads;
    std::vector<char> needs;
    bool any_grad = false, any_need = false;
    {
      // Copies: Accumulate appends nodes, which moves g.nodes.
      const std::vector<int> outs = g.nodes[static_cast<size_t>(idx)].outputs;
      const std::vector<int> ins = g.nodes[static_cast<size_t>(idx)].inputs;
      for (int v : outs) {
        out_grads.push_back(active(v) ? Accumulate(g, parts[static_cast<size_t>(v)], g.values[static_cast<size_t>(v)].name)
                                      : std::string());
        any_grad = any_grad || !out_grads.back().empty();
      }
      for (int v : ins) {
        needs.push_back(active(v) ? 1 : 0);
        any_need = any_need || needs.back();
      }
    }
    if (!any_grad || !any_need) continue;
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    const std::string desc = n.Describe();
    OF_CHECK(n.schema && n.schema->grad, kUnsupported, "cannot differentiate the loss '", loss, "' through ", desc,
             ": op ", n.op_type, " has no gradient rule");
    const OpSchema* schema = n.schema;
    GradContext ctx(g, idx, std::move(out_grads), needs);
    schema->grad(ctx);
    const Node& fwd_node = ctx.node();
    for (size_t i = 0; i < needs.size(); ++i) {
      if (!needs[i]) continue;
      OF_CHECK(ctx.declared()[i], kInternal, "the gradient rule of ", desc, " gave no gradient for input ", i);
      OF_CHECK(ctx.no_grad_reasons()[i].empty(), kUnsupported, "cannot differentiate the loss '", loss, "' through ",
               desc, ": op ", fwd_node.op_type, " is not differentiable with respect to input ", i, " ('",
               ctx.input(i), "'): ", ctx.no_grad_reasons()[i]);
      if (!ctx.input_grads()[i].empty()) parts[static_cast<size_t>(fwd_node.inputs[i])].push_back(ctx.input_grads()[i]);
    }
  }

  for (size_t k = 0; k < wrt.size(); ++k) {
    const int id = wrt_ids[k];
    std::string grad = Accumulate(g, parts[static_cast<size_t>(id)], wrt[k]);
    if (grad.empty()) {
      info.unreachable.push_back(wrt[k]);
      const TensorType& t = g.values[static_cast<size_t>(id)].type;
      if (t.fully_known()) {
        grad = g.UniqueName("grad/" + wrt[k] + "/zeros");
        g.AddConstant(grad, Tensor(t.dtype, t.ToShape()));
      } else {
        const std::string shape = AppendNode(g, op::kShape, {id}, g.UniqueName("grad/" + wrt[k] + "/shape"));
        grad = AppendNode(g, op::kConstantOfShape, {g.FindValue(shape)}, g.UniqueName("grad/" + wrt[k] + "/zeros"),
                          MakeAttrs({{"value", Attribute::TensorValue(Tensor(t.dtype, Shape{1}))}}));
      }
    }
    // Identity is a view (no copy); it gives every gradient output a predictable name of its own.
    std::string out = wrt[k] + "_grad";
    if (g.FindValue(out) != kNoValue) out = g.UniqueName(out);
    AppendNode(g, op::kIdentity, {g.FindValue(grad)}, out);
    g.outputs.push_back(g.FindValue(out));
    info.gradients[wrt[k]] = out;
  }

  std::set<int> saved;
  for (size_t n = info.first_backward_node; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs)
      if (v != kNoValue && static_cast<size_t>(v) < info.first_backward_value &&
          !g.values[static_cast<size_t>(v)].constant.defined())
        saved.insert(v);
  for (int v : saved) info.saved_values.push_back(g.values[static_cast<size_t>(v)].name);

  graph = std::move(g);
  return info;
}

}  // namespace oneflow
