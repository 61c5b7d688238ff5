// Models exported at ONNX opsets 1 to 12 (most published models are 7 to 12): their nodes rewritten
// at import into the opset-13 forms the engine's op table defines, so that every op keeps one
// definition.
#pragma once

#include "graph/graph.h"

namespace oneflow {

// The oldest default-domain opset the importer accepts.
constexpr int kMinLegacyOnnxOpset = 1;

// Rewrites the default-domain nodes of `g` (imported at opset `from`, 1 to 12) into their
// opset-13 forms and sets the graph's default opset to 13. Opsets 1-6 first become opset 7:
//   * `consumed_inputs` and `is_test` go (memory reuse hints; the inference mode this engine runs);
//   * the `broadcast` attribute of the arithmetic, comparison and logic ops goes (its broadcasts
//     are numpy's), except broadcasting along an `axis`, which is refused; Gemm's likewise;
//   * Reshape's `shape` and Cast's named `to` (before 5 and 6) become opset 7's input and code,
//     Pad-1's `paddings` is `pads`, Concat-1's missing axis is 1;
//   * ops whose older forms differ otherwise (Tile-1, PRelu-1/6, Upsample-1, LpPool-1, Split-1
//     with a second input) are refused, naming the op and onnx.version_converter.
// Then, from opset 7, what changed by opset 13, by op:
//   * attributes that became inputs: Split `split`, Squeeze/Unsqueeze/ReduceSum `axes` (13),
//     Dropout `ratio` (12), Pad `pads`/`value` and Clip `min`/`max` (11), Slice
//     `starts`/`ends`/`axes` and TopK `k` (10), Upsample `scales` (9);
//   * Softmax, LogSoftmax and Hardmax before 13 flatten the input to 2-D at `axis` (default 1):
//     kept as they are when `axis` is -1 (the same), else Flatten -> op on axis 1 -> Reshape back;
//   * Upsample (7-10) and Resize-10 become Resize with coordinate_transformation_mode
//     "asymmetric" and nearest_mode "floor" (output index i reads input floor(i / scale));
//   * Scatter (9-10) becomes ScatterElements; BatchNormalization-7's `spatial` must be 1;
//   * Scan-8, which scans a batch, becomes a Scan over the batch rows whose body is the Scan of
//     one row (its sequence_lens input is refused).
// Other ops kept their meaning for every input these opsets allow. Errors (kUnsupported or
// kInvalidModel) name the node, its op and opset, and what is not convertible.
void UpgradeLegacyOnnxOpset(Graph& g, int from);

}  // namespace oneflow
