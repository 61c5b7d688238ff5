#!/usr/bin/env python3
"""Writes the untrained models examples/c/train_digits.c trains on the digits data set, as ONNX
with numpy-initialized weights (He-normal, fixed seed; biases zero):

    OUT_DIR/digits_mlp.onnx  input [N, 64] -> 128 -> ReLU -> 64 -> ReLU -> logits [N, 10]
    OUT_DIR/digits_cnn.onnx  input [N, 64] -> reshape [N, 1, 8, 8] -> conv3x3(16) -> ReLU
                             -> conv3x3(32) -> ReLU -> maxpool 2 -> flatten 512 -> 64 -> ReLU -> logits

    python3 make_digits_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def he(rng, shape, fan_in):
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def dense(nodes, inits, rng, x, name, n_in, n_out, relu):
    w = numpy_helper.from_array(he(rng, (n_in, n_out), n_in), f"{name}.weight")
    b = numpy_helper.from_array(np.zeros(n_out, np.float32), f"{name}.bias")
    inits += [w, b]
    nodes.append(helper.make_node("MatMul", [x, w.name], [f"{name}.mm"]))
    out = f"{name}.out" if relu else "logits"
    nodes.append(helper.make_node("Add", [f"{name}.mm", b.name], [f"{name}.pre" if relu else out]))
    if relu:
        nodes.append(helper.make_node("Relu", [f"{name}.pre"], [out]))
    return out


def conv(nodes, inits, rng, x, name, c_in, c_out):
    w = numpy_helper.from_array(he(rng, (c_out, c_in, 3, 3), c_in * 9), f"{name}.weight")
    b = numpy_helper.from_array(np.zeros(c_out, np.float32), f"{name}.bias")
    inits += [w, b]
    nodes.append(helper.make_node("Conv", [x, w.name, b.name], [f"{name}.pre"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", [f"{name}.pre"], [f"{name}.out"]))
    return f"{name}.out"


def save(nodes, inits, path, name):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="make_digits_models")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    nodes, inits = [], []
    h = dense(nodes, inits, rng, "input", "fc1", 64, 128, True)
    h = dense(nodes, inits, rng, h, "fc2", 128, 64, True)
    dense(nodes, inits, rng, h, "fc3", 64, 10, False)
    save(nodes, inits, os.path.join(out, "digits_mlp.onnx"), "digits_mlp")

    nodes, inits = [], []
    inits.append(numpy_helper.from_array(np.array([-1, 1, 8, 8], np.int64), "image_shape"))
    inits.append(numpy_helper.from_array(np.array([-1, 512], np.int64), "flat_shape"))
    nodes.append(helper.make_node("Reshape", ["input", "image_shape"], ["image"]))
    h = conv(nodes, inits, rng, "image", "conv1", 1, 16)
    h = conv(nodes, inits, rng, h, "conv2", 16, 32)
    nodes.append(helper.make_node("MaxPool", [h], ["pool"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("Reshape", ["pool", "flat_shape"], ["flat"]))
    h = dense(nodes, inits, rng, "flat", "fc1", 512, 64, True)
    dense(nodes, inits, rng, h, "fc2", 64, 10, False)
    save(nodes, inits, os.path.join(out, "digits_cnn.onnx"), "digits_cnn")
    print(f"models written to {out}")


if __name__ == "__main__":
    main()
