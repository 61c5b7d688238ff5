// Kernel classes of the nn family (MatMul, Gemm, Conv, ConvTranspose). The fused ai.oneflow ops
// reuse them: each class also reads an optional bias/residual input and the fused activation
// attributes ("activation", "activation_params"), absent on the plain ops.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {

struct ConvGeometry;  // graph/ops/conv_shape.h

ONEFLOW_CPU_ISA_BEGIN

class DnnlConv2d;

// Geometry of one Conv or ConvTranspose call, flattened to what the loops need: spatial dims padded
// to 3 (a 1-D or 2-D conv is a 3-D conv with leading size-1 dims).
struct ConvPlan {
  int64_t N, C, M, G, Cg, Mg;
  int64_t in[3], out[3], k[3], s[3], d[3], p[3];
  int64_t in_size, out_size, kernel_size;
};

// Fills the spatial fields of `p` from `g` and the output's spatial sizes (`out_spatial`, one per
// spatial dim); `op` names the op in errors.
void SetConvPlanSpatial(ConvPlan& p, const ConvGeometry& g, const int64_t* out_spatial, const char* op);

// Det (cpu/det.cc), registered with the family.

// The fused activation of a node (kNone for plain ops).
ActivationParams ReadActivation(const AttrMap& attrs);

// MatMul and ai.oneflow FusedMatMul (inputs A, B, optional 1-D bias of length N).
class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const KernelInitContext& init);
  void Compute(KernelContext& ctx) override;

 private:
  ActivationParams act_;
  bool has_packed_b_ = false;
  PackedMatrix packed_b_;  // constant 2-D B, packed once
};

// Gemm and ai.oneflow FusedGemm.
class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const KernelInitContext& init);
  void Compute(KernelContext& ctx) override;

 private:
  ActivationParams act_;
  float alpha_, beta_;
  bool trans_a_, trans_b_;
  bool has_packed_b_ = false;
  PackedMatrix packed_b_;
  // transB weights narrow enough for oneDNN (GemmPrefersRawB) also kept as plain [K, N]: oneDNN's
  // sgemm on a transposed B measured up to 2.5x slower than on the same B stored [K, N].
  std::vector<float> b_kn_;
};

// Conv and ai.oneflow FusedConv (inputs X, W, optional B, optional Z added before the activation).
// FusedConv with layout "NHWC" (set by the layout pass) takes X and Z and gives Y channels-last.
class ConvKernel final : public OpKernel {
 public:
  explicit ConvKernel(const KernelInitContext& init);
  void Compute(KernelContext& ctx) override;

 private:
  void ComputeNchw(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* z,
                   Tensor& y, bool use_dnnl);
  void ComputeNhwc(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* z,
                   Tensor& y);
  ActivationParams act_;
  bool nhwc_ = false;
  bool has_bias_ = false, has_residual_ = false;  // NHWC plans build these into the primitive
  std::vector<PackedMatrix> packed_w_;  // one per group, when W is a constant f32 tensor
  // oneDNN plans per input shape (2-D, ungrouped, constant f32 weights). Built at creation for a
  // static input shape, else on first use of a shape; nullptr entries mark shapes oneDNN rejects.
  std::shared_ptr<DnnlConv2d> DnnlPlan(const Shape& x_shape, const std::string& node) const;
  bool dnnl_candidate_ = false;
  std::shared_ptr<DirectConvNhwc> direct_;  // NHWC, few input channels (conv_direct.h)
  DirectConvGeometry direct_geo_{};          // for the static input shape (h = 0: none)
  AttrMap attrs_;
  Tensor dnnl_weights_;
  mutable std::mutex dnnl_mutex_;
  mutable std::map<Shape, std::shared_ptr<DnnlConv2d>> dnnl_plans_;
};

class ConvTransposeKernel final : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelInitContext& init);
  void Compute(KernelContext& ctx) override;

 private:
  std::vector<PackedMatrix> packed_w_;  // per group: W_g^T as the A operand
};

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
