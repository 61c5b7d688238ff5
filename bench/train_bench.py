#!/usr/bin/env python3
"""Training-step benchmark: OneFlow (liboneflow.so's training C ABI, through ctypes) vs PyTorch CPU.

One training step = forward + backward + Adam update, on
  * the MLP 784-1024-1024-10 at batch 128 (softmax cross-entropy appended to the logits),
  * a 4-layer transformer encoder (d=256, 4 heads, feed-forward 1024, seq 128, batch 8; MSE
    against a random target appended to its output),
at 1 and 2 threads in the same run. Both engines start from the same weights and inputs and are
timed alternately (block by block) so machine drift hits both alike; the table prints median step
times and the ratio ours/PyTorch (< 1.0: OneFlow is faster). PyTorch is optional: without it the
OneFlow figures are printed and the ratio column says why it is missing. Then the transformer's
training-step memory with and without activation checkpointing.

    python3 bench/train_bench.py [--lib build/liboneflow.so] [--threads 1,2] [--iters N] [--json out.json]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_train_models  # noqa: E402
import oneflow_ctypes  # noqa: E402
from train_ctypes import LOSS_MSE, LOSS_SCE, OneflowTrainer, bind_training  # noqa: E402

def torch_trainer(name, weights, feeds):
    """The same model and loss in PyTorch, started from `weights`; returns step() or None."""
    import torch
    import torch.nn.functional as F

    params = {k: torch.nn.Parameter(torch.from_numpy(v.copy())) for k, v in weights.items()}
    opt = torch.optim.Adam(params.values(), lr=1e-3)
    x = torch.from_numpy(feeds["input"])
    if name == "mlp":
        y = torch.from_numpy(feeds["labels"])

        def forward():
            h = F.relu(x @ params["fc1.weight"] + params["fc1.bias"])
            h = F.relu(h @ params["fc2.weight"] + params["fc2.bias"])
            return F.cross_entropy(h @ params["fc3.weight"] + params["fc3.bias"], y)
    else:
        t = torch.from_numpy(feeds["target"])

        def forward():
            return make_train_models.torch_transformer_loss(torch, params, x, t)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        opt.step()
        return float(loss)

    return step


def median_ms(fn, iters):
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return float(np.median(times)) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "liboneflow.so"))
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "train-bench-models"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=10, help="timed steps per block (3 blocks per engine)")
    ap.add_argument("--json")
    args = ap.parse_args()

    lib = oneflow_ctypes.Library(args.lib)
    bind_training(lib)
    os.makedirs(args.models_dir, exist_ok=True)
    mlp_path = os.path.join(args.models_dir, "mlp_784_1024_1024_10.onnx")
    tr_path = os.path.join(args.models_dir, "transformer_encoder.onnx")
    if not (os.path.exists(mlp_path) and os.path.exists(tr_path)):
        make_train_models.make_mlp(mlp_path)
        make_train_models.make_transformer(tr_path)
    try:
        import torch
        torch_note = f"torch {torch.__version__}"
    except ImportError:
        torch = None
        torch_note = ("PyTorch is not installed: PyPI's torch wheel pulls several GB of CUDA libraries and the CPU "
                      "wheel index is not reachable here, so the comparison column is empty")
    rng = np.random.default_rng(0)
    cases = [
        ("mlp", "MLP 784-1024-1024-10, batch 128", mlp_path, LOSS_SCE, "logits", "labels",
         {"input": rng.standard_normal((128, 784)).astype(np.float32),
          "labels": rng.integers(0, 10, 128).astype(np.int64)}, make_train_models.mlp_weights()),
        ("transformer", "transformer encoder 4x(d256, 4 heads), seq 128, batch 8", tr_path, LOSS_MSE, "output", "target",
         {"input": rng.standard_normal((8, 128, 256)).astype(np.float32),
          "target": rng.standard_normal((8, 128, 256)).astype(np.float32)}, make_train_models.transformer_weights()),
    ]
    print(f"liboneflow {lib.version()}; {torch_note}")
    results = []
    print(f"{'model':<58} {'threads':>7} {'oneflow ms':>11} {'torch ms':>9} {'ratio':>6}")
    for threads in [int(t) for t in args.threads.split(",")]:
        if torch is not None:
            torch.set_num_threads(threads)
        for key, title, path, loss, logits, labels, feeds, weights in cases:
            ours = OneflowTrainer(lib, path, threads, loss, logits, labels)
            ref = torch_trainer(key, weights, feeds) if torch is not None else None
            for _ in range(3):  # warm-up: plans, arenas, caches
                ours.step(feeds)
                if ref:
                    ref()
            ours_ms, ref_ms = [], []
            for _ in range(3):
                ours_ms.append(median_ms(lambda: ours.step(feeds), args.iters))
                if ref:
                    ref_ms.append(median_ms(ref, args.iters))
            o = float(np.median(ours_ms))
            r = float(np.median(ref_ms)) if ref_ms else None
            ratio = f"{o / r:6.2f}" if r else "   n/a"
            print(f"{title:<58} {threads:>7} {o:>11.2f} {(f'{r:.2f}' if r else 'n/a'):>9} {ratio}")
            results.append({"model": key, "threads": threads, "oneflow_ms": o, "torch_ms": r,
                            "ratio": (o / r) if r else None})
            ours.close()

    key, title, path, loss, logits, labels, feeds, _ = cases[1]
    mem = {}
    for ckpt in (False, True):
        t = OneflowTrainer(lib, path, 2, loss, logits, labels, checkpointing=ckpt)
        t.step(feeds)
        t.step(feeds)
        mem[ckpt] = t.memory()
        t.close()
    print(f"\nactivation checkpointing, {title} (MiB):")
    print(f"{'':<26} {'forward arena':>13} {'kept':>8} {'backward arena':>14} {'kept+backward':>13} {'peak':>8}")
    for ckpt in (False, True):
        m = mem[ckpt]
        act = m["saved_activation_bytes"] + m["backward_arena_bytes"]
        print(f"{'checkpointing ' + ('on' if ckpt else 'off'):<26} {m['forward_arena_bytes'] / 2**20:>13.1f} "
              f"{m['saved_activation_bytes'] / 2**20:>8.1f} {m['backward_arena_bytes'] / 2**20:>14.1f} "
              f"{act / 2**20:>13.1f} {m['peak_bytes'] / 2**20:>8.1f}")
    off, on = mem[False], mem[True]
    cut_peak = 1 - on["peak_bytes"] / off["peak_bytes"]
    cut_kept = 1 - on["saved_activation_bytes"] / max(off["saved_activation_bytes"], 1)
    print(f"peak cut by {100 * cut_peak:.1f}%, kept activations cut by {100 * cut_kept:.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": results, "checkpointing": {"off": off, "on": on, "peak_cut": cut_peak},
                       "torch": torch_note}, f, indent=2)


if __name__ == "__main__":
    main()
