#!/usr/bin/env python3
"""Writes the optimizer reference cases for tests/train/optimizer_test.cc.

An independent numpy (float64) implementation of the update rules as PyTorch documents them
(torch.optim.SGD, Adam, AdamW; torch.nn.utils.clip_grad_norm_; StepLR/CosineAnnealingLR after a
linear warm-up) runs a few steps on random parameters and gradients; the C++ test feeds the same
float32 inputs to our optimizer and compares. When torch is importable, each numpy case is first
checked against torch.optim itself, so the reference cannot drift from PyTorch's semantics.

    python3 make_optimizer_reference.py OUT_DIR      # writes OUT_DIR/optimizer_reference.txt
"""
import math
import os
import sys

import numpy as np

CASES = [
    # name, optimizer config, max_norm (0 = no clipping), schedule
    ("sgd_plain_wd", dict(kind="sgd", lr=0.1, weight_decay=0.01), 0.0, dict(kind="constant")),
    ("sgd_momentum_dampening", dict(kind="sgd", lr=0.05, momentum=0.9, dampening=0.1), 0.0, dict(kind="constant")),
    ("sgd_nesterov_wd", dict(kind="sgd", lr=0.05, momentum=0.9, nesterov=1, weight_decay=1e-3), 0.0,
     dict(kind="constant")),
    ("adam", dict(kind="adam", lr=1e-2), 0.0, dict(kind="constant")),
    ("adam_l2", dict(kind="adam", lr=1e-2, weight_decay=0.05, beta1=0.8, beta2=0.99, eps=1e-6), 0.0,
     dict(kind="constant")),
    ("adamw", dict(kind="adamw", lr=1e-2, weight_decay=0.1), 0.0, dict(kind="constant")),
    ("adam_clipped", dict(kind="adam", lr=1e-2), 0.5, dict(kind="constant")),
    ("sgd_clipped_step_warmup", dict(kind="sgd", lr=0.1, momentum=0.5), 1.0,
     dict(kind="step", warmup_steps=3, warmup_start_factor=0.25, step_size=2, gamma=0.5)),
    ("adamw_cosine_warmup", dict(kind="adamw", lr=2e-2, weight_decay=0.01), 0.0,
     dict(kind="cosine", warmup_steps=2, warmup_start_factor=0.0, decay_steps=4, min_lr_factor=0.1)),
]
SIZES = [1000, 37]  # one parameter spans the vector body, the other mostly the scalar tail
STEPS = 7

DEFAULTS = dict(lr=1e-3, weight_decay=0.0, momentum=0.0, dampening=0.0, nesterov=0, beta1=0.9, beta2=0.999, eps=1e-8)
SCHED_DEFAULTS = dict(warmup_steps=0, warmup_start_factor=0.0, step_size=1, gamma=0.1, decay_steps=1,
                      min_lr_factor=0.0)


def lr_at(sched, base, step):
    w = sched["warmup_steps"]
    if step < w:
        return base * (sched["warmup_start_factor"] + (1 - sched["warmup_start_factor"]) * step / w)
    t = step - w
    if sched["kind"] == "step":
        return base * sched["gamma"] ** (t // sched["step_size"])
    if sched["kind"] == "cosine":
        m = sched["min_lr_factor"]
        prog = min(t, sched["decay_steps"]) / sched["decay_steps"]
        return base * (m + (1 - m) * 0.5 * (1 + math.cos(math.pi * prog)))
    return base


def reference(cfg, max_norm, sched, params, grads):
    """Runs STEPS updates in float64; returns final params, states, per-step lr and grad norms."""
    p = [x.astype(np.float64) for x in params]
    kind = cfg["kind"]
    state = [[np.zeros_like(x) for _ in range({"sgd": 1 if cfg["momentum"] else 0}.get(kind, 2))] for x in p]
    lrs, norms = [], []
    for step in range(STEPS):
        g = [x.astype(np.float64) for x in grads[step]]
        norm = math.sqrt(sum(float(np.sum(x * x)) for x in g))
        norms.append(norm)
        if max_norm > 0:
            coef = min(1.0, max_norm / (norm + 1e-6))
            g = [x * coef for x in g]
        lr = lr_at(sched, cfg["lr"], step)
        lrs.append(lr)
        wd = cfg["weight_decay"]
        for i in range(len(p)):
            if kind == "sgd":
                d = g[i] + wd * p[i]
                if cfg["momentum"]:
                    buf = d.copy() if step == 0 else cfg["momentum"] * state[i][0] + (1 - cfg["dampening"]) * d
                    state[i][0] = buf
                    d = d + cfg["momentum"] * buf if cfg["nesterov"] else buf
                p[i] = p[i] - lr * d
            else:
                if kind == "adamw":
                    p[i] = p[i] * (1 - lr * wd)
                    gi = g[i]
                else:
                    gi = g[i] + wd * p[i]
                b1, b2, t = cfg["beta1"], cfg["beta2"], step + 1
                state[i][0] = b1 * state[i][0] + (1 - b1) * gi
                state[i][1] = b2 * state[i][1] + (1 - b2) * gi * gi
                denom = np.sqrt(state[i][1]) / math.sqrt(1 - b2 ** t) + cfg["eps"]
                p[i] = p[i] - lr / (1 - b1 ** t) * state[i][0] / denom
    return p, state, lrs, norms


def check_against_torch(cfg, max_norm, params, grads, lrs, expect):
    try:
        import torch
    except ImportError:
        return False
    tp = [torch.tensor(x.astype(np.float64), requires_grad=True) for x in params]
    kind = cfg["kind"]
    if kind == "sgd":
        opt = torch.optim.SGD(tp, lr=lrs[0], momentum=cfg["momentum"], dampening=cfg["dampening"],
                              nesterov=bool(cfg["nesterov"]), weight_decay=cfg["weight_decay"])
    else:
        cls = torch.optim.AdamW if kind == "adamw" else torch.optim.Adam
        opt = cls(tp, lr=lrs[0], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], weight_decay=cfg["weight_decay"])
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = lrs[step]
        for x, g in zip(tp, grads[step]):
            x.grad = torch.tensor(g.astype(np.float64))
        if max_norm > 0:
            torch.nn.utils.clip_grad_norm_(tp, max_norm)
        opt.step()
    for x, e in zip(tp, expect):
        np.testing.assert_allclose(x.detach().numpy(), e, rtol=1e-10, atol=1e-12)
    return True


def fmt(a):
    return " ".join("%.9g" % v for v in np.asarray(a, dtype=np.float64).ravel())


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20261202)
    lines = []
    torch_checked = 0
    for name, cfg_in, max_norm, sched_in in CASES:
        cfg = dict(DEFAULTS, **cfg_in)
        sched = dict(SCHED_DEFAULTS, **sched_in)
        params = [rng.standard_normal(n).astype(np.float32) for n in SIZES]
        grads = [[(rng.standard_normal(n) * 0.3).astype(np.float32) for n in SIZES] for _ in range(STEPS)]
        expect, state, lrs, norms = reference(cfg, max_norm, sched, params, grads)
        torch_checked += check_against_torch(cfg, max_norm, params, grads, lrs, expect)
        lines.append(f"case {name}")
        lines.append("config " + " ".join(f"{k}={cfg[k]}" for k in ["kind"] + list(DEFAULTS)) + f" max_norm={max_norm}")
        lines.append("schedule " + " ".join(f"{k}={sched[k]}" for k in ["kind"] + list(SCHED_DEFAULTS)))
        lines.append(f"sizes {' '.join(map(str, SIZES))} steps {STEPS}")
        for i, x in enumerate(params):
            lines.append(f"param {i} {fmt(x)}")
        for s in range(STEPS):
            for i, g in enumerate(grads[s]):
                lines.append(f"grad {s} {i} {fmt(g)}")
        lines.append(f"lr {fmt(lrs)}")
        lines.append(f"norm {fmt(norms)}")
        for i, x in enumerate(expect):
            lines.append(f"expect {i} {fmt(x)}")
        for i, st in enumerate(state):
            for k, x in enumerate(st):
                lines.append(f"state {i} {k} {fmt(x)}")
        lines.append("end")
    with open(os.path.join(out_dir, "optimizer_reference.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(CASES)} optimizer cases written; checked against torch.optim: "
          f"{'all' if torch_checked == len(CASES) else 'no (torch is not installed)'}")


if __name__ == "__main__":
    main()
