// oneDNN convolution backend for Conv/FusedConv (see conv_dnnl.h). On ResNet-18 shapes, batch 1
// (bench/conv_bench.cc), it beats im2col + SGEMM: 8.6 vs 10.2 ms for the nine distinct convs on one
// thread (1.5-1.8x when that SGEMM is our own microkernel; up to 1.6x on the 14x14 and 7x7 layers).
// brgconv in NHWC measured up to 1.8x faster than oneDNN's nChw16c kernels on the small maps; and
// NHWC row bands are contiguous, so threads split the output by rows without copies.
#include "kernels/cpu/conv_dnnl.h"
#include "kernels/cpu/tensor_copy.h"

#include <atomic>

#include "base/error.h"

namespace oneflow {
static std::atomic<bool> g_dnnl_conv_enabled{true};
void SetDnnlConvEnabled(bool enabled) { g_dnnl_conv_enabled = enabled; }
bool DnnlConvEnabled() { return g_dnnl_conv_enabled; }
}  // namespace oneflow

#if defined(ONEFLOW_HAVE_DNNL)

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

namespace oneflow {

namespace {

dnnl::engine& Engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

std::vector<char>& Scratch(int which, size_t bytes) {
  thread_local std::vector<char> bufs[3];
  if (bufs[which].size() < bytes) bufs[which].resize(bytes + 64);
  return bufs[which];
}

float* Aligned(std::vector<char>& v) {
  uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<float*>((p + 63) / 64 * 64);
}

// [rows, cols] -> [cols, rows] with the blocked (AVX) transpose of the tensor kernels.
void Transpose(const float* src, int64_t rows, int64_t cols, float* dst, ThreadPool& pool) {
  TransposeCopy(src, dst, Shape{rows, cols}, {1, 0}, sizeof(float), &pool);
}

}  // namespace

// One horizontal band of output rows: its own primitive over the input rows it reads, with the
// padding that band sees. In NHWC both bands are contiguous, so no copies are needed.
struct DnnlSlice {
  dnnl::convolution_forward prim;
  dnnl::memory::desc src_md, dst_md, scratch_md;
  dnnl::memory weights;
  int64_t in_row0 = 0, out_row0 = 0;
};

class DnnlConv2d {
 public:
  DnnlConv2d(const DnnlConvParams& p, const float* w) : p_(p), weights_(w, w + p.m * p.c * p.kh * p.kw) {
    // Build the one-band plan now so unsupported shapes are rejected at creation.
    slices_[1] = MakeSlices(1);
  }

  const DnnlConvParams& params() const { return p_; }

  std::shared_ptr<const std::vector<DnnlSlice>> Slices(int threads) const {
    const int n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, p_.oh)));
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = slices_[n];
    if (!entry) entry = MakeSlices(n);
    return entry;
  }

 private:
  std::shared_ptr<const std::vector<DnnlSlice>> MakeSlices(int n) const {
    using namespace dnnl;
    using tag = memory::format_tag;
    using dt = memory::data_type;
    DnnlSingleThreadScope single_threaded;  // the weight reorders too: never start an OpenMP team
    auto slices = std::make_shared<std::vector<DnnlSlice>>();
    stream strm(Engine());
    const int64_t eff = (p_.kh - 1) * p_.dh + 1;
    for (int s = 0; s < n; ++s) {
      const int64_t oh0 = p_.oh * s / n, oh1 = p_.oh * (s + 1) / n;
      const int64_t first = oh0 * p_.sh - p_.pt, last = (oh1 - 1) * p_.sh - p_.pt + eff;  // input rows [first, last)
      const int64_t r0 = std::max<int64_t>(0, first), r1 = std::min(p_.h, last);
      DnnlSlice sl;
      sl.in_row0 = r0;
      sl.out_row0 = oh0;
      sl.src_md = memory::desc({1, p_.c, r1 - r0, p_.w}, dt::f32, tag::nhwc);
      sl.dst_md = memory::desc({1, p_.m, oh1 - oh0, p_.ow}, dt::f32, tag::nhwc);
      memory::desc w_any({p_.m, p_.c, p_.kh, p_.kw}, dt::f32, tag::any);
      convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, sl.src_md, w_any,
                                   sl.dst_md, {p_.sh, p_.sw}, {p_.dh - 1, p_.dw - 1}, {r0 - first, p_.pl},
                                   {last - r1, p_.pr});
      primitive_attr attr;
      attr.set_scratchpad_mode(scratchpad_mode::user);  // concurrent runs must not share a scratchpad
      convolution_forward::primitive_desc pd(cd, attr, Engine());
      if (std::getenv("ONEFLOW_DNNL_VERBOSE"))
        std::fprintf(stderr, "dnnl conv band %d/%d: %s\n", s, n, pd.impl_info_str());
      sl.scratch_md = pd.scratchpad_desc();
      if (!slices->empty() && slices->front().weights.get_desc() == pd.weights_desc()) {
        sl.weights = slices->front().weights;  // same packed layout: share it
      } else {
        memory w_user(memory::desc({p_.m, p_.c, p_.kh, p_.kw}, dt::f32, tag::oihw), Engine(),
                      const_cast<float*>(weights_.data()));
        sl.weights = memory(pd.weights_desc(), Engine());
        reorder(w_user, sl.weights).execute(strm, w_user, sl.weights);
      }
      sl.prim = convolution_forward(pd);
      slices->push_back(std::move(sl));
    }
    strm.wait();
    return slices;
  }

  DnnlConvParams p_;
  std::vector<float> weights_;  // OIHW, kept to build plans for other thread counts
  mutable std::mutex mutex_;
  mutable std::map<int, std::shared_ptr<const std::vector<DnnlSlice>>> slices_;
};

std::shared_ptr<DnnlConv2d> CreateDnnlConv2d(const DnnlConvParams& p, const float* weights) {
  if (!DnnlConvEnabled() || !DnnlSingleThreadScope::Available()) return nullptr;
  // oneDNN wants pads that match the output size exactly: trim unused bottom/right padding.
  DnnlConvParams q = p;
  q.pb = (p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1 - p.h - p.pt;
  q.pr = (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1 - p.w - p.pl;
  if (q.pb < 0 || q.pr < 0 || q.pb > p.pb || q.pr > p.pr) return nullptr;
  try {
    return std::make_shared<DnnlConv2d>(q, weights);
  } catch (const dnnl::error&) {
    return nullptr;  // no implementation for this configuration: the caller uses im2col
  }
}

void RunDnnlConv2d(const DnnlConv2d& conv, const float* x, const float* bias, const float* z,
                   const ActivationSpec& act, float* y, ThreadPool& pool) {
  const DnnlConvParams& p = conv.params();
  const int64_t in_hw = p.h * p.w, out_hw = p.oh * p.ow;
  auto slices = conv.Slices(pool.num_threads());
  float* xb = Aligned(Scratch(0, static_cast<size_t>(p.c * in_hw * 4)));
  float* yb = Aligned(Scratch(1, static_cast<size_t>(p.m * out_hw * 4)));
  for (int64_t n = 0; n < p.n; ++n) {
    Transpose(x + n * p.c * in_hw, p.c, in_hw, xb, pool);  // NCHW -> NHWC
    pool.ParallelFor(static_cast<int64_t>(slices->size()), 1e9, [&](int64_t begin, int64_t end) {
      DnnlSingleThreadScope single_threaded;  // each band runs on this pool thread alone
      thread_local dnnl::stream strm(Engine());
      for (int64_t s = begin; s < end; ++s) {
        const DnnlSlice& sl = (*slices)[static_cast<size_t>(s)];
        std::vector<char>& scratch = Scratch(2, sl.scratch_md.get_size() + 64);
        dnnl::memory src_m(sl.src_md, Engine(), xb + sl.in_row0 * p.w * p.c);
        dnnl::memory dst_m(sl.dst_md, Engine(), yb + sl.out_row0 * p.ow * p.m);
        dnnl::memory scratch_m(sl.scratch_md, Engine(), Aligned(scratch));
        sl.prim.execute(strm, {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, sl.weights}, {DNNL_ARG_DST, dst_m},
                               {DNNL_ARG_SCRATCHPAD, scratch_m}});
        strm.wait();
      }
    });
    // NHWC -> NCHW, then the epilogue per channel: bias, residual, activation.
    float* yn = y + n * p.m * out_hw;
    Transpose(yb, out_hw, p.m, yn, pool);
    if (bias || z || act.kind != Activation::kNone) {
      const float* zn = z ? z + n * p.m * out_hw : nullptr;
      pool.ParallelFor(p.m, static_cast<double>(out_hw * 2), [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          float* dst = yn + m * out_hw;
          if (bias) {
            const float b = bias[m];
            for (int64_t q = 0; q < out_hw; ++q) dst[q] += b;
          }
          if (zn) {
            const float* zr = zn + m * out_hw;
            for (int64_t q = 0; q < out_hw; ++q) dst[q] += zr[q];
          }
          ApplyActivation(dst, out_hw, act);
        }
      });
    }
  }
}

}  // namespace oneflow

#else  // !ONEFLOW_HAVE_DNNL

namespace oneflow {
class DnnlConv2d {};
std::shared_ptr<DnnlConv2d> CreateDnnlConv2d(const DnnlConvParams&, const float*) { return nullptr; }
void RunDnnlConv2d(const DnnlConv2d&, const float*, const float*, const float*, const ActivationSpec&, float*,
                   ThreadPool&) {
  Fail(ErrorCode::kInternal, "oneDNN is not built in");
}
}  // namespace oneflow

#endif
