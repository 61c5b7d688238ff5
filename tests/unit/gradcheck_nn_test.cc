// Finite-difference checks of the nn gradient rules (Conv, ConvTranspose, pools, Softmax,
// LogSoftmax, Layer/Batch/InstanceNormalization) through BuildGradients and a Session, in f64.
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

GRADCHECK_TEST(Conv, StridedPaddedWithBias) {
  GradCheckCase c("Conv");
  c.Input("X", Random({2, 3, 5, 4}, -1, 1, 1)).Input("W", Random({4, 3, 3, 2}, -1, 1, 2)).Input("B", Random({4}, -1, 1, 3));
  c.Attr("strides", Attribute::Ints({2, 1})).Attr("pads", Attribute::Ints({1, 0, 1, 1}));
  RunGradCheck(c);
}

GRADCHECK_TEST(Conv, GroupedDilated1D) {
  GradCheckCase c("Conv");
  c.Input("X", Random({2, 4, 7}, -1, 1, 4)).Input("W", Random({2, 2, 2}, -1, 1, 5));
  c.Attr("group", Attribute::Int(2)).Attr("dilations", Attribute::Ints({2})).Attr("auto_pad", Attribute::String("SAME_UPPER"));
  RunGradCheck(c);
}

GRADCHECK_TEST(ConvTranspose, StridedWithOutputPadding) {
  GradCheckCase c("ConvTranspose");
  c.Input("X", Random({1, 2, 3, 2}, -1, 1, 6)).Input("W", Random({2, 3, 2, 3}, -1, 1, 7)).Input("B", Random({3}, -1, 1, 8));
  c.Attr("strides", Attribute::Ints({2, 2})).Attr("output_padding", Attribute::Ints({1, 0})).Attr("pads", Attribute::Ints({0, 1, 0, 1}));
  RunGradCheck(c);
}

GRADCHECK_TEST(MaxPool, Padded) {
  GradCheckCase c("MaxPool");
  c.Input("X", Random({1, 2, 5, 5}, -3, 3, 9));
  c.Attr("kernel_shape", Attribute::Ints({3, 3})).Attr("strides", Attribute::Ints({2, 2})).Attr("pads", Attribute::Ints({1, 1, 1, 1}));
  RunGradCheck(c);
}

GRADCHECK_TEST(MaxPool, WithIndicesCeilMode) {
  GradCheckCase c("MaxPool");
  c.Input("X", Random({2, 1, 6, 5}, -3, 3, 10));
  c.Attr("kernel_shape", Attribute::Ints({2, 2})).Attr("strides", Attribute::Ints({2, 2})).Attr("ceil_mode", Attribute::Int(1));
  c.num_outputs = 2;
  c.skip_outputs = {1};
  RunGradCheck(c);
}

GRADCHECK_TEST(AveragePool, CountIncludePadCeilMode) {
  GradCheckCase c("AveragePool");
  c.Input("X", Random({1, 2, 5, 6}, -1, 1, 11));
  c.Attr("kernel_shape", Attribute::Ints({3, 2})).Attr("strides", Attribute::Ints({2, 2})).Attr("pads", Attribute::Ints({1, 0, 1, 1}));
  c.Attr("count_include_pad", Attribute::Int(1)).Attr("ceil_mode", Attribute::Int(1));
  RunGradCheck(c);
}

GRADCHECK_TEST(AveragePool, ExcludePad) {
  GradCheckCase c("AveragePool");
  c.Input("X", Random({2, 1, 5, 5}, -1, 1, 12));
  c.Attr("kernel_shape", Attribute::Ints({2, 3})).Attr("pads", Attribute::Ints({1, 1, 0, 1}));
  RunGradCheck(c);
}

GRADCHECK_TEST(GlobalAveragePool, Basic) {
  GradCheckCase c("GlobalAveragePool");
  c.Input("X", Random({2, 3, 3, 4}, -1, 1, 13));
  RunGradCheck(c);
}

GRADCHECK_TEST(GlobalMaxPool, Basic) {
  GradCheckCase c("GlobalMaxPool");
  c.Input("X", Random({2, 3, 3, 4}, -3, 3, 14));
  RunGradCheck(c);
}

GRADCHECK_TEST(Softmax, InnerAxis) {
  GradCheckCase c("Softmax");
  c.Input("X", Random({2, 4, 3}, -2, 2, 15));
  c.Attr("axis", Attribute::Int(1));
  RunGradCheck(c);
}

GRADCHECK_TEST(LogSoftmax, LastAxis) {
  GradCheckCase c("LogSoftmax");
  c.Input("X", Random({3, 5}, -2, 2, 16));
  RunGradCheck(c);
}

GRADCHECK_TEST(LayerNormalization, WithSavedStatistics) {
  GradCheckCase c("LayerNormalization");
  c.Input("X", Random({3, 2, 4}, -2, 2, 17)).Input("Scale", Random({2, 4}, -1, 1, 18)).Input("B", Random({2, 4}, -1, 1, 19));
  c.Attr("axis", Attribute::Int(1)).Attr("stash_type", Attribute::Int(0)).Attr("epsilon", Attribute::Float(1e-3f));
  c.num_outputs = 3;
  c.skip_outputs = {1, 2};
  RunGradCheck(c);
}

GRADCHECK_TEST(LayerNormalization, LastAxis) {
  GradCheckCase c("LayerNormalization");
  c.Input("X", Random({4, 5}, -2, 2, 20)).Input("Scale", Random({5}, -1, 1, 21)).Input("B", Random({5}, -1, 1, 22));
  RunGradCheck(c);
}

GRADCHECK_TEST(BatchNormalization, TrainingMode) {
  GradCheckCase c("BatchNormalization");
  c.Input("X", Random({3, 2, 2, 3}, -2, 2, 23)).Input("scale", Random({2}, -1, 1, 24)).Input("B", Random({2}, -1, 1, 25));
  c.Const("mean", Random({2}, -1, 1, 26)).Const("var", Random({2}, 0.5, 2, 27));
  c.Attr("training_mode", Attribute::Int(1)).Attr("epsilon", Attribute::Float(1e-2f));
  c.num_outputs = 3;
  c.skip_outputs = {1, 2};
  RunGradCheck(c);
}

GRADCHECK_TEST(BatchNormalization, InferenceModeStatisticsToo) {
  GradCheckCase c("BatchNormalization");
  c.Input("X", Random({2, 3, 2}, -2, 2, 28)).Input("scale", Random({3}, -1, 1, 29)).Input("B", Random({3}, -1, 1, 30));
  c.Input("mean", Random({3}, -1, 1, 31)).Input("var", Random({3}, 0.5, 2, 32));
  RunGradCheck(c);
}

GRADCHECK_TEST(InstanceNormalization, Basic) {
  GradCheckCase c("InstanceNormalization");
  c.Input("X", Random({2, 3, 2, 3}, -2, 2, 33)).Input("scale", Random({3}, -1, 1, 34)).Input("B", Random({3}, -1, 1, 35));
  c.Attr("epsilon", Attribute::Float(1e-2f));
  RunGradCheck(c);
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
