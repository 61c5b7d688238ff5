#!/usr/bin/env python3
"""Multi-process runs over the Gloo backend: 4 processes of gloo_worker on this machine.

Checks every collective, data-parallel and auto-planned inference of the bench MLP and
transformer against each process's own single-device run, and that killing rank 3 in the middle
of a step makes the other three fail with an error naming rank 3 within the timeout.
Also starts a job through `oneflow launch -n 4`.
Usage: gloo_test.py WORKER MODELS_DIR ONEFLOW_CLI
"""
import subprocess
import sys

from gloo_launch import launch_ranks

N = 4


def launch(worker, args, timeout_ms=60000, limit=240):
    out, seconds = launch_ranks(worker, args, N, "oneflow-gloo-", limit, timeout_ms)
    return [(rc, e) for rc, _, e in out], seconds


def main():
    worker, models, cli = sys.argv[1], sys.argv[2], sys.argv[3]
    r = subprocess.run([cli, "launch", "-n", str(N), "--", worker, "collectives"], capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stderr
    res, _ = launch(worker, ["collectives"])
    assert all(rc == 0 for rc, _ in res), res
    for model, mode, dims in [("mlp", "data", "6x784"), ("mlp", "auto", "8x784"),
                              ("transformer", "data", "4x8x256"), ("transformer", "auto", "2x8x256")]:
        res, _ = launch(worker, ["model", f"{models}/{model}.onnx", mode, dims])
        assert all(rc == 0 for rc, _ in res), (model, mode, res)
    res, secs = launch(worker, ["die"], timeout_ms=5000, limit=120)
    assert res[3][0] == 3, res[3]
    for r in range(3):
        rc, err = res[r]
        assert rc == 1 and "lost rank(s): 3" in err, (r, rc, err)
    assert secs < 60, secs
    print(f"ok (survivors failed naming rank 3 after {secs:.1f}s)")


if __name__ == "__main__":
    main()
