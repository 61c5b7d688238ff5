// oneDNN convolution backend for Conv/FusedConv (see conv_dnnl.h). On ResNet-18 shapes, batch 1
// (bench/conv_bench.cc), it beats im2col + SGEMM: 8.6 vs 10.2 ms for the nine distinct convs on one
// thread (1.5-1.8x when that SGEMM is our own microkernel; up to 1.6x on the 14x14 and 7x7 layers).
// brgconv in NHWC measured up to 1.8x faster than oneDNN's nChw16c kernels on the small maps; and
// NHWC row bands are contiguous, so threads split the output by rows without copies.
#include "kernels/cpu/conv_dnnl.h"
#include "kernels/cpu/avx512_max.h"
#include "kernels/cpu/tensor_copy.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "base/error.h"

#if defined(ONEFLOW_HAVE_DNNL)

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <mutex>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

dnnl::engine& Engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Per-thread buffers: 0 the NCHW path's input and channel slices' output, 1 the NCHW output,
// 2 oneDNN scratchpads, 3 and 4 the Winograd path's blocked input and output.
std::vector<char>& Scratch(int which, size_t bytes) {
  thread_local std::vector<char> bufs[5];
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
  int64_t in_rows = 0, out_rows = 0;  // Winograd parts: the rows of their dense blocked buffers
  int64_t m0 = 0, mm = 0;  // output channels [m0, m0 + mm) (channel slices; else all)
  uint64_t id = NextSliceId();  // keys the per-thread memory objects of ExecuteSlice
  static uint64_t NextSliceId() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
  }
};

class DnnlConv2d {
 public:
  DnnlConv2d(const DnnlConvParams& p, const float* w, const DnnlConvEpilogue* ep)
      : p_(p), weights_(w, w + p.m * (p.c / p.g) * p.kh * p.kw), nhwc_(ep != nullptr) {
    if (ep) {
      ep_ = *ep;
      // Relu, LeakyRelu and Clip are exact in oneDNN; the others (transcendental) are applied by
      // ApplyActivation on each finished band so results match the NCHW path bit for bit.
      const Activation k = ep_.act.kind;
      manual_act_ = !(k == Activation::kNone || k == Activation::kRelu || k == Activation::kLeakyRelu ||
                      k == Activation::kClip);
    }
    if (nhwc_ && WinogradEnabled() && p_.g == 1 && p_.kh == 3 && p_.kw == 3 && p_.sh == 1 && p_.sw == 1 && p_.dh == 1 &&
        p_.dw == 1 && p_.c % 16 == 0 && p_.m % 16 == 0 && p_.c * p_.m >= kWinogradMinChannelProduct) {
      try {
        PickWinogradKernel();  // the weights are transformed when a run first needs them
        winograd_ = true;
        return;
      } catch (const dnnl::error&) {
        // no Winograd kernel for this shape or CPU: the direct plan serves it
      }
    }
    // Build the one-band plan now so unsupported shapes are rejected at creation.
    slices_[1] = MakeSlices(1);
  }

  // 3x3 stride-1 convs whose channels are multiples of 16 run on oneDNN's Winograd kernels
  // (F(2x2,3x3) or F(4x4,3x3)) in its nChw16c layout: on ResNet-18's 3x3 layers at batch 1 they
  // measured 1.3-2.5x faster than brgconv on one core (bench/conv_bench.cc), with errors of the
  // same order as the direct kernel (2e-6..9e-6 on outputs of magnitude ~5, against a double
  // reference). Below this channel product the layout copies eat the gain.
  static constexpr int64_t kWinogradMinChannelProduct = 32 * 64;
  bool winograd() const { return winograd_; }

  // How an image's Winograd conv is split across threads: bands of output rows (one copy of the
  // weights, shared) or slices of the output channels (each slice's own weights: the split for
  // layers whose weights dominate, and the only one F(2x2,3x3) allows, which wants equal top and
  // bottom padding).
  enum WinogradSplit { kRowBands, kChannelSlices };
  WinogradSplit winograd_split() const { return wino_4x3_ ? kRowBands : kChannelSlices; }
  std::shared_ptr<const std::vector<DnnlSlice>> WinogradParts(WinogradSplit split, int n) const {
    n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n, split == kRowBands ? p_.oh / 2 : p_.m / 16)));
    if (n == 1) split = kRowBands;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = wino_parts_[{split, n}];
    if (!entry) {
      try {
        entry = MakeWinogradParts(split, n);
      } catch (const dnnl::error&) {
        if (n == 1) throw;
        // the kernel takes the whole image but not these parts: one thread does the image
        auto& whole = wino_parts_[{kRowBands, 1}];
        if (!whole) whole = MakeWinogradParts(kRowBands, 1);
        entry = whole;
      }
    }
    return entry;
  }

  const DnnlConvParams& params() const { return p_; }
  const DnnlConvEpilogue& epilogue() const { return ep_; }
  bool manual_activation() const { return manual_act_; }
  bool nhwc() const { return nhwc_; }

  std::shared_ptr<const std::vector<DnnlSlice>> Slices(int threads) const {
    const int n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, p_.oh)));
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = slices_[n];
    if (!entry) entry = MakeSlices(n);
    return entry;
  }

  // One whole-image band over `batch` consecutive NHWC images (one primitive call per chunk of
  // the batch: per-call overhead matters on small maps).
  std::shared_ptr<const std::vector<DnnlSlice>> BatchSlice(int64_t batch) const {
    if (batch == 1) return Slices(1);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = batch_slices_[batch];
    if (!entry) entry = MakeSlices(1, batch);
    return entry;
  }

  // Whole-image slices of the output channels, one per thread: for maps too small to split by
  // rows evenly (7x7). Each writes a dense [oh, ow, mm] buffer that is scattered into place.
  std::shared_ptr<const std::vector<DnnlSlice>> ChannelSlices(int n) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& entry = channel_slices_[n];
    if (!entry) entry = MakeSlices(1, 1, n);
    return entry;
  }

 private:
  // The inference conv of slice `sl` (its src/dst descriptors and mm output channels) with these
  // pads, weights in the layout oneDNN picks, and the bias when the epilogue has one.
  dnnl::convolution_forward::desc ConvDesc(dnnl::algorithm alg, const DnnlSlice& sl, const dnnl::memory::dims& pad_l,
                                           const dnnl::memory::dims& pad_r) const {
    using namespace dnnl;
    const memory::desc w_any(WeightDims(sl.mm), memory::data_type::f32, memory::format_tag::any);
    const memory::dims strides{p_.sh, p_.sw}, dil{p_.dh - 1, p_.dw - 1};
    if (!ep_.bias)
      return convolution_forward::desc(prop_kind::forward_inference, alg, sl.src_md, w_any, sl.dst_md, strides, dil,
                                       pad_l, pad_r);
    return convolution_forward::desc(prop_kind::forward_inference, alg, sl.src_md, w_any,
                                     memory::desc({sl.mm}, memory::data_type::f32, memory::format_tag::x), sl.dst_md,
                                     strides, dil, pad_l, pad_r);
  }

  // The weights of mm output channels as oneDNN describes them: [mm, c, kh, kw], or grouped
  // [g, mm / g, c / g, kh, kw] (ONNX's [m, c / g, kh, kw] in the same memory order).
  dnnl::memory::dims WeightDims(int64_t mm) const {
    if (p_.g == 1) return {mm, p_.c, p_.kh, p_.kw};
    return {p_.g, mm / p_.g, p_.c / p_.g, p_.kh, p_.kw};
  }

  // `n` row bands, or with channel_slices > 1 that many slices of the output channels (n = 1;
  // ungrouped convs only).
  std::shared_ptr<const std::vector<DnnlSlice>> MakeSlices(int n, int64_t batch = 1, int channel_slices = 1) const {
    using namespace dnnl;
    using tag = memory::format_tag;
    using dt = memory::data_type;
    DnnlSingleThreadScope single_threaded;  // the weight reorders too: never start an OpenMP team
    auto slices = std::make_shared<std::vector<DnnlSlice>>();
    stream strm(Engine());
    const int64_t eff = (p_.kh - 1) * p_.dh + 1;
    for (int s = 0; s < n * channel_slices; ++s) {
      const int band = channel_slices > 1 ? 0 : s;
      const int64_t oh0 = p_.oh * band / n, oh1 = p_.oh * (band + 1) / n;
      const int64_t m0 = p_.m * s / (n * channel_slices) / 16 * 16;
      const int64_t m1 = channel_slices > 1 && s + 1 < channel_slices ? p_.m * (s + 1) / channel_slices / 16 * 16 : p_.m;
      const int64_t mm = channel_slices > 1 ? m1 - m0 : p_.m;
      const int64_t first = oh0 * p_.sh - p_.pt, last = (oh1 - 1) * p_.sh - p_.pt + eff;  // input rows [first, last)
      // A single band spans whole images (so batched plans can stride by the image size): an
      // unread tail of input rows is harmless, oneDNN rounds the output size down like ONNX.
      const int64_t r0 = std::max<int64_t>(0, first), r1 = n == 1 ? p_.h : std::min(p_.h, last);
      DnnlSlice sl;
      sl.in_row0 = r0;
      sl.out_row0 = oh0;
      sl.m0 = channel_slices > 1 ? m0 : 0;
      sl.mm = mm;
      sl.src_md = memory::desc({batch, p_.c, r1 - r0, p_.w}, dt::f32, tag::nhwc);
      sl.dst_md = memory::desc({batch, mm, oh1 - oh0, p_.ow}, dt::f32, tag::nhwc);
      const auto cd = ConvDesc(algorithm::convolution_direct, sl, {r0 - first, p_.pl},
                               {std::max<int64_t>(0, last - r1), p_.pr});
      primitive_attr attr = UserScratchpad();
      post_ops po;
      if (ep_.residual) po.append_sum(1.0f);  // dst holds z when the primitive runs
      switch (manual_act_ ? Activation::kNone : ep_.act.kind) {
        case Activation::kRelu: po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f); break;
        case Activation::kLeakyRelu: po.append_eltwise(1.0f, algorithm::eltwise_relu, ep_.act.params[0], 0.0f); break;
        case Activation::kClip: po.append_eltwise(1.0f, algorithm::eltwise_clip, ep_.act.params[0], ep_.act.params[1]); break;
        default: break;
      }
      if (po.len() > 0) attr.set_post_ops(po);
      convolution_forward::primitive_desc pd(cd, attr, Engine());
      if (std::getenv("ONEFLOW_DNNL_VERBOSE"))
        std::fprintf(stderr, "dnnl conv slice %d/%d: %s\n", s, n * channel_slices, pd.impl_info_str());
      sl.scratch_md = pd.scratchpad_desc();
      if (channel_slices == 1 && !slices->empty() && slices->front().weights.get_desc() == pd.weights_desc()) {
        sl.weights = slices->front().weights;  // same packed layout: share it
      } else {
        memory w_user(memory::desc(WeightDims(mm), dt::f32, p_.g == 1 ? tag::oihw : tag::goihw), Engine(),
                      const_cast<float*>(weights_.data() + sl.m0 * (p_.c / p_.g) * p_.kh * p_.kw));
        sl.weights = memory(pd.weights_desc(), Engine());
        reorder(w_user, sl.weights).execute(strm, w_user, sl.weights);
      }
      sl.prim = convolution_forward(pd);
      slices->push_back(std::move(sl));
    }
    strm.wait();
    return slices;
  }

  // Picks the kernel among oneDNN's Winograd implementations for this shape: the one with the
  // smallest transformed weights (F(2x2,3x3): 1.8x the plain weights; F(4x4,3x3): 4x). F(4x4)
  // does fewer multiplies and wins in a loop with hot caches (ResNet-18's 64-channel layer: 0.36
  // vs 0.47 ms), but inside a net, where a batch-1 run streams every weight from DRAM and F(4x4)
  // writes its output past the caches, F(2x2) measured faster: ResNet-18 on one thread 13.0-13.6
  // ms vs 15.9-16.2 ms with F(4x4) wherever its weights stay under 3 MB. `want` forces a kernel.
  static dnnl::convolution_forward::primitive_desc SelectWinograd(const dnnl::convolution_forward::desc& cd,
                                                                  const dnnl::primitive_attr& attr,
                                                                  const std::string& want) {
    using pd_t = dnnl::convolution_forward::primitive_desc;
    std::string pick = want;
    if (pick.empty()) {  // (a primitive_desc is a handle: iterating a copy moves the original too)
      size_t pick_bytes = 0;
      pd_t it(cd, attr, Engine());
      do {
        const size_t bytes = it.weights_desc().get_size();
        if (pick.empty() || bytes < pick_bytes) {
          pick = it.impl_info_str();
          pick_bytes = bytes;
        }
      } while (it.next_impl());
    }
    pd_t pd(cd, attr, Engine());
    while (pick != pd.impl_info_str())
      if (!pd.next_impl()) throw dnnl::error(dnnl_unimplemented, "the chosen Winograd kernel does not take this part");
    return pd;
  }

  // Part s of n of one image's conv (a band of output rows or a slice of output channels): its
  // rows and channels, dense nChw16c descriptors (oneDNN's Winograd kernels take no strided
  // views: a band reads its input rows with the halo from its own copy) and the conv, with the
  // padding the part sees. Band edges fall on even rows, so tiles are not split between bands.
  dnnl::convolution_forward::desc WinogradPart(WinogradSplit split, int s, int n, DnnlSlice& sl) const {
    using dnnl::memory;
    const bool bands = split == kRowBands;
    auto edge = [&](int b) { return b == n ? p_.oh : (p_.oh * b + n) / (2 * n) * 2; };
    const int64_t oh0 = bands ? edge(s) : 0, oh1 = bands ? edge(s + 1) : p_.oh;
    const int64_t first = oh0 - p_.pt, last = oh1 - 1 - p_.pt + 3;  // input rows [first, last)
    const int64_t r0 = std::max<int64_t>(0, first), r1 = std::min(p_.h, last);
    sl.in_row0 = r0;
    sl.in_rows = r1 - r0;
    sl.out_row0 = oh0;
    sl.out_rows = oh1 - oh0;
    sl.m0 = bands ? 0 : p_.m * s / n / 16 * 16;
    sl.mm = (bands || s + 1 == n ? p_.m : p_.m * (s + 1) / n / 16 * 16) - sl.m0;
    sl.src_md = memory::desc({1, p_.c, sl.in_rows, p_.w}, memory::data_type::f32, memory::format_tag::nChw16c);
    sl.dst_md = memory::desc({1, sl.mm, sl.out_rows, p_.ow}, memory::data_type::f32, memory::format_tag::nChw16c);
    return ConvDesc(dnnl::algorithm::convolution_winograd, sl, {r0 - first, p_.pl},
                    {std::max<int64_t>(0, last - r1), p_.pr});
  }

  static dnnl::primitive_attr UserScratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // concurrent runs must not share a scratchpad
    return attr;
  }

  // Picks the whole-image Winograd kernel (wino_impl_), which row bands use too; throws if oneDNN
  // has none for this shape or CPU.
  void PickWinogradKernel() {
    DnnlSingleThreadScope single_threaded;
    DnnlSlice whole;
    const auto pd = SelectWinograd(WinogradPart(kRowBands, 0, 1, whole), UserScratchpad(), std::string());
    wino_impl_ = pd.impl_info_str();
    wino_4x3_ = wino_impl_.find("4x3") != std::string::npos;
  }

  // The n parts of one image's conv, with their primitives and transformed weights.
  std::shared_ptr<const std::vector<DnnlSlice>> MakeWinogradParts(WinogradSplit split, int n) const {
    using namespace dnnl;
    DnnlSingleThreadScope single_threaded;
    auto parts = std::make_shared<std::vector<DnnlSlice>>();
    stream strm(Engine());
    const bool bands = split == kRowBands;
    for (int s = 0; s < n; ++s) {
      DnnlSlice sl;
      const auto cd = WinogradPart(split, s, n, sl);
      auto pd = SelectWinograd(cd, UserScratchpad(), bands ? wino_impl_ : std::string());
      if (std::getenv("ONEFLOW_DNNL_VERBOSE"))
        std::fprintf(stderr, "dnnl winograd conv %s %d/%d: %s (%zu KB weights)\n", bands ? "band" : "channel slice",
                     s, n, pd.impl_info_str(), pd.weights_desc().get_size() / 1024);
      sl.scratch_md = pd.scratchpad_desc();
      if (bands && wino_weights_ && wino_weights_.get_desc() == pd.weights_desc()) {
        sl.weights = wino_weights_;  // the same transformed layout: share it
      } else {
        memory w_user(memory::desc({sl.mm, p_.c, 3, 3}, memory::data_type::f32, memory::format_tag::oihw), Engine(),
                      const_cast<float*>(weights_.data() + sl.m0 * p_.c * 9));
        sl.weights = memory(pd.weights_desc(), Engine());
        reorder(w_user, sl.weights).execute(strm, w_user, sl.weights);
        strm.wait();
        if (bands) wino_weights_ = sl.weights;
      }
      sl.prim = convolution_forward(pd);
      parts->push_back(std::move(sl));
    }
    return parts;
  }

  DnnlConvParams p_;
  std::vector<float> weights_;  // OIHW, kept to build plans for other thread counts
  bool nhwc_ = false;           // an NHWC plan (RunDnnlConv2dNhwc) with the epilogue ep_
  DnnlConvEpilogue ep_;
  bool manual_act_ = false;     // ep_.act is applied after the primitive, not as a post-op
  mutable std::mutex mutex_;
  mutable std::map<int, std::shared_ptr<const std::vector<DnnlSlice>>> slices_;
  mutable std::map<int64_t, std::shared_ptr<const std::vector<DnnlSlice>>> batch_slices_;
  mutable std::map<int, std::shared_ptr<const std::vector<DnnlSlice>>> channel_slices_;
  bool winograd_ = false;
  mutable std::map<std::pair<WinogradSplit, int>, std::shared_ptr<const std::vector<DnnlSlice>>> wino_parts_;
  mutable dnnl::memory wino_weights_;  // the row bands' transformed weights (under the mutex)
  mutable std::string wino_impl_;      // the whole-image kernel, which row bands use too
  mutable bool wino_4x3_ = false;      // it is F(4x4,3x3), which takes bands' uneven padding
};

std::shared_ptr<DnnlConv2d> CreateDnnlConv2d(const DnnlConvParams& p, const float* weights,
                                             const DnnlConvEpilogue* epilogue) {
  if (!DnnlConvEnabled() || !DnnlSingleThreadScope::Available()) return nullptr;
  // oneDNN wants pads that give the output size: trim unused bottom/right padding. A negative
  // remainder (strided 1x1 convs that skip the last input row) means no padding: oneDNN rounds
  // the output size down like ONNX.
  DnnlConvParams q = p;
  q.pb = std::max<int64_t>(0, (p.oh - 1) * p.sh + (p.kh - 1) * p.dh + 1 - p.h - p.pt);
  q.pr = std::max<int64_t>(0, (p.ow - 1) * p.sw + (p.kw - 1) * p.dw + 1 - p.w - p.pl);
  if (q.pb < 0 || q.pr < 0 || q.pb > p.pb || q.pr > p.pr) return nullptr;
  try {
    return std::make_shared<DnnlConv2d>(q, weights, epilogue);
  } catch (const dnnl::error&) {
    return nullptr;  // no implementation for this configuration: the caller uses im2col
  }
}

bool DnnlConvUsesWinograd(const DnnlConv2d& conv) { return conv.winograd(); }

void RunDnnlConv2d(const DnnlConv2d& conv, const float* x, const float* bias, const float* z,
                   const ActivationParams& act, float* y, ThreadPool& pool) {
  OF_CHECK(!conv.nhwc(), kInternal, "NHWC conv plan run as NCHW");
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
          ApplyActivation(act, dst, out_hw);
        }
      });
    }
  }
}

namespace {

// Runs slice `sl` on this thread: the common part of the NHWC paths. The oneDNN memory objects
// and argument map are made once per thread and slice and only repointed afterwards: creating
// them costs a few microseconds per call, which shows on batch-1 runs of small nets.
void ExecuteSlice(const DnnlSlice& sl, const float* src, float* dst, const float* bias) {
  struct Bound {
    dnnl::memory src, dst, scratch, bias;
    std::unordered_map<int, dnnl::memory> args;
  };
  thread_local dnnl::stream strm(Engine());
  thread_local std::unordered_map<uint64_t, Bound> bound;
  std::vector<char>& scratch = Scratch(2, sl.scratch_md.get_size() + 64);
  auto it = bound.find(sl.id);
  if (it == bound.end()) {
    if (bound.size() > 4096) bound.clear();  // plans come and go with input shapes: stay bounded
    Bound b;
    b.src = dnnl::memory(sl.src_md, Engine(), DNNL_MEMORY_NONE);
    b.dst = dnnl::memory(sl.dst_md, Engine(), DNNL_MEMORY_NONE);
    b.scratch = dnnl::memory(sl.scratch_md, Engine(), DNNL_MEMORY_NONE);
    b.args = {{DNNL_ARG_SRC, b.src}, {DNNL_ARG_WEIGHTS, sl.weights}, {DNNL_ARG_DST, b.dst},
              {DNNL_ARG_SCRATCHPAD, b.scratch}};
    if (bias) {
      b.bias = dnnl::memory(dnnl::memory::desc({sl.mm}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x),
                            Engine(), DNNL_MEMORY_NONE);
      b.args.emplace(DNNL_ARG_BIAS, b.bias);
    }
    it = bound.emplace(sl.id, std::move(b)).first;
  }
  Bound& b = it->second;
  b.src.set_data_handle(const_cast<float*>(src));
  b.dst.set_data_handle(dst);
  b.scratch.set_data_handle(Aligned(scratch));
  if (bias) b.bias.set_data_handle(const_cast<float*>(bias + sl.m0));
  sl.prim.execute(strm, b.args);
  strm.wait();
}

// Each thread computes a slice of the output channels of every image into a dense buffer, then
// scatters it into the NHWC output (and gathers the residual first: the sum post-op adds it).
void RunChannelSlices(const DnnlConv2d& conv, const float* x, const float* bias, const float* z, float* y,
                      ThreadPool& pool) {
  const DnnlConvParams& p = conv.params();
  auto slices = conv.ChannelSlices(pool.num_threads());
  const int64_t ns = static_cast<int64_t>(slices->size()), pixels = p.oh * p.ow;
  pool.ParallelFor(p.n * ns, 1e9, [&](int64_t begin, int64_t end) {
    DnnlSingleThreadScope single_threaded;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / ns;
      const DnnlSlice& sl = (*slices)[static_cast<size_t>(item % ns)];
      float* buf = Aligned(Scratch(0, static_cast<size_t>(pixels * sl.mm * 4)));
      float* yn = y + n * pixels * p.m + sl.m0;
      if (z) {
        const float* zn = z + n * pixels * p.m + sl.m0;
        for (int64_t q = 0; q < pixels; ++q) std::copy(zn + q * p.m, zn + q * p.m + sl.mm, buf + q * sl.mm);
      }
      ExecuteSlice(sl, x + n * p.h * p.w * p.c, buf, bias);
      if (conv.manual_activation()) ApplyActivation(conv.epilogue().act, buf, pixels * sl.mm);
      for (int64_t q = 0; q < pixels; ++q) std::copy(buf + q * sl.mm, buf + (q + 1) * sl.mm, yn + q * p.m);
    }
  });
}

// NHWC [px, c] -> nChw16c [c / 16, ..., 16] (c a multiple of 16): pixel q of channel block b goes
// to dst + (b * block_px + q) * 16, so block_px = px for a dense copy, or h * w to fill one row
// of an image's blocked copy.
void NhwcToBlocked(const float* src, int64_t px, int64_t c, int64_t block_px, float* dst) {
  for (int64_t q = 0; q < px; ++q)
    for (int64_t b = 0; b < c / 16; ++b) std::memcpy(dst + (b * block_px + q) * 16, src + q * c + b * 16, 64);
}

// One 16-channel chunk of BlockedToNhwc: d = s (+ z) (then max(., 0) when relu).
template <bool kResidual, bool kRelu>
inline void StoreChunk(const float* __restrict s, const float* __restrict z, float* __restrict d) {
#if ONEFLOW_ISA_AVX512
  __m512 v = _mm512_loadu_ps(s);
  if (kResidual) v = _mm512_add_ps(v, _mm512_loadu_ps(z));
  if (kRelu) v = MaxPs(v, _mm512_setzero_ps());
  _mm512_storeu_ps(d, v);
#else
  for (int i = 0; i < 16; ++i) {
    float v = s[i];
    if (kResidual) v += z[i];
    d[i] = kRelu ? std::max(v, 0.0f) : v;
  }
#endif
}

template <bool kResidual, bool kRelu>
void BlockedToNhwcRows(const float* src, int64_t px, int64_t mm, int64_t ld, const float* z, float* dst) {
  for (int64_t q = 0; q < px; ++q)
    for (int64_t b = 0; b < mm / 16; ++b)
      StoreChunk<kResidual, kRelu>(src + (b * px + q) * 16, kResidual ? z + q * ld + b * 16 : nullptr,
                                   dst + q * ld + b * 16);
}

// nChw16c [mm / 16, px, 16] -> the channels [0, mm) of NHWC rows of `ld` floats, adding the
// residual z (same layout as dst, or null) and applying the activation.
void BlockedToNhwc(const float* src, int64_t px, int64_t mm, int64_t ld, const float* z, const ActivationParams& act,
                   float* dst) {
  const bool relu = act.kind == Activation::kRelu;
  if (z) {
    relu ? BlockedToNhwcRows<true, true>(src, px, mm, ld, z, dst) : BlockedToNhwcRows<true, false>(src, px, mm, ld, z, dst);
  } else {
    relu ? BlockedToNhwcRows<false, true>(src, px, mm, ld, z, dst) : BlockedToNhwcRows<false, false>(src, px, mm, ld, z, dst);
  }
  if (!relu && act.kind != Activation::kNone) {
    if (mm == ld) {
      ApplyActivation(act, dst, px * mm);
    } else {
      for (int64_t q = 0; q < px; ++q) ApplyActivation(act, dst + q * ld, mm);
    }
  }
}

// The Winograd plan. Whole images, or bands of an image's rows when there are fewer images than
// threads, go start to end on one thread, in its cache: copy the input rows into a blocked buffer,
// run the primitive (which adds the bias), copy the output back adding the residual and applying
// the activation. Channel slices share one blocked copy of the image, made first by all threads.
void RunWinograd(const DnnlConv2d& conv, const float* x, const float* bias, const float* z, float* y,
                 ThreadPool& pool, int threads) {
  const DnnlConvParams& p = conv.params();
  const ActivationParams& act = conv.epilogue().act;
  const int64_t in_img = p.h * p.w * p.c, out_img = p.oh * p.ow * p.m;
  auto parallel = [&](int64_t items, double cost, const std::function<void(int64_t, int64_t)>& fn) {
    if (threads == 1 || items == 1) {
      fn(0, items);
    } else {
      pool.ParallelFor(items, cost, fn);
    }
  };
  const auto split = p.n >= threads ? DnnlConv2d::kRowBands : conv.winograd_split();
  auto parts = conv.WinogradParts(split, p.n >= threads ? 1 : threads);
  const int64_t np = static_cast<int64_t>(parts->size());
  const float* shared_xb = nullptr;  // channel slices: every image in nChw16c
  if (np > 1 && split == DnnlConv2d::kChannelSlices) {
    float* xb = Aligned(Scratch(3, static_cast<size_t>(p.n * in_img * 4 + 64)));
    parallel(p.n * p.h, static_cast<double>(p.w * p.c), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)  // image r / h, row r % h
        NhwcToBlocked(x + r * p.w * p.c, p.w, p.c, p.h * p.w, xb + (r / p.h) * in_img + (r % p.h) * p.w * 16);
    });
    shared_xb = xb;
  }
  parallel(p.n * np, 1e9, [&](int64_t begin, int64_t end) {
    DnnlSingleThreadScope single_threaded;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / np;
      const DnnlSlice& sl = (*parts)[static_cast<size_t>(item % np)];
      const int64_t in_px = sl.in_rows * p.w, out_px = sl.out_rows * p.ow;
      const float* xb = shared_xb ? shared_xb + n * in_img : nullptr;
      if (!xb) {
        float* buf = Aligned(Scratch(3, static_cast<size_t>(in_px * p.c * 4 + 64)));
        NhwcToBlocked(x + n * in_img + sl.in_row0 * p.w * p.c, in_px, p.c, in_px, buf);
        xb = buf;
      }
      float* yb = Aligned(Scratch(4, static_cast<size_t>(out_px * sl.mm * 4 + 64)));
      ExecuteSlice(sl, xb, yb, bias);
      const int64_t off = n * out_img + sl.out_row0 * p.ow * p.m + sl.m0;
      BlockedToNhwc(yb, out_px, sl.mm, p.m, z ? z + off : nullptr, act, y + off);
    }
  });
}

}  // namespace

void RunDnnlConv2dNhwc(const DnnlConv2d& conv, const float* x, const float* bias, const float* z, float* y,
                       ThreadPool& pool) {
  const DnnlConvParams& p = conv.params();
  const DnnlConvEpilogue& ep = conv.epilogue();
  OF_CHECK(conv.nhwc() && ep.bias == (bias != nullptr) && ep.residual == (z != nullptr), kInternal,
           "NHWC conv plan built for another epilogue");
  // Below ~3 MFLOP (about 15 us on one core) a second thread costs more than it saves: the
  // handoff, and the activations moving between the cores' caches.
  const double flops = 2.0 * static_cast<double>(p.n * p.oh * p.ow * p.m * (p.c / p.g) * p.kh * p.kw);
  const int threads = flops < 3e6 ? 1 : pool.num_threads();
  if (conv.winograd()) {
    RunWinograd(conv, x, bias, z, y, pool, threads);
    return;
  }
  const int64_t in_img = p.h * p.w * p.c, out_img = p.oh * p.ow * p.m;
  // Fewer images than threads on small maps (under 4 output rows per thread, where row bands
  // balance badly: 7 rows on 2 threads) with enough output channels: channel slices.
  if (p.n < threads && p.oh < 4 * threads && p.m % (16 * threads) == 0 && p.g == 1) {
    RunChannelSlices(conv, x, bias, z, y, pool);
    return;
  }
  // Batches of at least one image per thread: whole images in chunks, one primitive call per
  // chunk (no halo rows recomputed, little per-call overhead), about four chunks per thread so
  // the pool balances them dynamically when a core is busy; on one thread the whole batch is one
  // call (cnn b16: 4 -> 1 call measured 2-4% faster per conv). Smaller batches: bands of output
  // rows of each image across the threads.
  const bool whole = p.n >= threads;
  const int64_t chunk = whole ? (threads == 1 ? p.n : std::max<int64_t>(1, p.n / (4 * threads))) : 1;
  const int64_t chunks = (p.n + chunk - 1) / chunk;
  auto slices = whole ? conv.BatchSlice(chunk) : conv.Slices(threads);
  auto tail = whole && p.n % chunk ? conv.BatchSlice(p.n % chunk) : slices;
  const int64_t nb = static_cast<int64_t>(slices->size());
  const int64_t items = whole ? chunks : p.n * nb;
  auto run = [&](int64_t begin, int64_t end) {
    DnnlSingleThreadScope single_threaded;  // each band runs on this pool thread alone
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = whole ? item * chunk : item / nb;
      const int64_t s = whole ? 0 : item % nb;
      const int64_t images = whole ? std::min(chunk, p.n - n) : 1;
      const DnnlSlice& sl = (*(images == chunk ? slices : tail))[static_cast<size_t>(s)];
      const int64_t out_rows = (s + 1 < nb ? (*slices)[static_cast<size_t>(s + 1)].out_row0 : p.oh) - sl.out_row0;
      float* dst = y + n * out_img + sl.out_row0 * p.ow * p.m;
      const int64_t band = images * out_rows * p.ow * p.m;
      if (z) std::copy(z + (dst - y), z + (dst - y) + band, dst);  // the sum post-op adds it
      ExecuteSlice(sl, x + n * in_img + sl.in_row0 * p.w * p.c, dst, bias);
      if (conv.manual_activation()) ApplyActivation(ep.act, dst, band);
    }
  };
  if (threads == 1) {
    run(0, items);
  } else {
    pool.ParallelFor(items, 1e9, run);
  }
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow

#else  // !ONEFLOW_HAVE_DNNL

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
class DnnlConv2d {};
std::shared_ptr<DnnlConv2d> CreateDnnlConv2d(const DnnlConvParams&, const float*, const DnnlConvEpilogue*) {
  return nullptr;
}
bool DnnlConvUsesWinograd(const DnnlConv2d&) { return false; }
void RunDnnlConv2dNhwc(const DnnlConv2d&, const float*, const float*, const float*, float*, ThreadPool&) {
  Fail(ErrorCode::kInternal, "oneDNN is not built in");
}
void RunDnnlConv2d(const DnnlConv2d&, const float*, const float*, const float*, const ActivationParams&, float*,
                   ThreadPool&) {
  Fail(ErrorCode::kInternal, "oneDNN is not built in");
}
ONEFLOW_CPU_ISA_END
}  // namespace oneflow

#endif
