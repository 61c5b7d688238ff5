// Gradient rules of MatMul (batched, broadcasting, 1-D operands) and Gemm (attached in ops/nn.cc).
#include "graph/ops/grad_rules.h"

namespace oneflow {
namespace {

// Swaps the last two dims of a value of static rank `rank` (>= 2).
std::string TransposeLast2(GradContext& c, const std::string& v, int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return c.Emit1(op::kTranspose, {v}, MakeAttrs({{"perm", Attribute::Ints(perm)}}));
}

std::string Gemm(GradContext& c, const std::string& a, const std::string& b, bool ta, bool tb, float alpha = 1.0f) {
  return c.Emit1(op::kGemm, {a, b}, MakeAttrs({{"transA", Attribute::Int(ta)}, {"transB", Attribute::Int(tb)},
                                            {"alpha", Attribute::Float(alpha)}}));
}

// Dim d of t (negative d counts from the back) when it is statically known, else -1. A dim past
// t's rank (or any dim of an unranked t) is unknown too, never a read past `dims`.
int64_t KnownDim(const TensorType& t, int64_t d) {
  if (!t.has_rank) return -1;
  const int64_t i = d < 0 ? d + t.rank() : d;
  if (i < 0 || i >= t.rank()) return -1;
  const Dim& dim = t.dims[static_cast<size_t>(i)];
  return dim.known() ? dim.value : -1;
}

}  // namespace

void GradMatMul(GradContext& c) {
  const int64_t ra = c.input_rank(0), rb = c.input_rank(1);
  const std::string &a = c.input(0), &b = c.input(1);
  std::string dy = c.output_grad(0);

  // A batch of rows times a 2-D weight (dense layers): two plain GEMMs over the flattened rows,
  // with no transposed copies and no batch reduction afterwards. B's dims are read only when B is
  // 2-D: a 1-D B ([k], promoted to [k, 1] with that dim dropped from Y) has no dim 1.
  const bool dense = ra >= 2 && rb == 2;
  const int64_t k = dense ? KnownDim(c.input_type(1), 0) : -1, n = dense ? KnownDim(c.input_type(1), 1) : -1;
  if (dense && k >= 0 && n >= 0) {
    const std::string dy2 = c.Emit1(op::kReshape, {dy, c.Ints({-1, n})});
    if (c.needs_input_grad(0))
      c.SetInputGrad(0, c.Emit1(op::kReshape, {Gemm(c, dy2, b, false, true), c.ShapeOf(a)}));
    if (c.needs_input_grad(1)) c.SetInputGrad(1, Gemm(c, c.Emit1(op::kReshape, {a, c.Ints({-1, k})}), dy2, true, false));
    return;
  }

  // General case: 1-D operands become matrices (as MatMul promotes them), dY gets the dims back.
  std::string a2 = a, b2 = b;
  if (ra == 1 && rb == 1) {
    dy = c.Emit1(op::kUnsqueeze, {dy, c.Ints({0, 1})});
  } else if (ra == 1) {
    dy = c.Emit1(op::kUnsqueeze, {dy, c.Ints({-2})});
  } else if (rb == 1) {
    dy = c.Emit1(op::kUnsqueeze, {dy, c.Ints({-1})});
  }
  if (ra == 1) a2 = c.Emit1(op::kUnsqueeze, {a, c.Ints({0})});
  if (rb == 1) b2 = c.Emit1(op::kUnsqueeze, {b, c.Ints({-1})});
  const int64_t ra2 = std::max<int64_t>(ra, 2), rb2 = std::max<int64_t>(rb, 2);
  if (c.needs_input_grad(0)) {
    std::string da = c.Emit1(op::kMatMul, {dy, TransposeLast2(c, b2, rb2)});  // [..., m, k]
    if (ra == 1) da = c.Emit1(op::kSqueeze, {da, c.Ints({-2})});              // [..., k]
    c.SetInputGrad(0, c.SumToInputShape(da, 0));
  }
  if (c.needs_input_grad(1)) {
    std::string db = c.Emit1(op::kMatMul, {TransposeLast2(c, a2, ra2), dy});  // [..., k, n]
    if (rb == 1) db = c.Emit1(op::kSqueeze, {db, c.Ints({-1})});              // [..., k]
    c.SetInputGrad(1, c.SumToInputShape(db, 1));
  }
}

// Y = alpha op(A) op(B) + beta C with op = transpose when transA/transB.
void GradGemm(GradContext& c) {
  const bool ta = c.attrs().GetInt("transA") != 0, tb = c.attrs().GetInt("transB") != 0;
  const float alpha = c.attrs().GetFloat("alpha"), beta = c.attrs().GetFloat("beta");
  const std::string &a = c.input(0), &b = c.input(1), &dy = c.output_grad(0);
  if (c.needs_input_grad(0)) {
    // d op(A) = alpha dY op(B)^T; transposed back when A was.
    c.SetInputGrad(0, ta ? Gemm(c, b, dy, tb, true, alpha) : Gemm(c, dy, b, false, !tb, alpha));
  }
  if (c.needs_input_grad(1)) {
    // d op(B) = alpha op(A)^T dY.
    c.SetInputGrad(1, tb ? Gemm(c, dy, a, true, ta, alpha) : Gemm(c, a, dy, !ta, false, alpha));
  }
  if (c.has_input(2) && c.needs_input_grad(2)) {
    std::string dc = c.SumToInputShape(dy, 2);
    if (beta != 1.0f) dc = c.Mul(dc, c.Scalar(beta, c.input_type(2).dtype));
    c.SetInputGrad(2, dc);
  }
}

}  // namespace oneflow
