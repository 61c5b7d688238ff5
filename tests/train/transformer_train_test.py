#!/usr/bin/env python3
"""A transformer encoder block trained through the C ABI (liboneflow.so via ctypes).

1. One step's gradients of every parameter match an independent numpy reference: central finite
   differences, in float64, of a numpy implementation of the same block and MSE loss.
2. The loss falls on a synthetic task (reproduce the input sequence rolled by one position, which
   needs attention): Adam for 60 steps must cut it by at least half. With activation
   checkpointing on, the gradients are the same.
3. Activation checkpointing cuts a 4-layer encoder's training-step memory by at least 40%.

    python3 transformer_train_test.py LIBONEFLOW WORK_DIR
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import make_train_models  # noqa: E402
import oneflow_ctypes  # noqa: E402
from train_ctypes import LOSS_MSE, OneflowTrainer, bind_training  # noqa: E402

D, HEADS, FF, LAYERS, B, S = 16, 2, 32, 1, 2, 8


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def forward(p, x, t):
    h = x
    dh = D // HEADS
    for l in range(LAYERS):
        q = lambda n: p[f"layer{l}.{n}"]  # noqa: E731
        a = layer_norm(h, q("ln1.weight"), q("ln1.bias"))
        heads = lambda n: (a @ q(n + ".weight") + q(n + ".bias")).reshape(B, S, HEADS, dh).transpose(0, 2, 1, 3)  # noqa
        qh, kh, vh = heads("q"), heads("k"), heads("v")
        sc = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(dh)
        e = np.exp(sc - sc.max(-1, keepdims=True))
        ctx = ((e / e.sum(-1, keepdims=True)) @ vh).transpose(0, 2, 1, 3).reshape(B, S, D)
        h = h + ctx @ q("o.weight") + q("o.bias")
        a = layer_norm(h, q("ln2.weight"), q("ln2.bias"))
        h = h + np.maximum(a @ q("ff1.weight") + q("ff1.bias"), 0) @ q("ff2.weight") + q("ff2.bias")
    return np.mean((h - t) ** 2)


def numeric_grads(params, x, t, eps=1e-6):
    p = {k: v.astype(np.float64) for k, v in params.items()}
    grads = {}
    for k, v in p.items():
        g = np.zeros(v.size)
        flat = v.reshape(-1)
        for i in range(v.size):
            old = flat[i]
            flat[i] = old + eps
            up = forward(p, x, t)
            flat[i] = old - eps
            down = forward(p, x, t)
            flat[i] = old
            g[i] = (up - down) / (2 * eps)
        grads[k] = g
    return grads


def main():
    lib_path, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "tiny_transformer.onnx")
    make_train_models.make_transformer(model, D=D, HEADS=HEADS, FF=FF, LAYERS=LAYERS, seed=5)
    params = make_train_models.transformer_weights(5, D, FF, LAYERS)
    rng = np.random.default_rng(3)
    # LayerNorm weights of 1 and biases of 0 would hide mistakes in their gradients: perturb them
    # in the numpy copy and push the same values into the session.
    for k in params:
        if ".ln" in k or k.endswith(".bias"):
            params[k] = (params[k] + rng.standard_normal(params[k].shape) * 0.1).astype(np.float32)
    lib = oneflow_ctypes.Library(lib_path)
    bind_training(lib)
    failures = 0

    x = rng.standard_normal((B, S, D)).astype(np.float32)
    t = rng.standard_normal((B, S, D)).astype(np.float32)
    want = numeric_grads(params, x.astype(np.float64), t.astype(np.float64))
    for ckpt in (False, True):
        tr = OneflowTrainer(lib, model, 2, LOSS_MSE, "output", "target", checkpointing=ckpt)
        for k, v in params.items():
            tr.set_parameter(k, v)
        tr.forward_backward({"input": x, "target": t})
        worst = ("", 0.0)
        # Errors relative to each gradient's own scale, floored at 1e-3 of the largest gradient:
        # the key bias's true gradient is zero (softmax ignores a per-row constant), so its
        # float32 rounding noise must not be judged relative to zero.
        floor = 1e-3 * max(float(np.max(np.abs(g))) for g in want.values())
        for k, g in want.items():
            got = tr.gradient(k).astype(np.float64)
            err = float(np.max(np.abs(got - g)) / (np.max(np.abs(g)) + floor))
            if err > worst[1]:
                worst = (k, err)
        ok = worst[1] < 2e-3
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} gradients vs numpy finite differences (checkpointing {'on' if ckpt else 'off'}):"
              f" worst relative error {worst[1]:.2e} ({worst[0]}), {len(want)} parameters")
        tr.close()

    # Synthetic task: output = input rolled by one position along the sequence.
    tr = OneflowTrainer(lib, model, 2, LOSS_MSE, "output", "target", lr=3e-3)
    xs = rng.standard_normal((B, S, D)).astype(np.float32)
    target = np.roll(xs, 1, axis=1)
    feeds = {"input": xs, "target": target}
    losses = [tr.step(feeds) for _ in range(60)]
    ok = losses[-1] < 0.5 * losses[0]
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} loss falls on the rolled-sequence task: {losses[0]:.4f} -> {losses[-1]:.4f} "
          f"after 60 Adam steps")
    tr.close()
    # Activation checkpointing on a 4-layer encoder: the training step's planned memory (forward
    # arena + kept activations + backward arena) must shrink by at least 40%.
    deep = os.path.join(work, "deep_transformer.onnx")
    make_train_models.make_transformer(deep, D=64, HEADS=4, FF=256, LAYERS=4, seed=6)
    feeds = {"input": rng.standard_normal((4, 64, 64)).astype(np.float32),
             "target": rng.standard_normal((4, 64, 64)).astype(np.float32)}
    peaks = {}
    for ckpt in (False, True):
        tr = OneflowTrainer(lib, deep, 2, LOSS_MSE, "output", "target", checkpointing=ckpt)
        tr.step(feeds)
        peaks[ckpt] = tr.memory()
        tr.close()
    cut = 1 - peaks[True]["peak_bytes"] / peaks[False]["peak_bytes"]
    ok = cut >= 0.40
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} activation checkpointing cuts the 4-layer encoder's step memory by {100 * cut:.1f}% "
          f"({peaks[False]['peak_bytes']} -> {peaks[True]['peak_bytes']} bytes; kept activations "
          f"{peaks[False]['saved_activation_bytes']} -> {peaks[True]['saved_activation_bytes']})")
    print(f"{4 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
