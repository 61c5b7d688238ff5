// CPU kernels: NonMaxSuppression and RoiAlign (graph/ops/detection.cc). NonMaxSuppression: run-time
// inference already sized the output from the same selection (NonMaxSuppressionSelect); the kernel
// writes it. RoiAlign: per bin of a region, the sample points and their bilinear weights are
// computed once and applied to each channel; regions run in parallel.
#include <algorithm>
#include <cmath>
#include <vector>

#include "graph/ops/detection.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void NonMaxSuppressionKernel(KernelContext& ctx) {
  auto opt = [&](size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; };
  const std::vector<int64_t> selected =
      NonMaxSuppressionSelect(ctx.input(0), ctx.input(1), opt(2), opt(3), opt(4),
                              ctx.attrs().GetInt("center_point_box", 0), ctx.node_desc());
  Tensor& y = ctx.output(0);
  OF_CHECK(y.numel() == static_cast<int64_t>(selected.size()), kInternal, ctx.node_desc(),
           ": the output was sized for ", y.numel() / 3, " boxes, the selection has ", selected.size() / 3);
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
}
ONEFLOW_KERNEL(NonMaxSuppression, NonMaxSuppressionKernel);

// One bilinear sample: the offsets of its four neighbours in a channel's plane and their weights
// (all zero for a point outside the image).
template <typename T>
struct Sample {
  int64_t at[4] = {0, 0, 0, 0};
  T w[4] = {0, 0, 0, 0};
};

// The sample at (y, x), as onnxruntime and the ONNX reference place it: points up to one pixel
// outside the image clamp to its edge, points further out contribute nothing.
template <typename T>
Sample<T> SampleAt(T y, T x, int64_t height, int64_t width) {
  Sample<T> s;
  if (y < T(-1) || y > static_cast<T>(height) || x < T(-1) || x > static_cast<T>(width)) return s;
  y = std::max(y, T(0));
  x = std::max(x, T(0));
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= height - 1) { y0 = y1 = height - 1; y = static_cast<T>(y0); } else { y1 = y0 + 1; }
  if (x0 >= width - 1) { x0 = x1 = width - 1; x = static_cast<T>(x0); } else { x1 = x0 + 1; }
  const T ly = y - static_cast<T>(y0), lx = x - static_cast<T>(x0), hy = T(1) - ly, hx = T(1) - lx;
  s.at[0] = y0 * width + x0; s.at[1] = y0 * width + x1; s.at[2] = y1 * width + x0; s.at[3] = y1 * width + x1;
  s.w[0] = hy * hx; s.w[1] = hy * lx; s.w[2] = ly * hx; s.w[3] = ly * lx;
  return s;
}

// More samples than this per bin come only from regions far larger than any image.
constexpr int64_t kMaxSamplesPerBin = int64_t{1} << 20;

template <typename T>
void RoiAlign(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch = ctx.input(2);
  const int64_t n = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t regions = rois.dim(0);
  OF_CHECK(rois.rank() == 2 && rois.dim(1) == 4 && batch.numel() == regions, kInvalidArgument, ctx.node_desc(),
           ": rois ", ShapeToString(rois.shape()), " and batch_indices ", ShapeToString(batch.shape()),
           " must be [R, 4] and [R]");
  const int64_t oh = ctx.attrs().GetInt("output_height"), ow = ctx.attrs().GetInt("output_width");
  const int64_t sampling = ctx.attrs().GetInt("sampling_ratio");
  const T scale = static_cast<T>(ctx.attrs().GetFloat("spatial_scale"));
  const bool max_mode = ctx.attrs().GetString("mode") == "max";
  const bool half_pixel = ctx.attrs().GetString("coordinate_transformation_mode", "output_half_pixel") == "half_pixel";
  const T* box = rois.data<T>();
  const int64_t* image_of = batch.data<int64_t>();
  for (int64_t r = 0; r < regions; ++r) {
    OF_CHECK(image_of[r] >= 0 && image_of[r] < n, kInvalidArgument, ctx.node_desc(), ": batch_indices[", r,
             "] = ", image_of[r], " is not an image of X's ", n);
    for (int k = 0; k < 4; ++k)
      OF_CHECK(std::isfinite(static_cast<double>(box[r * 4 + k])), kInvalidArgument, ctx.node_desc(), ": region ",
               r, " has a coordinate that is not finite");
  }
  const T* in = x.data<T>();
  T* out = ctx.output(0).data<T>();
  const int64_t plane = height * width;
  ctx.pool().ParallelFor(regions, static_cast<double>(channels * oh * ow) * 40.0, [&](int64_t begin, int64_t end) {
    std::vector<Sample<T>> samples;
    for (int64_t r = begin; r < end; ++r) {
      const T offset = half_pixel ? T(0.5) : T(0);
      const T x0 = box[r * 4] * scale - offset, y0 = box[r * 4 + 1] * scale - offset;
      T w = box[r * 4 + 2] * scale - offset - x0, h = box[r * 4 + 3] * scale - offset - y0;
      if (!half_pixel) {  // opset 10 stretches a region to one pixel at least
        w = std::max(w, T(1));
        h = std::max(h, T(1));
      }
      const T bin_h = h / static_cast<T>(oh), bin_w = w / static_cast<T>(ow);
      const double grid_hd = sampling > 0 ? static_cast<double>(sampling) : std::ceil(static_cast<double>(bin_h));
      const double grid_wd = sampling > 0 ? static_cast<double>(sampling) : std::ceil(static_cast<double>(bin_w));
      OF_CHECK(grid_hd * grid_wd <= static_cast<double>(kMaxSamplesPerBin), kInvalidArgument, ctx.node_desc(),
               ": region ", r, " would take ", grid_hd * grid_wd, " samples per bin; set sampling_ratio");
      const int64_t grid_h = static_cast<int64_t>(std::max(grid_hd, 0.0)), grid_w = static_cast<int64_t>(std::max(grid_wd, 0.0));
      const T count = static_cast<T>(std::max<int64_t>(grid_h * grid_w, 1));
      const int64_t per_bin = grid_h * grid_w;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          samples.clear();
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const T yy = y0 + static_cast<T>(ph) * bin_h + (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const T xx = x0 + static_cast<T>(pw) * bin_w + (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(grid_w);
              samples.push_back(SampleAt(yy, xx, height, width));
            }
          }
          for (int64_t c = 0; c < channels; ++c) {
            const T* image = in + (image_of[r] * channels + c) * plane;
            T acc = 0;
            for (int64_t k = 0; k < per_bin; ++k) {
              const Sample<T>& q = samples[static_cast<size_t>(k)];
              // Max mode takes the largest weighted neighbour, as onnxruntime and the ONNX reference do.
              if (max_mode) {
                const T v = std::max(std::max(q.w[0] * image[q.at[0]], q.w[1] * image[q.at[1]]),
                                     std::max(q.w[2] * image[q.at[2]], q.w[3] * image[q.at[3]]));
                acc = k == 0 ? v : std::max(acc, v);
              } else {
                acc += q.w[0] * image[q.at[0]] + q.w[1] * image[q.at[1]] + q.w[2] * image[q.at[2]] + q.w[3] * image[q.at[3]];
              }
            }
            out[((r * channels + c) * oh + ph) * ow + pw] = max_mode ? acc : acc / count;
          }
        }
    }
  });
}

void RoiAlignKernel(KernelContext& ctx) {
  if (ctx.input(0).dtype() == DType::kFloat64) RoiAlign<double>(ctx);
  else RoiAlign<float>(ctx);
}
ONEFLOW_KERNEL(RoiAlign, RoiAlignKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
