#!/usr/bin/env python3
"""`oneflow run/bench --device`: a bad device string is a usage error (exit 2); without a CUDA device
`--device cuda` fails with one line naming why (exit 1); with one, `run --device cuda` writes what
numpy computes for the fixture model (y = Relu(x + b) + x, z = Relu(y)) and bench reports the device.

Usage: cli_device_test.py ONEFLOW_BINARY FIXTURE_DIR WORK_DIR   (FIXTURE_DIR from make_c_api_fixture.py)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def main():
    binary, fixture, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = os.path.join(fixture, "model.onnx")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4)).astype(np.float32)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "b.npy"), b)
    failures = []

    def run(*args):
        return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)

    for bad in ("gpu", "cuda:", "cuda:x", "cuda:-1"):
        p = run("bench", model, "--shape", "x=2x4", "--shape", "b=2x4", "--device", bad)
        if p.returncode != 2 or "--device" not in p.stderr:
            failures.append(f"--device {bad}: rc {p.returncode}, stderr {p.stderr!r}")
    p = run("bench", model, "--shape", "x=2x4", "--shape", "b=2x4", "--cuda-graphs", "sometimes")
    if p.returncode != 2 or "--cuda-graphs" not in p.stderr:
        failures.append(f"--cuda-graphs sometimes: rc {p.returncode}, stderr {p.stderr!r}")

    out = os.path.join(work, "out")
    p = run("run", model, "--input", f"x={work}/x.npy", "--input", f"b={work}/b.npy", "--output-dir", out,
            "--device", "cuda")
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines()
        if p.returncode != 1 or len(lines) != 1 or "no CUDA device: " not in lines[0]:
            failures.append(f"run --device cuda failed without naming the missing device: {p.stderr!r}")
        else:
            print("no CUDA device: the CLI says so:", lines[0])
    else:
        y = np.maximum(x + b, 0) + x
        if not np.array_equal(np.load(os.path.join(out, "y.npy")), y):
            failures.append("run --device cuda: y differs from numpy")
        if not np.array_equal(np.load(os.path.join(out, "z_0_out.npy")), np.maximum(y, 0)):
            failures.append("run --device cuda: z differs from numpy")
        p = run("bench", model, "--shape", "x=8x4", "--shape", "b=8x4", "--device", "cuda:0", "--iters", "3")
        if p.returncode != 0 or json.loads(p.stdout).get("device") != "cuda:0" or \
                "cuda_graphs_captured" not in json.loads(p.stdout):
            failures.append(f"bench --device cuda:0: {p.stdout!r} {p.stderr!r}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
