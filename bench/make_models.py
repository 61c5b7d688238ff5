#!/usr/bin/env python3
"""Generates the bench models (ONNX, opset 17) with onnx.helper and seeded numpy weights.

The models are written to bench/models/ (git-ignored) and never committed: the same seed always
produces the same files. Each model is checked with onnx.checker and, unless --no-verify, run once
in onnxruntime. Usage: python3 bench/make_models.py [--models mlp,cnn,...] [--force] [--out DIR]

MODELS below is also the bench's registry: for each model, its file name, the batch sizes to bench,
the default iteration count and how to make its inputs, so run_bench.py and check_outputs.py share
one definition.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deployed_models  # noqa: E402

OPSET = 17
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "models")


class _Builder:
    """Accumulates nodes and initializers; names are generated so graphs read like an exporter's."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self._n = 0

    def _name(self, prefix):
        self._n += 1
        return f"{prefix}_{self._n}"

    def const(self, prefix, array):
        name = self._name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, prefix, shape, fan_in, gain=2.0):
        """He-style init so activations keep a sane magnitude through deep stacks."""
        w = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(gain / fan_in))
        return self.const(prefix, w.astype(np.float32))

    def bias(self, prefix, n, scale=0.1):
        return self.const(prefix, (self.rng.standard_normal(n) * scale).astype(np.float32))

    def op(self, op_type, inputs, prefix=None, **attrs):
        out = self._name(prefix or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=self._name(op_type), **attrs))
        return out

    def model(self, name, inputs, outputs, final_names, opset=OPSET):
        # Rename the last value of each output so graph outputs have stable, readable names.
        for node in self.nodes:
            for i, o in enumerate(node.output):
                if o in final_names:
                    node.output[i] = final_names[o]
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="oneflow-bench")
        m.ir_version = 8 if opset <= 17 else 9  # the oldest IR that carries the opset
        return m


def _f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


# ---- mlp: 784-1024-1024-10 ------------------------------------------------------------------

def make_mlp(seed=1):
    b = _Builder(seed)
    x = "input"
    dims = [784, 1024, 1024, 10]
    for i in range(3):
        w = b.weight(f"fc{i}.weight", (dims[i], dims[i + 1]), dims[i])
        x = b.op("MatMul", [x, w])
        x = b.op("Add", [x, b.bias(f"fc{i}.bias", dims[i + 1])])
        if i < 2:
            x = b.op("Relu", [x])
    return b.model("mlp", [_f32("input", ["N", 784])], [_f32("logits", ["N", 10])], {x: "logits"})


# ---- lstm / gru: 2 stacked bidirectional layers, hidden 256, input 256 --------------------------

def _make_recurrent(kind, seed=8, layers=2, hidden=256, features=256):
    """Two bidirectional layers as exporters write them: [seq, batch, features] in, each layer's
    Y [seq, 2, batch, hidden] transposed and reshaped to [seq, batch, 2*hidden] for the next."""
    def make():
        b = _Builder(seed)
        gates = {"LSTM": 4, "GRU": 3}[kind]
        x, width = "input", features
        for layer in range(layers):
            w = b.weight(f"rnn{layer}.W", (2, gates * hidden, width), width, gain=1.0)
            r = b.weight(f"rnn{layer}.R", (2, gates * hidden, hidden), hidden, gain=1.0)
            bias = b.const(f"rnn{layer}.B", (b.rng.standard_normal((2, 2 * gates * hidden)) * 0.1).astype(np.float32))
            attrs = dict(direction="bidirectional", hidden_size=hidden)
            if kind == "GRU":
                attrs["linear_before_reset"] = 1  # what torch's exporter writes for nn.GRU
            y = b.op(kind, [x, w, r, bias], **attrs)
            y = b.op("Transpose", [y], perm=[0, 2, 1, 3])
            x = b.op("Reshape", [y, b.const("shape", np.array([0, 0, 2 * hidden], np.int64))])
            width = 2 * hidden
        return b.model(kind.lower(), [_f32("input", ["S", "N", features])], [_f32("output", ["S", "N", 2 * hidden])],
                       {x: "output"})
    return make


# ---- cnn: 2x (Conv3x3 + Relu + MaxPool) + Gemm 128 + Relu + Gemm 10 on 3x32x32 -----------------

def make_cnn(seed=2):
    b = _Builder(seed)
    x = "input"
    cin = 3
    for i, cout in enumerate([32, 64]):
        w = b.weight(f"conv{i}.weight", (cout, cin, 3, 3), cin * 9)
        x = b.op("Conv", [x, w, b.bias(f"conv{i}.bias", cout)], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                 strides=[1, 1], dilations=[1, 1], group=1)
        x = b.op("Relu", [x])
        x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        cin = cout
    x = b.op("Flatten", [x], axis=1)
    # Exporters write nn.Linear as Gemm with transB=1 (weight stored [out, in]).
    x = b.op("Gemm", [x, b.weight("fc0.weight", (128, 64 * 8 * 8), 64 * 8 * 8), b.bias("fc0.bias", 128)],
             alpha=1.0, beta=1.0, transB=1)
    x = b.op("Relu", [x])
    x = b.op("Gemm", [x, b.weight("fc1.weight", (10, 128), 128), b.bias("fc1.bias", 10)],
             alpha=1.0, beta=1.0, transB=1)
    return b.model("cnn", [_f32("input", ["N", 3, 32, 32])], [_f32("logits", ["N", 10])], {x: "logits"})


# ---- transformer: 4-layer post-LN encoder, d=256, 4 heads, ffn 1024, erf-GELU ----------------------

def make_transformer(seed=3, layers=4, d=256, heads=4, ffn=1024):
    b = _Builder(seed)
    dh = d // heads
    x = "input"

    def linear(x, fin, fout, prefix):
        x = b.op("MatMul", [x, b.weight(prefix + ".weight", (fin, fout), fin, gain=1.0)])
        return b.op("Add", [x, b.bias(prefix + ".bias", fout, 0.02)])

    def layer_norm(x, prefix):
        scale = b.const(prefix + ".weight", (1 + 0.1 * b.rng.standard_normal(d)).astype(np.float32))
        return b.op("LayerNormalization", [x, scale, b.bias(prefix + ".bias", d, 0.05)], axis=-1,
                    epsilon=1e-5)

    split_heads = b.const("shape_split_heads", np.array([0, 0, heads, dh], dtype=np.int64))
    merge_heads = b.const("shape_merge_heads", np.array([0, 0, d], dtype=np.int64))
    inv_scale = b.const("sqrt_head_dim", np.array(np.sqrt(dh), dtype=np.float32))
    sqrt2 = b.const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    one = b.const("one", np.array(1.0, dtype=np.float32))
    half = b.const("half", np.array(0.5, dtype=np.float32))

    for l in range(layers):
        p = f"layer{l}"
        q = b.op("Reshape", [linear(x, d, d, p + ".q"), split_heads])
        k = b.op("Reshape", [linear(x, d, d, p + ".k"), split_heads])
        v = b.op("Reshape", [linear(x, d, d, p + ".v"), split_heads])
        q = b.op("Transpose", [q], perm=[0, 2, 1, 3])      # [B, H, S, dh]
        k = b.op("Transpose", [k], perm=[0, 2, 3, 1])      # [B, H, dh, S]
        v = b.op("Transpose", [v], perm=[0, 2, 1, 3])      # [B, H, S, dh]
        scores = b.op("Div", [b.op("MatMul", [q, k]), inv_scale])
        probs = b.op("Softmax", [scores], axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_heads])
        x = layer_norm(b.op("Add", [x, linear(ctx, d, d, p + ".attn_out")]), p + ".ln1")
        h = linear(x, d, ffn, p + ".ffn1")
        # GELU as exporters write it: 0.5 * h * (1 + erf(h / sqrt(2))).
        g = b.op("Add", [b.op("Erf", [b.op("Div", [h, sqrt2])]), one])
        h = b.op("Mul", [b.op("Mul", [h, g]), half])
        x = layer_norm(b.op("Add", [x, linear(h, ffn, d, p + ".ffn2")]), p + ".ln2")
    return b.model("transformer", [_f32("input", ["batch", "seq", d])], [_f32("output", ["batch", "seq", d])],
                   {x: "output"})


# ---- resnet18: torchvision layout, explicit BatchNormalization after every conv -------------------

def make_resnet18(seed=4, num_classes=1000):
    b = _Builder(seed)

    def conv_bn(x, cin, cout, k, stride, prefix, relu):
        w = b.weight(prefix + ".conv.weight", (cout, cin, k, k), cin * k * k)
        pad = k // 2
        x = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                 dilations=[1, 1], group=1)
        scale = b.const(prefix + ".bn.weight", b.rng.uniform(0.5, 1.0, cout).astype(np.float32))
        shift = b.bias(prefix + ".bn.bias", cout, 0.1)
        mean = b.bias(prefix + ".bn.running_mean", cout, 0.1)
        var = b.const(prefix + ".bn.running_var", b.rng.uniform(0.5, 1.5, cout).astype(np.float32))
        x = b.op("BatchNormalization", [x, scale, shift, mean, var], epsilon=1e-5, momentum=0.9)
        return b.op("Relu", [x]) if relu else x

    x = conv_bn("input", 3, 64, 7, 2, "conv1", relu=True)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for blk in range(2):
            p = f"layer{stage + 1}.{blk}"
            stride = 2 if (stage > 0 and blk == 0) else 1
            y = conv_bn(x, cin, cout, 3, stride, p + ".1", relu=True)
            y = conv_bn(y, cout, cout, 3, 1, p + ".2", relu=False)
            identity = x
            if stride != 1 or cin != cout:
                identity = conv_bn(x, cin, cout, 1, stride, p + ".downsample", relu=False)
            x = b.op("Relu", [b.op("Add", [y, identity])])
            cin = cout
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x], axis=1)
    x = b.op("Gemm", [x, b.weight("fc.weight", (num_classes, 512), 512, gain=1.0), b.bias("fc.bias", num_classes)],
             alpha=1.0, beta=1.0, transB=1)
    return b.model("resnet18", [_f32("input", ["N", 3, 224, 224])], [_f32("logits", ["N", num_classes])],
                   {x: "logits"})


# ---- tiny: Add + Relu on two inputs (a smoke test of the harness itself) ------------------------------

def make_tiny(seed=5):
    b = _Builder(seed)
    y = b.op("Relu", [b.op("Add", ["a", "b"])])
    return b.model("tiny", [_f32("a", ["N", 4096]), _f32("b", ["N", 4096])], [_f32("y", ["N", 4096])], {y: "y"})


# ---- elementwise: one activation over 1 M floats, as deployed models write it ------------------------
# Each row is the op (or the few nodes an exporter writes for it) alone on a [4, 512, 512] input, so
# the row times the math and the memory traffic, nothing else. Softmax and LogSoftmax take the last
# axis of an attention-score shape [8, 4, 128, 128].

def _gelu_erf(b, x):  # torch.nn.GELU() as torch.onnx writes it below opset 20
    e = b.op("Erf", [b.op("Div", [x, b.const("sqrt2", np.float32(np.sqrt(2.0)))])])
    return b.op("Mul", [b.op("Mul", [x, b.op("Add", [e, b.const("one", np.float32(1.0))])]),
                        b.const("half", np.float32(0.5))])


ELEMENTWISE = {
    # name: (build(builder, x) -> y, opset)
    "exp": (lambda b, x: b.op("Exp", [x]), OPSET),
    "log": (lambda b, x: b.op("Log", [x]), OPSET),
    "tanh": (lambda b, x: b.op("Tanh", [x]), OPSET),
    "sigmoid": (lambda b, x: b.op("Sigmoid", [x]), OPSET),
    "erf": (lambda b, x: b.op("Erf", [x]), OPSET),
    "gelu_erf": (_gelu_erf, OPSET),
    "gelu": (lambda b, x: b.op("Gelu", [x]), 20),
    "gelu_tanh": (lambda b, x: b.op("Gelu", [x], approximate="tanh"), 20),
    "silu": (lambda b, x: b.op("Mul", [x, b.op("Sigmoid", [x])]), OPSET),  # torch.nn.SiLU as exported
    "softplus": (lambda b, x: b.op("Softplus", [x]), OPSET),
    "mish": (lambda b, x: b.op("Mish", [x]), 18),
    "hardswish": (lambda b, x: b.op("HardSwish", [x]), OPSET),
    "hardsigmoid": (lambda b, x: b.op("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5), OPSET),
    "elu": (lambda b, x: b.op("Elu", [x]), OPSET),
    "leakyrelu": (lambda b, x: b.op("LeakyRelu", [x], alpha=0.1), OPSET),
    "softmax": (lambda b, x: b.op("Softmax", [x], axis=-1), OPSET),
    "logsoftmax": (lambda b, x: b.op("LogSoftmax", [x], axis=-1), OPSET),
}
_ATTENTION_SCORES = (8, 4, 128, 128)
_FLAT = (4, 512, 512)


def _elementwise_shape(op):
    return _ATTENTION_SCORES if op in ("softmax", "logsoftmax") else _FLAT


def _make_elementwise(op):
    def make(seed=6):
        build, opset = ELEMENTWISE[op]
        b = _Builder(seed)
        y = build(b, "x")
        shape = list(_elementwise_shape(op))
        return b.model(f"ew_{op}", [_f32("x", shape)], [_f32("y", shape)], {y: "y"}, opset=opset)
    return make


def _elementwise_inputs(op):
    shape = _elementwise_shape(op)
    if op == "log":  # positive, over many binades
        return lambda batch, rng: {"x": np.exp(rng.uniform(-20, 20, shape)).astype(np.float32)}
    # N(0, 3): both saturated tails and the curved middle of every activation
    return lambda batch, rng: {"x": rng.standard_normal(shape, dtype=np.float32) * np.float32(3)}


# ---- conv shapes: one conv layer each, the shapes deployed models are made of ------------------
# A 1-D conv as TF and JAX exporters write it (k x 1 on [N, C, L, 1]) beside the same conv as 1 x k
# and as Conv1d; depthwise, dilated, strided, grouped, asymmetric pads (TF's SAME at stride 2),
# ConvTranspose; then a 3x3 conv followed by each activation a conv is fused with.

def _act_silu(b, x):
    return b.op("Mul", [x, b.op("Sigmoid", [x])])


_CONV_ACTS = {
    "silu": _act_silu,
    "hardswish": lambda b, x: b.op("HardSwish", [x]),
    "gelu": _gelu_erf,
    "tanh": lambda b, x: b.op("Tanh", [x]),
    "sigmoid": lambda b, x: b.op("Sigmoid", [x]),
    "leakyrelu": lambda b, x: b.op("LeakyRelu", [x], alpha=0.1),
    "clip": lambda b, x: b.op("Clip", [x, b.const("lo", np.float32(0)), b.const("hi", np.float32(6))]),
    "relu": lambda b, x: b.op("Relu", [x]),
}

CONV_SHAPES = {
    # name: (input shape, weight shape, attributes[, op]); the bias has weight shape[0] values
    # (ConvTranspose: shape[1] * group)
    "k5x1": ((4, 256, 512, 1), (256, 256, 5, 1), dict(pads=[2, 0, 2, 0])),
    "1x5": ((4, 256, 1, 512), (256, 256, 1, 5), dict(pads=[0, 2, 0, 2])),
    "conv1d_k5": ((4, 256, 512), (256, 256, 5), dict(pads=[2, 2])),
    "depthwise3x3": ((1, 96, 112, 112), (96, 1, 3, 3), dict(pads=[1, 1, 1, 1], group=96)),
    "depthwise3x3_s2": ((1, 96, 112, 112), (96, 1, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2], group=96)),
    "dilated3x3": ((1, 64, 56, 56), (64, 64, 3, 3), dict(pads=[2, 2, 2, 2], dilations=[2, 2])),
    "strided3x3": ((1, 64, 112, 112), (128, 64, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2])),
    "grouped3x3": ((1, 128, 56, 56), (128, 32, 3, 3), dict(pads=[1, 1, 1, 1], group=4)),
    "same_s2": ((1, 64, 112, 112), (64, 64, 3, 3), dict(pads=[0, 0, 1, 1], strides=[2, 2])),
    "convtranspose4x4_s2": ((1, 64, 56, 56), (64, 32, 4, 4), dict(pads=[1, 1, 1, 1], strides=[2, 2]),
                            "ConvTranspose"),
}
CONV_SHAPES.update({f"3x3_{act}": ((1, 64, 56, 56), (64, 64, 3, 3), dict(pads=[1, 1, 1, 1])) for act in _CONV_ACTS})


def _conv_out_shape(x_shape, w_shape, attrs, op):
    rank = len(x_shape) - 2
    pads = attrs.get("pads", [0] * 2 * rank)
    strides, dilations = attrs.get("strides", [1] * rank), attrs.get("dilations", [1] * rank)
    out = [x_shape[0], w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)]
    for i in range(rank):
        span = dilations[i] * (w_shape[2 + i] - 1) + 1
        if op == "Conv":
            out.append((x_shape[2 + i] + pads[i] + pads[rank + i] - span) // strides[i] + 1)
        else:
            out.append((x_shape[2 + i] - 1) * strides[i] - pads[i] - pads[rank + i] + span)
    return out


def _make_conv_shape(name):
    def make(seed=7):
        x_shape, w_shape, attrs, *rest = CONV_SHAPES[name]
        op = rest[0] if rest else "Conv"
        b = _Builder(seed)
        groups = attrs.get("group", 1)
        fan_in = int(np.prod(w_shape[1:])) if op == "Conv" else int(w_shape[0] // groups * np.prod(w_shape[2:]))
        n_out = w_shape[0] if op == "Conv" else w_shape[1] * groups
        y = b.op(op, ["x", b.weight("w", w_shape, fan_in), b.bias("b", n_out)], **attrs)
        act = name[len("3x3_"):] if name.startswith("3x3_") else None
        if act:
            y = _CONV_ACTS[act](b, y)
        y_shape = _conv_out_shape(x_shape, w_shape, attrs, op)
        return b.model(f"conv_{name}", [_f32("x", list(x_shape))], [_f32("y", y_shape)], {y: "y"})
    return make


def _conv_inputs(name):
    shape = CONV_SHAPES[name][0]
    return lambda batch, rng: {"x": rng.standard_normal(shape, dtype=np.float32)}


# ---- registry ------------------------------------------------------------------------------------

def _dynamic_int8(make_float):
    """`make_float`'s model as onnxruntime.quantization.quantize_dynamic writes it (int8 weights,
    uint8 activations quantized at run time: DynamicQuantizeLinear, MatMulInteger, Cast, Mul):
    the int8 models people ship to CPUs, made by the tool that makes them."""
    def make():
        import tempfile

        from onnxruntime.quantization import QuantType, quantize_dynamic
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
            onnx.save(make_float(), src)
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
            return onnx.load(dst)
    return make


def _static_int8(make_float, inputs, calibration_batches=4):
    """`make_float`'s model as onnxruntime.quantization.quantize_static writes it by default: the
    QDQ format (QuantizeLinear/DequantizeLinear around float ops), uint8 activations and per-channel
    int8 weights, calibrated by MinMax on seeded inputs, after quant_pre_process as onnxruntime's
    guide says: what a user ships from a float CNN."""
    def make():
        import tempfile

        from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
        from onnxruntime.quantization.shape_inference import quant_pre_process

        class Reader(CalibrationDataReader):
            def __init__(self):
                rng = np.random.default_rng(99)
                self.it = iter([inputs(1, rng) for _ in range(calibration_batches)])

            def get_next(self):
                return next(self.it, None)

        with tempfile.TemporaryDirectory() as tmp:
            src, pre, dst = (os.path.join(tmp, f) for f in ("float.onnx", "pre.onnx", "int8.onnx"))
            onnx.save(make_float(), src)
            quant_pre_process(src, pre)  # the documented first step: folds BatchNorm, infers shapes
            quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                            weight_type=QuantType.QInt8, per_channel=True)
            return onnx.load(dst)
    return make


def _image_inputs(shape):
    return lambda batch, rng: {"input": rng.standard_normal((batch,) + shape, dtype=np.float32)}


MODELS = {
    # name: builder, batches to bench, default timed iterations, inputs(batch, rng)[, rtol of the
    # output check against onnxruntime when not run_bench's default]
    "mlp": dict(make=make_mlp, batches=[1, 64], iters=600, inputs=_image_inputs((784,))),
    "cnn": dict(make=make_cnn, batches=[1, 16], iters=600, inputs=_image_inputs((3, 32, 32))),
    "transformer": dict(make=make_transformer, batches=[8], iters=60,
                        inputs=lambda batch, rng: {"input": rng.standard_normal((batch, 128, 256), dtype=np.float32)}),
    "resnet18": dict(make=make_resnet18, batches=[1], iters=60, inputs=_image_inputs((3, 224, 224))),
    "mlp_int8": dict(make=_dynamic_int8(make_mlp), batches=[1, 64], iters=600, inputs=_image_inputs((784,))),
    # Dynamic quantization re-quantizes every activation from its range at run time, so a float
    # difference far below 1e-6 (a reduction's order in LayerNorm or Softmax) can move a value
    # across a rounding step and the next layers carry the step on: onnxruntime's own output moves
    # by 1.2% of the range between its optimization levels on this model. The check allows 3%.
    "transformer_int8": dict(make=_dynamic_int8(make_transformer), batches=[8], iters=60, rtol=0.03,
                             inputs=lambda batch, rng: {"input": rng.standard_normal((batch, 128, 256),
                                                                                     dtype=np.float32)}),
    # ResNet-18 through quantize_static (QDQ format); its output check allows 2% of the range (a
    # value near a rounding tie may round one step apart in one layer, and the next layers carry it).
    "resnet18_int8": dict(make=_static_int8(make_resnet18, _image_inputs((3, 224, 224))), batches=[1], iters=60,
                          rtol=0.02, inputs=_image_inputs((3, 224, 224))),
    # Recurrent layers (the size: 2 bidirectional layers, hidden 256, sequence 64, batch 8).
    "lstm": dict(make=_make_recurrent("LSTM"), batches=[8], iters=30,
                 inputs=lambda batch, rng: {"input": rng.standard_normal((64, batch, 256), dtype=np.float32)}),
    "gru": dict(make=_make_recurrent("GRU"), batches=[8], iters=30,
                inputs=lambda batch, rng: {"input": rng.standard_normal((64, batch, 256), dtype=np.float32)}),
    "tiny": dict(make=make_tiny, batches=[1, 64], iters=200,
                 inputs=lambda batch, rng: {"a": rng.standard_normal((batch, 4096), dtype=np.float32),
                                            "b": rng.standard_normal((batch, 4096), dtype=np.float32)}),
}
# The elementwise rows: `--models elementwise` benches them all. The input shape is fixed (batch 1).
MODELS.update({f"ew_{op}": dict(make=_make_elementwise(op), batches=[1], iters=50, inputs=_elementwise_inputs(op))
               for op in ELEMENTWISE})
# The conv-shape rows: `--models convshapes`.
MODELS.update({f"conv_{name}": dict(make=_make_conv_shape(name), batches=[1], iters=30, inputs=_conv_inputs(name))
               for name in CONV_SHAPES})
# The deployed architectures (deployed_models.py, exported by torch): `--models deployed`.
MODELS.update(deployed_models.registry())
GROUPS = {"elementwise": [f"ew_{op}" for op in ELEMENTWISE],
          "convshapes": [f"conv_{name}" for name in CONV_SHAPES],
          "deployed": list(deployed_models.DEPLOYED),
          "recurrent": ["lstm", "gru"],
          "int8": ["mlp_int8", "transformer_int8", "resnet18_int8"]}
DEFAULT_MODELS = ["mlp", "cnn", "transformer", "resnet18"]


def expand(names):
    """Model names with each group name (GROUPS) replaced by its members."""
    out = []
    for name in names:
        out.extend(GROUPS.get(name, [name]))
    return out


def model_path(name, out_dir=DEFAULT_OUT):
    return os.path.join(out_dir, name + ".onnx")


def make_inputs(name, batch, seed=0):
    """The bench inputs for `name` at `batch`: deterministic for a (name, batch, seed)."""
    rng = np.random.default_rng([seed, batch, sum(map(ord, name))])
    return MODELS[name]["inputs"](batch, rng)


def verify_with_ort(path, name):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    batch = MODELS[name]["batches"][0]
    outs = sess.run(None, make_inputs(name, batch))
    for o in outs:
        if not np.all(np.isfinite(o)):
            raise RuntimeError(f"{name}: onnxruntime produced non-finite outputs")
    return [o.shape for o in outs]


def ensure(names, out_dir=DEFAULT_OUT, force=False, verify=True, log=print):
    """Writes each missing (or, with force, every) model; returns {name: path}."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name in names:
        if name not in MODELS:
            raise KeyError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
        path = model_path(name, out_dir)
        if force or not os.path.exists(path):
            model = MODELS[name]["make"]()
            onnx.checker.check_model(model, full_check=True)
            tmp = f"{path}.{os.getpid()}.tmp"  # ctest runs several checks that may write it at once
            onnx.save(model, tmp)
            if verify:
                shapes = verify_with_ort(tmp, name)
            os.replace(tmp, path)
            log(f"wrote {os.path.relpath(path)} ({os.path.getsize(path) / 1e6:.1f} MB, "
                f"{len(model.graph.node)} nodes" + (f", ORT output {shapes}" if verify else "") + ")")
        paths[name] = path
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS + ["tiny"]),
                    help=f"comma-separated subset of: {', '.join(list(GROUPS) + list(MODELS))}")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default bench/models)")
    ap.add_argument("--force", action="store_true", help="regenerate even if the file exists")
    ap.add_argument("--no-verify", action="store_true", help="skip the onnxruntime smoke run")
    args = ap.parse_args(argv)
    ensure(expand([m for m in args.models.split(",") if m]), args.out, args.force, not args.no_verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
