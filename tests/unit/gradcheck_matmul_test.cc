// Finite-difference checks of the MatMul (1-D, 2-D, batched, broadcast batch) and Gemm (every
// transA/transB, alpha, beta, C broadcast forms) gradient rules (ops/matmul_grad.cc).
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

GRADCHECK_TEST(MatMul, Shapes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {4, 2}},          {{2, 3, 4}, {4, 5}},    {{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}},
      {{3, 4}, {2, 4, 5}},       {{4}, {4, 3}},          {{3, 4}, {4}},          {{4}, {4}},
      {{4}, {2, 4, 3}},          {{2, 3, 4}, {4}}};
  unsigned seed = 1;
  for (const auto& [a, b] : shapes) {
    GradCheckCase c("MatMul");
    c.Input("A", Random(a, -1, 1, seed)).Input("B", Random(b, -1, 1, seed + 1));
    seed += 2;
    RunGradCheck(c);
  }
}

GRADCHECK_TEST(Gemm, Attributes) {
  const int64_t m = 3, k = 4, n = 2;
  unsigned seed = 1;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape& cshape : std::vector<Shape>{{}, {n}, {m, 1}, {m, n}, {1}})
        for (float alpha : {1.0f, 0.5f}) {
          GradCheckCase c("Gemm");
          c.Input("A", Random(ta ? Shape{k, m} : Shape{m, k}, -1, 1, seed))
              .Input("B", Random(tb ? Shape{n, k} : Shape{k, n}, -1, 1, seed + 1))
              .Input("C", Random(cshape, -1, 1, seed + 2));
          seed += 3;
          c.Attr("transA", Attribute::Int(ta)).Attr("transB", Attribute::Int(tb));
          c.Attr("alpha", Attribute::Float(alpha)).Attr("beta", Attribute::Float(alpha == 1.0f ? 1.0f : -2.0f));
          RunGradCheck(c);
        }
  GradCheckCase noc("Gemm");
  noc.Input("A", Random({m, k})).Input("B", Random({k, n}, -1, 1, 5));
  RunGradCheck(noc);
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
