#!/usr/bin/env python3
"""Data-parallel training throughput over Gloo: the MLP 784-1024-1024-10 (bench/make_train_models.py)
trained with SGD on 1 process x 1 thread (the single-device TrainingSession) and on N Gloo
processes x 1 thread each (the planned trainer), the same global batch, measured in the same run
(alternating rounds), with the speed-up as a ratio, and CPU time per step (the work ratio). Each --zero stage is one multi-process
configuration: 0 all-reduces the gradients in buckets and every rank updates every weight; 2
reduce-scatters them, each rank updates its slice and the slices are all-gathered. Ranks on one
host communicate through shared memory; --transport tcp keeps them on Gloo's loopback TCP.

One table per global batch (default 256 and 1024: the speed-up depends on it, since the gradient
exchange and the optimizer update cost the same at any batch while the compute grows with it).

    python3 bench/dist_train_bench.py [--build build] [--batch 256 1024] [--steps 20] [--rounds 3] [--procs 2]
                                      [--zero 0 2] [--transport shm|tcp]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_single(worker, model, batch, steps):
    out = subprocess.run([worker, "single", model, str(batch), str(steps)], capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_gloo(worker, model, batch, steps, procs, zero, transport):
    with tempfile.TemporaryDirectory(prefix="oneflow-bench-gloo-") as store:
        ps = []
        for r in range(procs):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(procs), ONEFLOW_GLOO_STORE=store,
                       ONEFLOW_GLOO_HOST="127.0.0.1", ONEFLOW_COMM_SHM="0" if transport == "tcp" else "1")
            ps.append(subprocess.Popen([worker, "bench", model, str(batch), str(steps), str(zero)], env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = [p.communicate(timeout=600) for p in ps]
        for r, (p, (o, e)) in enumerate(zip(ps, outs)):
            if p.returncode != 0:
                sys.exit(f"rank {r} failed: {e.strip()}")
        return json.loads(outs[0][0].strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--batch", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--zero", type=int, nargs="+", default=[0, 2], choices=[0, 1, 2])
    ap.add_argument("--transport", default="shm", choices=["shm", "tcp"])
    a = ap.parse_args()
    worker = os.path.join(a.build, "tests", "distributed", "oneflow_train_worker")
    if not os.path.exists(worker):
        sys.exit(f"{worker} not found: build the project first (ninja -C build oneflow_train_worker)")
    models = os.path.join(HERE, "models", "train")
    model = os.path.join(models, "mlp_784_1024_1024_10.onnx")
    if not os.path.exists(model):
        subprocess.run([sys.executable, os.path.join(HERE, "make_train_models.py"), models], check=True,
                       capture_output=True)
    for batch in a.batch:
        report(a, worker, model, batch)


def report(a, worker, model, batch):
    single, multi = [], {z: [] for z in a.zero}
    for _ in range(a.rounds):
        single.append(run_single(worker, model, batch, a.steps))
        for z in a.zero:
            multi[z].append(run_gloo(worker, model, batch, a.steps, a.procs, z, a.transport))

    def median(runs, key):
        return statistics.median(r[key] for r in runs)

    def rounds(runs):
        return ", ".join(f"{r['samples_per_s']:.0f}" for r in runs)

    s, s_cpu = median(single, "samples_per_s"), median(single, "cpu_ms_per_step")
    print(f"MLP 784-1024-1024-10, SGD, global batch {batch}, {a.steps} steps, median of {a.rounds} alternating rounds")
    print(f"  1 process  x 1 thread         : {s:9.1f} samples/s                  CPU {s_cpu:7.2f} ms/step   "
          f"(rounds: {rounds(single)})")
    for z in a.zero:
        m, m_cpu = median(multi[z], "samples_per_s"), median(multi[z], "cpu_ms_per_step")
        print(f"  {a.procs} processes x 1 thread, ZeRO-{z}: {m:9.1f} samples/s, speed-up {m / s:.2f}x   "
              f"CPU {m_cpu:7.2f} ms/step per process, work ratio {s_cpu / m_cpu:.2f}x   "
              f"({a.transport}; rounds: {rounds(multi[z])})")
    print("  (speed-up: wall clock, needs a quiet machine; work ratio: the single process's CPU time per step over one\n"
          "   rank's, what the speed-up would be if every rank had a core of its own and never waited)")


if __name__ == "__main__":
    main()
