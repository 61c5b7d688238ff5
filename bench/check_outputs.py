#!/usr/bin/env python3
"""Acceptance check: `oneflow run` reproduces onnxruntime's outputs on every bench model.

For each model and batch size: writes the bench's random inputs as .npy files, runs
    build/oneflow run MODEL --input NAME=FILE.npy ... --output-dir DIR [--threads N]
and compares each DIR/<sanitized output name>.npy (characters outside [A-Za-z0-9._-] become _) with
onnxruntime's output on the same inputs: max abs error <= 1e-4 * max(1, max|reference|).
Prints one line per (model, batch) and exits 1 if any output is missing or differs (or the CLI
fails), 0 when all agree.

--launcher runs the CLI under another program, e.g. an emulated CPU without AVX-512 or AVX2:
    --launcher "qemu-x86_64 -cpu Haswell"    (Debian's qemu-user; exits 77, a skip, without it)
ONEFLOW_MAX_ISA in the environment caps the kernels the CLI picks (base/cpu_isa.h) instead.

    python3 bench/check_outputs.py [--models mlp,cnn] [--cli build/oneflow] [--threads N] [--launcher CMD]
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import make_models  # noqa: E402
from run_bench import RTOL, compare, make_ort_session  # noqa: E402


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def tail(text, n=800):
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def check_one(cli, name, path, batch, threads, work, timeout, launcher=()):
    """Returns (ok, message) for one model at one batch size."""
    feeds = make_models.make_inputs(name, batch)
    case_dir = os.path.join(work, f"{name}_b{batch}")
    in_dir, out_dir = os.path.join(case_dir, "inputs"), os.path.join(case_dir, "outputs")
    os.makedirs(in_dir, exist_ok=True)
    shutil.rmtree(out_dir, ignore_errors=True)  # a stale output must not pass for a fresh one
    os.makedirs(out_dir)
    cmd = [*launcher, cli, "run", path]
    for input_name, array in feeds.items():
        file = os.path.join(in_dir, sanitize(input_name) + ".npy")
        np.save(file, array)
        cmd += ["--input", f"{input_name}={file}"]
    cmd += ["--output-dir", out_dir]
    if threads is not None:
        cmd += ["--threads", str(threads)]

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"`oneflow run` timed out after {timeout} s"
    except OSError as exc:
        return False, f"cannot run {cli}: {exc}"
    if proc.returncode != 0:
        return False, f"`oneflow run` exited {proc.returncode}: {tail(proc.stderr or proc.stdout)}"

    sess = make_ort_session(path, threads or 1)
    out_names = [o.name for o in sess.get_outputs()]
    ref = sess.run(out_names, feeds)
    got = []
    for out_name in out_names:
        file = os.path.join(out_dir, sanitize(out_name) + ".npy")
        if not os.path.exists(file):
            present = ", ".join(sorted(os.listdir(out_dir))) or "nothing"
            said = tail(proc.stdout + proc.stderr, 200)
            return False, (f"missing output {out_name!r}: {os.path.basename(file)} not written (the output dir "
                           f"holds: {present})" + (f"; the CLI printed: {said!r}" if said else ""))
        try:
            got.append(np.load(file, allow_pickle=False))
        except Exception as exc:  # a malformed .npy is a failure of the CLI, reported as such
            return False, f"cannot read {file}: {exc}"
    ok, err, tol, detail = compare(got, ref, make_models.MODELS[name].get("rtol"))  # a model may allow more (int8)
    if not ok:
        return False, f"MISMATCH {detail}"
    return True, f"max abs err {err:.2e} (tol {tol:.2e})"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Check `oneflow run` against onnxruntime on the bench models")
    ap.add_argument("--models", default=",".join(make_models.DEFAULT_MODELS),
                    help=f"comma-separated, from: {', '.join(make_models.MODELS)} (default: %(default)s)")
    ap.add_argument("--cli", default="build/oneflow", help="the oneflow CLI binary (default %(default)s)")
    ap.add_argument("--threads", type=int, default=None, help="pass --threads N to the CLI")
    ap.add_argument("--models-dir", default=make_models.DEFAULT_OUT, help="where models are generated")
    ap.add_argument("--work-dir", default=None, help="keep inputs/outputs here (default: a temp dir, removed)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds allowed per CLI run")
    ap.add_argument("--launcher", default="", help='run the CLI under this command, e.g. "qemu-x86_64 -cpu Haswell"')
    ap.add_argument("--batches", default="", help="only these batch sizes (comma-separated; default: the bench's)")
    args = ap.parse_args(argv)
    launcher = shlex.split(args.launcher)
    if launcher and shutil.which(launcher[0]) is None:
        print(f"SKIP: {launcher[0]} is not installed (Debian: qemu-user), so no emulated CPU to check on")
        return 77
    only_batches = {int(b) for b in args.batches.split(",") if b}

    cli = args.cli if os.path.isabs(args.cli) or os.path.exists(args.cli) else os.path.join(ROOT, args.cli)
    names = [m for m in args.models.split(",") if m]
    paths = make_models.ensure(names, args.models_dir, log=lambda m: print(m, file=sys.stderr))
    work = args.work_dir or tempfile.mkdtemp(prefix="oneflow_check_")
    failures = 0
    try:
        under = f" under `{args.launcher}`" if launcher else ""
        cap = f", ONEFLOW_MAX_ISA={os.environ['ONEFLOW_MAX_ISA']}" if os.environ.get("ONEFLOW_MAX_ISA") else ""
        print(f"Checking `{cli} run`{under}{cap} against onnxruntime (max abs err <= {RTOL:g} * max(1, max|ref|)):")
        for name in names:
            for batch in make_models.MODELS[name]["batches"]:
                if only_batches and batch not in only_batches:
                    continue
                ok, msg = check_one(cli, name, paths[name], batch, args.threads, work, args.timeout, launcher)
                failures += not ok
                print(f"  {name:<12} batch {batch:<3} {'PASS' if ok else 'FAIL'}  {msg}", flush=True)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    print("all outputs agree" if not failures else f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
