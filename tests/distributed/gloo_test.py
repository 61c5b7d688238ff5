#!/usr/bin/env python3
"""Multi-process runs over the Gloo backend: 4 processes of gloo_worker on this machine.

Checks every collective, data-parallel and auto-planned inference of the bench MLP and
transformer against each process's own single-device run, and that killing rank 3 in the middle
of a step makes the other three fail with an error naming rank 3 within the timeout. The ranks
share this host, so their collectives run over shared memory; the collectives and the lost rank
are checked over loopback TCP too (ONEFLOW_COMM_SHM=0), and over shared memory with slots small
enough that the models' collectives run in several chunks. Also starts a job through
`oneflow launch -n 4`, whose ranks meet through the TCP store rank 0 serves (comm/tcp_store.h),
and loses rank 3 there too.
Usage: gloo_test.py WORKER MODELS_DIR ONEFLOW_CLI
"""
import os
import re
import subprocess
import sys

from gloo_launch import launch_ranks

N = 4
TCP = {"ONEFLOW_COMM_SHM": "0"}
SMALL_SLOTS = {"ONEFLOW_COMM_SHM_SLOT_BYTES": "4096"}


def launch(worker, args, timeout_ms=60000, limit=240, env=None):
    out, seconds = launch_ranks(worker, args, N, "oneflow-gloo-", limit, timeout_ms, env)
    return [(rc, e) for rc, _, e in out], seconds


def main():
    worker, models, cli = sys.argv[1], sys.argv[2], sys.argv[3]
    r = subprocess.run([cli, "launch", "-n", str(N), "--", worker, "collectives"], capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0, r.stderr
    for env in [None, TCP, SMALL_SLOTS]:
        res, _ = launch(worker, ["collectives"], env=env)
        assert all(rc == 0 for rc, _ in res), (env, res)
    res, _ = launch(worker, ["model", f"{models}/transformer.onnx", "auto", "2x8x256"], env=SMALL_SLOTS)
    assert all(rc == 0 for rc, _ in res), ("small slots", res)
    for model, mode, dims in [("mlp", "data", "6x784"), ("mlp", "auto", "8x784"),
                              ("transformer", "data", "4x8x256"), ("transformer", "auto", "2x8x256")]:
        res, _ = launch(worker, ["model", f"{models}/{model}.onnx", mode, dims])
        assert all(rc == 0 for rc, _ in res), (model, mode, res)
    took = []
    for env in [None, TCP]:
        res, secs = launch(worker, ["die"], timeout_ms=5000, limit=120, env=env)
        assert res[3][0] == 3, res[3]
        for r in range(3):
            rc, err = res[r]
            assert rc == 1 and "lost rank(s): 3" in err, (env, r, rc, err)
        assert secs < 60, secs
        took.append(f"{secs:.1f}s over {'tcp' if env else 'shared memory'}")
    r = subprocess.run([cli, "launch", "-n", str(N), "--grace-s", "60", "--", worker, "die"], capture_output=True,
                       text=True, timeout=180, env=dict(os.environ, ONEFLOW_COMM_TIMEOUT_MS="5000"))
    assert r.returncode != 0, "the job survived the loss of rank 3"
    for rank in range(3):
        line = next((l for l in r.stderr.splitlines() if l.startswith(f"rank error: rank {rank}:")), "")
        # named by the store ("3 on 127.0.0.1") or, when a rank's own check of its host's processes
        # answers first, by that ("3")
        assert re.search(r"lost rank\(s\): 3( on 127\.0\.0\.1)?: ", line), (rank, r.stderr)
    print(f"ok (survivors failed naming rank 3 after {', '.join(took)}; under oneflow launch the TCP store named it)")


if __name__ == "__main__":
    main()
