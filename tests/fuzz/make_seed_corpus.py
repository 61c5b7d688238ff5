#!/usr/bin/env python3
"""Writes a seed corpus for onnx_loader_fuzzer: small valid ONNX models covering the loader's paths
(symbolic dims, initializers as raw and typed data, attributes of each kind, several dtypes, an
unknown op). Usage: make_seed_corpus.py OUT_DIR"""
import base64
import os
import sys

import ml_dtypes
import numpy as np
from onnx import TensorProto, helper, numpy_helper


# Inputs the fuzzer once found a defect with, kept as seeds so every run re-checks them first.
REGRESSIONS = {
    # The opset 7-12 upgrade made Clip-6's float min/max a scalar of an int16 input's type: a value out
    # of int16's range converted to it (UBSan). Clip-6 and Pad-2 take floating inputs; others are refused.
    "legacy_clip_int_input": "CAg6wgMKLwoBeBIBcCIDUGFkKhEKBHBhZHNAAUAAQAFAAKABByoPCgV2YWx1ZRUAAADNoAEBCjYKAXASAXMiBVNsaWNlKgsK"
                            "BGF4ZXNAAaABByoLCgRlbmRzQAOgAQcqDQoGc3RhcnRzQACgAQcKLQoBcxIBYRIBYiIFU3BsaXQqCwoEYXhpcxgAoAECKg4K"
                            "BXNwbGl0QAFAA6ABBwoeCgFhEgF1IglVbnNxdWVlemUqCwoEYXhlc0AAoAEHChwKAXUSAXEiB1NxdWVlemUqCwoEYXhlc0AA"
                            "oAEHCioKAXESAWMiBENsaXAqDQoDbWF4FQAAgD+gAQEqDQoDbWluFQAAgL+gAQEKHAoBYxIBeSIHrZCZk21heCoLCgRheGlz"
                            "GAGgAQIKGwoBYhICdHYSAnRpIgRUb3BLKggKAWsYAqABAgopCgFiCgJzYxICdXAiCFVwc2FtcGwlKhIKBG1vZGUiB25lYXJl"
                            "c4OgAQMSBHNlZWQqEggCEAFCAnNjSggAAABAAAAAQFoTCgF4Eg4KDAgFEggKAggCCgIIA2ITCgF5Eg4KDAgBEggKAggBCgII"
                            "A2IUCgJ1cBIOCgwIARIICgIIBgoCCAZCBAoAEAk=",
    # Resize's shape inference converted floor(scale * dim) to int64 with a scale of 3.6e31: UBSan
    # "outside the range of representable values" (a resized dimension above 2^40 is now refused).
    "resize_huge_scale": "CAg6uwEKOgoBeBIBdSIIVXBzYW1wbGUqEQoEfW9kZSIGbGluZWFyoAEDKhUKBnNjYWxlcz0AQWJzPQAAAECgAQYK"
                         "IAoBdRIBZCIHRHJvcG91dCoPCgVyYXRpbxXNzMw9oAEBCi8KAWQSAXkiCVJlZHVjZVN1bSoLCgRheGVzQAGgAQcq"
                         "DwoIa2VlcGRpbXMYAKABAhIEc2VlZFoTCgF4Eg4KDAgBEggKAggCCgISAGIPCgF5EgoKCAgBEgQKAggCQgQKABAH",
    # The opset 7-12 upgrade read an Upsample's input X that the node did not have (found by the fuzz
    # smoke run from the legacy_opset7 seed: UBSan "reference binding to null pointer").
    "legacy_upsample_without_input": "CAg6uwEKOhoBeBIBdSIIVXBzYW1wbGUqEQoEbW9kZSIGbGluZWFyoAEDKhUKBnNjYWxlcz0AAIA/PQAAAECg"
                                     "AQYKIAoBdRIBZCIHRHJvcG91dCoPCgVyYXRpbxXNzMw9oAEBCi8KAWQSAXkiCVJlZHVjZVN1bSoLCgRheGVz"
                                     "QAGgAQYqDwoIa2VlcGRpC3MYAKABAhIEc2VlZFoTCgF4Eg4KDAgBEggKAggCCgIIA2IPCgF5EgoKCAgBEgQK"
                                     "AggCQgQKABAH",
    # Constant folding ran fastmath::Exp on a NaN weight through Erf; the NaN reached an int conversion.
    "erf_nan_constant": "CAg6dAoOMgF4CgFXEgF0IgNFcmYKDAoBdBIBeSIEUmVsdRIFY29uc3QqIwgCCAMQAUIBV0oYjElWP3JiNr+LQWZm+P////Ri"
                        "qj9R7Au+WhMKAXgSDgoMCAESCCoCCCNKAggDYhMKAXkSDgoMCAESAAoCCAIKAggDQgQKABAR",
    # QLinearConv folded with an int32 bias of INT_MIN: UBSan "signed integer overflow" adding it to the
    # sums (found by the 600 s fuzz run from the quantized_ops_folded seed; the sum is now 64-bit).
    "qlinearconv_bias_int_min": "CAg6lgYKZAoBeAoCeHMKAnh6CgF3CgJ3cwoCd3oKAnlzCgJ5egoBYhIBYyILUUxpbmVhckNvbnYqDAoFZ3JvdXAYAqABAioRCgRw"
                                "YWRzQAFAAEA9QAGgAQcqEAoHc3RyaWRlc0AVQAGgAQcKPAoBYwoCeXMKAnl6CgFjCgJ5cwoCeXoKAnlzCgJ5ehIBYSIKUUxpbmVh"
                                "ckFkZDoNY29tLm1pY3Jvc29mdAo/CgFhCgJ5cwoCeXoKAnlzCgJ5ehIBcCIYUUxpbmVhckdsb2JhbEF2ZXJhZ2VQb29sOg1jb20u"
                                "bWljcm9zb2Z0CiAKAXAKAnlzCgJ5ehIBeSIQRGVxdWFudGl6ZUxpbmVhcgo2CgFtCgJ3OAoDd3M4EgJ5MiIVRHluYW1pY1F1YW50"
                                "aXplTWF0TXVsOg1jb20ubWljcm9zb2Z0CiEKAXgKAnhzCgJ4ehICZHgiEERlcXVhbnRpemVMaW5lYXIKLgoBdwoCd3MKAnd6EgJk"
                                "dyIQRGVxdWFudGl6ZUxpbmVhcioLCgRheGlzGACgAQIKIAoCZHgKAmR3EgJjZiIEQ29udioMCgVncm91cBgCoAECCiAKAmNmCgJ5"
                                "cwoCeXoSAnkzIg5RdWFudGl6ZUxpbmVhchIEc2VlZCozCAEIBAgDCAMQAkIBeEokAAcOFZwjKjE4P0ZNVFtiaXB3foWMk5qhqK+2"
                                "vcTL0tng5+71KgwQAUICeHNKBM3MzD0qCRACQgJ4ekoBgCovCAQIAggCCAIQA0IBd0og/QEHgH8ABfv9AQeAfwAF+/0BB4B/AAX7"
                                "/QEHgH8ABfsqGggEEAFCAndzShAK1yM8CtejPI/C9TwK1yM9Kg4IBBADQgJ3ekoEAAAAACoMEAFCAnlzSgTNzEw+KgkQAkICeXpK"
                                "AQoqGQgEEAZCAWJKEGQAAACc////BQAAAAAAAIAqEggDCAIQA0ICdzhKBgH+AwSAfyoNEAFCA3dzOEoEzcxMPVoTCgFtEg4KDAgB"
                                "EggKAggCCgIIA2IJCgF5EgQKAggBYgoKAnkyEgQKAggBYgoKAnkzEgQKAggCQgQKABARQhEKDWNvbS5taWNyb3NvZnQQAQ==",
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
        # Opsets 7-12: the import-time upgrade to opset 13 (serialize/onnx_legacy.cc).
        "legacy_opset9": model(
            [helper.make_node("Pad", ["x"], ["p"], pads=[1, 0, 1, 0], value=0.5),
             helper.make_node("Slice", ["p"], ["s"], starts=[0], ends=[3], axes=[1]),
             helper.make_node("Split", ["s"], ["a", "b"], axis=0, split=[1, 3]),
             helper.make_node("Unsqueeze", ["a"], ["u"], axes=[0]),
             helper.make_node("Squeeze", ["u"], ["q"], axes=[0]),
             helper.make_node("Clip", ["q"], ["c"], min=-1.0, max=1.0),
             helper.make_node("Softmax", ["c"], ["y"], axis=1),
             helper.make_node("TopK", ["b"], ["tv", "ti"], k=2),
             helper.make_node("Upsample", ["b", "sc"], ["up"], mode="nearest")],
            [vi("x", f, [2, 3])], [vi("y", f, [1, 3]), vi("up", f, [6, 6])],
            [numpy_helper.from_array(np.array([2, 2], np.float32), "sc")], opset=9),
        "legacy_opset7": model(
            [helper.make_node("Upsample", ["x"], ["u"], scales=[1.0, 2.0], mode="linear"),
             helper.make_node("Dropout", ["u"], ["d"], ratio=0.1),
             helper.make_node("ReduceSum", ["d"], ["y"], axes=[1], keepdims=0)],
            [vi("x", f, [2, 3])], [vi("y", f, [2])], opset=7),
        # Recurrent, attention and ONNX Runtime contrib ops. Every input is an initializer, so
        # session creation's constant folding runs their kernels on whatever the fuzzer makes.
        "lstm_bidirectional_folded": model(
            [helper.make_node("LSTM", ["X", "W", "R", "B", "L", "", "", "P"], ["y", "yh", "yc"], hidden_size=2,
                              direction="bidirectional", clip=2.0)],
            [], [vi("y", f, None), vi("yh", f, None), vi("yc", f, None)],
            [numpy_helper.from_array(a, n) for n, a in [
                ("X", np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 2, 2)),
                ("W", np.full((2, 8, 2), 0.1, np.float32)), ("R", np.full((2, 8, 2), -0.2, np.float32)),
                ("B", np.zeros((2, 16), np.float32)), ("L", np.array([3, 1], np.int32)),
                ("P", np.ones((2, 6), np.float32))]], opset=14),
        "gru_rnn_folded": model(
            [helper.make_node("GRU", ["X", "W", "R"], ["g"], hidden_size=2, linear_before_reset=1, layout=1),
             helper.make_node("RNN", ["X", "Wr", "Rr"], ["y"], hidden_size=2, activations=["LeakyRelu"],
                              activation_alpha=[0.3], layout=1)],
            [], [vi("g", f, None), vi("y", f, None)],
            [numpy_helper.from_array(a, n) for n, a in [
                ("X", np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 3, 2)),
                ("W", np.full((1, 6, 2), 0.3, np.float32)), ("R", np.full((1, 6, 2), 0.2, np.float32)),
                ("Wr", np.full((1, 2, 2), 0.5, np.float32)), ("Rr", np.full((1, 2, 2), -0.5, np.float32))]], opset=14),
        "attention_rotary_folded": model(
            [helper.make_node("RotaryEmbedding", ["Q", "cos", "sin", "pos"], ["qr"]),
             helper.make_node("Attention", ["qr", "K", "V", "M", "PK", "PV"], ["y", "pk", "pv", "qk"], is_causal=1,
                              softcap=2.0, qk_matmul_output_mode=3)],
            [], [vi("y", f, None), vi("pk", f, None), vi("pv", f, None), vi("qk", f, None)],
            [numpy_helper.from_array(a, n) for n, a in [
                ("Q", np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 4, 2, 4)),
                ("K", np.full((1, 2, 2, 4), 0.5, np.float32)), ("V", np.full((1, 2, 2, 3), 0.25, np.float32)),
                ("M", np.array([[True, False, True], [True, True, False]])),
                ("PK", np.ones((1, 2, 1, 4), np.float32)), ("PV", np.ones((1, 2, 1, 3), np.float32)),
                ("cos", np.ones((4, 2), np.float32)), ("sin", np.zeros((4, 2), np.float32)),
                ("pos", np.array([[0, 3]], np.int64))]], opset=23),
        "contrib_ops_folded": model(
            [helper.make_node("SkipLayerNormalization", ["x", "s", "g", "b", "bias"], ["n", "m", "iv", "sum"],
                              domain="com.microsoft"),
             helper.make_node("FusedMatMul", ["n", "w"], ["mm"], domain="com.microsoft", transB=1, alpha=0.5),
             helper.make_node("FastGelu", ["mm", "bias"], ["y"], domain="com.microsoft"),
             helper.make_node("SimplifiedLayerNormalization", ["y", "g"], ["z"])],
            [], [vi("z", f, None), vi("m", f, None)],
            [numpy_helper.from_array(a, n) for n, a in [
                ("x", np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 2, 4)), ("s", np.ones((2, 4), np.float32)),
                ("g", np.ones(4, np.float32)), ("b", np.zeros(4, np.float32)), ("bias", np.full(4, 0.1, np.float32)),
                ("w", np.eye(4, dtype=np.float32))]],
            extra_imports=[helper.make_opsetid("com.microsoft", 1)]),
        # Narrow types: packed int4 and uint2 initializers (odd counts: half-used last bytes), float8
        # casts, a blocked int4 DequantizeLinear and a float4 QuantizeLinear, folded at load.
        "narrow_types_folded": model(
            [helper.make_node("DequantizeLinear", ["w4", "s4"], ["d4"], axis=0, block_size=2),
             helper.make_node("Cast", ["d4"], ["f8"], to=TensorProto.FLOAT8E4M3FN, saturate=0),
             helper.make_node("Cast", ["f8"], ["back"], to=TensorProto.FLOAT),
             helper.make_node("QuantizeLinear", ["back", "sq", "zq"], ["q4"]),
             helper.make_node("Cast", ["q4"], ["y"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["w2"], ["y2"], to=TensorProto.FLOAT8E8M0, round_mode="nearest")],
            [], [vi("y", f, None), vi("y2", TensorProto.FLOAT8E8M0, None)],
            [numpy_helper.from_array(np.array([-8, 7, 3, -1, 0], ml_dtypes.int4).reshape(5, 1), "w4"),
             numpy_helper.from_array(np.array([[0.5], [2.0], [0.25]], np.float32), "s4"),
             numpy_helper.from_array(np.array(0.75, np.float32), "sq"),
             numpy_helper.from_array(np.array(0.0, ml_dtypes.float4_e2m1fn), "zq"),
             numpy_helper.from_array(np.array([0, 1, 2, 3, 1, 2, 3], ml_dtypes.uint2), "w2")], opset=25),
        # Quantized convolution and ONNX Runtime's quantized ops on constants (folded at load), and
        # a QDQ group the QDQ pass turns into QLinearConv.
        "quantized_ops_folded": model(
            [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["c"], pads=[1, 0, 0, 1],
                              strides=[2, 1], group=2),
             helper.make_node("QLinearAdd", ["c", "ys", "yz", "c", "ys", "yz", "ys", "yz"], ["a"], domain="com.microsoft"),
             helper.make_node("QLinearGlobalAveragePool", ["a", "ys", "yz", "ys", "yz"], ["p"], domain="com.microsoft"),
             helper.make_node("DequantizeLinear", ["p", "ys", "yz"], ["y"]),
             helper.make_node("DynamicQuantizeMatMul", ["m", "w8", "ws8"], ["y2"], domain="com.microsoft"),
             helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["dx"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["dw"], axis=0),
             helper.make_node("Conv", ["dx", "dw"], ["cf"], group=2),
             helper.make_node("QuantizeLinear", ["cf", "ys", "yz"], ["y3"])],
            [vi("m", f, [2, 3])], [vi("y", f, None), vi("y2", f, None), vi("y3", TensorProto.UINT8, None)],
            [numpy_helper.from_array(a, n) for n, a in [
                ("x", np.arange(1 * 4 * 3 * 3, dtype=np.uint8).reshape(1, 4, 3, 3) * 7),
                ("xs", np.array(0.1, np.float32)), ("xz", np.array(128, np.uint8)),
                ("w", np.array([-3, 1, 7, -128, 127, 0, 5, -5] * 4, np.int8).reshape(4, 2, 2, 2)),
                ("ws", np.array([0.01, 0.02, 0.03, 0.04], np.float32)), ("wz", np.zeros(4, np.int8)),
                ("ys", np.array(0.2, np.float32)), ("yz", np.array(10, np.uint8)),
                ("b", np.array([100, -100, 5, 0], np.int32)),
                ("w8", np.array([[1, -2], [3, 4], [-128, 127]], np.int8)), ("ws8", np.array(0.05, np.float32))]],
            extra_imports=[helper.make_opsetid("com.microsoft", 1)]),
        # ONNX Runtime's attention contrib ops on a fed input: packed-QKV GroupQueryAttention with
        # rotary, MultiHeadAttention with a key padding mask, EmbedLayerNormalization on constants.
        "contrib_attention": model(
            [helper.make_node("GroupQueryAttention", ["q", "", "", "", "", "sl", "tl", "cos", "sin"], ["g", "pk", "pv"],
                              domain="com.microsoft", num_heads=2, kv_num_heads=1, do_rotary=1),
             helper.make_node("MultiHeadAttention", ["g", "g", "g", "", "kpm"], ["m"], domain="com.microsoft",
                              num_heads=2, unidirectional=1),
             helper.make_node("EmbedLayerNormalization", ["ids", "", "we", "pe", "", "gm", "bt"], ["e", "mi"],
                              domain="com.microsoft")],
            [vi("q", f, [1, 2, 32])], [vi("m", f, None), vi("pk", f, None), vi("e", f, None)],
            [numpy_helper.from_array(a, n) for n, a in [
                ("sl", np.array([1], np.int32)), ("tl", np.array(2, np.int32)),
                ("cos", np.ones((4, 4), np.float32)), ("sin", np.zeros((4, 4), np.float32)),
                ("kpm", np.array([2], np.int32)), ("ids", np.array([[0, 2, 1]], np.int32)),
                ("we", np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)), ("pe", np.ones((3, 4), np.float32)),
                ("gm", np.ones(4, np.float32)), ("bt", np.zeros(4, np.float32))]],
            extra_imports=[helper.make_opsetid("com.microsoft", 1)]),
        # Control flow: an If inside a Loop body reading a value two graphs out, a scan output, and a
        # Scan with axes and directions (subgraph import, captured values, the kernels' executors).
        "control_flow": model(
            [helper.make_node("Loop", ["M", "", "acc0"], ["acc", "steps"], body=helper.make_graph(
                [helper.make_node("Cast", ["i"], ["i_f"], to=f),
                 helper.make_node("Greater", ["i_f", "half"], ["late"]),
                 helper.make_node("If", ["late"], ["acc_out"],
                                  then_branch=helper.make_graph([helper.make_node("Add", ["acc_in", "x"], ["t"])],
                                                                "then", [], [vi("t", f, None)]),
                                  else_branch=helper.make_graph([helper.make_node("Sub", ["acc_in", "w"], ["e"])],
                                                                "else", [], [vi("e", f, None)])),
                 helper.make_node("Identity", ["c_in"], ["c_out"]),
                 helper.make_node("Mul", ["acc_out", "i_f"], ["step"])],
                "body", [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("acc_in", f, [2, 3])],
                [vi("c_out", TensorProto.BOOL, []), vi("acc_out", f, [2, 3]), vi("step", f, [2, 3])])),
             helper.make_node("Scan", ["s0", "steps"], ["s", "sums"], num_scan_inputs=1, scan_input_axes=[1],
                              scan_input_directions=[1], scan_output_axes=[1], body=helper.make_graph(
                                  [helper.make_node("Add", ["s_in", "slice"], ["s_out"]),
                                   helper.make_node("Identity", ["s_out"], ["sum"])],
                                  "scan_body", [vi("s_in", f, [4, 3]), vi("slice", f, [4, 3])],
                                  [vi("s_out", f, [4, 3]), vi("sum", f, [4, 3])]))],
            [vi("x", f, [2, 3]), vi("s0", f, [4, 3])], [vi("acc", f, [2, 3]), vi("s", f, [4, 3]), vi("sums", f, None)],
            [numpy_helper.from_array(np.int64(4), "M"), numpy_helper.from_array(np.float32(1.5), "half"),
             numpy_helper.from_array(np.ones((2, 3), np.float32), "acc0"),
             numpy_helper.from_array(np.full((2, 3), 0.5, np.float32), "w")]),
        # Pools and regions read from attributes and data: TfIdfVectorizer's n-gram pool and RoiAlign's
        # regions (the fuzzer mutates the offsets, counts and coordinates).
        "tfidf_roialign": model(
            [helper.make_node("TfIdfVectorizer", ["ids"], ["counts"], mode="TFIDF", min_gram_length=1,
                              max_gram_length=2, max_skip_count=2, ngram_counts=[0, 3], ngram_indexes=[0, 1, 2, 3, 4],
                              pool_int64s=[2, 3, 5, 2, 3, 5, 7], weights=[1.0, 0.5, 2.0, 1.5, 1.0]),
             helper.make_node("RoiAlign", ["img", "rois", "batch"], ["pooled"], output_height=2, output_width=3,
                              sampling_ratio=0, spatial_scale=0.5, mode="avg")],
            [vi("ids", TensorProto.INT64, [2, 8]), vi("img", f, [1, 2, 6, 6])],
            [vi("counts", f, [2, 5]), vi("pooled", f, [2, 2, 2, 3])],
            [numpy_helper.from_array(np.array([[0, 0, 8, 8], [2, 1, 11.5, 6]], np.float32), "rois"),
             numpy_helper.from_array(np.zeros(2, np.int64), "batch")]),
        # Sequences and optionals: sequence-typed graph inputs and outputs, positions, SplitToSequence's
        # forms, SequenceMap's body, an Optional typed by its TYPE_PROTO attribute.
        "sequences_optionals": model(
            [helper.make_node("SplitToSequence", ["x", "split"], ["parts"], axis=1),
             helper.make_node("SequenceInsert", ["s", "x", "pos"], ["s2"]),
             helper.make_node("SequenceErase", ["s2", "pos"], ["s3"]),
             helper.make_node("SequenceAt", ["parts", "pos"], ["first"]),
             helper.make_node("ConcatFromSequence", ["s3"], ["cat"], axis=0, new_axis=1),
             helper.make_node("SequenceMap", ["parts"], ["doubled"], body=helper.make_graph(
                 [helper.make_node("Add", ["e", "e"], ["d"])], "map_body", [vi("e", f, None)], [vi("d", f, None)])),
             helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(f, [2])),
             helper.make_node("OptionalHasElement", ["none"], ["has"])],
            [helper.make_tensor_sequence_value_info("s", f, [2, 3]), vi("x", f, [2, 3])],
            [vi("cat", f, None), vi("first", f, None), helper.make_tensor_sequence_value_info("doubled", f, None),
             vi("has", TensorProto.BOOL, [])],
            [numpy_helper.from_array(np.array([1, 2], np.int64), "split"),
             numpy_helper.from_array(np.int64(0), "pos")], opset=18),
        # String tensors: string initializers (folded through StringSplit and StringNormalizer at load),
        # a string graph input through the regex, the table lookup and concatenation.
        "strings": model(
            [helper.make_node("StringSplit", ["words"], ["pieces", "counts"], delimiter=" ", maxsplit=2),
             helper.make_node("StringNormalizer", ["words"], ["norm"], case_change_action="UPPER",
                              stopwords=["b c"]),
             helper.make_node("RegexFullMatch", ["x"], ["match"], pattern="(?i)[a-z]+ \\d*"),
             helper.make_node("StringConcat", ["x", "norm"], ["joined"]),
             helper.make_node("LabelEncoder", ["x"], ["ids"], domain="ai.onnx.ml",
                              keys_tensor=helper.make_tensor("k", TensorProto.STRING, [2], [b"a", b"b c"]),
                              values_tensor=helper.make_tensor("v", TensorProto.INT16, [2], [1, 2]),
                              default_tensor=helper.make_tensor("d", TensorProto.INT16, [1], [0])),
             helper.make_node("Equal", ["x", "words"], ["same"])],
            [vi("x", TensorProto.STRING, [3])],
            [vi("pieces", TensorProto.STRING, None), vi("match", TensorProto.BOOL, [3]),
             vi("joined", TensorProto.STRING, None), vi("ids", TensorProto.INT16, [3]), vi("same", TensorProto.BOOL, [3])],
            [helper.make_tensor("words", TensorProto.STRING, [3], [b"a", b"b c", "d \u00e9 f g".encode()])],
            opset=20, extra_imports=[helper.make_opsetid("ai.onnx.ml", 4)]),
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
