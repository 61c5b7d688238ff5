// Pooling window geometry shared by the spatial op schemas (shape inference) and their CPU kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/attribute.h"
#include "graph/infer_util.h"

namespace oneflow {

// Per spatial dim: window size/stride/dilation, the effective padding before/after (after
// auto_pad resolution) and the output extent. Input extents of -1 mean "unknown" (static
// inference); the matching output extent is then -1 too.
struct PoolGeometry {
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;
  size_t rank() const { return kernel.size(); }
};

// Reads kernel_shape/strides/dilations/pads/auto_pad/ceil_mode from `attrs` for input spatial dims
// `in`. Fails with kInvalidArgument (message prefixed by `node`) on inconsistent attributes.
// `global` ignores the window attributes: one window covering each whole plane.
inline PoolGeometry ComputePoolGeometry(const AttrMap& attrs, const std::vector<int64_t>& in,
                                        const std::string& node, bool global = false) {
  const size_t r = in.size();
  PoolGeometry g;
  g.in = in;
  g.out.assign(r, -1);
  g.stride.assign(r, 1);
  g.dilation.assign(r, 1);
  g.pad_begin.assign(r, 0);
  g.pad_end.assign(r, 0);
  if (global) {
    g.kernel = in;
    for (size_t i = 0; i < r; ++i) g.out[i] = in[i] < 0 ? -1 : 1;
    return g;
  }
  g.kernel = attrs.GetInts("kernel_shape");
  OF_REQUIRE(g.kernel.size() == r, node, ": kernel_shape has ", g.kernel.size(), " dims but the input has ", r,
             " spatial dims");
  g.stride = attrs.GetInts("strides", g.stride);
  g.dilation = attrs.GetInts("dilations", g.dilation);
  std::vector<int64_t> pads = attrs.GetInts("pads", std::vector<int64_t>(2 * r, 0));
  OF_REQUIRE(g.stride.size() == r, node, ": strides must have ", r, " values");
  OF_REQUIRE(g.dilation.size() == r, node, ": dilations must have ", r, " values");
  OF_REQUIRE(pads.size() == 2 * r, node, ": pads must have ", 2 * r, " values");
  const std::string auto_pad = attrs.GetString("auto_pad", "NOTSET");
  const bool ceil_mode = attrs.GetInt("ceil_mode", 0) != 0;
  for (size_t i = 0; i < r; ++i) {
    OF_REQUIRE(g.kernel[i] >= 1 && g.stride[i] >= 1 && g.dilation[i] >= 1, node,
               ": kernel_shape, strides and dilations must be positive");
    OF_REQUIRE(pads[i] >= 0 && pads[i + r] >= 0, node, ": pads must be non-negative");
    // Bounded so that the window extent and the padding arithmetic below cannot overflow.
    for (int64_t v : {g.kernel[i], g.stride[i], g.dilation[i], pads[i], pads[i + r]})
      OF_REQUIRE(v <= kMaxWindowAttr, node, ": kernel_shape, strides, dilations and pads must be at most 2^31, got ", v);
    const int64_t ek = (g.kernel[i] - 1) * g.dilation[i] + 1;  // dilated window extent
    const int64_t n = in[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (n < 0) continue;
      // ceil(n / stride) and the padding, ordered so that no intermediate exceeds n or ek.
      g.out[i] = n / g.stride[i] + (n % g.stride[i] != 0 ? 1 : 0);
      int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.stride[i] - n + ek);
      // SAME_UPPER puts the odd pixel of padding at the end, SAME_LOWER at the beginning.
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else if (auto_pad == "VALID") {
      if (n < 0) continue;
      g.out[i] = n >= ek ? (n - ek) / g.stride[i] + 1 : 0;
    } else {
      OF_REQUIRE(auto_pad == "NOTSET", node, ": unsupported auto_pad '", auto_pad, "'");
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + r];
      if (n < 0) continue;
      // A declared input dim may be anything up to INT64_MAX; the pads are bounded.
      const int64_t padded = CheckedAdd(n, pads[i] + pads[i + r], node, "the padded input size");
      const int64_t span = padded - ek;
      OF_REQUIRE(span >= 0, node, ": pooling window (", ek, ") is larger than the padded input (", padded, ")");
      if (ceil_mode) {
        g.out[i] = span / g.stride[i] + (span % g.stride[i] != 0 ? 1 : 0) + 1;
        // The last window must start inside the input or the leading padding, never in the tail.
        // (out - 1) * stride < span + stride, which passes INT64_MAX only for a dim near it.
        if (CheckedMul(g.out[i] - 1, g.stride[i], node, "the pooled size") >= n + pads[i]) --g.out[i];
      } else {
        g.out[i] = span / g.stride[i] + 1;
      }
    }
  }
  return g;
}

// Resize: the full-rank scale per dim (used by the coordinate transform) and the output shape, from
// either `scales` or `sizes` (exactly one non-null), honouring axes and keep_aspect_ratio_policy.
void ComputeResizeOutput(const AttrMap& attrs, int opset, const Shape& in, const Tensor* scales, const Tensor* sizes,
                         const std::string& node, std::vector<double>* scale_out, std::vector<int64_t>* out_shape);

// Einsum equation, parsed. Labels are the letters' char codes; -1 marks "...".
struct EinsumSpec {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  bool explicit_output = false;
};
EinsumSpec ParseEinsum(const std::string& equation, size_t num_inputs, const std::string& node);

// Labels of every input dim after expanding "..." (ellipsis dims get labels kEinsumEllipsisLabel + k,
// right-aligned across inputs), the output labels, and each label's extent (-1 unknown).
constexpr int kEinsumEllipsisLabel = 128;
struct EinsumPlan {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int64_t> label_size;  // indexed by label
  std::vector<int64_t> out_shape;
};
EinsumPlan PlanEinsum(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& shapes, const std::string& node);

}  // namespace oneflow
