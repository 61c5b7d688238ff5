#!/usr/bin/env python3
"""Untrained models for the training benchmark (bench/train_bench.py), as ONNX with numpy weights.

    mlp_784_1024_1024_10.onnx   input [N, 784] -> 1024 -> ReLU -> 1024 -> ReLU -> logits [N, 10]
    transformer_encoder.onnx    input [B, S, 256] -> 4 pre-LayerNorm encoder layers (4 heads,
                                ReLU feed-forward of 1024) -> output [B, S, 256]

`weights()` returns the same numpy weights so a PyTorch copy can start from identical values.

    python3 make_train_models.py OUT_DIR [--small]

--small also writes transformer_encoder_small.onnx: the same structure at d=64, 4 heads, a
feed-forward of 128 (tests feed it seq 16).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, HEADS, FF, LAYERS = 256, 4, 1024, 4


def mlp_weights(seed=1):
    rng = np.random.default_rng(seed)
    dims = [784, 1024, 1024, 10]
    w = {}
    for i in range(3):
        w[f"fc{i + 1}.weight"] = (rng.standard_normal((dims[i], dims[i + 1])) * np.sqrt(2 / dims[i])).astype(np.float32)
        w[f"fc{i + 1}.bias"] = np.zeros(dims[i + 1], np.float32)
    return w


def transformer_weights(seed=2, D=D, FF=FF, LAYERS=LAYERS):
    rng = np.random.default_rng(seed)
    w = {}
    for l in range(LAYERS):
        p = f"layer{l}."
        for n in ["q", "k", "v", "o"]:
            w[p + n + ".weight"] = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
            w[p + n + ".bias"] = np.zeros(D, np.float32)
        w[p + "ff1.weight"] = (rng.standard_normal((D, FF)) * np.sqrt(2 / D)).astype(np.float32)
        w[p + "ff1.bias"] = np.zeros(FF, np.float32)
        w[p + "ff2.weight"] = (rng.standard_normal((FF, D)) / np.sqrt(FF)).astype(np.float32)
        w[p + "ff2.bias"] = np.zeros(D, np.float32)
        for n in ["ln1", "ln2"]:
            w[p + n + ".weight"] = np.ones(D, np.float32)
            w[p + n + ".bias"] = np.zeros(D, np.float32)
    return w


def linear(nodes, x, name, out):
    nodes.append(helper.make_node("MatMul", [x, name + ".weight"], [out + ".mm"]))
    nodes.append(helper.make_node("Add", [out + ".mm", name + ".bias"], [out]))
    return out


def make_mlp(path):
    w = mlp_weights()
    nodes = []
    h = "input"
    for i in range(3):
        out = "logits" if i == 2 else f"h{i + 1}.pre"
        linear(nodes, h, f"fc{i + 1}", out)
        if i < 2:
            nodes.append(helper.make_node("Relu", [out], [f"h{i + 1}"]))
            h = f"h{i + 1}"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 784])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
                          [numpy_helper.from_array(v, k) for k, v in w.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def make_transformer(path, D=D, HEADS=HEADS, FF=FF, LAYERS=LAYERS, seed=2):
    w = transformer_weights(seed, D, FF, LAYERS)
    dh = D // HEADS
    consts = {"heads_shape": np.array([0, 0, HEADS, dh], np.int64), "model_shape": np.array([0, 0, D], np.int64),
              "scale": np.array(1.0 / np.sqrt(dh), np.float32)}
    nodes = []
    x = "input"
    for l in range(LAYERS):
        p = f"layer{l}."
        nodes.append(helper.make_node("LayerNormalization", [x, p + "ln1.weight", p + "ln1.bias"], [p + "ln1"], axis=-1,
                                      epsilon=1e-5))
        for n, perm in [("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])]:
            linear(nodes, p + "ln1", p + n, p + n + "_flat")
            nodes.append(helper.make_node("Reshape", [p + n + "_flat", "heads_shape"], [p + n + "_heads"]))
            nodes.append(helper.make_node("Transpose", [p + n + "_heads"], [p + n + "_t"], perm=perm))
        nodes.append(helper.make_node("MatMul", [p + "q_t", p + "k_t"], [p + "scores_raw"]))
        nodes.append(helper.make_node("Mul", [p + "scores_raw", "scale"], [p + "scores"]))
        nodes.append(helper.make_node("Softmax", [p + "scores"], [p + "probs"], axis=-1))
        nodes.append(helper.make_node("MatMul", [p + "probs", p + "v_t"], [p + "ctx_t"]))
        nodes.append(helper.make_node("Transpose", [p + "ctx_t"], [p + "ctx_heads"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [p + "ctx_heads", "model_shape"], [p + "ctx"]))
        linear(nodes, p + "ctx", p + "o", p + "attn")
        nodes.append(helper.make_node("Add", [x, p + "attn"], [p + "res1"]))
        nodes.append(helper.make_node("LayerNormalization", [p + "res1", p + "ln2.weight", p + "ln2.bias"], [p + "ln2"],
                                      axis=-1, epsilon=1e-5))
        linear(nodes, p + "ln2", p + "ff1", p + "ff1_pre")
        nodes.append(helper.make_node("Relu", [p + "ff1_pre"], [p + "ff1_act"]))
        linear(nodes, p + "ff1_act", p + "ff2", p + "ff2_out")
        out = "output" if l == LAYERS - 1 else p + "out"
        nodes.append(helper.make_node("Add", [p + "res1", p + "ff2_out"], [out]))
        x = out
    inits = [numpy_helper.from_array(v, k) for k, v in list(w.items()) + list(consts.items())]
    g = helper.make_graph(nodes, "transformer_encoder",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["B", "S", D])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["B", "S", D])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def torch_transformer_loss(torch, params, x, target):
    """The encoder of make_transformer written in torch (the benches' PyTorch side): `params` maps the
    weight names of transformer_weights() to torch tensors; returns the MSE loss against `target`
    (computed in f32 when autocast made the output bf16)."""
    import torch.nn.functional as F
    h = x
    for l in range(LAYERS):
        p = lambda n: params[f"layer{l}.{n}"]  # noqa: E731
        a = F.layer_norm(h, (D,), p("ln1.weight"), p("ln1.bias"), 1e-5)
        B, S = a.shape[0], a.shape[1]
        q = (a @ p("q.weight") + p("q.bias")).view(B, S, HEADS, D // HEADS).transpose(1, 2)
        k = (a @ p("k.weight") + p("k.bias")).view(B, S, HEADS, D // HEADS).permute(0, 2, 3, 1)
        v = (a @ p("v.weight") + p("v.bias")).view(B, S, HEADS, D // HEADS).transpose(1, 2)
        ctx = (torch.softmax((q @ k) * (1.0 / np.sqrt(D // HEADS)), dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
        h = h + ctx @ p("o.weight") + p("o.bias")
        a = F.layer_norm(h, (D,), p("ln2.weight"), p("ln2.bias"), 1e-5)
        h = h + F.relu(a @ p("ff1.weight") + p("ff1.bias")) @ p("ff2.weight") + p("ff2.bias")
    return F.mse_loss(h.float(), target)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    make_mlp(os.path.join(out, "mlp_784_1024_1024_10.onnx"))
    make_transformer(os.path.join(out, "transformer_encoder.onnx"))
    if "--small" in sys.argv[2:]:
        make_transformer(os.path.join(out, "transformer_encoder_small.onnx"), D=64, HEADS=4, FF=128)
    print(f"training bench models written to {out}")


if __name__ == "__main__":
    main()
