// Convolution geometry shared by the Conv/ConvTranspose schemas and kernels: resolves kernel
// shape, strides, dilations and pads (including auto_pad) into one struct per node.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/attribute.h"
#include "graph/infer_util.h"

namespace oneflow {

struct ConvGeometry {
  int64_t spatial = 0;               // number of spatial dims
  std::vector<int64_t> kernel;       // per spatial dim
  std::vector<int64_t> strides, dilations;
  std::vector<int64_t> pad_begin, pad_end;  // may be negative for ConvTranspose with output_shape
  std::vector<int64_t> in, out;      // spatial sizes (-1 = unknown, statically)
  int64_t group = 1;
  int64_t KernelSize() const {
    int64_t s = 1;
    for (int64_t k : kernel) s *= k;
    return s;
  }
};

inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Reads an optional per-spatial-dim attribute; `fallback` when absent. `what` names it in errors.
// Values are bounded by kMaxWindowAttr in magnitude so the geometry below cannot overflow.
inline std::vector<int64_t> SpatialAttr(const AttrMap& attrs, const char* name, int64_t spatial, int64_t fallback,
                                        size_t expected_size, const std::string& node) {
  std::vector<int64_t> v = attrs.GetInts(name, std::vector<int64_t>(expected_size, fallback));
  OF_REQUIRE(v.size() == expected_size, node, ": attribute '", name, "' has ", v.size(), " values, expected ",
             expected_size, " for ", spatial, " spatial dims");
  for (int64_t x : v)
    OF_REQUIRE(x >= -kMaxWindowAttr && x <= kMaxWindowAttr, node, ": ", name, " values must be in [-2^31, 2^31], got ", x);
  return v;
}

// The attributes Conv and ConvTranspose share: group, kernel_shape, strides, dilations.
inline ConvGeometry ResolveConvCommon(const AttrMap& attrs, const std::vector<int64_t>& in,
                                      const std::vector<int64_t>& wkernel, const std::string& node) {
  ConvGeometry g;
  g.spatial = static_cast<int64_t>(in.size());
  const size_t s = in.size();
  g.group = attrs.GetInt("group", 1);
  OF_REQUIRE(g.group >= 1 && g.group <= kMaxWindowAttr, node, ": group must be in [1, 2^31], got ", g.group);
  g.kernel = attrs.has("kernel_shape") ? attrs.GetInts("kernel_shape") : wkernel;
  OF_REQUIRE(g.kernel.size() == s, node, ": kernel_shape has ", g.kernel.size(), " dims, input has ", s,
             " spatial dims");
  for (size_t i = 0; i < s; ++i) {
    OF_REQUIRE(g.kernel[i] >= 1 && (wkernel[i] < 0 || wkernel[i] == g.kernel[i]), node,
               ": kernel_shape does not match the weight's spatial dims");
    // With strides and dilations bounded too, the dilated extent (k - 1) * d + 1 stays below 2^62.
    OF_REQUIRE(g.kernel[i] <= kMaxWindowAttr, node, ": kernel_shape must be in [1, 2^31], got ", g.kernel[i]);
  }
  g.strides = SpatialAttr(attrs, "strides", g.spatial, 1, s, node);
  g.dilations = SpatialAttr(attrs, "dilations", g.spatial, 1, s, node);
  for (size_t i = 0; i < s; ++i)
    OF_REQUIRE(g.strides[i] >= 1 && g.dilations[i] >= 1, node, ": strides and dilations must be >= 1");
  return g;
}

// Conv: `in` are the input's spatial sizes (-1 unknown); `wkernel` the weight's spatial dims.
inline ConvGeometry ResolveConvGeometry(const AttrMap& attrs, const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& wkernel, const std::string& node) {
  ConvGeometry g = ResolveConvCommon(attrs, in, wkernel, node);
  const size_t s = in.size();
  std::string auto_pad = attrs.GetString("auto_pad", "NOTSET");
  std::vector<int64_t> pads = SpatialAttr(attrs, "pads", g.spatial, 0, 2 * s, node);
  g.in = in;
  g.out.assign(s, -1);
  g.pad_begin.assign(s, 0);
  g.pad_end.assign(s, 0);
  for (size_t i = 0; i < s; ++i) {
    const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "NOTSET") {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + s];
      OF_REQUIRE(pads[i] >= 0 && pads[i + s] >= 0, node, ": pads must be non-negative");
      if (in[i] >= 0) {
        // A declared input dim may be anything up to INT64_MAX; the pads are bounded.
        const int64_t padded = CheckedAdd(in[i], pads[i] + pads[i + s], node, "the padded input size");
        const int64_t span = padded - eff;
        OF_REQUIRE(span >= 0, node, ": kernel (dilated size ", eff, ") is larger than the padded input (",
                   padded, ") in spatial dim ", i);
        g.out[i] = span / g.strides[i] + 1;
      }
    } else if (auto_pad == "VALID") {
      if (in[i] >= 0) {
        OF_REQUIRE(in[i] >= eff, node, ": kernel larger than the input in spatial dim ", i, " (auto_pad VALID)");
        g.out[i] = (in[i] - eff) / g.strides[i] + 1;
      }
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in[i] >= 0) {
        // ceil(in / stride) and the padding, ordered so that no intermediate exceeds in or eff.
        g.out[i] = in[i] / g.strides[i] + (in[i] % g.strides[i] != 0 ? 1 : 0);
        const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] - in[i] + eff);
        const int64_t small = total / 2, large = total - total / 2;
        g.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
        g.pad_end[i] = auto_pad == "SAME_UPPER" ? large : small;
      }
    } else {
      Fail(ErrorCode::kInvalidArgument, node, ": unknown auto_pad '", auto_pad, "'");
    }
  }
  return g;
}

// ConvTranspose: pads/output_shape/output_padding as in the ONNX reference implementation.
inline ConvGeometry ResolveConvTransposeGeometry(const AttrMap& attrs, const std::vector<int64_t>& in,
                                                 const std::vector<int64_t>& wkernel, const std::string& node) {
  ConvGeometry g = ResolveConvCommon(attrs, in, wkernel, node);
  const size_t s = in.size();
  std::vector<int64_t> out_pad = SpatialAttr(attrs, "output_padding", g.spatial, 0, s, node);
  std::string auto_pad = attrs.GetString("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  OF_REQUIRE(same || auto_pad == "NOTSET" || auto_pad == "VALID", node, ": unknown auto_pad '", auto_pad, "'");
  std::vector<int64_t> output_shape;
  if (attrs.has("output_shape")) {
    output_shape = attrs.GetInts("output_shape");
    // Some exporters give the full [N, C, spatial...] shape; only the spatial part matters.
    if (output_shape.size() == s + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    OF_REQUIRE(output_shape.size() == s, node, ": output_shape has ", output_shape.size(), " values, expected ", s);
    for (int64_t o : output_shape) OF_REQUIRE(o >= 1, node, ": output_shape values must be >= 1, got ", o);
  }
  g.in = in;
  g.out.assign(s, -1);
  g.pad_begin.assign(s, 0);
  g.pad_end.assign(s, 0);
  const bool explicit_pads = attrs.has("pads") || !same;
  std::vector<int64_t> pads = SpatialAttr(attrs, "pads", g.spatial, 0, 2 * s, node);
  for (size_t i = 0; i < s; ++i) {
    const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1;
    // stride * (in - 1) + output_padding + eff: the attributes are bounded, the declared input dim
    // is not. Every other term below is bounded (|pads|, |out_pad| <= 2^31, eff < 2^62).
    auto full = [&] {
      return CheckedAdd(CheckedMul(g.strides[i], in[i] - 1, node, "the output size"), out_pad[i] + eff, node,
                        "the output size");
    };
    if (explicit_pads) {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[i + s];
      if (!output_shape.empty()) g.out[i] = output_shape[i];
      else if (in[i] >= 0) g.out[i] = CheckedAdd(full(), -(pads[i] + pads[i + s]), node, "the output size");
    } else {
      if (in[i] < 0) continue;
      const int64_t target = output_shape.empty() ? CheckedMul(in[i], g.strides[i], node, "the output size")
                                                  : output_shape[i];
      const int64_t total = CheckedAdd(full(), -target, node, "the total padding");  // target >= 0
      const int64_t half = FloorDiv(total, 2);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      g.pad_end[i] = auto_pad == "SAME_UPPER" ? total - half : half;
      g.out[i] = target;
    }
    if (g.out[i] >= 0) OF_REQUIRE(g.out[i] >= 1, node, ": output spatial dim ", i, " would be ", g.out[i]);
  }
  return g;
}

}  // namespace oneflow
