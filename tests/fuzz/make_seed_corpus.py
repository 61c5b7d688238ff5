#!/usr/bin/env python3
"""Writes a seed corpus for onnx_loader_fuzzer: small valid ONNX models covering the loader's paths
(symbolic dims, initializers as raw and typed data, attributes of each kind, several dtypes, an
unknown op). Usage: make_seed_corpus.py OUT_DIR"""
import base64
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


# Inputs the fuzzer once found a defect with, kept as seeds so every run re-checks them first.
REGRESSIONS = {
    # Constant folding ran fastmath::Exp on a NaN weight through Erf; the NaN reached an int conversion.
    "erf_nan_constant": "CAg6dAoOMgF4CgFXEgF0IgNFcmYKDAoBdBIBeSIEUmVsdRIFY29uc3QqIwgCCAMQAUIBV0oYjElWP3JiNr+LQWZm+P////Ri"
                        "qj9R7Au+WhMKAXgSDgoMCAESCCoCCCNKAggDYhMKAXkSDgoMCAESAAoCCAIKAggDQgQKABAR",
    # Constant folding ran Abs on an int32 weight holding INT_MIN: UBSan "signed integer overflow:
    # 0 - -2147483648" (Abs now negates in the unsigned type; |INT_MIN| wraps to INT_MIN as in numpy).
    "abs_int_min_constant": "CAg6dAoOMgF4CgFXEgF0IgNBYnMKDAoBdBIBeSIEU2lnbhIFY29uc3QqIwgCCAMQBkIBV0oYjElWwaFiYwAAAACAAAAAdHNM"
                            "b2dR7Au+WhMKAXgSDgoMCAMSCCoCCCNKAggDYhMKAXkSDioMCAESAAoCCAIKAggDQgQKABAR",
}


def model(nodes, inputs, outputs, inits=(), opset=17, extra_imports=()):
    g = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(inits))
    imports = [helper.make_opsetid("", opset), *extra_imports]
    return helper.make_model(g, opset_imports=imports, ir_version=8)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def main(out):
    os.makedirs(out, exist_ok=True)
    f = TensorProto.FLOAT
    seeds = {
        "relu": model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", f, [2, 3])], [vi("y", f, [2, 3])]),
        "add_symbolic": model([helper.make_node("Add", ["x", "b"], ["y"])],
                              [vi("x", f, ["batch", 4]), vi("b", f, ["batch", 4])], [vi("y", f, ["batch", 4])]),
        "add_relu_raw_init": model(
            [helper.make_node("Add", ["x", "W"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
            [vi("x", f, [2, 3])], [vi("y", f, [2, 3])],
            [numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "W")]),
        "typed_inits": model(
            [helper.make_node("Add", ["x", "W"], ["y"])], [vi("x", TensorProto.INT64, [3])],
            [vi("y", TensorProto.INT64, [3])],
            [helper.make_tensor("W", TensorProto.INT64, [3], [1, -2, 3]),
             helper.make_tensor("F", TensorProto.FLOAT, [2], [0.5, 1.5]),
             helper.make_tensor("H", TensorProto.FLOAT16, [1], [1.0]),
             helper.make_tensor("B", TensorProto.BOOL, [2], [True, False])]),
        "attributes_unknown_op": model(
            [helper.make_node("Frob", ["x"], ["y"], domain="com.example", alpha=0.5, n=3, s="mode", ints=[1, 2],
                              floats=[1.0, 2.0], strs=["a", "b"],
                              t=helper.make_tensor("t", TensorProto.INT32, [2], [4, 5]))],
            [vi("x", f, [2])], [vi("y", f, [2])], extra_imports=[helper.make_opsetid("com.example", 1)]),
        "chain_unknown_rank": model(
            [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "a"], ["b"]),
             helper.make_node("Relu", ["b"], ["y"])],
            [helper.make_tensor_value_info("x", f, None)], [helper.make_tensor_value_info("y", f, None)]),
        "relu_opset13": model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", TensorProto.DOUBLE, [1])],
                              [vi("y", TensorProto.DOUBLE, [1])], opset=13),
    }
    for name, m in seeds.items():
        with open(os.path.join(out, name + ".onnx"), "wb") as fh:
            fh.write(m.SerializeToString())
    for name, b64 in REGRESSIONS.items():
        with open(os.path.join(out, "regression_" + name), "wb") as fh:
            fh.write(base64.b64decode(b64))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_seed_corpus.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
