#!/usr/bin/env python3
"""Models, inputs and numpy reference gradients for tests/train/train_c_api_test.c.

    mlp.onnx    x [N, 4] -> MatMul+Add (8) -> Relu -> MatMul+Add (3) = logits; trained with an
                appended softmax cross-entropy (mean) against int64 labels
    other.onnx  the same layout with 6 hidden units (a checkpoint of mlp must not load into it)
    mse.onnx    x [N, 4], t [N, 3] -> y = x W + b; loss = ReduceMean((y - t)^2) inside the model
    x.f32 [5, 4], y.i64 [5], t.f32 [5, 3]; the reference (float64, written as float32):
    loss.f32, grad_<param>.f32 (full batch), grad3_<param>.f32 (first 3 rows), mse_loss.f32,
    mse_grad_<param>.f32, init_<param>.f32 (the initial values).

    python3 make_train_fixture.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp_model(path, params, hidden):
    nodes = [
        helper.make_node("MatMul", ["x", "fc1.weight"], ["h0"]),
        helper.make_node("Add", ["h0", "fc1.bias"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("MatMul", ["h", "fc2.weight"], ["z0"]),
        helper.make_node("Add", ["z0", "fc2.bias"], ["logits"]),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in params.items()]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def mlp_grads(p, x, y):
    p = {k: v.astype(np.float64) for k, v in p.items()}
    x = x.astype(np.float64)
    pre = x @ p["fc1.weight"] + p["fc1.bias"]
    h = np.maximum(pre, 0)
    z = h @ p["fc2.weight"] + p["fc2.bias"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    n = len(y)
    loss = -np.mean(np.log(sm[np.arange(n), y]))
    dz = sm.copy()
    dz[np.arange(n), y] -= 1
    dz /= n
    dpre = (dz @ p["fc2.weight"].T) * (pre > 0)
    return loss, {"fc2.weight": h.T @ dz, "fc2.bias": dz.sum(0), "fc1.weight": x.T @ dpre, "fc1.bias": dpre.sum(0)}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    params = {"fc1.weight": f32(4, 8) * 0.7, "fc1.bias": f32(8) * 0.1, "fc2.weight": f32(8, 3) * 0.5,
              "fc2.bias": f32(3) * 0.1}
    mlp_model(os.path.join(out, "mlp.onnx"), params, 8)
    mlp_model(os.path.join(out, "other.onnx"), {"fc1.weight": f32(4, 6), "fc1.bias": f32(6), "fc2.weight": f32(6, 3),
                                                 "fc2.bias": f32(3)}, 6)
    x = f32(5, 4)
    y = np.array([0, 2, 1, 2, 0], np.int64)
    t = f32(5, 3)
    x.tofile(os.path.join(out, "x.f32"))
    y.tofile(os.path.join(out, "y.i64"))
    t.tofile(os.path.join(out, "t.f32"))
    loss, grads = mlp_grads(params, x, y)
    np.array([loss], np.float32).tofile(os.path.join(out, "loss.f32"))
    for k, g in grads.items():
        g.astype(np.float32).tofile(os.path.join(out, f"grad_{k}.f32"))
        params[k].tofile(os.path.join(out, f"init_{k}.f32"))
    _, grads3 = mlp_grads(params, x[:3], y[:3])
    for k, g in grads3.items():
        g.astype(np.float32).tofile(os.path.join(out, f"grad3_{k}.f32"))

    w, b = f32(4, 3), f32(3)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y0"]),
        helper.make_node("Add", ["y0", "b"], ["y"]),
        helper.make_node("Sub", ["y", "t"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["loss"], keepdims=0),
    ]
    g = helper.make_graph(nodes, "mse", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
                                         helper.make_tensor_value_info("t", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
                           helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), os.path.join(out, "mse.onnx"))
    x64, d = x.astype(np.float64), x.astype(np.float64) @ w + b - t
    np.array([np.mean(d * d)], np.float32).tofile(os.path.join(out, "mse_loss.f32"))
    dy = 2 * d / d.size
    (x64.T @ dy).astype(np.float32).tofile(os.path.join(out, "mse_grad_w.f32"))
    dy.sum(0).astype(np.float32).tofile(os.path.join(out, "mse_grad_b.f32"))
    print(f"training fixture written to {out}")


if __name__ == "__main__":
    main()
