#!/usr/bin/env python3
"""Tests the `oneflow` CLI: run (outputs compared with numpy), bench (JSON), info, and error handling.

Usage: cli_test.py ONEFLOW_BINARY FIXTURE_DIR WORK_DIR   (FIXTURE_DIR from make_c_api_fixture.py)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)


def oneflow(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def expect_failure(args, needle, code=None):
    rc, out, err = oneflow(*args)
    lines = err.strip().splitlines()
    what = f"oneflow {' '.join(args)}"
    check(rc != 0, f"{what}: exit status {rc}, expected non-zero")
    if code is not None:
        check(rc == code, f"{what}: exit status {rc}, expected {code}")
    check(len(lines) == 1, f"{what}: expected a one-line error, got {err!r}")
    check(lines and lines[0].startswith("oneflow: "), f"{what}: error line {err!r} lacks the 'oneflow: ' prefix")
    check(needle in err, f"{what}: error {err!r} does not mention {needle!r}")


def main():
    global BIN
    BIN, fixture, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = os.path.join(fixture, "model.onnx")
    x = np.fromfile(os.path.join(fixture, "x3.f32"), "<f4").reshape(3, 4)
    b = np.fromfile(os.path.join(fixture, "b3.f32"), "<f4").reshape(3, 4)
    y = np.maximum(x + b, 0) + x
    z = np.maximum(y, 0)
    xp, bp = os.path.join(work, "x.npy"), os.path.join(work, "b.npy")
    np.save(xp, x)
    # Also exercise .npy format 2.0 and 3.0 headers.
    with open(bp, "wb") as f:
        np.lib.format.write_array(f, b, version=(2, 0))
    b3 = os.path.join(work, "b_v3.npy")
    with open(b3, "wb") as f:
        np.lib.format.write_array(f, b, version=(3, 0))

    # --version / help
    rc, out, _ = oneflow("--version")
    check(rc == 0 and out.startswith("oneflow "), f"--version printed {out!r} (rc {rc})")
    for h in ("help", "--help"):
        rc, out, _ = oneflow(h)
        check(rc == 0 and "usage:" in out and "bench" in out, f"{h} printed {out!r}")

    # run: outputs match numpy; the odd output name "z:0/out" is sanitized to z_0_out.npy.
    out_dir = os.path.join(work, "out")
    rc, out, err = oneflow("run", model, "--input", f"x={xp}", "--input", f"b={bp}", "--output-dir", out_dir,
                           "--threads", "2")
    check(rc == 0, f"run failed: {err}")
    check(sorted(os.listdir(out_dir)) == ["y.npy", "z_0_out.npy"], f"run wrote {os.listdir(out_dir)}")
    if rc == 0:
        got_y, got_z = np.load(os.path.join(out_dir, "y.npy")), np.load(os.path.join(out_dir, "z_0_out.npy"))
        check(got_y.dtype == np.float32 and got_y.shape == (3, 4), f"y.npy is {got_y.dtype}{got_y.shape}")
        check(np.allclose(got_y, y, rtol=1e-6, atol=1e-6), "y.npy differs from numpy")
        check(np.allclose(got_z, z, rtol=1e-6, atol=1e-6), "z_0_out.npy differs from numpy")
    rc, _, err = oneflow("run", model, f"--input=x={xp}", f"--input=b={b3}", f"--output-dir={out_dir}2")
    check(rc == 0 and np.allclose(np.load(os.path.join(out_dir + "2", "y.npy")), y), f"run with v3 .npy: {err}")

    # run: bad arguments and bad inputs exit non-zero with one line on stderr.
    expect_failure([], "no command", 2)
    expect_failure(["frobnicate"], "unknown command 'frobnicate'", 2)
    expect_failure(["run"], "MODEL", 2)
    expect_failure(["run", model, "--input", f"x={xp}", "--input", f"b={bp}"], "--output-dir", 2)
    expect_failure(["run", model, "--bogus", "1", "--output-dir", out_dir], "--bogus", 2)
    expect_failure(["run", model, "--input", "x", "--output-dir", out_dir], "NAME=VALUE", 2)
    expect_failure(["run", model, "--threads", "many", "--output-dir", out_dir], "--threads", 2)
    expect_failure(["run", model, "--input"], "needs a value", 2)
    expect_failure(["run", os.path.join(work, "nope.onnx"), "--output-dir", out_dir], "does not exist", 1)
    expect_failure(["run", model, "--input", f"x={xp}", "--output-dir", out_dir], "'b' is missing", 1)
    expect_failure(["run", model, "--input", f"q={xp}", "--output-dir", out_dir], "no input named 'q'", 1)
    expect_failure(["run", model, "--input", f"x={work}/missing.npy", "--input", f"b={bp}", "--output-dir", out_dir],
                   "missing.npy", 1)
    x64 = os.path.join(work, "x64.npy")
    np.save(x64, x.astype(np.float64))
    expect_failure(["run", model, "--input", f"x={x64}", "--input", f"b={bp}", "--output-dir", out_dir],
                   "INVALID_ARGUMENT: input 'x' has dtype float64", 1)
    xf = os.path.join(work, "xf.npy")
    np.save(xf, np.asfortranarray(np.ones((4, 3), np.float32)))
    expect_failure(["run", model, "--input", f"x={xf}", "--input", f"b={bp}", "--output-dir", out_dir], "Fortran", 1)
    xt = os.path.join(work, "xt.npy")
    with open(xp, "rb") as f:
        data = f.read()
    with open(xt, "wb") as f:
        f.write(data[:-5])
    expect_failure(["run", model, "--input", f"x={xt}", "--input", f"b={bp}", "--output-dir", out_dir], "truncated", 1)
    xb = os.path.join(work, "xb.npy")
    np.save(xb, x.astype(">f4"))
    expect_failure(["run", model, "--input", f"x={xb}", "--input", f"b={bp}", "--output-dir", out_dir], "big-endian", 1)
    xs = os.path.join(work, "xs.npy")
    np.save(xs, np.zeros((3, 4), dtype=[("a", "<f4")]))
    expect_failure(["run", model, "--input", f"x={xs}", "--input", f"b={bp}", "--output-dir", out_dir], "structured", 1)

    # bench: one JSON line with the required keys.
    rc, out, err = oneflow("bench", model, "--shape", "x=2x4", "--shape", "b=2x4", "--warmup", "1", "--iters", "5",
                           "--threads", "1")
    check(rc == 0, f"bench failed: {err}")
    if rc == 0:
        lines = out.strip().splitlines()
        check(len(lines) == 1, f"bench printed {len(lines)} lines")
        r = json.loads(lines[-1])
        for key in ("p50_ms", "p90_ms", "mean_ms", "min_ms", "iters", "threads", "planned_peak_bytes"):
            check(key in r, f"bench JSON lacks {key}: {r}")
        check(r.get("iters") == 5 and r.get("threads") == 1, f"bench JSON {r}")
        check(r.get("min_ms", -1) >= 0 and r["min_ms"] <= r["p50_ms"] <= r["p90_ms"], f"bench times {r}")
    # ONEFLOW_PROFILE=1: the per-op table on stderr at exit, one call per node and timed run/warm-up.
    p = subprocess.run([BIN, "bench", model, "--shape", "x=2x4", "--shape", "b=2x4", "--warmup", "1", "--iters", "5",
                        "--threads", "1"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ONEFLOW_PROFILE": "1"})
    check(p.returncode == 0 and "oneflow profile (ONEFLOW_PROFILE)" in p.stderr, f"profile table missing: {p.stderr!r}")
    rows = {ln.split()[0]: ln.split() for ln in p.stderr.splitlines() if ln and not ln.startswith((" ", "oneflow", "op type", "top"))}
    check(bool(rows) and all(int(r[1]) >= 6 for r in rows.values()), f"profile rows {rows}")
    check(abs(sum(float(r[3]) for r in rows.values()) - 100.0) < 1.0, f"profile shares do not add up: {rows}")
    rc, out, err = oneflow("bench", model, "--input", f"x={xp}", "--input", f"b={bp}", "--iters", "2")
    check(rc == 0 and json.loads(out)["inputs"]["x"]["shape"] == [3, 4], f"bench with --input: {out} {err}")
    expect_failure(["bench", model], "symbolic dim 'batch'", 1)
    expect_failure(["bench", model, "--shape", "x=2xq", "--shape", "b=2x4"], "--shape", 2)
    expect_failure(["bench", model, "--shape", "nope=2", "--shape", "b=2x4"], "'nope'", 1)
    expect_failure(["bench", model, "--iters", "0", "--shape", "x=2x4", "--shape", "b=2x4"], "--iters", 2)

    # info: lists inputs/outputs with symbolic dims, and every unsupported op without failing.
    rc, out, err = oneflow("info", model)
    check(rc == 0 and "x: float32[batch,4]" in out and "z:0/out" in out and "Add" in out, f"info: {out} {err}")
    check("ai.onnx=17" in out and "status: ok" in out, f"info: {out}")
    rc, out, err = oneflow("info", os.path.join(fixture, "unknown_op.onnx"))
    check(rc == 0, f"info on an unsupported op exited {rc}: {err}")
    check("FrobnicateOp (domain com.example, opset 3)" in out and "unsupported" in out.lower(), f"info: {out}")
    check("Relu" in out, f"info lacks the op histogram: {out}")
    expect_failure(["info"], "MODEL", 2)
    expect_failure(["info", os.path.join(fixture, "opset29.onnx")], "opset 29", 1)

    if FAILURES:
        print(f"cli_test: {len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print("cli_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
