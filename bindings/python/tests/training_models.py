"""Tiny trainable models for the training tests, with float64 numpy references of their losses and
gradients (written out by hand from the chain rule, independent of the engine)."""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def write(directory, name, nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = os.path.join(directory, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


class Mlp:
    """x [N, 4] -> relu(x @ W1 + b1) [N, 5] -> logits = h @ W2 + b2 [N, 3]."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.params = {
            "W1": (rng.standard_normal((4, 5)) * 0.7).astype(np.float32),
            "b1": (rng.standard_normal(5) * 0.1).astype(np.float32),
            "W2": (rng.standard_normal((5, 3)) * 0.7).astype(np.float32),
            "b2": (rng.standard_normal(3) * 0.1).astype(np.float32),
        }

    def write(self, directory, name="mlp"):
        nodes = [helper.make_node("MatMul", ["x", "W1"], ["mm1"]), helper.make_node("Add", ["mm1", "b1"], ["pre"]),
                 helper.make_node("Relu", ["pre"], ["h"]), helper.make_node("MatMul", ["h", "W2"], ["mm2"]),
                 helper.make_node("Add", ["mm2", "b2"], ["logits"])]
        inits = [numpy_helper.from_array(v, k) for k, v in self.params.items()]
        return write(directory, name, nodes, [f32("x", ["N", 4])], [f32("logits", ["N", 3])], inits)

    @staticmethod
    def forward(p, x):
        pre = x @ p["W1"].astype(np.float64) + p["b1"]
        h = np.maximum(pre, 0)
        return pre, h, h @ p["W2"].astype(np.float64) + p["b2"]

    def cross_entropy(self, p, x, labels):
        """(mean softmax cross-entropy, {name: gradient}) in float64."""
        x = x.astype(np.float64)
        pre, h, logits = self.forward(p, x)
        z = logits - logits.max(axis=1, keepdims=True)
        prob = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        n = x.shape[0]
        loss = -np.mean(np.log(prob[np.arange(n), labels]))
        dlogits = prob.copy()
        dlogits[np.arange(n), labels] -= 1
        dlogits /= n
        dh = dlogits @ p["W2"].T.astype(np.float64)
        dpre = dh * (pre > 0)
        return loss, {"W1": x.T @ dpre, "b1": dpre.sum(0), "W2": h.T @ dlogits, "b2": dlogits.sum(0)}


class Linear:
    """x [N, 3] -> y = x @ W + b [N, 2]; trained with MSE against targets, whose gradient is closed-form."""

    def __init__(self, seed=1):
        rng = np.random.default_rng(seed)
        self.params = {"W": rng.standard_normal((3, 2)).astype(np.float32),
                       "b": rng.standard_normal(2).astype(np.float32)}

    def write(self, directory, name="linear"):
        nodes = [helper.make_node("MatMul", ["x", "W"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y"])]
        inits = [numpy_helper.from_array(v, k) for k, v in self.params.items()]
        return write(directory, name, nodes, [f32("x", ["N", 3])], [f32("y", ["N", 2])], inits)

    @staticmethod
    def mse(p, x, target, reduction="mean"):
        """(loss, {name: gradient}) of reduce((x @ W + b - target)^2) in float64."""
        x = x.astype(np.float64)
        diff = x @ p["W"].astype(np.float64) + p["b"] - target
        scale = 1.0 / diff.size if reduction == "mean" else 1.0
        loss = np.sum(diff * diff) * scale
        d = 2 * diff * scale
        return loss, {"W": x.T @ d, "b": d.sum(0)}
