#!/usr/bin/env python3
"""Writes a model with one input and output per element type, plus numpy reference data, into OUT_DIR.

The language bindings (Java, Go) use it to check that each dtype crosses their conversion layer intact.
dtypes.onnx (every op elementwise, so the reference is one numpy expression each):
  d   float64[3]   -> d2  = d * d
  i   int32[2,2]   -> i2  = i + i
  l   int64[4]     -> l2  = l * l
  s   int16[2]     -> s2  = s + s
  b   int8[3]      -> b2  = b + b
  u   uint8[3]     -> u2  = u + u
  hf  float16[3]   -> hf2 = hf + hf
  m   bool[4]      -> mn  = not m
  f   float32[2,2] -> fp  = f > 0   (bool)
Each tensor NAME is stored raw, little-endian, C order, in NAME.bin.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

# (input, output, numpy dtype, ONNX type, shape, op, output ONNX type)
CASES = [
    ("d", "d2", np.float64, TensorProto.DOUBLE, [3], "Mul", TensorProto.DOUBLE),
    ("i", "i2", np.int32, TensorProto.INT32, [2, 2], "Add", TensorProto.INT32),
    ("l", "l2", np.int64, TensorProto.INT64, [4], "Mul", TensorProto.INT64),
    ("s", "s2", np.int16, TensorProto.INT16, [2], "Add", TensorProto.INT16),
    ("b", "b2", np.int8, TensorProto.INT8, [3], "Add", TensorProto.INT8),
    ("u", "u2", np.uint8, TensorProto.UINT8, [3], "Add", TensorProto.UINT8),
    ("hf", "hf2", np.float16, TensorProto.FLOAT16, [3], "Add", TensorProto.FLOAT16),
    ("m", "mn", np.bool_, TensorProto.BOOL, [4], "Not", TensorProto.BOOL),
    ("f", "fp", np.float32, TensorProto.FLOAT, [2, 2], "Greater", TensorProto.BOOL),
]


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(77)
    inputs, outputs, nodes = [], [], []
    for name, oname, npt, onnx_t, shape, op, out_t in CASES:
        inputs.append(helper.make_tensor_value_info(name, onnx_t, shape))
        outputs.append(helper.make_tensor_value_info(oname, out_t, shape))
        if npt == np.bool_:
            x = rng.integers(0, 2, shape).astype(np.bool_)
        elif np.issubdtype(npt, np.integer):
            info = np.iinfo(npt)
            # Products and sums stay in range, so no result depends on overflow behaviour.
            lo, hi = max(info.min // 2, -1000), min(info.max // 2, 1000)
            if op == "Mul":
                lo, hi = -30000, 30000
            x = rng.integers(lo, hi, shape).astype(npt)
        else:
            x = (rng.standard_normal(shape) * 4).astype(npt)
        if op == "Mul":
            y = x * x
        elif op == "Add":
            y = x + x
        elif op == "Not":
            y = np.logical_not(x)
        else:
            nodes.append(helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("zero", onnx_t, [], [0.0])))
            y = x > 0
        second = {"Mul": [name, name], "Add": [name, name], "Not": [name], "Greater": [name, "zero"]}[op]
        nodes.append(helper.make_node(op, second, [oname]))
        x.astype(x.dtype.newbyteorder("<")).tofile(os.path.join(out, name + ".bin"))
        y.astype(y.dtype.newbyteorder("<")).tofile(os.path.join(out, oname + ".bin"))
    g = helper.make_graph(nodes, "dtypes", inputs, outputs)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with open(os.path.join(out, "dtypes.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_dtype_fixture.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
