#!/usr/bin/env python3
"""Pipeline training over the Gloo backend: 4 processes of pipeline_gloo_worker on this machine
(2 stages x 2 data-parallel ranks, 4 micro-batches; and 4 stages), each comparing against its own
single-device training run (see the worker); and rank 3 dying before a step makes the other
three fail with an error naming rank 3, well within the timeout.
Usage: pipeline_gloo_test.py WORKER MODELS_DIR
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "distributed"))
from gloo_launch import launch_ranks  # noqa: E402

N = 4


def launch(worker, args, limit=300, timeout_ms=60000):
    return launch_ranks(worker, args, N, "oneflow-pipe-gloo-", limit, timeout_ms)[0]


def main():
    worker, models = sys.argv[1], sys.argv[2]
    mlp = f"{models}/mlp_784_1024_1024_10.onnx"
    tr = f"{models}/transformer_encoder_small.onnx"
    for args in [[mlp, "mlp", "2", "4", "sgd"], [mlp, "mlp", "2", "4", "adam"], [tr, "transformer", "2", "4", "sgd"],
                 [tr, "transformer", "2", "4", "adam"], [tr, "transformer", "4", "3", "adam"]]:
        res = launch(worker, args)
        assert all(rc == 0 for rc, _, _ in res), (args, [(rc, e) for rc, _, e in res])
        print(res[0][1].strip())
    start = time.time()
    res = launch(worker, ["die", mlp], limit=120, timeout_ms=30000)
    secs = time.time() - start
    assert res[3][0] == 3, res[3]
    # Each survivor fails; those talking to rank 3 (its stage peer, its pipeline peer) name it, the
    # others fail because those peers did. No one waits for the 30 s timeout.
    for r in range(3):
        assert res[r][0] == 1 and "failed" in res[r][2], (r, res[r])
    assert any("lost rank(s): 3" in res[r][2] for r in range(3)), res
    assert secs < 20, secs
    print(f"ok (survivors failed naming rank 3 after {secs:.1f}s)")


if __name__ == "__main__":
    main()
