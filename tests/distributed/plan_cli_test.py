#!/usr/bin/env python3
"""`oneflow plan`: text and JSON explanations of the bench MLP on 4 devices, and its errors.

The JSON is checked for structure and for facts computed here independently: the data-parallel
plan keeps every parameter whole (its bytes equal the model's parameter bytes from onnx) and
gathers the logits once; the estimated step time is compute plus communication.
Usage: plan_cli_test.py ONEFLOW_CLI MODELS_DIR
"""
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def run(cli, *args):
    return subprocess.run([cli, "plan", *args], capture_output=True, text=True, timeout=300)


def main():
    cli, models = sys.argv[1], sys.argv[2]
    mlp = f"{models}/mlp.onnx"
    param_bytes = sum(numpy_helper.to_array(t).nbytes for t in onnx.load(mlp).graph.initializer)

    r = run(cli, mlp, "--placement", "cpu:0-3", "--shape", "input=8x784", "--json")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["mode"] == "data" and plan["devices"] == 4, plan
    assert plan["inputs"][0]["sbp"] == "S(0)", plan["inputs"]
    assert plan["memory_per_device"]["parameters"] == param_bytes, (plan["memory_per_device"], param_bytes)
    steps = [s for o in plan["outputs"] for s in o["boxing"]]
    assert [s["collective"] for s in steps] == ["all_gather"], steps
    # 8x10 float logits: each device sends 3/4 of 320 bytes.
    assert abs(steps[0]["bytes_per_device"] - 240) < 1e-9, steps
    est = plan["estimated_seconds"]
    assert abs(est["step"] - est["compute"] - est["communication"]) <= 1e-9 * max(1.0, est["step"]), est
    assert all(op["out"] == ["S(0)"] for op in plan["ops"]), plan["ops"]

    r = run(cli, mlp, "--placement", "cpu:[[0,1],[2,3]]", "--shape", "input=8x784", "--mode", "auto")
    assert r.returncode == 0 and "estimated step time" in r.stdout and "(S(" in r.stdout, r.stdout + r.stderr

    r = run(cli, mlp, "--placement", "cpu:0-5", "--devices", "4", "--shape", "input=8x784")
    assert r.returncode == 1 and "4, 5" in r.stderr, r.stderr
    r = run(cli, mlp, "--placement", "cpu:0-3")
    assert r.returncode == 1 and "--shape input=" in r.stderr, r.stderr
    r = run(cli, mlp, "--placement", "cpu:0-3", "--shape", "input=8x784", "--mode", "manual", "--sbp", "input=S(5)")
    assert r.returncode == 1 and "does not fit" in r.stderr, r.stderr
    r = run(cli, mlp, "--placement", "cpu:0-3", "--shape", "input=8x784", "--mode", "fast")
    assert r.returncode == 1 and "unknown plan mode" in r.stderr, r.stderr
    print("ok")


if __name__ == "__main__":
    main()
