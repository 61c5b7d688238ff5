// ai.oneflow FusedAttention on CUDA: the flash
// kernel against the CPU kernel (itself tested in attention_reference_test.cc) on random cases (odd lengths that leave partial tiles, causal,
// Sq != Sk, head sizes up to 128, f32/f16/bf16). Skips with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include "cuda_compare.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::OpCall;
using cuda_test::RandomTensor;
using cuda_test::RunKernel;

OpCall AttentionCall(DType dt, int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, int64_t dv, bool causal,
                     float scale, std::mt19937& rng) {
  OpCall c;
  c.op = "FusedAttention";
  c.domain = kOneflowDomain;
  c.opset = 1;
  c.attrs.set("causal", Attribute::Int(causal ? 1 : 0));
  c.attrs.set("scale", Attribute::Float(scale));
  c.inputs = {RandomTensor(dt, {b, h, sq, d}, rng), RandomTensor(dt, {b, h, sk, d}, rng),
              RandomTensor(dt, {b, h, sk, dv}, rng)};
  c.outputs = {{dt, {b, h, sq, dv}}};
  return c;
}

TEST(CudaAttention, FlashKernelMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(52);
  struct Case { int64_t b, h, sq, sk, d, dv; };
  const Case cases[] = {{2, 4, 128, 128, 64, 64}, {1, 3, 77, 77, 32, 32}, {2, 2, 5, 300, 128, 128},
                        {1, 1, 200, 33, 16, 48},  {3, 2, 1, 1, 8, 8},       {1, 2, 65, 65, 100, 100}};
  for (const Case& k : cases) {
    for (bool causal : {false, true}) {
      for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
        const OpCall c = AttentionCall(dt, k.b, k.h, k.sq, k.sk, k.d, k.dv, causal, 0.0f, rng);
        ExpectGpuMatchesCpu(c, dt == DType::kFloat32 ? 1e-5 : dt == DType::kFloat16 ? 2e-3 : 1e-2,
                            "attention Sq " + std::to_string(k.sq) + " Sk " + std::to_string(k.sk) + " D " +
                                std::to_string(k.d) + (causal ? " causal " : " ") + DTypeName(dt));
      }
    }
  }
  // An explicit scale, and a head size the kernel does not support (a clear error, not a wrong answer).
  ExpectGpuMatchesCpu(AttentionCall(DType::kFloat32, 1, 2, 50, 60, 24, 40, false, 0.7f, rng), 1e-5, "scale 0.7");
  OpCall big = AttentionCall(DType::kFloat32, 1, 1, 4, 4, 256, 256, false, 0.0f, rng);
  try {
    RunKernel(DeviceType::kCuda, big);
    ADD_FAILURE() << "head size 256 should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("head sizes above 128"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oneflow
