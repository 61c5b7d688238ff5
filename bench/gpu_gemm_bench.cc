// GPU GEMM benchmark: our MatMul kernel (cuBLASLt through the kernel registry, as a session runs it)
// against cuBLAS's own cublasGemmEx on the same operands in the same run, for bf16, f16 and tf32
// (f32 data on TF32 tensor cores; ours with cuda::SetAllowTf32). Before any timing, both outputs
// (poisoned first) are compared element by element, ours against cuBLAS's, and sampled elements of
// both against an f64 host dot product; a wrong result is reported with its first bad elements and
// is not timed. Then median times, TFLOP/s and the ratio ours/cuBLAS per dtype.
// Usage: oneflow_gpu_gemm_bench [M N K] [--dtype bf16|f16|tf32|all] [--reps R] [--out summary.txt]
// (default: 8192^3, all three dtypes, 20 reps).
// Exit status: 0 measured and correct, 1 wrong result or error, 2 no CUDA device.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "kernels/cuda/matmul_cublaslt.h"
#include "kernels/kernel.h"

using namespace oneflow;

namespace {

// One benchmarked configuration: storage dtype, cuBLAS types, and the per-element tolerance of
// ours against cuBLAS and of both against the f64 reference: |x - y| <= atol_rms * rms + rtol * |y|.
struct Config {
  const char* name;
  DType dtype;
  cudaDataType_t cuda_type;
  cublasComputeType_t compute;
  bool tf32;
  double rtol, atol_rms;
};

// bf16 / f16: f32 accumulation, outputs rounded once (so the two may differ by an ulp: up to 7.8e-3
// / 9.8e-4 relative); the absolute term, a fraction of the outputs' RMS, covers elements that
// cancel to near zero. TF32: 10-bit mantissa products (rounded or truncated), an error of about
// 1e-3 of the output's scale.
const Config kConfigs[] = {
    {"bf16", DType::kBFloat16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false, 1e-2, 5e-3},
    {"f16", DType::kFloat16, CUDA_R_16F, CUBLAS_COMPUTE_32F, false, 2e-3, 2e-3},
    {"tf32", DType::kFloat32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, true, 5e-3, 5e-3},
};

// Uniform values in [-1, 1) (never zeros: they would flatter the timing), stored as `dt`.
Tensor RandomMatrix(DType dt, const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::Uninitialized(dt, shape);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float f = static_cast<float>((s >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
    if (dt == DType::kBFloat16) t.data<BFloat16>()[i] = BFloat16(f);
    else if (dt == DType::kFloat16) t.data<Float16>()[i] = Float16(f);
    else t.data<float>()[i] = f;
  }
  return t;
}

double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kBFloat16: return static_cast<float>(t.data<BFloat16>()[i]);
    case DType::kFloat16: return static_cast<float>(t.data<Float16>()[i]);
    default: return t.data<float>()[i];
  }
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per-element comparison of `got` against `want` (same shape); appends a report, returns the
// number of elements out of tolerance (a NaN or inf anywhere counts).
int64_t CompareAll(const Tensor& got, const Tensor& want, const Config& c, int64_t N, std::string& report) {
  const int64_t n = got.numel();
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = At(want, i);
    if (std::isfinite(w)) sq += w * w;
  }
  const double rms = std::sqrt(sq / static_cast<double>(std::max<int64_t>(n, 1)));
  int64_t bad = 0;
  double worst = 0.0, num = 0.0;
  char line[256];
  for (int64_t i = 0; i < n; ++i) {
    const double g = At(got, i), w = At(want, i);
    const double allowed = c.atol_rms * rms + c.rtol * std::fabs(w);
    const double diff = std::fabs(g - w);
    const bool ok = std::isfinite(g) && std::isfinite(w) && diff <= allowed;
    if (std::isfinite(diff)) {
      worst = std::max(worst, diff / (allowed > 0 ? allowed : 1.0));
      num += diff * diff;
    }
    if (!ok) {
      if (bad < 5) {
        std::snprintf(line, sizeof line, "    [%lld, %lld] ours %.6g cuBLAS %.6g (allowed %.3g)\n",
                      static_cast<long long>(i / N), static_cast<long long>(i % N), g, w, allowed);
        report += line;
      }
      ++bad;
    }
  }
  std::snprintf(line, sizeof line,
                "check: ours vs cuBLAS per element: %lld of %lld out of tolerance (|d| <= %.3g * rms %.4g + %.3g * |cuBLAS|), "
                "worst %.3g of allowed, rel L2 %.2e\n",
                static_cast<long long>(bad), static_cast<long long>(n), c.atol_rms, rms, c.rtol, worst,
                sq > 0 ? std::sqrt(num / sq) : std::sqrt(num));
  report = line + report;
  return bad;
}

// Sampled elements of `out` against an f64 dot product of the (stored) operands.
int64_t CompareSampled(const Tensor& out, const Tensor& ha, const Tensor& hb, int64_t M, int64_t N, int64_t K,
                       const Config& c, const char* who, std::string& report) {
  constexpr int kSamples = 64;
  std::vector<double> refs(kSamples), gots(kSamples);
  double sq = 0.0;
  for (int s = 0; s < kSamples; ++s) {
    const int64_t i = (s * 7919) % M, j = (s * 104729) % N;
    double ref = 0.0;
    for (int64_t k = 0; k < K; ++k) ref += At(ha, i * K + k) * At(hb, k * N + j);
    refs[s] = ref;
    gots[s] = At(out, i * N + j);
    sq += ref * ref;
  }
  const double rms = std::sqrt(sq / kSamples);
  int64_t bad = 0;
  double worst = 0.0;
  char line[256];
  for (int s = 0; s < kSamples; ++s) {
    const double allowed = c.atol_rms * rms + c.rtol * std::fabs(refs[s]);
    const double diff = std::fabs(gots[s] - refs[s]);
    if (std::isfinite(diff)) worst = std::max(worst, diff / allowed);
    if (!(std::isfinite(gots[s]) && diff <= allowed)) {
      if (bad < 3) {
        std::snprintf(line, sizeof line, "    sample %d: %s %.6g, f64 %.6g (allowed %.3g)\n", s, who, gots[s], refs[s],
                      allowed);
        report += line;
      }
      ++bad;
    }
  }
  std::snprintf(line, sizeof line, "check: %s vs f64 on %d sampled elements: %lld out of tolerance, worst %.3g of allowed\n",
                who, kSamples, static_cast<long long>(bad), worst);
  report += line;
  return bad;
}

// Benchmarks one dtype; appends its summary to `summary`; returns false on a wrong result.
bool RunOne(const Config& c, int64_t M, int64_t N, int64_t K, int reps, const cuda::DeviceProps& props,
            cuda::Stream& stream, cublasHandle_t h, std::string& summary) {
  const Tensor ha = RandomMatrix(c.dtype, {M, K}, 1), hb = RandomMatrix(c.dtype, {K, N}, 2);
  const Tensor a = cuda::ToDevice(ha, 0, stream.get()), b = cuda::ToDevice(hb, 0, stream.get());
  Tensor ours = cuda::EmptyDeviceTensor(c.dtype, {M, N}, 0, stream.get());
  Tensor theirs = cuda::EmptyDeviceTensor(c.dtype, {M, N}, 0, stream.get());

  // Ours: the registered CUDA MatMul kernel (TF32 switched on for the tf32 configuration only).
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
  const bool tf32_before = cuda::AllowTf32();
  auto run_ours = [&] {
    cuda::SetAllowTf32(c.tf32);
    kernel->Compute(ctx);
    cuda::SetAllowTf32(tf32_before);
  };

  // cuBLAS: row-major C = A B as column-major C^T = B^T A^T.
  const float one = 1.0f, zero = 0.0f;
  auto run_cublas = [&] {
    OF_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                                 static_cast<int>(K), &one, b.raw(), c.cuda_type, static_cast<int>(N), a.raw(),
                                 c.cuda_type, static_cast<int>(K), &zero, theirs.raw(), c.cuda_type,
                                 static_cast<int>(N), c.compute, CUBLAS_GEMM_DEFAULT));
  };

  // Poison both outputs (all bits set: NaN), run once each, and check every element before timing.
  OF_CUDA_CHECK(cudaMemsetAsync(ours.raw(), 0xFF, ours.nbytes(), stream.get()));
  OF_CUDA_CHECK(cudaMemsetAsync(theirs.raw(), 0xFF, theirs.nbytes(), stream.get()));
  run_ours();
  run_cublas();
  const Tensor ho = cuda::ToHost(ours, stream.get()), ht = cuda::ToHost(theirs, stream.get());
  std::string report;
  int64_t bad = CompareAll(ho, ht, c, N, report);
  bad += CompareSampled(ho, ha, hb, M, N, K, c, "ours", report);
  bad += CompareSampled(ht, ha, hb, M, N, K, c, "cuBLAS", report);
  const bool correct = bad == 0;

  char buf[1024];
  std::snprintf(buf, sizeof buf, "device: %s (sm_%d%d, %d SMs)\n%s GEMM %lldx%lldx%lld, %d reps (median)\n",
                props.name.c_str(), props.major, props.minor, props.multiprocessors, c.name, (long long)M,
                (long long)N, (long long)K, reps);
  std::string out = buf;
  if (correct) {
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
    const double flops = 2.0 * M * N * K;
    const double ms_o = Median(t_ours), ms_c = Median(t_cublas);
    const double tf_o = flops / ms_o / 1e9, tf_c = flops / ms_c / 1e9;
    std::snprintf(buf, sizeof buf,
                  "%s ours (MatMul kernel, cuBLASLt): %.3f ms  %.1f TFLOP/s\n"
                  "%s cuBLAS cublasGemmEx:            %.3f ms  %.1f TFLOP/s\n"
                  "%s ratio ours/cuBLAS: %.3f (acceptance: >= 0.85)\n",
                  c.name, ms_o, tf_o, c.name, ms_c, tf_c, c.name, tf_o / tf_c);
    out += buf;
  } else {
    out += std::string(c.name) + " not timed: the results are wrong\n";
  }
  out += report;
  out += std::string(c.name) + (correct ? " -> OK\n" : " -> WRONG\n");
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  summary += out;
  return correct;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t M = 8192, N = 8192, K = 8192;
  int reps = 20;
  std::string out_path, which = "all";
  std::vector<int64_t> dims;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) which = argv[++i];
    else dims.push_back(std::atoll(argv[i]));
  }
  if (dims.size() == 3) M = dims[0], N = dims[1], K = dims[2];
  if (reps < 1 || M < 1 || N < 1 || K < 1 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) {
    std::fprintf(stderr, "usage: %s [M N K] [--dtype bf16|f16|tf32|all] [--reps R] [--out file]\n", argv[0]);
    return 1;
  }
  std::vector<const Config*> configs;
  for (const Config& c : kConfigs)
    if (which == "all" || which == c.name) configs.push_back(&c);
  if (configs.empty()) {
    std::fprintf(stderr, "unknown --dtype %s (bf16, f16, tf32 or all)\n", which.c_str());
    return 1;
  }
  try {
    std::string why;
    if (cuda::DeviceCount(&why) == 0) {
      std::printf("SKIP: no CUDA device: %s\n", why.c_str());
      return 2;  // nothing was measured: callers must not read this as a result
    }
    const cuda::DeviceProps props = cuda::GetDeviceProps(0);
    cuda::Stream stream(0);
    cuda::StreamScope scope(stream.get());
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw Error(ErrorCode::kRuntime, "cublasCreate failed");
    cublasSetStream(h, stream.get());
    bool all_correct = true;
    std::string summary;
    try {
      for (const Config* c : configs) all_correct = RunOne(*c, M, N, K, reps, props, stream, h, summary) && all_correct;
    } catch (...) {
      cublasDestroy(h);
      throw;
    }
    cublasDestroy(h);
    if (!out_path.empty()) std::ofstream(out_path) << summary;
    return all_correct ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
