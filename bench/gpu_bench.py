#!/usr/bin/env python3
"""GPU benchmark: OneFlow on a CUDA device vs PyTorch CUDA, in the same run (issue 6's acceptance).

Rows (median milliseconds per call, CUDA work complete: every timed call ends with the device
synchronized, timed by wall clock; engines alternate block by block after a warm-up):
  * training step (forward + backward + Adam) of the transformer encoder of bench/train_bench.py
    (4 pre-LayerNorm layers, d=256, 4 heads, FF 1024, seq 128, batch 8, MSE against a target; 2 host
    threads for CPU-fallback nodes):
    ours = a training session on CUDA (liboneflow's training C ABI, device_kind CUDA, CUDA graphs
    AUTO) fed host arrays; torch = the same model written in torch from the same weights, Adam
    (fused=True, the strongest torch variant), data already on the device. Precisions: f32 (strict
    f32 GEMMs on both sides), bf16 (ours: precision BF16 with f32 master weights; torch:
    torch.autocast(bfloat16)); and, in a child process with ONEFLOW_CUDA_ALLOW_TF32=1 and torch's TF32
    switches on, tf32.
  * ResNet-18 inference (bench/make_models.py's ONNX, explicit BatchNormalization) at batch 1 and 32:
    ours = a CUDA session (CUDA graphs ON) run with a device input and device outputs; torch = the same
    graph executed op by op in torch eval mode from the same weights (torchvision is not needed: the
    ONNX is the model), plain and with cudnn.benchmark; torchvision's resnet18 (random weights) too
    when torchvision is importable.
Before timing, each pair is checked: the first training loss of both engines agrees (1e-3
relative) and ResNet-18 outputs agree (1e-3 relative L2 in f32), so a fast wrong answer fails.

    python3 bench/gpu_bench.py [--lib build-gpu/liboneflow.so] [--iters 20] [--json out.json]
Exit status 1 when a check fails or no CUDA device is usable.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_models  # noqa: E402
import make_train_models  # noqa: E402
import oneflow_ctypes  # noqa: E402
from train_ctypes import LOSS_MSE, OneflowTrainer, bind_training  # noqa: E402

DEVICE_CUDA, GRAPHS_ON = 1, 1
TORCH_DEVICE = "cuda"  # where the torch side runs (a CPU-only dry run of the torch code can change it)
PRECISION = {"f32": 0, "tf32": 0, "bf16": 1}


def median_ms(fn, sync, iters):
    times = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        sync()
        times.append(time.perf_counter_ns() - t0)
    return times


def compare(ours, ref, sync, iters, warmup=5, blocks=3):
    """Median ms of `ours` and `ref`, alternating blocks of `iters` calls after `warmup` each."""
    for _ in range(warmup):
        ours()
        sync()
        ref()
        sync()
    o, r = [], []
    for _ in range(blocks):
        o += median_ms(ours, sync, iters)
        r += median_ms(ref, sync, iters)
    return float(np.median(o)) / 1e6, float(np.median(r)) / 1e6


# ---- transformer encoder training ---------------------------------------------------------------

def torch_encoder_step(torch, weights, feeds, precision):
    dev = TORCH_DEVICE
    params = {k: torch.nn.Parameter(torch.from_numpy(v.copy()).to(dev)) for k, v in weights.items()}
    opt = torch.optim.Adam(params.values(), lr=1e-3, fused=True)
    x = torch.from_numpy(feeds["input"]).to(dev)
    t = torch.from_numpy(feeds["target"]).to(dev)

    def forward():
        return make_train_models.torch_transformer_loss(torch, params, x, t)

    def step():
        opt.zero_grad(set_to_none=True)
        if precision == "bf16":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = forward()
        else:
            loss = forward()
        loss.backward()
        opt.step()
        return loss

    return step


def bench_training(lib, torch, path, precision, iters):
    rng = np.random.default_rng(0)
    feeds = {"input": rng.standard_normal((8, 128, 256)).astype(np.float32),
             "target": rng.standard_normal((8, 128, 256)).astype(np.float32)}
    weights = make_train_models.transformer_weights()
    ours = OneflowTrainer(lib, path, 2, LOSS_MSE, "output", "target", device=DEVICE_CUDA,
                          precision=PRECISION[precision])
    ref = torch_encoder_step(torch, weights, feeds, precision)
    # Same weights and batch: the first losses must agree (bf16 rounds differently on each side).
    l_ours, l_ref = ours.step(feeds), float(ref().detach())
    tol = 1e-3 if precision == "f32" else 2e-2
    ok = abs(l_ours - l_ref) <= tol * abs(l_ref)
    o, r = compare(lambda: ours.step(feeds), ref, torch.cuda.synchronize, iters)
    ours.close()
    return {"case": f"encoder train step {precision}", "ours_ms": o, "torch_ms": r, "check": ok,
            "detail": f"first loss ours {l_ours:.6f} torch {l_ref:.6f}"}


# ---- ResNet-18 inference ------------------------------------------------------------------------

def torch_from_onnx(torch, model):
    """The ONNX graph as a torch function, op by op (the ops make_resnet18 emits), eval mode."""
    import torch.nn.functional as F
    from onnx import numpy_helper
    w = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()).to(TORCH_DEVICE) for i in model.graph.initializer}
    nodes = [(n.op_type, list(n.input), n.output[0], {a.name: a for a in n.attribute}) for n in model.graph.node]
    ints = lambda a: list(a.ints)  # noqa: E731

    def run(x):
        env = dict(w)
        env[model.graph.input[0].name] = x
        for op, ins, out, at in nodes:
            a = [env[i] for i in ins]
            if op == "Conv":
                env[out] = F.conv2d(a[0], a[1], a[2] if len(a) > 2 else None, stride=ints(at["strides"]),
                                    padding=ints(at["pads"])[:2], dilation=ints(at["dilations"]),
                                    groups=at["group"].i)
            elif op == "BatchNormalization":
                env[out] = F.batch_norm(a[0], a[3], a[4], a[1], a[2], False, 0.0, at["epsilon"].f)
            elif op == "Relu":
                env[out] = F.relu(a[0])
            elif op == "Add":
                env[out] = a[0] + a[1]
            elif op == "MaxPool":
                env[out] = F.max_pool2d(a[0], ints(at["kernel_shape"]), ints(at["strides"]), ints(at["pads"])[:2])
            elif op == "GlobalAveragePool":
                env[out] = F.adaptive_avg_pool2d(a[0], 1)
            elif op == "Flatten":
                env[out] = torch.flatten(a[0], 1)
            elif op == "Gemm":
                env[out] = F.linear(a[0], a[1], a[2])
            else:
                raise RuntimeError(f"torch_from_onnx: op {op} is not mapped")
        return env[model.graph.output[0].name]

    return run


class DeviceSession:
    """A OneFlow CUDA session run with device tensors (torch's memory) in and device tensors out."""

    def __init__(self, lib, path):
        self.lib, raw = lib, lib._lib
        P, PP = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
        raw.oneflow_session_create_on_device_ex.restype = P
        raw.oneflow_session_create_on_device_ex.argtypes = [P, P, P, ctypes.c_int, ctypes.c_int32, P, PP]
        raw.oneflow_device_session_options_init_sized.argtypes = [P, ctypes.c_size_t]
        raw.oneflow_device_session_options_init_sized.restype = P
        raw.oneflow_tensor_create_device_borrowed.restype = P
        raw.oneflow_tensor_create_device_borrowed.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                                              ctypes.c_size_t, ctypes.c_int, ctypes.c_int32, P,
                                                              ctypes.c_size_t, P, P, PP]
        raw.oneflow_session_run_device.restype = P
        raw.oneflow_session_run_device.argtypes = [P, ctypes.POINTER(ctypes.c_char_p), PP, ctypes.c_size_t,
                                                   P, ctypes.c_size_t, ctypes.c_int32, PP, ctypes.c_size_t]
        graph = ctypes.c_void_p()
        lib.check(raw.oneflow_graph_load_file(os.fsencode(path), ctypes.byref(graph)))
        opts = (ctypes.c_byte * 64)()  # oneflow_device_session_options_t: struct_size + cuda_graphs
        lib.check(raw.oneflow_device_session_options_init_sized(opts, 16))  # size_t + cuda_graphs + fallback
        ctypes.cast(opts, ctypes.POINTER(ctypes.c_int32))[2] = GRAPHS_ON  # after the size_t
        self.session = ctypes.c_void_p()
        try:
            lib.check(raw.oneflow_session_create_on_device_ex(None, graph, None, DEVICE_CUDA, 0, opts,
                                                              ctypes.byref(self.session)))
        finally:
            raw.oneflow_graph_release(graph)
        self.names = (ctypes.c_char_p * 1)(b"input")
        self.outs = (ctypes.c_void_p * 1)()
        self.inp = None

    def bind(self, x):
        """Wraps torch CUDA tensor `x` (kept alive by the caller) as the input."""
        raw = self.lib._lib
        if self.inp is not None:
            raw.oneflow_tensor_release(self.inp[0])
        shape = (ctypes.c_int64 * x.dim())(*x.shape)
        t = ctypes.c_void_p()
        self.lib.check(raw.oneflow_tensor_create_device_borrowed(1, shape, x.dim(), DEVICE_CUDA, 0, x.data_ptr(),
                                                                 x.numel() * 4, None, None, ctypes.byref(t)))
        self.inp = (ctypes.c_void_p * 1)(t)

    def run(self):
        """One timed run: the output stays in (fresh) device memory and is released."""
        raw = self.lib._lib
        self.lib.check(raw.oneflow_session_run_device(self.session, self.names, self.inp, 1, None, 0, 1, self.outs, 1))
        raw.oneflow_tensor_release(self.outs[0])

    def run_to_numpy(self, shape):
        """A checked run: the output copied to the host (outputs_on_device 0)."""
        raw = self.lib._lib
        self.lib.check(raw.oneflow_session_run_device(self.session, self.names, self.inp, 1, None, 0, 0, self.outs, 1))
        try:
            n = int(np.prod(shape))
            ptr = ctypes.cast(raw.oneflow_tensor_data(self.outs[0]), ctypes.POINTER(ctypes.c_float))
            return np.ctypeslib.as_array(ptr, (n,)).reshape(shape).copy()
        finally:
            raw.oneflow_tensor_release(self.outs[0])

    def close(self):
        raw = self.lib._lib
        if self.inp is not None:
            raw.oneflow_tensor_release(self.inp[0])
        raw.oneflow_session_release(self.session)


def bench_resnet(lib, torch, path, batches, iters, mode):
    import onnx
    model = onnx.load(path)
    ref_fn = torch_from_onnx(torch, model)
    ours = DeviceSession(lib, path)
    rows = []
    for batch in batches:
        x = torch.from_numpy(make_models.make_inputs("resnet18", batch)["input"]).cuda().contiguous()
        torch.cuda.synchronize()  # our session's stream does not wait on torch's
        ours.bind(x)
        with torch.no_grad():
            want = ref_fn(x).float().cpu().numpy()
            got = ours.run_to_numpy(want.shape)
            rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            ok = rel <= (1e-3 if mode == "f32" else 1e-2)
            for bench_flag in (False, True):
                torch.backends.cudnn.benchmark = bench_flag
                o, r = compare(lambda: ours.run(), lambda: ref_fn(x), torch.cuda.synchronize, iters)
                rows.append({"case": f"resnet18 b{batch} {mode}" + (" (torch cudnn.benchmark)" if bench_flag else ""),
                             "ours_ms": o, "torch_ms": r, "check": ok, "detail": f"rel L2 vs torch {rel:.2e}"})
            torch.backends.cudnn.benchmark = False
            try:
                import torchvision
                tv = torchvision.models.resnet18().cuda().eval()
                o, r = compare(lambda: ours.run(), lambda: tv(x), torch.cuda.synchronize, iters)
                rows.append({"case": f"resnet18 b{batch} {mode} (torchvision, random weights)", "ours_ms": o,
                             "torch_ms": r, "check": True, "detail": "timing only"})
            except ImportError:
                pass
    ours.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build-gpu", "liboneflow.so"))
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build-gpu", "gpu-bench-models"))
    ap.add_argument("--iters", type=int, default=20, help="timed calls per block (3 blocks per engine)")
    ap.add_argument("--modes", default="f32,bf16,tf32", help="f32 and bf16 run here; tf32 in a child process")
    ap.add_argument("--resnet-batches", default="1,32")
    ap.add_argument("--json")
    ap.add_argument("--quiet", action="store_true", help="no table (the tf32 child writes only --json)")
    args = ap.parse_args()
    modes = args.modes.split(",")

    import torch
    if not torch.cuda.is_available():
        print("no CUDA device: torch.cuda.is_available() is False")
        return 1
    tf32 = "tf32" in modes and len(modes) == 1
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    lib = oneflow_ctypes.Library(args.lib)
    bind_training(lib)
    os.makedirs(args.models_dir, exist_ok=True)
    enc = os.path.join(args.models_dir, "transformer_encoder.onnx")
    if not os.path.exists(enc):
        make_train_models.make_transformer(enc)
    resnet = make_models.ensure(["resnet18"], args.models_dir, verify=False, log=lambda *_: None)["resnet18"]
    batches = [int(b) for b in args.resnet_batches.split(",")]

    rows = []
    for mode in modes:
        if mode == "tf32" and not tf32:
            # ONEFLOW_CUDA_ALLOW_TF32 is read once per process: the TF32 rows come from a child.
            env = dict(os.environ, ONEFLOW_CUDA_ALLOW_TF32="1")
            out = os.path.join(args.models_dir, "tf32_rows.json")
            child = subprocess.run([sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--models-dir",
                                    args.models_dir, "--iters", str(args.iters), "--modes", "tf32",
                                    "--resnet-batches", args.resnet_batches, "--json", out, "--quiet"],
                                   env=env, capture_output=True, text=True)
            if child.returncode not in (0, 1) or not os.path.exists(out):
                print(child.stdout[-2000:], child.stderr[-2000:])
                rows.append({"case": "tf32 (child process)", "ours_ms": None, "torch_ms": None, "check": False,
                             "detail": f"exit {child.returncode}"})
                continue
            with open(out) as f:
                rows += json.load(f)["rows"]
            continue
        rows.append(bench_training(lib, torch, enc, mode, args.iters))
        if mode in ("f32", "tf32"):
            rows += bench_resnet(lib, torch, resnet, batches, args.iters, mode)

    ok = all(r["check"] for r in rows)
    if not args.quiet:
        print(f"liboneflow {lib.version()}; torch {torch.__version__}; {torch.cuda.get_device_name(0)}")
        print(f"{'case':<58} {'ours ms':>9} {'torch ms':>9} {'ours/torch':>10}  check")
        for r in rows:
            o, t = r["ours_ms"], r["torch_ms"]
            ratio = f"{o / t:10.2f}" if o and t else "       n/a"
            print(f"{r['case']:<58} {o or float('nan'):>9.3f} {t or float('nan'):>9.3f} {ratio}  "
                  f"{'ok' if r['check'] else 'FAIL'} ({r['detail']})")
        print("ratio = ours / torch time: below 1.0 OneFlow is faster; the acceptance asks for <= 1.0")
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps({"rows": rows}) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
