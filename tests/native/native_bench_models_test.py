#!/usr/bin/env python3
"""Acceptance: every bench model that bench/make_models.py writes itself, converted to the native format with
`oneflow convert` gives, through `oneflow run`, outputs bit-identical to running the ONNX file, and
both match onnxruntime (the independent reference) within the bench tolerance.

    native_bench_models_test.py --cli build/oneflow --work DIR [--models mlp,cnn]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import make_models  # noqa: E402
from run_bench import compare, make_ort_session  # noqa: E402


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def run_cli(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    return proc.stdout


def run_model(cli, model, feeds, out_names, work):
    in_dir, out_dir = os.path.join(work, "in"), os.path.join(work, "out")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(in_dir)
    os.makedirs(out_dir)
    cmd = [cli, "run", model, "--output-dir", out_dir, "--threads", "2"]
    for name, arr in feeds.items():
        path = os.path.join(in_dir, sanitize(name) + ".npy")
        np.save(path, arr)
        cmd += ["--input", f"{name}={path}"]
    run_cli(cmd)
    return [np.load(os.path.join(out_dir, sanitize(n) + ".npy")) for n in out_names]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    # Every model make_models writes itself; the deployed group is torch's export (torch is no test
    # dependency, and the files run to hundreds of MB): run_bench checks those against onnxruntime.
    own = [m for m in make_models.MODELS if m not in make_models.GROUPS["deployed"]]
    ap.add_argument("--models", default=",".join(own))
    args = ap.parse_args()
    names = [m for m in args.models.split(",") if m]
    models_dir = os.path.join(args.work, "models")
    paths = make_models.ensure(names, models_dir, log=lambda m: print(m, file=sys.stderr))
    failures = 0
    for name in names:
        onnx_path = paths[name]
        ofm_path = os.path.join(models_dir, name + ".ofm")
        run_cli([args.cli, "convert", onnx_path, ofm_path])
        info = run_cli([args.cli, "info", ofm_path])
        if "format: native" not in info:
            print(f"FAIL {name}: `oneflow info` does not report the native format:\n{info}")
            failures += 1
        ort = make_ort_session(onnx_path, 2)
        out_names = [o.name for o in ort.get_outputs()]
        for batch in make_models.MODELS[name]["batches"]:
            feeds = make_models.make_inputs(name, batch)
            via_onnx = run_model(args.cli, onnx_path, feeds, out_names, os.path.join(args.work, "run_onnx"))
            via_native = run_model(args.cli, ofm_path, feeds, out_names, os.path.join(args.work, "run_native"))
            identical = all(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
                            for a, b in zip(via_onnx, via_native))
            ok, err, tol, detail = compare(via_native, ort.run(None, feeds), make_models.MODELS[name].get("rtol"))
            status = "PASS" if identical and ok else "FAIL"
            failures += status == "FAIL"
            print(f"{status} {name:<12} batch {batch:<3} native==onnx bytes: {identical}; "
                  f"vs onnxruntime max err {err:.3g} (tol {tol:.3g}) {detail}", flush=True)
        size_onnx, size_ofm = os.path.getsize(onnx_path), os.path.getsize(ofm_path)
        print(f"     {name:<12} sizes: onnx {size_onnx} B, native {size_ofm} B")
    print(f"native bench models: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
