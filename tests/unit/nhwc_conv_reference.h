// The naive double-precision NHWC convolution the CPU conv kernel tests compare against, and the
// comparison itself: every output of act(conv(x) + bias + z), at 1e-4 relative.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/elementwise_util.h"

namespace oneflow {

struct NhwcConvCase {
  int64_t n, h, w, c, m, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  int64_t oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
};

inline double ActivateReference(const ActivationParams& act, double v) {
  switch (act.kind) {
    case Activation::kRelu: return v > 0 ? v : 0;
    case Activation::kSigmoid: return 1 / (1 + std::exp(-v));
    case Activation::kLeakyRelu: return v < 0 ? act.params[0] * v : v;
    default: return v;
  }
}

// Checks y (NHWC [n, oh, ow, m]) against the reference for x (NHWC), w (OIHW), bias and z (either
// may be null); reports the first few mismatches.
inline void ExpectMatchesNhwcConv(const NhwcConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                                  const float* bias, const float* z, const ActivationParams& act,
                                  const std::vector<float>& y) {
  const int64_t oh = k.oh(), ow = k.ow();
  int bad = 0;
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q)
        for (int64_t o = 0; o < k.m; ++o) {
          double acc = bias ? bias[o] : 0.0;
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j) {
              const int64_t ih = r * k.sh - k.pt + i * k.dh, iw = q * k.sw - k.pl + j * k.dw;
              if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
              for (int64_t ci = 0; ci < k.c; ++ci)
                acc += static_cast<double>(x[static_cast<size_t>(((b * k.h + ih) * k.w + iw) * k.c + ci)]) *
                       w[static_cast<size_t>(((o * k.c + ci) * k.kh + i) * k.kw + j)];
            }
          const size_t at = static_cast<size_t>(((b * oh + r) * ow + q) * k.m + o);
          if (z) acc += z[at];
          const double want = ActivateReference(act, acc);
          if (!(std::fabs(y[at] - want) <= 1e-4 * (1 + std::fabs(want))) && ++bad <= 3)
            ADD_FAILURE() << "image " << b << " pixel (" << r << ", " << q << ") channel " << o << ": got " << y[at]
                          << ", want " << want;
        }
}

}  // namespace oneflow
