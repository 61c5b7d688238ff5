#!/usr/bin/env python3
"""Builds the demo model for examples/c/infer.c from numpy weights and writes numpy's answer.

The model is a small MLP classifier, probs = Softmax(Gemm(Relu(x @ W1 + b1), W2^T, b2)), with
x: float32[N, 64] (N symbolic; infer.c feeds N = 1) and seeded random weights. infer.c fills x with
x.flat[i] = (i % 7) * 0.5 - 1.5, so the expected output is computed here with the same formula.
Usage: make_model.py OUT_DIR   -> OUT_DIR/model.onnx, OUT_DIR/expected.f32
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(2026)
    w1 = (rng.standard_normal((64, 32)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((10, 32)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])
    y_info = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("Gemm", ["h", "w2", "b2"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    weights = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    graph = helper.make_graph(nodes, "demo_mlp", [x_info], [y_info], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="oneflow-demo")
    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    x = ((np.arange(64) % 7) * 0.5 - 1.5).astype(np.float64).reshape(1, 64)
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2.T + b2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    probs.astype("<f4").tofile(os.path.join(out, "expected.f32"))
    print("numpy reference probs =", np.round(probs, 5).tolist())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_model.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
