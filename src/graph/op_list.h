// Every op the engine knows, named once, with its domain; the names below are the only spelling of
// an op's name in src/ (the rest of the engine writes op::kConv or OpId::kConv). A table row is
// P(X, Name, Domain), Domain one of Onnx (""), Ml ("ai.onnx.ml"), Training ("ai.onnx.preview.training"),
// Oneflow ("ai.oneflow"), Microsoft ("com.microsoft").
// ONNX Runtime's contrib ops reuse ONNX names (com.microsoft Gelu beside ONNX Gelu), so a
// Microsoft row's token carries the prefix Ms, which its name drops: MsGelu is com.microsoft Gelu.
//
//   ONEFLOW_UNARY_TABLE    the unary elementwise rows: graph/ops/unary_ops.h holds each one's facts and
//                          formula; a row whose formula has a derivative also gets the ai.oneflow op
//                          <Name>Grad (an id below, a schema where the row says so)
//   ONEFLOW_BINARY_TABLE   the binary arithmetic rows: graph/ops/binary_ops.h
//   ONEFLOW_GENERAL_TABLE  every other op: its schema in graph/ops/<family>.cc, kernels in
//                          kernels/cpu and kernels/cuda, registered against its OpId
//
// OpRegistry::Register refuses a schema whose name is not here, kernels register by OpId (so an op
// missing here does not compile), and tests/unit/op_list_test.cc walks the list for schemas and
// kernels. docs/adding-an-op.md says where a new op goes.
#pragma once

#include <cstdint>
#include <string_view>

#define ONEFLOW_UNARY_TABLE(P, X) \
  P(X, Relu, Onnx) P(X, LeakyRelu, Onnx) P(X, Sigmoid, Onnx) P(X, Tanh, Onnx) P(X, Gelu, Onnx) \
  P(X, HardSigmoid, Onnx) P(X, HardSwish, Onnx) P(X, Clip, Onnx) P(X, Exp, Onnx) P(X, Log, Onnx) \
  P(X, Neg, Onnx) P(X, Abs, Onnx) P(X, Sqrt, Onnx) P(X, Reciprocal, Onnx) P(X, Erf, Onnx) \
  P(X, Softplus, Onnx) P(X, Square, Onnx) P(X, Cube, Onnx) P(X, PowHalf, Onnx) P(X, Floor, Onnx) \
  P(X, Ceil, Onnx) P(X, Round, Onnx) P(X, Sign, Onnx) P(X, Sin, Onnx) P(X, Cos, Onnx) \
  P(X, Tan, Onnx) P(X, Asin, Onnx) P(X, Acos, Onnx) P(X, Atan, Onnx) P(X, Sinh, Onnx) \
  P(X, Cosh, Onnx) P(X, Asinh, Onnx) P(X, Acosh, Onnx) P(X, Atanh, Onnx) P(X, Elu, Onnx) \
  P(X, Selu, Onnx) P(X, Celu, Onnx) P(X, Softsign, Onnx) P(X, Mish, Onnx) \
  P(X, ThresholdedRelu, Onnx) P(X, Swish, Onnx) P(X, MsQuickGelu, Microsoft) P(X, MsGelu, Microsoft)

#define ONEFLOW_BINARY_TABLE(P, X) \
  P(X, Add, Onnx) P(X, Sub, Onnx) P(X, Mul, Onnx) P(X, Div, Onnx) P(X, Pow, Onnx) P(X, Max, Onnx) \
  P(X, Min, Onnx)

#define ONEFLOW_GENERAL_TABLE(P, X) \
  P(X, AffineGrid, Onnx) P(X, And, Onnx) P(X, Attention, Onnx) P(X, ArgMax, Onnx) P(X, ArgMin, Onnx) \
  P(X, AveragePool, Onnx) P(X, BatchNormalization, Onnx) P(X, BitCast, Onnx) P(X, BitShift, Onnx) \
  P(X, Bernoulli, Onnx) P(X, BitwiseAnd, Onnx) P(X, BitwiseNot, Onnx) P(X, BlackmanWindow, Onnx) P(X, BitwiseOr, Onnx) P(X, BitwiseXor, Onnx) \
  P(X, Cast, Onnx) P(X, CastLike, Onnx) P(X, CenterCropPad, Onnx) P(X, Col2Im, Onnx) \
  P(X, Compress, Onnx) P(X, Concat, Onnx) P(X, ConcatFromSequence, Onnx) P(X, Constant, Onnx) P(X, ConstantOfShape, Onnx) \
  P(X, CausalConvWithState, Onnx) P(X, Conv, Onnx) P(X, ConvInteger, Onnx) P(X, ConvTranspose, Onnx) P(X, CumProd, Onnx) P(X, CumSum, Onnx) \
  P(X, DeformConv, Onnx) P(X, DepthToSpace, Onnx) P(X, Det, Onnx) P(X, DFT, Onnx) P(X, DequantizeLinear, Onnx) P(X, Dropout, Onnx) \
  P(X, DynamicQuantizeLinear, Onnx) P(X, Einsum, Onnx) \
  P(X, Equal, Onnx) P(X, Expand, Onnx) P(X, EyeLike, Onnx) P(X, Flatten, Onnx) P(X, Gather, Onnx) \
  P(X, GatherElements, Onnx) P(X, GatherND, Onnx) P(X, Gemm, Onnx) P(X, GlobalAveragePool, Onnx) \
  P(X, GlobalLpPool, Onnx) P(X, GlobalMaxPool, Onnx) P(X, Greater, Onnx) \
  P(X, GreaterOrEqual, Onnx) P(X, GridSample, Onnx) P(X, GRU, Onnx) P(X, GroupNormalization, Onnx) P(X, HammingWindow, Onnx) \
  P(X, HannWindow, Onnx) \
  P(X, Hardmax, Onnx) P(X, Identity, Onnx) P(X, If, Onnx) P(X, InstanceNormalization, Onnx) P(X, IsInf, Onnx) \
  P(X, IsNaN, Onnx) P(X, LRN, Onnx) P(X, LayerNormalization, Onnx) P(X, Less, Onnx) \
  P(X, LessOrEqual, Onnx) P(X, LinearAttention, Onnx) P(X, LogSoftmax, Onnx) P(X, LSTM, Onnx) P(X, LpNormalization, Onnx) P(X, LpPool, Onnx) P(X, Loop, Onnx) \
  P(X, MatMul, Onnx) P(X, MatMulInteger, Onnx) P(X, MaxPool, Onnx) P(X, MelWeightMatrix, Onnx) P(X, MaxUnpool, Onnx) P(X, Mean, Onnx) \
  P(X, MeanVarianceNormalization, Onnx) P(X, Mod, Onnx) P(X, Multinomial, Onnx) P(X, NegativeLogLikelihoodLoss, Onnx) P(X, NonMaxSuppression, Onnx) \
  P(X, NonZero, Onnx) P(X, Not, Onnx) P(X, OneHot, Onnx) P(X, Optional, Onnx) P(X, OptionalGetElement, Onnx) \
  P(X, OptionalHasElement, Onnx) P(X, Or, Onnx) P(X, PRelu, Onnx) \
  P(X, Pad, Onnx) P(X, QLinearConv, Onnx) P(X, QLinearMatMul, Onnx) P(X, QuantizeLinear, Onnx) P(X, RegexFullMatch, Onnx) P(X, RMSNormalization, Onnx) P(X, RNN, Onnx) \
  P(X, RandomNormal, Onnx) P(X, RandomNormalLike, Onnx) P(X, RandomUniform, Onnx) P(X, RandomUniformLike, Onnx) P(X, Range, Onnx) P(X, ReduceL1, Onnx) \
  P(X, ReduceL2, Onnx) P(X, ReduceLogSum, Onnx) P(X, ReduceLogSumExp, Onnx) P(X, ReduceMax, Onnx) \
  P(X, ReduceMean, Onnx) P(X, ReduceMin, Onnx) P(X, ReduceProd, Onnx) P(X, ReduceSum, Onnx) \
  P(X, ReduceSumSquare, Onnx) P(X, Reshape, Onnx) P(X, Resize, Onnx) P(X, ReverseSequence, Onnx) P(X, RoiAlign, Onnx) P(X, RotaryEmbedding, Onnx) \
  P(X, Scan, Onnx) P(X, ScatterElements, Onnx) P(X, ScatterND, Onnx) P(X, SequenceAt, Onnx) \
  P(X, SequenceConstruct, Onnx) P(X, SequenceEmpty, Onnx) P(X, SequenceErase, Onnx) P(X, SequenceInsert, Onnx) \
  P(X, SequenceLength, Onnx) P(X, SequenceMap, Onnx) P(X, Shape, Onnx) P(X, Shrink, Onnx) \
  P(X, Size, Onnx) P(X, Slice, Onnx) P(X, Softmax, Onnx) P(X, SoftmaxCrossEntropyLoss, Onnx) \
  P(X, SpaceToDepth, Onnx) P(X, Split, Onnx) P(X, SplitToSequence, Onnx) P(X, STFT, Onnx) P(X, Squeeze, Onnx) P(X, StringConcat, Onnx) P(X, StringNormalizer, Onnx) P(X, StringSplit, Onnx) P(X, Sum, Onnx) P(X, SwiGLU, Onnx) P(X, TensorScatter, Onnx) P(X, TfIdfVectorizer, Onnx) P(X, Tile, Onnx) \
  P(X, TopK, Onnx) P(X, Transpose, Onnx) P(X, Trilu, Onnx) P(X, Unique, Onnx) \
  P(X, Unsqueeze, Onnx) P(X, Where, Onnx) P(X, Xor, Onnx) P(X, SimplifiedLayerNormalization, Onnx) \
  P(X, MsBiasGelu, Microsoft) P(X, MsFastGelu, Microsoft) P(X, MsFusedMatMul, Microsoft) \
  P(X, MsSkipLayerNormalization, Microsoft) P(X, MsSkipSimplifiedLayerNormalization, Microsoft) \
  P(X, MsDynamicQuantizeMatMul, Microsoft) P(X, MsMatMulIntegerToFloat, Microsoft) P(X, MsQLinearAdd, Microsoft) \
  P(X, MsQLinearMul, Microsoft) P(X, MsQLinearSigmoid, Microsoft) P(X, MsQLinearLeakyRelu, Microsoft) \
  P(X, MsQLinearConcat, Microsoft) P(X, MsQLinearGlobalAveragePool, Microsoft) \
  P(X, MsAttention, Microsoft) P(X, MsMultiHeadAttention, Microsoft) P(X, MsGroupQueryAttention, Microsoft) \
  P(X, MsRotaryEmbedding, Microsoft) P(X, MsEmbedLayerNormalization, Microsoft) P(X, MsQAttention, Microsoft) \
  P(X, MsDynamicQuantizeLSTM, Microsoft) \
  P(X, ArrayFeatureExtractor, Ml) P(X, Binarizer, Ml) P(X, LabelEncoder, Ml) P(X, LinearClassifier, Ml) \
  P(X, LinearRegressor, Ml) P(X, Normalizer, Ml) P(X, OneHotEncoder, Ml) P(X, TreeEnsemble, Ml) P(X, TreeEnsembleClassifier, Ml) \
  P(X, TreeEnsembleRegressor, Ml) \
  P(X, Adagrad, Training) P(X, Adam, Training) P(X, Momentum, Training) \
  P(X, AveragePoolGrad, Oneflow) \
  P(X, BatchNormalizationGrad, Oneflow) P(X, Boxing, Oneflow) P(X, ConvGradBias, Oneflow) \
  P(X, ConvGradData, Oneflow) P(X, ConvGradFilter, Oneflow) P(X, ConvTransposeGradData, Oneflow) \
  P(X, ConvTransposeGradFilter, Oneflow) P(X, FusedAttention, Oneflow) P(X, FusedConv, Oneflow) \
  P(X, FusedElementwise, Oneflow) P(X, FusedGemm, Oneflow) P(X, FusedMatMul, Oneflow) \
  P(X, GatherGrad, Oneflow) P(X, GlobalAveragePoolGrad, Oneflow) P(X, GlobalMaxPoolGrad, Oneflow) P(X, GRUGrad, Oneflow) \
  P(X, InstanceNormalizationGrad, Oneflow) P(X, LayerNormalizationGrad, Oneflow) \
  P(X, LogSoftmaxGrad, Oneflow) P(X, LSTMGrad, Oneflow) P(X, MaxPoolGrad, Oneflow) \
  P(X, NegativeLogLikelihoodLossGrad, Oneflow) P(X, NhwcAveragePool, Oneflow) \
  P(X, NhwcGlobalAveragePool, Oneflow) P(X, NhwcMaxPool, Oneflow) P(X, ReduceSumToShape, Oneflow) P(X, RNNGrad, Oneflow) \
  P(X, ShrinkGrad, Oneflow) P(X, SliceGrad, Oneflow) P(X, SoftmaxCrossEntropyLossGrad, Oneflow) \
  P(X, SoftmaxGrad, Oneflow)

// The rows as X(Name): what the per-row code generators iterate.
#define OF_OP_TABLE_NAME(X, Name, Domain) X(Name)
#define OF_OP_TABLE_NAME_DOMAIN(X, Name, Domain) X(Name, Domain)
#define ONEFLOW_UNARY_OPS(X) ONEFLOW_UNARY_TABLE(OF_OP_TABLE_NAME, X)
#define ONEFLOW_BINARY_OPS(X) ONEFLOW_BINARY_TABLE(OF_OP_TABLE_NAME, X)
// Every op as X(Name, Domain). The unary rows' <Name>Grad ops are not in it (see OpId).
#define ONEFLOW_ALL_OPS(X)                         \
  ONEFLOW_UNARY_TABLE(OF_OP_TABLE_NAME_DOMAIN, X)  \
  ONEFLOW_BINARY_TABLE(OF_OP_TABLE_NAME_DOMAIN, X) \
  ONEFLOW_GENERAL_TABLE(OF_OP_TABLE_NAME_DOMAIN, X)

namespace oneflow {

// The typed id of an op: every op of the tables, then one <Name>Grad per unary row. kUnknown (0) is
// "no op of ours" (a name the tables lack).
enum class OpId : uint16_t {
  kUnknown = 0,
#define OF_OP_ID(Name, Domain) k##Name,
  ONEFLOW_ALL_OPS(OF_OP_ID)
#undef OF_OP_ID
#define OF_UNARY_GRAD_ID(Name) k##Name##Grad,
  ONEFLOW_UNARY_OPS(OF_UNARY_GRAD_ID)
#undef OF_UNARY_GRAD_ID
  kCount
};
constexpr int kOpCount = static_cast<int>(OpId::kCount);

namespace op_list_detail {
inline constexpr const char* kDomainOnnx = "";
inline constexpr const char* kDomainOneflow = "ai.oneflow";
inline constexpr const char* kDomainMicrosoft = "com.microsoft";
inline constexpr const char* kDomainMl = "ai.onnx.ml";
inline constexpr const char* kDomainTraining = "ai.onnx.preview.training";
// Characters of a row's token that are not part of its name (the Ms of a Microsoft row).
inline constexpr int kPrefixOnnx = 0, kPrefixOneflow = 0, kPrefixMicrosoft = 2, kPrefixMl = 0, kPrefixTraining = 0;
struct Entry {
  const char* name;
  const char* domain;
};
inline constexpr Entry kEntries[] = {
    {"", ""},
#define OF_OP_ENTRY(Name, Domain) {#Name + kPrefix##Domain, kDomain##Domain},
    ONEFLOW_ALL_OPS(OF_OP_ENTRY)
#undef OF_OP_ENTRY
#define OF_UNARY_GRAD_ENTRY(Name) {#Name "Grad", kDomainOneflow},
    ONEFLOW_UNARY_OPS(OF_UNARY_GRAD_ENTRY)
#undef OF_UNARY_GRAD_ENTRY
};
static_assert(sizeof(kEntries) / sizeof(kEntries[0]) == static_cast<size_t>(OpId::kCount));
}  // namespace op_list_detail

// op::kConv is "Conv" (op::kMsGelu is "Gelu"): the name to build nodes with and compare
// node.op_type against.
namespace op {
#define OF_OP_NAME(Name, Domain) inline constexpr const char* k##Name = #Name + op_list_detail::kPrefix##Domain;
ONEFLOW_ALL_OPS(OF_OP_NAME)
#undef OF_OP_NAME
#define OF_UNARY_GRAD_NAME(Name) inline constexpr const char* k##Name##Grad = #Name "Grad";
ONEFLOW_UNARY_OPS(OF_UNARY_GRAD_NAME)
#undef OF_UNARY_GRAD_NAME
}  // namespace op

// The op's name and domain ("" for kUnknown).
constexpr const char* OpName(OpId id) { return op_list_detail::kEntries[static_cast<int>(id)].name; }
constexpr const char* OpDomain(OpId id) { return op_list_detail::kEntries[static_cast<int>(id)].domain; }
// The id of `name` in `domain`, or kUnknown. A hash lookup built on first use.
OpId FindOpId(std::string_view domain, std::string_view name);

}  // namespace oneflow
