// Object-detection ops whose output size depends on their input values. NonMaxSuppression's
// selection is computed here once for both users: shape inference at run time (the number of
// selected boxes is the output's first dim) and the CPU kernel (kernels/cpu/detection.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace oneflow {

// Per batch, per class: the boxes whose score exceeds score_threshold (when given), taken in
// descending score order (ties: the lower box index first) and kept unless their IoU with a box
// already kept exceeds iou_threshold, at most max_per_class of them. Returns [batch, class, box]
// triples in that order. Boxes are [y1, x1, y2, x2] corners in either order (center_point_box 0)
// or [x_center, y_center, width, height] (1). Errors name `node`.
std::vector<int64_t> NonMaxSuppressionSelect(const Tensor& boxes, const Tensor& scores, const Tensor* max_per_class,
                                             const Tensor* iou_threshold, const Tensor* score_threshold,
                                             int64_t center_point_box, const std::string& node);

}  // namespace oneflow
