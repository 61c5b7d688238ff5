"""Starts N ranks of a worker program as local processes joined through a Gloo file store, for
the multi-process tests (tests/distributed, tests/train_dist)."""
import os
import subprocess
import tempfile
import time


def launch_ranks(worker, args, n, prefix, limit, timeout_ms, extra_env=None):
    """Runs `worker args` as ranks 0..n-1 (with `extra_env` added to their environment) and waits at
    most `limit` seconds for all of them (killing every rank when one hangs). Returns
    ([(returncode, stdout, stderr)] by rank, seconds)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as store:
        procs = []
        for r in range(n):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), ONEFLOW_GLOO_STORE=store,
                       ONEFLOW_GLOO_HOST="127.0.0.1", ONEFLOW_COMM_TIMEOUT_MS=str(timeout_ms), **(extra_env or {}))
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
