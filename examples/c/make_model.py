#!/usr/bin/env python3
"""Builds the demo model for examples/c/infer.c from numpy weights and writes numpy's answer.

The model is y = Relu(x + w) with x: float32[2,4] and w a fixed weight tensor. infer.c fills x with
x.flat[i] = (i % 7) * 0.5 - 1.5, so the expected output is computed here with the same formula.
Usage: make_model.py OUT_DIR   -> OUT_DIR/model.onnx, OUT_DIR/expected.f32
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def main(out):
    os.makedirs(out, exist_ok=True)
    w = np.array([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -0.25, 0.75]], dtype=np.float32)
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [helper.make_node("Add", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    graph = helper.make_graph(nodes, "demo", [x_info], [y_info], initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="oneflow-demo")
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    x = ((np.arange(8) % 7) * 0.5 - 1.5).astype(np.float32).reshape(2, 4)
    y = np.maximum(x + w, 0)
    y.astype("<f4").tofile(os.path.join(out, "expected.f32"))
    print("numpy reference y =", y.tolist())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_model.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
