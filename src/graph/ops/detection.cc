// Op family: object detection (NonMaxSuppression, opsets 10 and 11; RoiAlign, opsets 10 and 16).
// The selection itself is in NonMaxSuppressionSelect (detection.h), which the kernel
// (kernels/cpu/detection.cc) calls too.
//   RoiAlign(X [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch_indices int64 [R]) -> Y [R, C, oh, ow]
//   each bin of a region averages (or takes the largest of) bilinear samples of its image; opset
//   16 added coordinate_transformation_mode, whose default "half_pixel" shifts by half a pixel
//   and does not stretch small regions to one pixel as opset 10 ("output_half_pixel") does.
#include "graph/ops/detection.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

struct Box {
  double x_min, x_max, y_min, y_max;
  double Area() const { return (x_max - x_min) * (y_max - y_min); }
};

Box ReadBox(const Tensor& boxes, int64_t offset, int64_t center_point_box) {
  double v[4];
  for (int i = 0; i < 4; ++i) v[i] = boxes.GetAsDouble(offset + i);
  if (center_point_box == 0)
    return {std::min(v[1], v[3]), std::max(v[1], v[3]), std::min(v[0], v[2]), std::max(v[0], v[2])};
  return {v[0] - v[2] / 2, v[0] + v[2] / 2, v[1] - v[3] / 2, v[1] + v[3] / 2};
}

// Whether `a` suppresses `b`: their IoU exceeds the threshold (boxes without area never do).
bool Suppresses(const Box& a, const Box& b, double iou_threshold) {
  const double ix = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  const double iy = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (ix <= 0 || iy <= 0) return false;
  const double inter = ix * iy;
  const double area_a = a.Area(), area_b = b.Area();
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

void InferNonMaxSuppression(InferContext& ctx) {
  const TensorType& boxes = ctx.input_type(0);
  const TensorType& scores = ctx.input_type(1);
  if (boxes.dtype != DType::kFloat32) ctx.Error("boxes must be float32, got ", DTypeName(boxes.dtype));
  if (scores.dtype != DType::kFloat32) ctx.Error("scores must be float32, got ", DTypeName(scores.dtype));
  if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kInt64)
    ctx.Error("max_output_boxes_per_class must be int64, got ", DTypeName(ctx.input_dtype(2)));
  for (size_t i : {size_t{3}, size_t{4}})
    if (ctx.has_input(i) && ctx.input_dtype(i) != DType::kFloat32)
      ctx.Error(i == 3 ? "iou_threshold" : "score_threshold", " must be float32, got ", DTypeName(ctx.input_dtype(i)));
  if (boxes.has_rank && (boxes.rank() != 3 || (boxes.dims[2].known() && boxes.dims[2].value != 4)))
    ctx.Error("boxes must be [batch, boxes, 4], got ", boxes.ToString());
  if (scores.has_rank && scores.rank() != 3) ctx.Error("scores must be [batch, classes, boxes], got ", scores.ToString());
  const int64_t center = ctx.attrs().GetInt("center_point_box", 0);
  if (center != 0 && center != 1) ctx.Error("center_point_box must be 0 or 1, got ", center);
  Dim count = Dim::Unknown();
  const Tensor* b = ctx.input_value(0);
  const Tensor* s = ctx.input_value(1);
  const bool values = b && s && (!ctx.has_input(2) || ctx.input_value(2)) && (!ctx.has_input(3) || ctx.input_value(3)) &&
                      (!ctx.has_input(4) || ctx.input_value(4));
  if (values) {
    auto opt = [&](size_t i) { return ctx.has_input(i) ? ctx.input_value(i) : nullptr; };
    count = Dim::Known(static_cast<int64_t>(
        NonMaxSuppressionSelect(*b, *s, opt(2), opt(3), opt(4), center, ctx.node()).size() / 3));
  }
  ctx.set_output(0, TensorType::Of(DType::kInt64, {count, Dim::Known(3)}));
}

}  // namespace

std::vector<int64_t> NonMaxSuppressionSelect(const Tensor& boxes, const Tensor& scores, const Tensor* max_per_class,
                                             const Tensor* iou_threshold, const Tensor* score_threshold,
                                             int64_t center_point_box, const std::string& node) {
  OF_REQUIRE(boxes.rank() == 3 && boxes.dim(2) == 4, node, ": boxes must be [batch, boxes, 4], got ",
             ShapeToString(boxes.shape()));
  OF_REQUIRE(scores.rank() == 3 && scores.dim(0) == boxes.dim(0) && scores.dim(2) == boxes.dim(1), node, ": scores ",
             ShapeToString(scores.shape()), " must be [", boxes.dim(0), ", classes, ", boxes.dim(1), "]");
  auto scalar = [&](const Tensor* t, const char* what) {
    OF_REQUIRE(t->numel() == 1, node, ": ", what, " must hold one value, got ", ShapeToString(t->shape()));
    return t->GetAsDouble(0);
  };
  // Clamped before the conversion: a value near INT64_MAX rounds to 2^63 as a double, whose
  // conversion back is undefined. No class has 2^62 boxes, so the clamp changes nothing else.
  const int64_t limit =
      max_per_class && max_per_class->numel() != 0
          ? static_cast<int64_t>(std::clamp(scalar(max_per_class, "max_output_boxes_per_class"), 0.0, 0x1p62))
          : 0;
  const double iou = iou_threshold && iou_threshold->numel() != 0 ? scalar(iou_threshold, "iou_threshold") : 0.0;
  OF_REQUIRE(iou >= 0.0 && iou <= 1.0, node, ": iou_threshold must be in [0, 1], got ", iou);
  const bool has_score_threshold = score_threshold && score_threshold->numel() != 0;
  const double min_score = has_score_threshold ? scalar(score_threshold, "score_threshold") : 0.0;
  const int64_t batches = boxes.dim(0), n = boxes.dim(1), classes = scores.dim(1);
  std::vector<int64_t> out;
  std::vector<Box> all(static_cast<size_t>(n));
  std::vector<int64_t> order;
  std::vector<int64_t> kept;
  std::vector<double> score(static_cast<size_t>(n));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = ReadBox(boxes, (b * n + i) * 4, center_point_box);
    for (int64_t c = 0; c < classes; ++c) {
      const int64_t score_base = (b * classes + c) * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i) {
        score[static_cast<size_t>(i)] = scores.GetAsDouble(score_base + i);
        if (!has_score_threshold || score[static_cast<size_t>(i)] > min_score) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return score[static_cast<size_t>(x)] > score[static_cast<size_t>(y)];
      });
      kept.clear();
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= limit) break;
        bool keep = true;
        for (int64_t k : kept)
          if (Suppresses(all[static_cast<size_t>(k)], all[static_cast<size_t>(i)], iou)) {
            keep = false;
            break;
          }
        if (!keep) continue;
        kept.push_back(i);
        out.insert(out.end(), {b, c, i});
      }
    }
  }
  return out;
}

namespace {

void InferRoiAlign(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& rois = ctx.input_type(1);
  const TensorType& batch = ctx.input_type(2);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64)
    ctx.Error("X must be float32 or float64 (float16 is not supported), got ", x.ToString());
  if (rois.dtype != x.dtype) ctx.Error("rois must be ", DTypeName(x.dtype), " like X, got ", rois.ToString());
  if (batch.dtype != DType::kInt64) ctx.Error("batch_indices must be int64, got ", batch.ToString());
  if (x.has_rank && x.rank() != 4) ctx.Error("X must be [N, C, H, W], got ", x.ToString());
  if (rois.has_rank && (rois.rank() != 2 || (rois.dims[1].known() && rois.dims[1].value != 4)))
    ctx.Error("rois must be [num_rois, 4], got ", rois.ToString());
  if (batch.has_rank && batch.rank() != 1) ctx.Error("batch_indices must be [num_rois], got ", batch.ToString());
  const Dim r = rois.has_rank ? rois.dims[0] : batch.has_rank ? batch.dims[0] : Dim::Unknown();
  if (rois.has_rank && batch.has_rank && r.known() && batch.dims[0].known() && r.value != batch.dims[0].value)
    ctx.Error("rois has ", r.value, " regions but batch_indices ", batch.dims[0].value);
  const std::string mode = ctx.attrs().GetString("mode");
  if (mode != "avg" && mode != "max") ctx.Error("mode must be avg or max, got '", mode, "'");
  if (ctx.attrs().has("coordinate_transformation_mode")) {
    const std::string ct = ctx.attrs().GetString("coordinate_transformation_mode");
    if (ct != "half_pixel" && ct != "output_half_pixel")
      ctx.Error("coordinate_transformation_mode must be half_pixel or output_half_pixel, got '", ct, "'");
  }
  const int64_t oh = ctx.attrs().GetInt("output_height"), ow = ctx.attrs().GetInt("output_width");
  const int64_t sampling = ctx.attrs().GetInt("sampling_ratio");
  if (oh < 1 || ow < 1 || oh > kMaxWindowAttr || ow > kMaxWindowAttr)
    ctx.Error("output_height and output_width must be in [1, 2^31], got ", oh, " and ", ow);
  if (sampling < 0 || sampling > kMaxWindowAttr) ctx.Error("sampling_ratio must be in [0, 2^31], got ", sampling);
  ctx.set_output(0, TensorType::Of(x.dtype, {r, x.has_rank ? x.dims[1] : Dim::Unknown(), Dim::Known(oh), Dim::Known(ow)}));
}

}  // namespace

void RegisterDetectionOps(OpRegistry& r) {
  for (const int since : {10, 16}) {
    OpSchema s = OpSchema(op::kRoiAlign).Since(since).Input("X").Input("rois").Input("batch_indices").Output("Y")
                     .Attr("mode", Attribute::String("avg")).Attr("output_height", Attribute::Int(1))
                     .Attr("output_width", Attribute::Int(1)).Attr("sampling_ratio", Attribute::Int(0))
                     .Attr("spatial_scale", Attribute::Float(1.0f)).Infer(InferRoiAlign);
    if (since == 10) s.Until(15);
    else s.Attr("coordinate_transformation_mode", Attribute::String("half_pixel"));
    r.Register(std::move(s));
  }
  r.Register(OpSchema(op::kNonMaxSuppression).Since(10).Input("boxes").Input("scores")
                 .OptionalInput("max_output_boxes_per_class").OptionalInput("iou_threshold")
                 .OptionalInput("score_threshold").Output("selected_indices").Attr("center_point_box", Attribute::Int(0))
                 .Infer(InferNonMaxSuppression));
}

}  // namespace oneflow
