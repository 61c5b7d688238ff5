#!/usr/bin/env python3
"""`oneflow plan --train`: training plans explained from the command line (text and JSON), for the
planned strategies and the pipeline, and its usage errors.

Usage: plan_train_cli_test.py ONEFLOW_CLI TRAIN_MODELS_DIR
"""
import json
import subprocess
import sys


def run(cli, *args):
    return subprocess.run([cli, "plan", *args], capture_output=True, text=True, timeout=300)


def main():
    cli, models = sys.argv[1], sys.argv[2]
    mlp = f"{models}/mlp_784_1024_1024_10.onnx"
    base = [mlp, "--placement", "cpu:0-3", "--train", "softmax_cross_entropy", "--logits", "logits",
            "--shape", "input=16x784", "--shape", "labels=16"]
    r = run(cli, *base, "--zero", "1")
    assert r.returncode == 0, r.stderr
    assert "training plan (data parallel" in r.stdout and "optimizer state 3.6 MiB (ZeRO-1)" in r.stdout, r.stdout[-800:]
    assert "bucketed by the trainer" in r.stdout, r.stdout[-800:]
    r = run(cli, *base, "--mode", "auto", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["estimated_step_seconds"] > 0, r.stdout[:300]
    # The auto mode lists planned and pipeline layouts, each estimated on the planner's cost model,
    # and the chosen one is the cheapest admissible; the document is the chosen strategy's.
    cands = doc["auto"]["candidates"]
    kinds = {c["kind"] for c in cands}
    assert kinds == {"planned", "pipeline"}, cands
    ok = [c for c in cands if c["admissible"]]
    best = min(ok, key=lambda c: c["step_seconds"])
    assert doc["auto"]["chosen"] == best["label"], (doc["auto"]["chosen"], best)
    assert abs(doc["estimated_step_seconds"] - best["step_seconds"]) <= 1e-9 + 1e-6 * best["step_seconds"], (doc, best)
    assert doc["strategy"] == ("pipeline" if best["kind"] == "pipeline" else "planned"), doc["strategy"]
    r = run(cli, *base, "--mode", "auto")
    assert r.returncode == 0, r.stderr
    assert "auto: layouts considered" in r.stdout and "pipeline 2 stages x 2 data parallel, 2 micro-batches:" in r.stdout
    assert "chosen: " + best["label"] in r.stdout, r.stdout[:2000]
    r = run(cli, *base, "--pipeline", "2", "--micro-batches", "4", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["strategy"] == "pipeline" and doc["stages"] == 2 and doc["estimated_step_seconds"] > 0, r.stdout[:300]
    # Usage errors: one line on stderr, non-zero exit.
    for args, needle in [(base[:-2], "labels"), (base + ["--train", "hinge"], "softmax_cross_entropy"),
                         ([mlp, "--placement", "cpu:0-3", "--zero", "1"], "--train"),
                         (base + ["--optimizer", "lion"], "sgd, adam or adamw")]:
        r = run(cli, *args)
        assert r.returncode != 0 and needle in r.stderr, (args, r.returncode, r.stderr)
    print("ok")


if __name__ == "__main__":
    main()
