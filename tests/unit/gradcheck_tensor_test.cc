// Finite-difference checks of the tensor-op gradient rules (ops/tensor_grad.cc, einsum_grad.cc):
// reshapes, Transpose, Concat/Split, Slice (negative steps, clamping), Gather/GatherElements
// (repeated and negative indices), Expand, Tile, Pad (constant mode, cropping), Einsum forms.
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

GRADCHECK_TEST(Reshape, Basic) {
  GradCheckCase c("Reshape");
  c.Input("data", Random({2, 3, 4})).Const("shape", Int64s({4, -1}));
  RunGradCheck(c);
}
GRADCHECK_TEST(Flatten, Axes) {
  for (int64_t axis : {0, 1, 2, -1}) {
    GradCheckCase c("Flatten");
    c.Input("input", Random({2, 3, 4})).Attr("axis", Attribute::Int(axis));
    RunGradCheck(c);
  }
}
GRADCHECK_TEST(Squeeze, Axes) {
  GradCheckCase c("Squeeze");
  c.Input("data", Random({2, 1, 3, 1})).Const("axes", Int64s({1, -1}));
  RunGradCheck(c);
  GradCheckCase all("Squeeze");
  all.Input("data", Random({1, 3, 1}));
  RunGradCheck(all);
}
GRADCHECK_TEST(Unsqueeze, Axes) {
  GradCheckCase c("Unsqueeze");
  c.Input("data", Random({2, 3})).Const("axes", Int64s({0, -1}));
  RunGradCheck(c);
}
GRADCHECK_TEST(Transpose, Perms) {
  GradCheckCase c("Transpose");
  c.Input("data", Random({2, 3, 4})).Attr("perm", Attribute::Ints({1, 2, 0}));
  RunGradCheck(c);
  GradCheckCase rev("Transpose");
  rev.Input("data", Random({2, 3, 4}));
  RunGradCheck(rev);
}
GRADCHECK_TEST(Concat, Axes) {
  for (int64_t axis : {0, 1, -1}) {
    GradCheckCase c("Concat");
    Shape a{2, 3, 2}, b{2, 3, 2}, d{2, 3, 2};
    const size_t ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    a[ax] = 1;
    b[ax] = 3;
    c.Input("a", Random(a, -1, 1, 1)).Input("b", Random(b, -1, 1, 2)).Input("c", Random(d, -1, 1, 3));
    c.Attr("axis", Attribute::Int(axis));
    RunGradCheck(c);
  }
}
GRADCHECK_TEST(Split, Forms) {
  GradCheckCase c("Split");  // explicit sizes, one output left out of the loss (zero gradient)
  c.Input("input", Random({2, 6})).Const("split", Int64s({1, 2, 3})).Attr("axis", Attribute::Int(1));
  c.num_outputs = 3;
  c.skip_outputs = {1};
  RunGradCheck(c);
  GradCheckCase even("Split");  // opset 18 num_outputs with an uneven last chunk
  even.Input("input", Random({5, 2})).Attr("num_outputs", Attribute::Int(2));
  even.num_outputs = 2;
  RunGradCheck(even);
}
GRADCHECK_TEST(Slice, Forms) {
  struct Case { std::vector<int64_t> starts, ends, axes, steps; };
  const Case cases[] = {{{1, 0}, {3, 4}, {}, {}},
                        {{0}, {100}, {1}, {2}},
                        {{-1, 3}, {-100, 0}, {0, 2}, {-1, -2}},
                        {{1}, {-1}, {-2}, {}}};
  for (const Case& k : cases) {
    GradCheckCase c("Slice");
    c.Input("data", Random({3, 4, 5})).Const("starts", Int64s(k.starts)).Const("ends", Int64s(k.ends));
    if (!k.axes.empty()) c.Const("axes", Int64s(k.axes));
    else if (!k.steps.empty()) c.Omitted();
    if (!k.steps.empty()) c.Const("steps", Int64s(k.steps));
    RunGradCheck(c);
  }
}
GRADCHECK_TEST(Gather, AxesAndIndices) {
  GradCheckCase c("Gather");  // repeated and negative indices accumulate
  c.Input("data", Random({4, 3})).Const("indices", Int64s({2, 2}, {0, 3, -1, 0}));
  RunGradCheck(c);
  GradCheckCase ax("Gather");
  ax.Input("data", Random({2, 4, 3})).Const("indices", Int64s({3}, {1, 1, 2})).Attr("axis", Attribute::Int(-2));
  RunGradCheck(ax);
  GradCheckCase scalar("Gather");
  scalar.Input("data", Random({4, 3})).Const("indices", Int64s(Shape{}, {2})).Attr("axis", Attribute::Int(1));
  RunGradCheck(scalar);
}
GRADCHECK_TEST(GatherElements, Axes) {
  GradCheckCase c("GatherElements");
  c.Input("data", Random({3, 3})).Const("indices", Int64s({2, 3}, {0, 1, 0, 2, 2, -1})).Attr("axis", Attribute::Int(0));
  RunGradCheck(c);
  GradCheckCase last("GatherElements");
  last.Input("data", Random({2, 3})).Const("indices", Int64s({2, 4}, {0, 0, 2, 1, 1, 2, 2, 0}))
      .Attr("axis", Attribute::Int(-1));
  RunGradCheck(last);
}
GRADCHECK_TEST(Expand, Broadcasting) {
  GradCheckCase c("Expand");
  c.Input("input", Random({3, 1})).Const("shape", Int64s({2, 3, 4}));
  RunGradCheck(c);
  GradCheckCase same("Expand");
  same.Input("input", Random({2, 3})).Const("shape", Int64s({1, 3}));
  RunGradCheck(same);
}
GRADCHECK_TEST(Tile, Repeats) {
  GradCheckCase c("Tile");
  c.Input("input", Random({2, 3})).Const("repeats", Int64s({3, 2}));
  RunGradCheck(c);
  GradCheckCase one("Tile");
  one.Input("input", Random({2, 1, 2})).Const("repeats", Int64s({1, 4, 1}));
  RunGradCheck(one);
}
GRADCHECK_TEST(Pad, ConstantMode) {
  GradCheckCase c("Pad");
  c.Input("data", Random({2, 3})).Const("pads", Int64s({1, 0, 2, 3})).Const("constant_value", Doubles({}, {0.5}));
  RunGradCheck(c);
  GradCheckCase crop("Pad");  // negative pads crop
  crop.Input("data", Random({4, 5})).Const("pads", Int64s({-1, 2, 1, -2}));
  RunGradCheck(crop);
  GradCheckCase axes("Pad");
  axes.Input("data", Random({2, 3, 4})).Const("pads", Int64s({1, 2})).Omitted().Const("axes", Int64s({-1}));
  RunGradCheck(axes);
}
GRADCHECK_TEST(Einsum, Forms) {
  struct Case { const char* eq; std::vector<Shape> shapes; };
  const Case cases[] = {{"ij,jk->ik", {{2, 3}, {3, 4}}},
                        {"bij,bjk->bik", {{2, 2, 3}, {2, 3, 2}}},
                        {"bhqd,bhkd->bhqk", {{1, 2, 3, 4}, {1, 2, 2, 4}}},
                        {"bhqk,bhkd->bhqd", {{1, 2, 3, 2}, {1, 2, 2, 4}}},
                        {"i,i->", {{4}, {4}}},
                        {"ij->ji", {{2, 3}}},
                        {"ij->i", {{2, 3}}},
                        {"ij,jk", {{2, 3}, {3, 2}}},
                        {"...ij,...jk->...ik", {{2, 2, 3}, {1, 3, 2}}},
                        {"ij,k->ijk", {{2, 3}, {2}}}};
  unsigned seed = 1;
  for (const Case& k : cases) {
    GradCheckCase c("Einsum");
    for (size_t i = 0; i < k.shapes.size(); ++i) c.Input("x" + std::to_string(i), Random(k.shapes[i], -1, 1, seed++));
    c.Attr("equation", Attribute::String(k.eq));
    SCOPED_TRACE(k.eq);
    RunGradCheck(c);
  }
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
