#!/usr/bin/env python3
"""The op-case table: one row per (op, attributes, inputs), each with its expected outputs from an
independent implementation, onnx.reference (the ONNX project's Python evaluator), written in the
layout of the ONNX backend node tests so that tests/ops/op_case_test.cc can run every row on every
backend the machine has:

    OUT/<case>/model.onnx                     the one-node model (constant inputs as initializers)
    OUT/<case>/test_data_set_0/input_K.pb     the fed inputs, output_K.pb the reference outputs
    OUT/<case>/case.txt                       split INPUT AXIS | grad 0|1 | rtol R | atol A

`split` names the input the 2-device sharded run splits (S(AXIS) on cpu:0-1; the planner chooses
the rest and inserts the boxing); `grad 0` turns the finite-difference check off for a row whose op
has a gradient rule (the runner checks every row whose op has one and whose inputs are floats).

    python3 tests/ops/make_op_cases.py OUT_DIR [--list]
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OPSET = 18
RNG = np.random.default_rng(20261205)


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def ints(dtype, *shape):
    """Integers over the type's whole range, its extremes included."""
    info = np.iinfo(dtype)
    v = RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    v.flat[0], v.flat[-1] = info.min, info.max
    return v


def i64(*values):
    return np.array(values, dtype=np.int64)


class Case:
    def __init__(self, name, op, inputs, attrs=None, consts=(), split=None, grad=True, rtol=1e-5, atol=1e-6,
                 outputs=1, opset=OPSET, domain=""):
        self.name, self.op, self.inputs, self.attrs = name, op, inputs, attrs or {}
        self.consts = set(consts)  # input names stored as initializers (shapes, axes, indices)
        self.split, self.grad, self.rtol, self.atol = split, grad, rtol, atol
        self.outputs, self.opset, self.domain = outputs, opset, domain


# name, op, inputs [(name, array)], ... The names are the inputs' ONNX parameter names in order.
CASES = [
    # Broadcasting arithmetic (graph/ops/binary_ops.h).
    Case("add_bias", "Add", [("A", f32(4, 6)), ("B", f32(6))], split=("A", 0)),
    Case("sub_rows", "Sub", [("A", f32(4, 6)), ("B", f32(4, 1))], split=("A", 1)),
    Case("mul", "Mul", [("A", f32(4, 6)), ("B", f32(4, 6))], split=("B", 0)),
    Case("div", "Div", [("A", f32(4, 6)), ("B", f32(4, 6, lo=0.5, hi=2.0))], split=("A", 0)),
    Case("pow", "Pow", [("X", f32(4, 6, lo=0.5, hi=2.0)), ("Y", f32(4, 6, lo=-2, hi=2))], split=("X", 0)),
    Case("max", "Max", [("data_0", f32(4, 6)), ("data_1", f32(4, 6))], split=("data_0", 0)),
    Case("min3", "Min", [("data_0", f32(4, 6)), ("data_1", f32(6)), ("data_2", f32(4, 6))]),
    Case("sum3", "Sum", [("data_0", f32(4, 6)), ("data_1", f32(4, 6)), ("data_2", f32(6))], split=("data_0", 0)),
    Case("mean", "Mean", [("data_0", f32(4, 6)), ("data_1", f32(4, 6))]),
    # Activations (graph/ops/unary_ops.h rows; onnxruntime checks them all in test_unary_ops_vs_onnxruntime.py).
    Case("relu", "Relu", [("X", f32(4, 6))], split=("X", 1)),
    Case("sigmoid", "Sigmoid", [("X", f32(4, 6))], split=("X", 0)),
    Case("tanh", "Tanh", [("X", f32(4, 6))]),
    Case("exp", "Exp", [("X", f32(4, 6))], split=("X", 0)),
    Case("softplus", "Softplus", [("X", f32(4, 6))]),
    Case("leaky_relu", "LeakyRelu", [("X", f32(4, 6))], attrs={"alpha": 0.2}, split=("X", 0)),
    Case("clip", "Clip", [("input", f32(4, 6)), ("min", np.array(-0.5, np.float32)), ("max", np.array(0.7, np.float32))],
         consts=("min", "max"), split=("input", 0)),
    # Linear algebra.
    Case("matmul", "MatMul", [("A", f32(4, 8)), ("B", f32(8, 6))], split=("A", 0), rtol=1e-5),
    Case("matmul_k_split", "MatMul", [("A", f32(4, 8)), ("B", f32(8, 6))], split=("B", 0), rtol=1e-5),
    Case("matmul_batched", "MatMul", [("A", f32(2, 3, 4, 5)), ("B", f32(2, 3, 5, 6))], split=("A", 1)),
    Case("gemm_transb", "Gemm", [("A", f32(4, 8)), ("B", f32(6, 8)), ("C", f32(6))], attrs={"transB": 1, "alpha": 0.5},
         split=("A", 0)),
    Case("einsum", "Einsum", [("Inputs_0", f32(3, 4)), ("Inputs_1", f32(4, 5))], attrs={"equation": "ij,jk->ik"}),
    # Normalization and softmax.
    Case("softmax", "Softmax", [("input", f32(4, 10))], attrs={"axis": -1}, split=("input", 0)),
    Case("log_softmax", "LogSoftmax", [("input", f32(4, 10))], attrs={"axis": 1}, split=("input", 0)),
    Case("layer_norm", "LayerNormalization", [("X", f32(4, 8)), ("Scale", f32(8)), ("B", f32(8))],
         attrs={"axis": -1, "epsilon": 1e-5}, split=("X", 0), rtol=1e-4, atol=1e-5),
    # Reductions.
    Case("reduce_sum", "ReduceSum", [("data", f32(4, 6)), ("axes", i64(1))], consts=("axes",), attrs={"keepdims": 0},
         split=("data", 0)),
    Case("reduce_sum_split_axis", "ReduceSum", [("data", f32(4, 6)), ("axes", i64(0))], consts=("axes",),
         split=("data", 0)),
    Case("reduce_mean", "ReduceMean", [("data", f32(4, 6)), ("axes", i64(-1))], consts=("axes",), split=("data", 0)),
    Case("reduce_max", "ReduceMax", [("data", f32(4, 6)), ("axes", i64(1))], consts=("axes",), split=("data", 0)),
    Case("argmax", "ArgMax", [("data", f32(4, 6))], attrs={"axis": 1}, split=("data", 0), grad=False),
    Case("cumsum", "CumSum", [("x", f32(4, 6)), ("axis", np.array(1, np.int64))], consts=("axis",), split=("x", 0)),
    # Shapes and data movement.
    Case("transpose", "Transpose", [("data", f32(2, 3, 4))], attrs={"perm": [2, 0, 1]}, split=("data", 0)),
    Case("reshape", "Reshape", [("data", f32(4, 6)), ("shape", i64(2, 12))], consts=("shape",), split=("data", 0)),
    Case("flatten", "Flatten", [("input", f32(2, 3, 4))], attrs={"axis": 1}, split=("input", 0)),
    Case("unsqueeze", "Unsqueeze", [("data", f32(4, 6)), ("axes", i64(1))], consts=("axes",), split=("data", 0)),
    Case("squeeze", "Squeeze", [("data", f32(4, 1, 6)), ("axes", i64(1))], consts=("axes",), split=("data", 2)),
    Case("concat", "Concat", [("inputs_0", f32(4, 3)), ("inputs_1", f32(4, 5))], attrs={"axis": 1},
         split=("inputs_0", 0)),
    Case("split", "Split", [("input", f32(4, 6)), ("split", i64(2, 4))], consts=("split",), attrs={"axis": 1},
         outputs=2, split=("input", 0)),
    Case("slice", "Slice", [("data", f32(4, 6)), ("starts", i64(1)), ("ends", i64(5)), ("axes", i64(1))],
         consts=("starts", "ends", "axes"), split=("data", 0)),
    Case("expand", "Expand", [("input", f32(4, 1)), ("shape", i64(4, 6))], consts=("shape",), split=("input", 0)),
    Case("tile", "Tile", [("input", f32(2, 3)), ("repeats", i64(2, 2))], consts=("repeats",), split=("input", 1)),
    Case("pad", "Pad", [("data", f32(4, 6)), ("pads", i64(0, 1, 0, 2))], consts=("pads",), split=("data", 0)),
    Case("gather", "Gather", [("data", f32(5, 6)), ("indices", i64(4, 0, 2))], consts=("indices",), attrs={"axis": 0},
         split=("data", 1)),
    Case("where", "Where", [("condition", np.array([[True, False, True], [False, True, True]])), ("X", f32(2, 3)),
                            ("Y", f32(2, 3))], consts=("condition",), split=("X", 0)),
    Case("cast_f64", "Cast", [("input", f32(4, 6))], attrs={"to": onnx.TensorProto.DOUBLE}, split=("input", 0),
         grad=False),
    # Convolutions and pooling.
    Case("conv", "Conv", [("X", f32(2, 3, 6, 6)), ("W", f32(4, 3, 3, 3)), ("B", f32(4))], attrs={"pads": [1, 1, 1, 1]},
         split=("X", 0), rtol=1e-4, atol=1e-5),
    Case("conv_grouped_strided", "Conv", [("X", f32(2, 4, 7, 7)), ("W", f32(4, 2, 3, 3))],
         attrs={"group": 2, "strides": [2, 2]}, split=("X", 0), rtol=1e-4, atol=1e-5),
    # A 1-D conv as TF and JAX exporters write it: k x 1 over [N, C, L, 1], constant weights (the
    # oneDNN plan runs it as 1 x k over [N, C, 1, L]).
    Case("conv_kx1_width1", "Conv", [("X", f32(2, 8, 12, 1)), ("W", f32(6, 8, 5, 1)), ("B", f32(6))],
         consts=("W", "B"), attrs={"pads": [2, 0, 2, 0]}, split=("X", 0), rtol=1e-4, atol=1e-5),
    Case("conv_kx1_width1_strided_dilated", "Conv", [("X", f32(2, 8, 13, 1)), ("W", f32(6, 8, 3, 1))],
         consts=("W",), attrs={"pads": [1, 0, 2, 0], "strides": [2, 1], "dilations": [2, 1]}, split=("X", 0),
         rtol=1e-4, atol=1e-5),
    # Constant weights take the oneDNN plan (in NHWC after the layout pass): grouped and depthwise.
    Case("conv_depthwise_const", "Conv", [("X", f32(2, 8, 9, 9)), ("W", f32(8, 1, 3, 3)), ("B", f32(8))],
         consts=("W", "B"), attrs={"group": 8, "pads": [1, 1, 1, 1], "strides": [2, 2]}, split=("X", 0),
         rtol=1e-4, atol=1e-5),
    Case("conv_grouped_const_dilated", "Conv", [("X", f32(2, 6, 9, 9)), ("W", f32(9, 2, 3, 3))],
         consts=("W",), attrs={"group": 3, "pads": [2, 1, 2, 1], "dilations": [2, 1]}, split=("X", 0),
         rtol=1e-4, atol=1e-5),
    Case("max_pool", "MaxPool", [("X", f32(2, 3, 6, 6))], attrs={"kernel_shape": [2, 2], "strides": [2, 2]},
         split=("X", 0)),
    Case("average_pool", "AveragePool", [("X", f32(2, 3, 6, 6))], attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
         split=("X", 1)),
    Case("global_average_pool", "GlobalAveragePool", [("X", f32(2, 3, 5, 5))], split=("X", 0)),
    Case("batch_norm", "BatchNormalization", [("X", f32(2, 3, 4, 4)), ("scale", f32(3)), ("B", f32(3)),
                                              ("input_mean", f32(3)), ("input_var", f32(3, lo=0.5, hi=2.0))],
         consts=("input_mean", "input_var"), split=("X", 0), rtol=1e-4, atol=1e-5),
    # Quantization (graph/ops/quantization.cc): per tensor, per axis, blocked with a remainder block
    # (onnx.reference implements DequantizeLinear from opset 19; test_dequantize_linear.py runs 13).
    Case("dequantize_per_tensor_int8", "DequantizeLinear",
         [("x", ints(np.int8, 4, 6)), ("x_scale", np.array(0.05, np.float32)), ("x_zero_point", np.array(-3, np.int8))],
         opset=19),
    Case("dequantize_per_axis_uint8", "DequantizeLinear",
         [("x", ints(np.uint8, 2, 3, 4)), ("x_scale", f32(3, lo=0.01, hi=0.2)), ("x_zero_point", ints(np.uint8, 3))],
         attrs={"axis": 1}, opset=19),
    Case("dequantize_last_axis_int32", "DequantizeLinear",
         [("x", ints(np.int32, 4, 5)), ("x_scale", f32(5, lo=1e-4, hi=1e-3))], attrs={"axis": -1},
         opset=19),
    Case("dequantize_blocked_int16", "DequantizeLinear",
         [("x", ints(np.int16, 4, 7)), ("x_scale", f32(4, 3, lo=0.01, hi=0.2)), ("x_zero_point", ints(np.int16, 4, 3))],
         attrs={"axis": 1, "block_size": 3}, opset=21),
    Case("dequantize_f16_scale", "DequantizeLinear",
         [("x", ints(np.int8, 3, 4)), ("x_scale", f32(4, lo=0.01, hi=0.2).astype(np.float16))], attrs={"axis": 1},
         opset=19, rtol=1e-3, atol=1e-4),
    # QuantizeLinear: ties round to even, values past the type saturate; NaN is left out (its result
    # is the type's minimum here and on onnxruntime, platform-defined in onnx.reference).
    Case("quantize_ties_saturate_uint8", "QuantizeLinear",
         [("x", np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 300.0], [-300.0, 127.5, 128.5, 3.49, -2.5, 0.0]], np.float32)),
          ("y_scale", np.array(1.0, np.float32)), ("y_zero_point", np.array(128, np.uint8))], opset=13),
    Case("quantize_per_tensor_int8", "QuantizeLinear",
         [("x", f32(4, 6, lo=-8, hi=8)), ("y_scale", np.array(0.05, np.float32)), ("y_zero_point", np.array(-3, np.int8))],
         opset=13),
    Case("quantize_per_axis_no_zero_point", "QuantizeLinear",
         [("x", f32(2, 3, 4, lo=-2, hi=30)), ("y_scale", f32(3, lo=0.05, hi=0.2))], attrs={"axis": 1}, opset=13),
    Case("quantize_blocked_int16", "QuantizeLinear",
         [("x", f32(4, 7, lo=-500, hi=500)), ("y_scale", f32(4, 3, lo=0.01, hi=0.2)),
          ("y_zero_point", ints(np.int16, 4, 3))], attrs={"axis": 1, "block_size": 3}, opset=21),
    Case("quantize_f16", "QuantizeLinear",
         [("x", f32(3, 4, lo=-4, hi=4).astype(np.float16)), ("y_scale", np.array(0.03, np.float16)),
          ("y_zero_point", np.array(5, np.int8))], opset=23),  # opset 23: the quotient in y_scale's type
    Case("dynamic_quantize", "DynamicQuantizeLinear", [("x", f32(4, 6, lo=-3, hi=5))], outputs=3, opset=13),
    Case("matmul_integer_u8_s8", "MatMulInteger",
         [("A", ints(np.uint8, 2, 4, 6)), ("B", ints(np.int8, 6, 5)), ("a_zero_point", np.array(131, np.uint8)),
          ("b_zero_point", ints(np.int8, 5))], opset=13),
    Case("matmul_integer_s8_batched", "MatMulInteger",
         [("A", ints(np.int8, 3, 6)), ("B", ints(np.int8, 2, 6, 4)), ("a_zero_point", np.array(-7, np.int8))],
         opset=13),
    # Recurrent layers (graph/ops/recurrent.cc; onnxruntime, layouts, sequence_lens and PyTorch's
    # exports in test_recurrent_vs_onnxruntime.py, BPTT in tests/unit/gradcheck_recurrent_test.cc).
    Case("rnn_bidirectional", "RNN",
         [("X", f32(4, 3, 5)), ("W", f32(2, 3, 5, lo=-0.6, hi=0.6)), ("R", f32(2, 3, 3, lo=-0.6, hi=0.6)),
          ("B", f32(2, 6, lo=-0.5, hi=0.5))], attrs={"hidden_size": 3, "direction": "bidirectional"},
         outputs=2, opset=14),
    Case("gru_reverse_linear_before_reset", "GRU",
         [("X", f32(4, 3, 5)), ("W", f32(1, 9, 5, lo=-0.6, hi=0.6)), ("R", f32(1, 9, 3, lo=-0.6, hi=0.6)),
          ("B", f32(1, 18, lo=-0.5, hi=0.5))],
         attrs={"hidden_size": 3, "direction": "reverse", "linear_before_reset": 1}, outputs=2, opset=14),
    Case("lstm_initial_states", "LSTM",
         [("X", f32(4, 3, 5)), ("W", f32(1, 12, 5, lo=-0.6, hi=0.6)), ("R", f32(1, 12, 3, lo=-0.6, hi=0.6)),
          ("B", f32(1, 24, lo=-0.5, hi=0.5)), ("sequence_lens", np.array([4, 4, 4], np.int32)),
          ("initial_h", f32(1, 3, 3)), ("initial_c", f32(1, 3, 3))],
         attrs={"hidden_size": 3}, consts=("sequence_lens",), outputs=3, opset=14),
    # Attention (graph/ops/attention.cc): grouped-query heads, a KV cache and the offset causal mask;
    # RotaryEmbedding with position ids (onnxruntime compares in test_attention_vs_onnxruntime.py).
    Case("attention_gqa_causal_cache", "Attention",
         [("Q", f32(2, 4, 3, 8)), ("K", f32(2, 2, 3, 8)), ("V", f32(2, 2, 3, 6)), ("attn_mask", f32(3, 5)),
          ("past_key", f32(2, 2, 2, 8)), ("past_value", f32(2, 2, 2, 6))],
         attrs={"is_causal": 1, "softcap": 3.0}, outputs=3, opset=23),
    Case("rotary_embedding_interleaved", "RotaryEmbedding",
         [("X", f32(2, 3, 4, 8)), ("cos_cache", f32(6, 3)), ("sin_cache", f32(6, 3)),
          ("position_ids", np.array([[0, 2, 5, 1], [3, 3, 4, 0]], np.int64))],
         attrs={"interleaved": 1, "rotary_embedding_dim": 6}, consts=("position_ids",), opset=23),
]


def write_case(out, c):
    d = os.path.join(out, c.name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data)
    fed = [(n, a) for n, a in c.inputs if n not in c.consts]
    inits = [numpy_helper.from_array(a, n) for n, a in c.inputs if n in c.consts]
    outs = [f"out{k}" for k in range(c.outputs)]
    node = helper.make_node(c.op, [n for n, _ in c.inputs], outs, domain=c.domain, **c.attrs)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in fed]

    def make(outputs):
        graph = helper.make_graph([node], c.name, inputs, outputs, initializer=inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", c.opset)], ir_version=9)

    # The reference runs first; the model then declares the outputs' types as it computed them.
    want = ReferenceEvaluator(make([helper.make_empty_tensor_value_info(o) for o in outs])).run(None, dict(fed))
    want = [np.asarray(w) for w in want]
    model = make([helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(w.dtype), w.shape)
                  for o, w in zip(outs, want)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(fed):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for k, a in enumerate(want):
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(a), outs[k]).SerializeToString())
    with open(os.path.join(d, "case.txt"), "w") as f:
        if c.split:
            f.write(f"split {c.split[0]} {c.split[1]}\n")
        f.write(f"grad {int(c.grad)}\nrtol {c.rtol}\natol {c.atol}\n")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    if "--list" in sys.argv:
        for c in CASES:
            print(c.name, c.op)
        return 0
    out = sys.argv[1]
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for c in CASES:
        write_case(tmp, c)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"{len(CASES)} op cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
