// One registration function per op family; RegisterAllOps calls each. Adding a family = one line.
#pragma once

namespace oneflow {

class OpRegistry;

void RegisterElementwiseOps(OpRegistry& r);    // ops/elementwise.cc: math, activations, compare, logic, Cast
void RegisterReductionOps(OpRegistry& r);      // ops/reduction.cc: Reduce*, ArgMax/Min, CumSum, TopK
void RegisterNormalizationOps(OpRegistry& r);  // ops/normalization.cc: Softmax family, BatchNorm, LayerNorm, ...
void RegisterTensorOps(OpRegistry& r);         // ops/tensor.cc: Reshape .. Slice, Gather, Pad, Shape, Range, Constant
void RegisterNnOps(OpRegistry& r);             // ops/nn.cc: MatMul, Gemm, Conv, ConvTranspose
void RegisterSpatialOps(OpRegistry& r);        // ops/spatial.cc: pools, Resize, Einsum, LRN
void RegisterFusedOps(OpRegistry& r);          // ops/fused.cc: ai.oneflow ops produced by fusion passes
void RegisterGradOps(OpRegistry& r);           // ops/grad_ops.cc: ai.oneflow ops emitted by gradient rules
void RegisterLossOps(OpRegistry& r);           // ops/loss.cc: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss
void RegisterNnGradOps(OpRegistry& r);         // ops/nn_grad.cc: ai.oneflow backward ops of conv, pools, softmax, norms
void RegisterBoxingOps(OpRegistry& r);         // ops/boxing.cc: ai.oneflow Boxing (collectives of a plan)
void RegisterQuantizationOps(OpRegistry& r);   // ops/quantization.cc: (De)QuantizeLinear, MatMulInteger, ...
void RegisterRecurrentOps(OpRegistry& r);      // ops/recurrent.cc: RNN, GRU, LSTM and their ai.oneflow grads
void RegisterAttentionOps(OpRegistry& r);      // ops/attention.cc: Attention (23-25), RotaryEmbedding
void RegisterSignalOps(OpRegistry& r);         // ops/signal.cc: the windows, DFT, STFT, MelWeightMatrix
void RegisterDetectionOps(OpRegistry& r);      // ops/detection.cc: NonMaxSuppression
void RegisterContribOps(OpRegistry& r);        // ops/contrib.cc: ONNX Runtime's FastGelu, SkipLayerNormalization, ...
void RegisterContribQuantizationOps(OpRegistry& r);  // ops/contrib_quantization.cc: QLinearAdd, DynamicQuantizeMatMul, ...
void RegisterContribAttentionOps(OpRegistry& r);  // ops/contrib_attention.cc: Attention, MultiHeadAttention, GQA, ...
void RegisterLlmBlockOps(OpRegistry& r);       // ops/llm_blocks.cc: SwiGLU, CausalConvWithState, LinearAttention
void RegisterControlFlowOps(OpRegistry& r);     // ops/control_flow.cc: If, Loop, Scan
void RegisterDeformConvOps(OpRegistry& r);      // ops/deform_conv.cc: DeformConv
void RegisterTextFeatureOps(OpRegistry& r);     // ops/text_features.cc: TfIdfVectorizer
void RegisterSequenceOps(OpRegistry& r);         // ops/sequence.cc: Sequence*, SplitToSequence, Optional*
void RegisterRandomOps(OpRegistry& r);           // ops/random.cc: RandomNormal/Uniform(Like), Bernoulli, Multinomial
void RegisterTrainingOps(OpRegistry& r);         // ops/training.cc: ai.onnx.preview.training Adagrad, Adam, Momentum
void RegisterMlOps(OpRegistry& r);              // ops/ml.cc: ai.onnx.ml trees, linear models, Normalizer, OneHotEncoder, ...
void RegisterStringOps(OpRegistry& r);          // ops/string.cc: StringConcat/Split/Normalizer, RegexFullMatch, LabelEncoder
void AttachSbpRules(OpRegistry& r);            // ops/sbp_rules.cc: SBP signatures of the families above

inline void RegisterAllOps(OpRegistry& r) {
  RegisterElementwiseOps(r);
  RegisterReductionOps(r);
  RegisterNormalizationOps(r);
  RegisterTensorOps(r);
  RegisterNnOps(r);
  RegisterSpatialOps(r);
  RegisterFusedOps(r);
  RegisterGradOps(r);
  RegisterLossOps(r);
  RegisterNnGradOps(r);
  RegisterBoxingOps(r);
  RegisterQuantizationOps(r);
  RegisterRecurrentOps(r);
  RegisterAttentionOps(r);
  RegisterSignalOps(r);
  RegisterDetectionOps(r);
  RegisterContribOps(r);
  RegisterContribQuantizationOps(r);
  RegisterContribAttentionOps(r);
  RegisterLlmBlockOps(r);
  RegisterControlFlowOps(r);
  RegisterDeformConvOps(r);
  RegisterTextFeatureOps(r);
  RegisterSequenceOps(r);
  RegisterRandomOps(r);
  RegisterTrainingOps(r);
  RegisterMlOps(r);
  RegisterStringOps(r);
  AttachSbpRules(r);
}

}  // namespace oneflow
