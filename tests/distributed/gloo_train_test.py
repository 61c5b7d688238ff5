#!/usr/bin/env python3
"""Training under plans on 4 Gloo processes: the MLP and the transformer encoder, 20 steps, with
every strategy of train_cases.h; rank 0 compares each run with its own single-device run
(loss curve, final parameters, inference; <= 1e-5 relative).

Usage: gloo_train_test.py WORKER MODELS_DIR [STRATEGY...]
"""
import os
import subprocess
import sys
import tempfile
import time

N = 4
STRATEGIES = ["data", "zero1", "zero2", "tensor", "2x2", "pipeline", "auto"]


def launch(worker, args, limit=900):
    with tempfile.TemporaryDirectory(prefix="oneflow-gloo-train-") as store:
        procs = []
        for r in range(N):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(N), ONEFLOW_GLOO_STORE=store,
                       ONEFLOW_GLOO_HOST="127.0.0.1", ONEFLOW_COMM_TIMEOUT_MS="120000")
            procs.append(subprocess.Popen([worker, *args], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        start = time.time()
        out = []
        for p in procs:
            try:
                o, e = p.communicate(timeout=max(1, limit - (time.time() - start)))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise AssertionError(f"{args}: ranks hung past {limit}s")
            out.append((p.returncode, o, e))
        return out, time.time() - start


def main():
    worker, models = sys.argv[1], sys.argv[2]
    strategies = sys.argv[3:] or STRATEGIES
    failed = False
    for model in ["mlp", "transformer"]:
        res, secs = launch(worker, ["check", models, model, "20", *strategies])
        print(res[0][1], end="")
        for rank, (rc, _, err) in enumerate(res):
            if rc != 0:
                failed = True
                print(f"{model}: rank {rank} exited {rc}: {err.strip()}")
        print(f"{model}: {len(strategies)} strategies on {N} Gloo processes in {secs:.1f}s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
