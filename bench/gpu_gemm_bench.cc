// GPU GEMM benchmark: our MatMul kernel (cuBLASLt through the kernel registry, as a session runs it)
// against cuBLAS's own cublasGemmEx on the same bf16 operands in the same run. Checks that the two
// agree and that sampled elements match an f64 host dot product, then reports median TFLOP/s and
// the ratio. Usage: oneflow_gpu_gemm_bench [M N K] [--reps R] [--out summary.txt]
// Exit status: 0 measured and correct, 1 wrong result or error, 2 no CUDA device.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "kernels/kernel.h"

using namespace oneflow;

namespace {

float Bf16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Uniform values in [-1, 1) rounded to bf16 (never zeros: they would flatter the timing).
Tensor RandomBf16(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::Uninitialized(DType::kBFloat16, shape);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  uint16_t* p = t.data<uint16_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float f = static_cast<float>((s >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    p[i] = static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
  }
  return t;
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t M = 8192, N = 8192, K = 8192;
  int reps = 20;
  std::string out_path;
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
    else dims.push_back(std::atoll(argv[i]));
  }
  if (dims.size() == 3) M = dims[0], N = dims[1], K = dims[2];
  try {
    std::string why;
    if (cuda::DeviceCount(&why) == 0) {
      std::printf("SKIP: no CUDA device: %s\n", why.c_str());
      return 2;  // nothing was measured: callers must not read this as a result
    }
    const cuda::DeviceProps props = cuda::GetDeviceProps(0);
    cuda::Stream stream(0);
    cuda::StreamScope scope(stream.get());
    const Tensor ha = RandomBf16({M, K}, 1), hb = RandomBf16({K, N}, 2);
    const Tensor a = cuda::ToDevice(ha, 0, stream.get()), b = cuda::ToDevice(hb, 0, stream.get());
    Tensor ours = cuda::EmptyDeviceTensor(DType::kBFloat16, {M, N}, 0, stream.get());
    Tensor theirs = cuda::EmptyDeviceTensor(DType::kBFloat16, {M, N}, 0, stream.get());

    // Ours: the registered CUDA MatMul kernel.
    Graph g;
    Node node;
    node.op_type = "MatMul";
    node.opset = 13;
    ThreadPool pool(1);
    const KernelDef* def = KernelRegistry::Global().Find("", "MatMul", DeviceType::kCuda);
    if (!def) throw Error(ErrorCode::kInternal, "no CUDA MatMul kernel registered");
    std::unique_ptr<OpKernel> kernel = def->factory(KernelInitContext(g, node));
    KernelContext ctx(node, pool);
    ctx.inputs() = {&a, &b};
    ctx.outputs() = {&ours};
    auto run_ours = [&] { kernel->Compute(ctx); };

    // cuBLAS: row-major C = A B as column-major C^T = B^T A^T.
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error(ErrorCode::kRuntime, "cublasCreate failed");
    cublasSetStream(h, stream.get());
    const float one = 1.0f, zero = 0.0f;
    auto run_cublas = [&] {
      OF_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                                   static_cast<int>(K), &one, b.raw(), CUDA_R_16BF, static_cast<int>(N), a.raw(),
                                   CUDA_R_16BF, static_cast<int>(K), &zero, theirs.raw(), CUDA_R_16BF,
                                   static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };

    // Poison both outputs, run once each, and check them.
    OF_CUDA_CHECK(cudaMemsetAsync(ours.raw(), 0xFF, ours.nbytes(), stream.get()));
    OF_CUDA_CHECK(cudaMemsetAsync(theirs.raw(), 0xFF, theirs.nbytes(), stream.get()));
    run_ours();
    run_cublas();
    const Tensor ho = cuda::ToHost(ours, stream.get()), ht = cuda::ToHost(theirs, stream.get());
    double num = 0, den = 0, ref_num = 0, ref_den = 0;
    for (int64_t i = 0; i < ho.numel(); ++i) {
      const double x = Bf16ToFloat(ho.data<uint16_t>()[i]), y = Bf16ToFloat(ht.data<uint16_t>()[i]);
      num += (x - y) * (x - y);
      den += y * y;
    }
    for (int s = 0; s < 64; ++s) {  // sampled elements against an f64 dot product
      const int64_t i = (s * 7919) % M, j = (s * 104729) % N;
      double ref = 0;
      for (int64_t k = 0; k < K; ++k)
        ref += static_cast<double>(Bf16ToFloat(ha.data<uint16_t>()[i * K + k])) * Bf16ToFloat(hb.data<uint16_t>()[k * N + j]);
      const double got = Bf16ToFloat(ho.data<uint16_t>()[i * N + j]);
      ref_num += (got - ref) * (got - ref);
      ref_den += ref * ref;
    }
    const double agree = std::sqrt(num / den), vs_ref = std::sqrt(ref_num / ref_den);

    // Time: warm-up, then interleaved repetitions, median of each.
    for (int i = 0; i < 3; ++i) run_ours(), run_cublas();
    cuda::Event e0(true), e1(true);
    std::vector<float> t_ours, t_cublas;
    for (int r = 0; r < reps; ++r) {
      e0.Record(stream.get()); run_ours(); e1.Record(stream.get()); e1.Synchronize();
      t_ours.push_back(e1.ElapsedMs(e0));
      e0.Record(stream.get()); run_cublas(); e1.Record(stream.get()); e1.Synchronize();
      t_cublas.push_back(e1.ElapsedMs(e0));
    }
    cublasDestroy(h);
    const double flops = 2.0 * M * N * K;
    const double ms_o = Median(t_ours), ms_c = Median(t_cublas);
    const double tf_o = flops / ms_o / 1e9, tf_c = flops / ms_c / 1e9;
    const bool correct = agree <= 1e-2 && vs_ref <= 1e-2;
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "device: %s (sm_%d%d, %d SMs)\nbf16 GEMM %lldx%lldx%lld, %d reps (median)\n"
                  "ours (MatMul kernel, cuBLASLt): %.3f ms  %.1f TFLOP/s\n"
                  "cuBLAS cublasGemmEx:            %.3f ms  %.1f TFLOP/s\n"
                  "ratio ours/cuBLAS: %.3f (acceptance: >= 0.85)\n"
                  "check: rel L2 ours vs cuBLAS %.2e, sampled vs f64 %.2e -> %s\n",
                  props.name.c_str(), props.major, props.minor, props.multiprocessors, (long long)M, (long long)N,
                  (long long)K, reps, ms_o, tf_o, ms_c, tf_c, tf_o / tf_c, agree, vs_ref, correct ? "OK" : "WRONG");
    std::fputs(buf, stdout);
    if (!out_path.empty()) std::ofstream(out_path) << buf;
    return correct ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
