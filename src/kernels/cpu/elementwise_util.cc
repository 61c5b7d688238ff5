// The broadcast planner and ApplyActivation declared in elementwise_util.h.
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

BroadcastPlan MakeBroadcastPlan(const std::vector<Shape>& operands, const Shape& out) {
  const size_t k = operands.size();
  const size_t rank = out.size();
  BroadcastPlan p;
  p.numel = NumElements(out);
  std::vector<std::vector<char>> full;  // per merged dim: does operand j span it (else broadcasts)
  std::vector<char> f(k);
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // size-1 output dims contribute nothing to the iteration
    for (size_t j = 0; j < k; ++j) {
      const Shape& s = operands[j];
      OF_ASSERT(s.size() <= rank);
      size_t off = rank - s.size();
      int64_t sd = d < off ? 1 : s[d - off];
      OF_REQUIRE(sd == out[d] || sd == 1, "shape ", ShapeToString(s), " does not broadcast to ", ShapeToString(out));
      f[j] = sd == out[d];
    }
    if (!p.dims.empty() && full.back() == f) {
      p.dims.back() *= out[d];
    } else {
      p.dims.push_back(out[d]);
      full.push_back(f);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    full.push_back(std::vector<char>(k, 1));
  }
  p.strides.assign(k, std::vector<int64_t>(p.dims.size(), 0));
  for (size_t j = 0; j < k; ++j) {
    int64_t running = 1;
    for (size_t d = p.dims.size(); d-- > 0;) {
      if (full[d][j]) {
        p.strides[j][d] = running;
        running *= p.dims[d];
      }
    }
  }
  return p;
}

namespace {

template <class Op, typename T>
void ApplyRow(const float* params, T* x, int64_t n) {
  const float p1 = params[1];
  unary::WithFirstParam<Op>(params, [&](auto first) {
    OF_IVDEP
    for (int64_t i = 0; i < n; ++i) {
      const float q[unary::kMaxParams] = {static_cast<float>(first), p1};
      x[i] = Op::Fwd(x[i], q);
    }
  });
}

template <typename T>
void Apply(const ActivationParams& p, T* x, int64_t n) {
  float params[unary::kMaxParams];  // a local copy: the loops see no aliasing with x
  for (int i = 0; i < unary::kMaxParams; ++i) params[i] = p.params[i];
  switch (p.kind) {
#define OF_APPLY_ROW(Op) \
  case Activation::k##Op: return ApplyRow<unary::Op>(params, x, n);
    ONEFLOW_UNARY_OPS(OF_APPLY_ROW)
#undef OF_APPLY_ROW
    default: return;  // kNone
  }
}

}  // namespace

void ApplyActivation(const ActivationParams& p, float* x, int64_t n) { Apply(p, x, n); }
void ApplyActivation(const ActivationParams& p, double* x, int64_t n) { Apply(p, x, n); }

ActivationParams ActivationFromAttrs(const std::string& name, const std::vector<float>& params) {
  ActivationParams a;
  if (name.empty() || name == "None") return a;
  // The row's token; a plain name where only one row has it (models saved before contrib rows
  // carried a token of their own say "QuickGelu").
  const UnaryOpInfo* info = nullptr;
  int by_name = 0;
  for (const UnaryOpInfo& row : kUnaryOps) {
    if (name == row.token) {
      info = &row;
      by_name = 0;
      break;
    }
    if (name == row.name && by_name++ == 0) info = &row;
  }
  if (by_name > 1) info = nullptr;
  if (!info) Fail(ErrorCode::kInvalidModel, "unknown fused activation '", name, "'");
  OF_CHECK(params.size() <= static_cast<size_t>(info->params.count), kInvalidModel, "fused activation ", name,
           " takes ", info->params.count, " parameters, got ", params.size());
  a.kind = info->id;
  for (int i = 0; i < info->params.count; ++i)
    a.params[i] = static_cast<size_t>(i) < params.size() ? params[static_cast<size_t>(i)] : info->params.items[i].value;
  return a;
}

const char* ActivationName(Activation a) { return a == Activation::kNone ? "None" : UnaryInfo(a).token; }

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
