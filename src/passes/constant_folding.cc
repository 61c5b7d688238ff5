// Constant folding: evaluate constant subgraphs once at session creation with the CPU kernels.
#include <algorithm>

#include "graph/op_schema.h"
#include "passes/passes.h"

namespace oneflow {

// Shape and Size depend only on the input's type; fold them whenever that type is fully known.
static bool FoldShapeOf(Graph& g, const Node& n) {
  if (!n.domain.empty() || (n.op_type != op::kShape && n.op_type != op::kSize)) return false;
  const TensorType& t = g.values[static_cast<size_t>(n.inputs[0])].type;
  if (!t.fully_known()) return false;
  Shape s = t.ToShape();
  Tensor out;
  if (n.op_type == op::kSize) {
    out = Tensor::Scalar(DType::kInt64, static_cast<double>(NumElements(s)));
    *out.data<int64_t>() = NumElements(s);
  } else {
    int64_t rank = static_cast<int64_t>(s.size());
    int64_t start = n.attrs.GetInt("start", 0), end = n.attrs.GetInt("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    int64_t len = std::max<int64_t>(0, end - start);
    out = Tensor(DType::kInt64, Shape{len});
    for (int64_t i = 0; i < len; ++i) out.data<int64_t>()[i] = s[static_cast<size_t>(start + i)];
  }
  Value& v = g.values[static_cast<size_t>(n.outputs[0])];
  v.constant = out;
  v.type = TensorType::Of(out.dtype(), out.shape());
  return true;
}

int FoldConstants(Graph& g, ThreadPool& pool, const NodeEvaluator& evaluate, size_t max_bytes) {
  int folded = 0;
  std::vector<char> remove(g.nodes.size(), 0);
  for (int idx : g.TopologicalOrder()) {
    const Node& n = g.nodes[static_cast<size_t>(idx)];
    if (FoldShapeOf(g, n)) {
      remove[static_cast<size_t>(idx)] = 1;
      ++folded;
      continue;
    }
    if (n.schema && n.schema->random) continue;  // a new draw every run
    bool all_const = std::all_of(n.inputs.begin(), n.inputs.end(), [&](int v) {
      return v == kNoValue || g.values[static_cast<size_t>(v)].constant.defined();
    });
    if (!all_const) continue;
    // Outputs must have a known, bounded size; anything else is evaluated at run time.
    bool bounded = true;
    for (int v : n.outputs) {
      if (v == kNoValue) continue;
      const TensorType& t = g.values[static_cast<size_t>(v)].type;
      if (!t.fully_known() || NumElements(t.ToShape()) * DTypeSize(t.dtype) > max_bytes) bounded = false;
    }
    if (!bounded) continue;
    std::vector<const Tensor*> inputs;
    for (int v : n.inputs) inputs.push_back(v == kNoValue ? nullptr : &g.values[static_cast<size_t>(v)].constant);
    std::vector<Tensor> outputs;
    try {
      evaluate(g, n, inputs, outputs, pool);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kUnsupported) continue;  // no kernel: leave it to the run (which reports)
      throw Error(e.code(), std::string("while folding constants: ") + e.what());
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i] == kNoValue) continue;
      Value& v = g.values[static_cast<size_t>(n.outputs[i])];
      // A view shares its input's storage; constants must own theirs to stay independent.
      v.constant = outputs[i].storage() == (inputs.empty() || !inputs[0] ? nullptr : inputs[0]->storage())
                       ? outputs[i].Clone() : outputs[i];
      v.type = TensorType::Of(v.constant.dtype(), v.constant.shape());
    }
    remove[static_cast<size_t>(idx)] = 1;
    ++folded;
  }
  if (folded) {
    std::vector<Node> kept;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (!remove[i]) kept.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(kept);
  }
  return folded;
}

}  // namespace oneflow
