// Optimizer update loops and the global gradient norm. Work is cut into fixed-size chunks across all
// parameters and run as one parallel region; the inner loops are AVX-512 where the CPU has it
// (ActiveCpuIsa, base/cpu_isa.h: compiled with a target attribute, picked at run time), with
// separate multiply and add, no FMA, so the vector body and the scalar tail round identically; the
// maskz_ forms avoid GCC 12's false 'may be used uninitialized' on the unmasked intrinsics.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#define ONEFLOW_OPTIMIZER_AVX512 1
#define ONEFLOW_AVX512_FUNCTION __attribute__((target("avx512f")))
#else
#define ONEFLOW_OPTIMIZER_AVX512 0
#endif

#include "base/cpu_isa.h"
#include "base/error.h"

namespace oneflow::train {

namespace {

constexpr int64_t kChunk = 16384;  // elements per work item: fixed, so sums do not depend on threads

struct Chunk {
  size_t param;
  int64_t begin, end;
};

std::vector<Chunk> MakeChunks(const std::vector<ParamSlot*>& params) {
  std::vector<Chunk> chunks;
  for (size_t p = 0; p < params.size(); ++p) {
    int64_t n = params[p]->value.numel();
    for (int64_t b = 0; b < n; b += kChunk) chunks.push_back({p, b, std::min(n, b + kChunk)});
  }
  return chunks;
}

bool UseAvx512() {
  static const bool use = ActiveCpuIsa() >= CpuIsa::kAvx512;
  return use;
}

#if ONEFLOW_OPTIMIZER_AVX512
// The sum over the first n - n % 16 elements; *done says how many.
ONEFLOW_AVX512_FUNCTION double SumSquaresAvx512(const float* g, int64_t n, int64_t* done) {
  int64_t i = 0;
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    __m512d a = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(g + i));
    __m512d b = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(g + i + 8));
    acc0 = _mm512_add_pd(acc0, _mm512_mul_pd(a, a));
    acc1 = _mm512_add_pd(acc1, _mm512_mul_pd(b, b));
  }
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, _mm512_add_pd(acc0, acc1));
  double total = 0.0;
  for (double x : lanes) total += x;
  *done = i;
  return total;
}
#endif

double SumSquares(const float* g, int64_t n) {
  int64_t i = 0;
  double total = 0.0;
#if ONEFLOW_OPTIMIZER_AVX512
  if (UseAvx512()) total = SumSquaresAvx512(g, n, &i);
#endif
  for (; i < n; ++i) total += static_cast<double>(g[i]) * g[i];
  return total;
}

void SgdChunk(const OptimizerConfig& c, const UpdateScalars& s, ParamSlot& slot, int64_t b, int64_t e) {
  float* p = slot.value.data<float>();
  const float* g = slot.grad.data<float>();
  if (c.momentum == 0.0f) {
    for (int64_t i = b; i < e; ++i) {
      float d = g[i] * s.scale + s.wd * p[i];
      p[i] = p[i] - s.lr * d;
    }
    return;
  }
  float* buf = slot.state[0].data<float>();
  for (int64_t i = b; i < e; ++i) {
    float d = g[i] * s.scale + s.wd * p[i];
    float m = s.first ? d : s.momentum * buf[i] + s.dampening_c * d;
    buf[i] = m;
    float u = c.nesterov ? d + s.momentum * m : m;
    p[i] = p[i] - s.lr * u;
  }
}

#if ONEFLOW_OPTIMIZER_AVX512
// Adam over [b, e - (e - b) % 16); returns where the scalar tail starts.
ONEFLOW_AVX512_FUNCTION int64_t AdamAvx512(const UpdateScalars& s, float* p, const float* g, float* m, float* v,
                                           float l2, float decay, int64_t b, int64_t e) {
  int64_t i = b;
  const __m512 vscale = _mm512_set1_ps(s.scale), vl2 = _mm512_set1_ps(l2), vdecay = _mm512_set1_ps(decay);
  const __m512 vb1 = _mm512_set1_ps(s.b1), vc1 = _mm512_set1_ps(s.c1), vb2 = _mm512_set1_ps(s.b2);
  const __m512 vc2 = _mm512_set1_ps(s.c2), vstep = _mm512_set1_ps(s.step_size);
  const __m512 vbc2 = _mm512_set1_ps(s.bc2_sqrt), veps = _mm512_set1_ps(s.eps);
  for (; i + 16 <= e; i += 16) {
    __m512 vp = _mm512_mul_ps(_mm512_loadu_ps(p + i), vdecay);
    __m512 vg = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(g + i), vscale), _mm512_mul_ps(vl2, vp));
    __m512 vm = _mm512_add_ps(_mm512_mul_ps(vb1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(vc1, vg));
    __m512 vv = _mm512_add_ps(_mm512_mul_ps(vb2, _mm512_loadu_ps(v + i)), _mm512_mul_ps(vc2, _mm512_mul_ps(vg, vg)));
    __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_maskz_sqrt_ps(0xFFFF, vv), vbc2), veps);
    vp = _mm512_sub_ps(vp, _mm512_mul_ps(vstep, _mm512_div_ps(vm, denom)));
    _mm512_storeu_ps(m + i, vm);
    _mm512_storeu_ps(v + i, vv);
    _mm512_storeu_ps(p + i, vp);
  }
  return i;
}
#endif

void AdamChunk(const OptimizerConfig& c, const UpdateScalars& s, ParamSlot& slot, int64_t b, int64_t e) {
  float* p = slot.value.data<float>();
  const float* g = slot.grad.data<float>();
  float* m = slot.state[0].data<float>();
  float* v = slot.state[1].data<float>();
  const bool adamw = c.kind == OptimizerKind::kAdamW;
  const float l2 = adamw ? 0.0f : s.wd;
  const float decay = adamw ? s.decay : 1.0f;
  int64_t i = b;
#if ONEFLOW_OPTIMIZER_AVX512
  if (UseAvx512()) i = AdamAvx512(s, p, g, m, v, l2, decay, b, e);
#endif
  for (; i < e; ++i) {
    float pi = p[i] * decay;
    float gi = g[i] * s.scale + l2 * pi;
    float mi = s.b1 * m[i] + s.c1 * gi;
    float vi = s.b2 * v[i] + s.c2 * (gi * gi);
    float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - s.step_size * (mi / denom);
  }
}

}  // namespace

const char* OptimizerKindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "unknown";
}

void ValidateOptimizerConfig(const OptimizerConfig& c) {
  OF_REQUIRE(c.kind == OptimizerKind::kSgd || c.kind == OptimizerKind::kAdam || c.kind == OptimizerKind::kAdamW,
             "unknown optimizer kind ", static_cast<int>(c.kind));
  OF_REQUIRE(std::isfinite(c.lr) && c.lr >= 0.0f, "learning rate must be finite and >= 0, got ", c.lr);
  OF_REQUIRE(std::isfinite(c.weight_decay) && c.weight_decay >= 0.0f, "weight_decay must be >= 0, got ",
             c.weight_decay);
  if (c.kind == OptimizerKind::kSgd) {
    OF_REQUIRE(std::isfinite(c.momentum) && c.momentum >= 0.0f, "momentum must be >= 0, got ", c.momentum);
    OF_REQUIRE(c.dampening >= 0.0f && c.dampening <= 1.0f, "dampening must be in [0, 1], got ", c.dampening);
    OF_REQUIRE(!c.nesterov || (c.momentum > 0.0f && c.dampening == 0.0f),
               "Nesterov momentum needs momentum > 0 and dampening 0 (momentum ", c.momentum, ", dampening ",
               c.dampening, ")");
  } else {
    OF_REQUIRE(c.beta1 >= 0.0f && c.beta1 < 1.0f, "beta1 must be in [0, 1), got ", c.beta1);
    OF_REQUIRE(c.beta2 >= 0.0f && c.beta2 < 1.0f, "beta2 must be in [0, 1), got ", c.beta2);
    OF_REQUIRE(std::isfinite(c.eps) && c.eps > 0.0f, "eps must be > 0, got ", c.eps);
  }
}

std::vector<std::string> OptimizerStateNames(const OptimizerConfig& c) {
  if (c.kind == OptimizerKind::kSgd) return c.momentum != 0.0f ? std::vector<std::string>{"momentum_buffer"}
                                                               : std::vector<std::string>{};
  return {"exp_avg", "exp_avg_sq"};
}

GradientNorm GlobalGradientNorm(const std::vector<ParamSlot*>& params, ThreadPool& pool) {
  std::vector<Chunk> chunks = MakeChunks(params);
  std::vector<double> partial(chunks.size(), 0.0);
  pool.ParallelFor(static_cast<int64_t>(chunks.size()), static_cast<double>(kChunk), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const Chunk& ch = chunks[static_cast<size_t>(k)];
      partial[static_cast<size_t>(k)] = SumSquares(params[ch.param]->grad.data<float>() + ch.begin, ch.end - ch.begin);
    }
  });
  double total = 0.0;
  for (double x : partial) total += x;  // fixed order: deterministic
  GradientNorm r;
  r.finite = std::isfinite(total);
  r.norm = std::sqrt(total);
  return r;
}

float ClipScale(double norm, float max_norm) {
  if (max_norm <= 0.0f || !std::isfinite(norm)) return 1.0f;
  double coef = static_cast<double>(max_norm) / (norm + 1e-6);
  return coef < 1.0 ? static_cast<float>(coef) : 1.0f;
}

UpdateScalars ComputeUpdateScalars(const OptimizerConfig& c, float lr, float grad_scale, int64_t step) {
  UpdateScalars s{};
  s.lr = lr;
  s.scale = grad_scale;
  s.wd = c.weight_decay;
  s.momentum = c.momentum;
  s.dampening_c = 1.0f - c.dampening;
  s.first = step == 0;
  s.decay = static_cast<float>(1.0 - static_cast<double>(lr) * c.weight_decay);
  const double t = static_cast<double>(step + 1);
  const double bc1 = 1.0 - std::pow(static_cast<double>(c.beta1), t);
  const double bc2 = 1.0 - std::pow(static_cast<double>(c.beta2), t);
  s.b1 = c.beta1;
  s.c1 = 1.0f - c.beta1;
  s.b2 = c.beta2;
  s.c2 = 1.0f - c.beta2;
  s.step_size = static_cast<float>(lr / bc1);
  s.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  s.eps = c.eps;
  return s;
}

void ApplyUpdate(const OptimizerConfig& c, const std::vector<ParamSlot*>& params, float lr, float grad_scale,
                 int64_t step, ThreadPool& pool) {
  const size_t nstate = OptimizerStateNames(c).size();
  for (const ParamSlot* p : params) {
    OF_ASSERT(p->value.dtype() == DType::kFloat32 && p->grad.dtype() == DType::kFloat32);
    OF_ASSERT(p->grad.numel() == p->value.numel() && p->state.size() == nstate);
  }
  const UpdateScalars s = ComputeUpdateScalars(c, lr, grad_scale, step);

  std::vector<Chunk> chunks = MakeChunks(params);
  const double cost = c.kind == OptimizerKind::kSgd ? 4.0 * kChunk : 12.0 * kChunk;
  pool.ParallelFor(static_cast<int64_t>(chunks.size()), cost, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const Chunk& ch = chunks[static_cast<size_t>(k)];
      ParamSlot& slot = *params[ch.param];
      if (c.kind == OptimizerKind::kSgd) SgdChunk(c, s, slot, ch.begin, ch.end);
      else AdamChunk(c, s, slot, ch.begin, ch.end);
    }
  });
}

}  // namespace oneflow::train
