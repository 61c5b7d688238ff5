// CPU kernels: ConvInteger and QLinearConv (graph/ops/quantization.cc), 1 to 3 spatial dims, on
// the 8-bit GEMM of integer_gemm.h.
//
// Per image, x is made channels last; per group, the receptive fields are gathered into rows
// (im2col: per output position, the C/group channels at each kernel offset, each a memcpy;
// padding filled with x's zero point so it adds nothing; a pointwise conv uses the image as it
// is), multiplied by the group's weights as a [kernel x C/group, M/group] matrix, and the
// int32 sums written out channel-major: as they are (ConvInteger), or plus the bias, scaled by
// x_scale * w_scale[channel] / y_scale and rounded half to even into y's type (QLinearConv, the
// arithmetic of onnxruntime's requantization: the multiplier formed in float, the sum times it
// rounded, then the zero point added). Constant weights with a constant zero point are
// transposed and packed once per node.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "graph/ops/conv_shape.h"
#include "kernels/cpu/integer_gemm.h"
#include "kernels/cpu/quantize_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

using integer_gemm::PackedB;
using integer_gemm::ZeroPointEntries;

// The conv's geometry with 3 spatial dims (missing leading ones of size 1).
struct Geometry3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1}, pad{0, 0, 0};
  int64_t batch = 1, channels = 1, out_channels = 1, group = 1;
  int64_t Positions() const { return out[0] * out[1] * out[2]; }
  int64_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t InSize() const { return in[0] * in[1] * in[2]; }
  int64_t Depth() const { return channels / group * KernelSize(); }  // K of the GEMM
};

Geometry3 ResolveGeometry(const KernelContext& ctx, const Shape& x, const Shape& w) {
  OF_REQUIRE(x.size() >= 3 && x.size() <= 5 && w.size() == x.size(), ctx.node_desc(), ": x ", ShapeToString(x),
             " and w ", ShapeToString(w), " must be [N, C, spatial...] and [M, C/group, kernel...], 1 to 3 spatial dims");
  std::vector<int64_t> in(x.begin() + 2, x.end()), wk(w.begin() + 2, w.end());
  const ConvGeometry g = ResolveConvGeometry(ctx.attrs(), in, wk, ctx.node_desc());
  Geometry3 r;
  r.batch = x[0];
  r.channels = x[1];
  r.out_channels = w[0];
  r.group = g.group;
  OF_REQUIRE(r.channels == w[1] * r.group && r.out_channels % r.group == 0, ctx.node_desc(), ": x ", ShapeToString(x),
             " and w ", ShapeToString(w), " do not match with group ", r.group);
  const size_t s = in.size(), shift = 3 - s;
  for (size_t i = 0; i < s; ++i) {
    r.in[shift + i] = in[i];
    r.out[shift + i] = g.out[i];
    r.kernel[shift + i] = g.kernel[i];
    r.stride[shift + i] = g.strides[i];
    r.dilation[shift + i] = g.dilations[i];
    r.pad[shift + i] = g.pad_begin[i];
  }
  return r;
}

// x[c][spatial] -> out[spatial][c] for one image: receptive fields then read channels contiguously.
void ToChannelsLast(const uint8_t* x, int64_t channels, int64_t spatial, uint8_t* out) {
  constexpr int64_t kTile = 64;
  for (int64_t s0 = 0; s0 < spatial; s0 += kTile)
    for (int64_t c = 0; c < channels; ++c) {
      const uint8_t* src = x + c * spatial;
      for (int64_t s = s0; s < std::min(spatial, s0 + kTile); ++s) out[s * channels + c] = src[s];
    }
}

// Whether the conv reads each output position's input pixel and nothing else (1x1, stride 1, no
// padding): then the channels-last image is the GEMM's A as it stands.
bool IsPointwise(const Geometry3& g) {
  for (int d = 0; d < 3; ++d)
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.pad[d] != 0 || g.in[d] != g.out[d]) return false;
  return true;
}

// Rows [p0, p1) of the im2col matrix of channels-last image `xt`, for channels [c0, c0 + C/group):
// row p holds, per kernel offset (kd, kh, kw), the C/group channels of the input pixel position p
// reads there, `fill` for padding. K is ordered (kd, kh, kw, c) to match PackGroupWeights.
void Im2Col(const uint8_t* xt, const Geometry3& g, int64_t c0, uint8_t fill, int64_t p0, int64_t p1, uint8_t* rows) {
  const int64_t cg = g.channels / g.group, K = g.Depth();
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1], od = p / (g.out[2] * g.out[1]);
    uint8_t* dst = rows + (p - p0) * K;
    for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
      const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
      const bool d_in = id >= 0 && id < g.in[0];
      for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
        const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
        const bool dh_in = d_in && ih >= 0 && ih < g.in[1];
        const int64_t iw0 = ow * g.stride[2] - g.pad[2];
        const int64_t span = (g.kernel[2] - 1) * g.dilation[2] + 1;
        if (dh_in && g.dilation[2] == 1 && iw0 >= 0 && iw0 + span <= g.in[2] && (cg == g.channels || g.kernel[2] == 1)) {
          // The whole kernel row is inside the image and its taps' channels are adjacent in the
          // channels-last image (all channels, or one tap): one copy.
          const size_t bytes = static_cast<size_t>(g.kernel[2] * cg);
          std::memcpy(dst, xt + ((id * g.in[1] + ih) * g.in[2] + iw0) * g.channels + c0, bytes);
          dst += bytes;
          continue;
        }
        for (int64_t kw = 0; kw < g.kernel[2]; ++kw, dst += cg) {
          const int64_t iw = iw0 + kw * g.dilation[2];
          if (!(dh_in && iw >= 0 && iw < g.in[2])) {
            std::memset(dst, fill, static_cast<size_t>(cg));
          } else {
            const uint8_t* src = xt + ((id * g.in[1] + ih) * g.in[2] + iw) * g.channels + c0;
            if (cg >= 16) std::memcpy(dst, src, static_cast<size_t>(cg));
            else for (int64_t c = 0; c < cg; ++c) dst[c] = src[c];  // a few channels (the stem): no call
          }
        }
      }
    }
  }
}

// Group `group`'s weights as the GEMM's B: [kernel x C/group, M/group] with K ordered (kernel
// offset, channel) as Im2Col writes it, packed.
void PackGroupWeights(const Tensor& w, int64_t group, int64_t groups, const std::vector<int16_t>& zero_points,
                      DType x_type, PackedB& out) {
  const int64_t mg = w.dim(0) / groups, K = w.numel() / w.dim(0), cg = w.dim(1), taps = K / cg;
  const uint8_t* src = static_cast<const uint8_t*>(w.raw()) + group * mg * K;
  std::vector<uint8_t> transposed(static_cast<size_t>(K * mg));
  for (int64_t m = 0; m < mg; ++m)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < taps; ++t) transposed[static_cast<size_t>((t * cg + c) * mg + m)] = src[m * K + c * taps + t];
  out.Pack(transposed.data(), w.dtype(), mg, zero_points.data() + group * mg, K, mg, x_type);
}

// Writes one image-group's sums: acc is [positions][mg] for output channels [first_channel,
// + mg) of one image, whose output starts at element `out_offset` (channel-major).
using ConvEpilogue = std::function<void(const int32_t* acc, int64_t positions, int64_t mg, int64_t out_offset,
                                        int64_t first_channel)>;

// Shared by both ops: the slots of x, w, and their zero points. Compute may run on several
// threads at once: everything a run needs beyond the packed weights lives on its stack.
class QuantizedConvKernel : public OpKernel {
 public:
  QuantizedConvKernel(const KernelInitContext& init, size_t w_slot, size_t x_zp_slot, size_t w_zp_slot)
      : w_slot_(w_slot), x_zp_slot_(x_zp_slot), w_zp_slot_(w_zp_slot) {
    const Tensor* w = init.constant_input(w_slot);
    const bool zp_known = !init.has_input(w_zp_slot) || init.constant_input(w_zp_slot) != nullptr;
    if (!w || !zp_known || w->rank() < 3 || !init.has_input(0)) return;
    const int64_t groups = init.attrs().GetInt("group", 1);
    // groups <= M: with M = 0 any groups divides it, and packed_ is sized by groups.
    if (groups < 1 || groups > w->dim(0) || w->dim(0) % groups != 0) return;  // inference reports it
    const std::vector<int16_t> zb = ZeroPointEntries(init.has_input(w_zp_slot) ? init.constant_input(w_zp_slot) : nullptr,
                                                     init.node().Describe(), "w_zero_point", w->dim(0));
    packed_.resize(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) PackGroupWeights(*w, g, groups, zb, init.input_type(0).dtype, packed_[static_cast<size_t>(g)]);
    packed_x_type_ = init.input_type(0).dtype;
  }

  Geometry3 GeometryOf(const KernelContext& ctx) const {
    return ResolveGeometry(ctx, ctx.input(0).shape(), ctx.input(w_slot_).shape());
  }

  void RunConv(KernelContext& ctx, const Geometry3& g, const ConvEpilogue& epilogue) const {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(w_slot_);
    OF_REQUIRE(x.dtype() == DType::kInt8 || x.dtype() == DType::kUInt8, ctx.node_desc(), ": x must be int8 or uint8");
    const Tensor* x_zp = ctx.has_input(x_zp_slot_) ? &ctx.input(x_zp_slot_) : nullptr;
    OF_REQUIRE(!x_zp || (x_zp->numel() == 1 && x_zp->dtype() == x.dtype()), ctx.node_desc(),
               ": x_zero_point must be a scalar of x's type (per-tensor)");
    const int16_t zx = ZeroPointEntries(x_zp, ctx.node_desc(), "x_zero_point", 1)[0];
    std::vector<PackedB> per_run;
    const std::vector<PackedB>* packed = &packed_;
    if (packed_.empty() || packed_x_type_ != x.dtype()) {
      const std::vector<int16_t> zb = ZeroPointEntries(ctx.has_input(w_zp_slot_) ? &ctx.input(w_zp_slot_) : nullptr,
                                                       ctx.node_desc(), "w_zero_point", g.out_channels);
      per_run.resize(static_cast<size_t>(g.group));
      for (int64_t k = 0; k < g.group; ++k) PackGroupWeights(w, k, g.group, zb, x.dtype(), per_run[static_cast<size_t>(k)]);
      packed = &per_run;
    }
    const int64_t P = g.Positions(), K = g.Depth(), mg = g.out_channels / g.group;
    OF_CHECK(K < integer_gemm::kMaxK, kUnsupported, ctx.node_desc(), ": C/group x kernel = ", K,
             " could overflow the int32 accumulator (at most ", integer_gemm::kMaxK - 1, ")");
    const bool pointwise = IsPointwise(g);
    // Scratch kept per calling thread across runs (a run's first touch of fresh pages costs as
    // much as its arithmetic); a thread runs one node at a time.
    // The lambdas below run on the pool's workers, where these names would mean the workers' own
    // thread_locals: they use the local references.
    thread_local std::vector<uint8_t> tl_image_last, tl_rows;
    thread_local std::vector<int32_t> tl_acc;
    thread_local std::vector<int16_t> tl_za;
    std::vector<uint8_t>& image_last = tl_image_last;
    std::vector<uint8_t>& rows = tl_rows;
    std::vector<int32_t>& acc = tl_acc;
    std::vector<int16_t>& za = tl_za;
    image_last.resize(static_cast<size_t>(g.channels * g.InSize()));
    if (!pointwise) rows.resize(static_cast<size_t>(P * K));
    acc.resize(static_cast<size_t>(P * mg));
    za.assign(static_cast<size_t>(P), zx);
    const uint8_t* xs = static_cast<const uint8_t*>(x.raw());
    for (int64_t n = 0; n < g.batch; ++n) {
      ToChannelsLast(xs + n * g.channels * g.InSize(), g.channels, g.InSize(), image_last.data());
      for (int64_t grp = 0; grp < g.group; ++grp) {
        const int64_t c0 = grp * (g.channels / g.group);
        const uint8_t* a = image_last.data() + c0;  // pointwise: the image itself, row stride C
        int64_t lda = g.channels;
        if (!pointwise) {
          ctx.pool().ParallelFor(P, static_cast<double>(K), [&](int64_t p0, int64_t p1) {
            Im2Col(image_last.data(), g, c0, static_cast<uint8_t>(zx), p0, p1, rows.data() + p0 * K);
          });
          a = rows.data();
          lda = K;
        }
        (*packed)[static_cast<size_t>(grp)].Multiply(ctx.pool(), a, P, lda, za.data(), acc.data(), mg);
        epilogue(acc.data(), P, mg, (n * g.out_channels + grp * mg) * P, grp * mg);
      }
    }
  }

 private:
  size_t w_slot_, x_zp_slot_, w_zp_slot_;
  std::vector<PackedB> packed_;
  DType packed_x_type_ = DType::kUndefined;
};

// ConvInteger(x, w, x_zero_point?, w_zero_point?) -> int32.
class ConvIntegerKernel final : public QuantizedConvKernel {
 public:
  explicit ConvIntegerKernel(const KernelInitContext& init) : QuantizedConvKernel(init, 1, 2, 3) {}
  void Compute(KernelContext& ctx) override {
    int32_t* y = ctx.output(0).data<int32_t>();
    RunConv(ctx, GeometryOf(ctx), [y](const int32_t* acc, int64_t positions, int64_t mg, int64_t out_offset, int64_t) {
      for (int64_t m = 0; m < mg; ++m)
        for (int64_t p = 0; p < positions; ++p) y[out_offset + m * positions + p] = acc[p * mg + m];
    });
  }
};
ONEFLOW_KERNEL_CLASS(ConvInteger, ConvIntegerKernel);

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?).
class QLinearConvKernel final : public QuantizedConvKernel {
 public:
  explicit QLinearConvKernel(const KernelInitContext& init) : QuantizedConvKernel(init, 3, 2, 5) {}

  void Compute(KernelContext& ctx) override {
    const Geometry3 g = GeometryOf(ctx);
    const std::string& node = ctx.node_desc();
    auto positive = [&](float v, const char* name) {
      OF_REQUIRE(v > 0.0f && std::isfinite(v), node, ": ", name, " must be positive and finite, got ", v);
      return v;
    };
    auto scalar = [&](size_t i, const char* name) {
      const Tensor& t = ctx.input(i);
      OF_REQUIRE(t.numel() == 1, node, ": ", name, " must be a scalar, got ", ShapeToString(t.shape()));
      return positive(t.data<float>()[0], name);
    };
    const float x_scale = scalar(1, "x_scale"), y_scale = scalar(6, "y_scale");
    const Tensor& ws = ctx.input(4);
    OF_REQUIRE(ws.numel() == 1 || (ws.rank() == 1 && ws.numel() == g.out_channels), node, ": w_scale ",
               ShapeToString(ws.shape()), " must be a scalar or have ", g.out_channels, " entries");
    std::vector<float> multiplier(static_cast<size_t>(g.out_channels));
    for (int64_t m = 0; m < g.out_channels; ++m)
      multiplier[static_cast<size_t>(m)] = x_scale * positive(ws.data<float>()[ws.numel() == 1 ? 0 : m], "w_scale") / y_scale;
    const int32_t* bias = nullptr;
    if (ctx.has_input(8)) {
      const Tensor& b = ctx.input(8);
      OF_REQUIRE(b.rank() == 1 && b.numel() == g.out_channels, node, ": B must have ", g.out_channels, " entries, got ",
                 ShapeToString(b.shape()));
      bias = b.data<int32_t>();
    }
    const Tensor& zy = ctx.input(7);
    OF_REQUIRE(zy.numel() == 1, node, ": y_zero_point must be a scalar (per-tensor)");
    const int32_t y_zero_point = static_cast<int32_t>(zy.GetAsInt64(0));
    Tensor& y = ctx.output(0);
    const bool is_signed = y.dtype() == DType::kInt8;
    const int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
    uint8_t* out = static_cast<uint8_t*>(y.raw());
    ThreadPool& pool = ctx.pool();
    std::vector<int32_t> bias_or_zero(static_cast<size_t>(g.out_channels), 0);
    if (bias) std::copy(bias, bias + g.out_channels, bias_or_zero.begin());
    // Requantized in tiles of kTile positions x kTile channels: along channels (acc's contiguous
    // axis) the arithmetic vectorizes; the tile is then written out channel-major.
    constexpr int64_t kTile = 16;
    RunConv(ctx, g, [&](const int32_t* acc, int64_t positions, int64_t mg, int64_t out_offset, int64_t first_channel) {
      const int64_t p_tiles = (positions + kTile - 1) / kTile;
      pool.ParallelFor(p_tiles, static_cast<double>(kTile * mg), [&](int64_t t0, int64_t t1) {
        uint8_t tile[kTile][kTile];
        const int32_t z = y_zero_point, low = lo, high = hi;  // locals: the byte stores cannot alias them
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t p0 = t * kTile, pn = std::min(kTile, positions - p0);
          for (int64_t m0 = 0; m0 < mg; m0 += kTile) {
            const int64_t mn = std::min(kTile, mg - m0);
            const float* mult = multiplier.data() + first_channel + m0;
            const int32_t* b = bias_or_zero.data() + first_channel + m0;
            for (int64_t i = 0; i < pn; ++i) {
              const int32_t* a = acc + (p0 + i) * mg + m0;
              // The sum in 64 bits: a model's bias may be anything an int32 holds. The result goes to
              // int8's two's complement byte when negative.
              for (int64_t j = 0; j < mn; ++j)
                tile[i][j] = static_cast<uint8_t>(QuantizeToRange(
                    static_cast<float>(static_cast<int64_t>(a[j]) + b[j]) * mult[j], z, low, high));
            }
            for (int64_t j = 0; j < mn; ++j) {
              uint8_t* row = out + out_offset + (m0 + j) * positions + p0;
              for (int64_t i = 0; i < pn; ++i) row[i] = tile[i][j];
            }
          }
        }
      });
    });
  }
};
ONEFLOW_KERNEL_CLASS(QLinearConv, QLinearConvKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
