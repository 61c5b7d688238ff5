#!/usr/bin/env python3
"""What the Python binding costs on top of the C ABI: runs a tiny model (Add + Relu on two float32
[1, WIDTH] inputs, static shapes) from C (build/oneflow_binding_bench) and from Python in the same
command, and prints the per-run times and their ratio.

  python3 bench/binding_overhead.py            # after: ninja -C build liboneflow oneflow_binding_bench
                                               # and:   pip install ./bindings/python

Per run, C creates borrowed input tensors over its buffers, runs and releases the outputs, which is what
`oneflow.Session.run` does for numpy inputs; the C figure with input tensors reused across runs is
printed too (the cheapest C caller). Python times `session.run(feeds)` as called by a user, outputs
returned as numpy arrays. Both use 1 intra-op thread and the same liboneflow.so (ONEFLOW_LIBRARY is
set to --lib). Each figure is the median over blocks of the mean time per run, in wall time and in the calling
thread's CPU time (with one thread the engine runs on the caller, so CPU time leaves out preemption on
a busy machine); C and Python alternate over --rounds rounds and the medians of the rounds are reported. --ctypes also times the ctypes
wrapper (bench/oneflow_ctypes.py), the alternative the extension module was measured against.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# numpy's OpenBLAS starts worker threads at import that would compete with the timed thread on a
# small machine; the C driver has none. The bench calls no BLAS routine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_model(width):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, width])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [a, b], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def time_python(run, feeds, iters, blocks):
    """{"wall": ns, "cpu": ns}: medians over blocks of the mean time per run (as the C driver does)."""
    for _ in range(iters // 10 + 1):
        run(feeds)
    wall, cpu = [], []
    for _ in range(blocks):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(iters):
            run(feeds)
        cpu.append((time.thread_time_ns() - c0) / iters)
        wall.append((time.perf_counter_ns() - t0) / iters)
    return {"wall": statistics.median(wall), "cpu": statistics.median(cpu)}


def time_c(exe, model, iters, blocks):
    """{"wall": {"c": ns, "c_reused": ns}, "cpu": {...}} from the C driver."""
    out = subprocess.run([exe, model, str(iters), str(blocks), "1"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "liboneflow.so"))
    ap.add_argument("--bench-exe", default=os.path.join(ROOT, "build", "oneflow_binding_bench"))
    ap.add_argument("--width", type=int, default=4096, help="elements per input (default 4096)")
    ap.add_argument("--iters", type=int, default=2000, help="runs per block")
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ctypes", action="store_true", help="also time the ctypes wrapper")
    args = ap.parse_args()
    for path in (args.lib, args.bench_exe):
        if not os.path.exists(path):
            sys.exit(f"{path} not found: ninja -C build liboneflow oneflow_binding_bench")

    os.environ["ONEFLOW_LIBRARY"] = os.path.abspath(args.lib)
    import oneflow  # noqa: E402 (after ONEFLOW_LIBRARY is set)

    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((1, args.width), dtype=np.float32) for n in ("a", "b")}
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.onnx")
        with open(model, "wb") as f:
            f.write(tiny_model(args.width).SerializeToString())
        session = oneflow.Session(model, oneflow.SessionOptions(threads=1))
        got = session.run(feeds)["y"]
        if not np.array_equal(got, np.maximum(feeds["a"] + feeds["b"], 0)):
            sys.exit("the Python run's output differs from numpy's")
        ct_session = None
        if args.ctypes:
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            import oneflow_ctypes
            ct_session = oneflow_ctypes.Session(oneflow_ctypes.Library(args.lib), model, threads=1)

        rounds = []  # per round: {"wall"|"cpu": {"c", "c_reused", "python"[, "ctypes"]}}
        for _ in range(args.rounds):
            r = time_c(args.bench_exe, model, args.iters, args.blocks)
            py = time_python(session.run, feeds, args.iters, args.blocks)
            ct = time_python(ct_session.run, feeds, args.iters, args.blocks) if ct_session else None
            for clock in ("wall", "cpu"):
                r[clock]["python"] = py[clock]
                if ct:
                    r[clock]["ctypes"] = ct[clock]
            rounds.append(r)
        session.close()

    print(f"tiny model: Add+Relu on 2 x float32[1, {args.width}], 1 thread, "
          f"median of {args.rounds} rounds x {args.blocks} blocks x {args.iters} runs")
    rows = [("c", "C      (borrowed inputs per run)"), ("c_reused", "C      (input tensors reused)"),
            ("python", "Python oneflow.Session.run"), ("ctypes", "Python ctypes (oneflow_ctypes.py)")]
    med = {clock: {k: statistics.median(r[clock][k] for r in rounds) for k in rounds[0][clock]}
           for clock in ("wall", "cpu")}
    print(f"  {'':34} {'wall us/run':>12} {'CPU us/run':>12}")
    for key, label in rows:
        if key in med["wall"]:
            print(f"  {label:34} {med['wall'][key] / 1000:12.3f} {med['cpu'][key] / 1000:12.3f}")
    for clock in ("wall", "cpu"):
        m = med[clock]
        line = (f"ratio Python/C ({clock:4}) = {m['python'] / m['c']:.3f}"
                f"   (vs C with reused inputs: {m['python'] / m['c_reused']:.3f})")
        if "ctypes" in m:
            line += f"   ctypes/C = {m['ctypes'] / m['c']:.3f}"
        print(line)


if __name__ == "__main__":
    main()
