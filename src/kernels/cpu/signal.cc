// CPU kernels: HannWindow, HammingWindow, BlackmanWindow, DFT, STFT, MelWeightMatrix
// (graph/ops/signal.cc). Samples are computed in double and converted to the output type (integer
// types truncate toward zero, as numpy's astype). Transforms run in double precision: a radix-2 FFT
// for power-of-two lengths, a direct sum over a twiddle table otherwise.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "base/dtype.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

constexpr double kPi = 3.14159265358979323846;

template <typename Sample>
void WindowKernel(KernelContext& ctx, Sample sample) {
  Tensor& y = ctx.output(0);
  const int64_t n = y.numel();
  const bool periodic = ctx.attrs().GetInt("periodic", 1) != 0;
  const double period = static_cast<double>(periodic ? n : n - 1);
  DispatchAll(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      // A symmetric window of one sample has period 0: its sample is NaN (0 / 0) as the formula and
      // onnxruntime give; an integer output type has no NaN and gets 0.
      const double v = sample(static_cast<double>(i) / period);
      if constexpr (std::is_integral_v<T>) out[i] = std::isfinite(v) ? static_cast<T>(v) : T(0);
      else out[i] = CastFromDouble<T>(v);
    }
  });
}

void HannWindowKernel(KernelContext& ctx) {
  WindowKernel(ctx, [](double x) {
    const double s = std::sin(kPi * x);
    return s * s;
  });
}
void HammingWindowKernel(KernelContext& ctx) {
  WindowKernel(ctx, [](double x) { return 25.0 / 46.0 - (21.0 / 46.0) * std::cos(2.0 * kPi * x); });
}
void BlackmanWindowKernel(KernelContext& ctx) {
  WindowKernel(ctx, [](double x) { return 0.42 - 0.5 * std::cos(2.0 * kPi * x) + 0.08 * std::cos(4.0 * kPi * x); });
}
ONEFLOW_KERNEL(HannWindow, HannWindowKernel);
ONEFLOW_KERNEL(HammingWindow, HammingWindowKernel);
ONEFLOW_KERNEL(BlackmanWindow, BlackmanWindowKernel);

using Complex = std::complex<double>;

// Transforms of one length: X[k] = sum_j x[j] e^(-+2 pi i j k / L) (the sign + for the inverse; no
// scaling here).
class Transform {
 public:
  Transform(int64_t length, bool inverse) : n_(length), pow2_((length & (length - 1)) == 0) {
    twiddle_.resize(static_cast<size_t>(n_));
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t t = 0; t < n_; ++t) {
      const double angle = sign * 2.0 * kPi * static_cast<double>(t) / static_cast<double>(n_);
      twiddle_[static_cast<size_t>(t)] = Complex(std::cos(angle), std::sin(angle));
    }
  }

  // `x` holds n_ samples (zero-padded by the caller); writes the first `keep` bins to `out`.
  void Run(std::vector<Complex>& x, int64_t keep, Complex* out) const {
    if (pow2_) {
      Fft(x);
      for (int64_t k = 0; k < keep; ++k) out[k] = x[static_cast<size_t>(k)];
      return;
    }
    for (int64_t k = 0; k < keep; ++k) {
      Complex sum = 0.0;
      for (int64_t j = 0; j < n_; ++j) sum += x[static_cast<size_t>(j)] * twiddle_[static_cast<size_t>((j * k) % n_)];
      out[k] = sum;
    }
  }

 private:
  // Iterative radix-2 Cooley-Tukey, in place.
  void Fft(std::vector<Complex>& a) const {
    const size_t n = a.size();
    for (size_t i = 1, j = 0; i < n; ++i) {
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      const size_t stride = n / len;
      for (size_t i = 0; i < n; i += len)
        for (size_t j = 0; j < len / 2; ++j) {
          const Complex u = a[i + j], v = a[i + j + len / 2] * twiddle_[j * stride];
          a[i + j] = u + v;
          a[i + j + len / 2] = u - v;
        }
    }
  }

  int64_t n_;
  bool pow2_;
  std::vector<Complex> twiddle_;
};

// Reads the scalar integer input i (dft_length, axis, frame_step, frame_length).
int64_t ScalarInput(KernelContext& ctx, size_t i) { return ctx.input(i).GetAsInt64(0); }

void DftKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t r = x.rank();
  int64_t axis = ctx.opset() >= 20 ? (ctx.has_input(2) ? ScalarInput(ctx, 2) : -2) : ctx.attrs().GetInt("axis");
  if (axis < 0) axis += r;
  const bool inverse = ctx.attrs().GetInt("inverse") != 0, onesided = ctx.attrs().GetInt("onesided") != 0;
  const int64_t n = x.dim(axis), in_c = x.dim(r - 1), out_c = y.dim(r - 1);
  // The transform length: the real signal's for the one-sided inverse, else the output axis's
  // (inference sized it from dft_length or the input).
  const int64_t length = inverse && onesided ? y.dim(axis) : ctx.has_input(1) ? ScalarInput(ctx, 1) : n;
  const int64_t out_n = y.dim(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < r - 1; ++d) inner *= x.dim(d);
  const Transform transform(length, inverse);
  const double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    std::vector<Complex> line(static_cast<size_t>(length)), bins(static_cast<size_t>(length));
    auto at = [&](int64_t o, int64_t j, int64_t i, int64_t c) {
      const int64_t idx = ((o * n + j) * inner + i) * in_c;
      return c < in_c ? CastToDouble<T>(in[idx + c]) : 0.0;
    };
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::fill(line.begin(), line.end(), Complex(0.0));
        if (inverse && onesided) {
          // A one-sided spectrum: the bins above length / 2 mirror the ones below (conjugated).
          for (int64_t k = 0; k <= length / 2 && k < n; ++k) line[static_cast<size_t>(k)] = Complex(at(o, k, i, 0), at(o, k, i, 1));
          for (int64_t k = length / 2 + 1; k < length; ++k) line[static_cast<size_t>(k)] = std::conj(line[static_cast<size_t>(length - k)]);
        } else {
          for (int64_t j = 0; j < n && j < length; ++j) line[static_cast<size_t>(j)] = Complex(at(o, j, i, 0), at(o, j, i, 1));
        }
        transform.Run(line, out_n, bins.data());
        for (int64_t k = 0; k < out_n; ++k) {
          T* dst = out + ((o * out_n + k) * inner + i) * out_c;
          dst[0] = CastFromDouble<T>(bins[static_cast<size_t>(k)].real() * scale);
          if (out_c == 2) dst[1] = CastFromDouble<T>(bins[static_cast<size_t>(k)].imag() * scale);
        }
      }
  });
}
ONEFLOW_KERNEL(DFT, DftKernel);

void StftKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t step = ScalarInput(ctx, 1);
  const int64_t batch = x.dim(0), samples = x.dim(1), in_c = x.dim(2);
  const int64_t frames = y.dim(1), bins = y.dim(2);
  const int64_t frame = ctx.has_input(2) ? ctx.input(2).dim(0) : ScalarInput(ctx, 3);
  OF_CHECK(!ctx.has_input(3) || ScalarInput(ctx, 3) == frame, kInvalidArgument, ctx.node_desc(), ": frame_length ",
           ScalarInput(ctx, 3), " differs from the window's length ", frame);
  const Transform transform(frame, false);
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    const T* window = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
    T* out = y.data<T>();
    std::vector<Complex> line(static_cast<size_t>(frame)), spectrum(static_cast<size_t>(bins));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t j = 0; j < frame; ++j) {
          const int64_t t = f * step + j;
          const T* s = in + (b * samples + t) * in_c;
          const double w = window ? CastToDouble<T>(window[j]) : 1.0;
          line[static_cast<size_t>(j)] = Complex(CastToDouble<T>(s[0]) * w, in_c == 2 ? CastToDouble<T>(s[1]) * w : 0.0);
        }
        transform.Run(line, bins, spectrum.data());
        T* dst = out + (b * frames + f) * bins * 2;
        for (int64_t k = 0; k < bins; ++k) {
          dst[2 * k] = CastFromDouble<T>(spectrum[static_cast<size_t>(k)].real());
          dst[2 * k + 1] = CastFromDouble<T>(spectrum[static_cast<size_t>(k)].imag());
        }
      }
  });
}
ONEFLOW_KERNEL(STFT, StftKernel);

// The reference computes the mel edges in the edges' precision (float32 inputs: float32 steps) and
// the rest in double; the bin edges are floored to integers, so the precision shows.
template <typename R>
double MelOf(double hertz) {
  const R h = static_cast<R>(hertz);
  return static_cast<double>(static_cast<R>(2595) * std::log1p(h / static_cast<R>(700))) / std::log(10.0);
}

void MelWeightMatrixKernel(KernelContext& ctx) {
  const int64_t mel_bins = ctx.input(0).GetAsInt64(0), dft = ctx.input(1).GetAsInt64(0);
  const int64_t rate = ctx.input(2).GetAsInt64(0);
  OF_CHECK(rate > 0, kInvalidArgument, ctx.node_desc(), ": sample_rate must be positive, got ", rate);
  const Tensor& lo = ctx.input(3);
  const Tensor& hi = ctx.input(4);
  const bool f32 = lo.dtype() == DType::kFloat32;
  const double low = f32 ? MelOf<float>(lo.GetAsDouble(0)) : MelOf<double>(lo.GetAsDouble(0));
  const double high = f32 ? MelOf<float>(hi.GetAsDouble(0)) : MelOf<double>(hi.GetAsDouble(0));
  const double step = (high - low) / static_cast<double>(mel_bins + 2);
  const int64_t spectrum_bins = dft / 2 + 1;
  std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700.0 * std::expm1((static_cast<double>(i) * step + low) / 2595.0 * std::log(10.0));
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(spectrum_bins * mel_bins), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    OF_CHECK(row >= 0 && row < spectrum_bins, kInvalidArgument, ctx.node_desc(), ": mel filter ", col,
             " reaches spectrum bin ", row, ", outside [0, ", spectrum_bins, "); check the edge frequencies against sample_rate");
    w[static_cast<size_t>(row * mel_bins + col)] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)],
                  right = edge[static_cast<size_t>(i + 2)];
    if (center == left) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = left; j <= center; ++j) set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left));
    }
    for (int64_t j = center; j < right; ++j) set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center));
  }
  Tensor& y = ctx.output(0);
  DispatchAll(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (size_t i = 0; i < w.size(); ++i) {
      if constexpr (std::is_integral_v<T>) out[i] = static_cast<T>(w[i]);
      else out[i] = CastFromDouble<T>(w[i]);
    }
  });
}
ONEFLOW_KERNEL(MelWeightMatrix, MelWeightMatrixKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
