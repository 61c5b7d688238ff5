#!/usr/bin/env python3
"""What the Python binding costs on top of the C ABI: runs a tiny model (Add + Relu on two float32
[1, WIDTH] inputs, static shapes, 1 intra-op thread) from C and from Python in the same process and
prints the per-run times and their ratio.

  python3 bench/binding_overhead.py     # after: ninja -C build liboneflow oneflow_binding_bench
                                        # and:   pip install ./bindings/python

C side (bench/binding_overhead.c, build/liboneflow_binding_bench.so, called once per block through
ctypes): per run it creates borrowed input tensors over its buffers, runs and releases the outputs, which
is what `oneflow.Session.run` does for numpy inputs; a C caller that reuses its input tensors is timed
too. Python side: `session.run(feeds)` as a user calls it, outputs returned as numpy arrays. Both load
the same liboneflow.so (ONEFLOW_LIBRARY is set to --lib).

Blocks of --iters runs alternate C, Python, C-reused, ... --pairs times; each Python block is compared
with the C block next to it, so slow drifts in machine load cancel, and the median of those ratios is
reported, in wall time and in the thread's CPU time (with one thread the engine runs on the caller, so
CPU time leaves out preemption on a busy machine). --ctypes also times the ctypes wrapper
(bench/oneflow_ctypes.py), the alternative the extension module was measured against.
"""
import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

# numpy's OpenBLAS starts worker threads at import that would compete with the timed thread on a
# small machine; the C side has none. The bench calls no BLAS routine.
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


class CSide:
    def __init__(self, path, model):
        lib = ctypes.CDLL(path)
        lib.ofb_open.restype = ctypes.c_void_p
        lib.ofb_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.ofb_time.restype = ctypes.c_int
        lib.ofb_time.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
        lib.ofb_close.argtypes = [ctypes.c_void_p]
        self.lib, self.handle = lib, lib.ofb_open(os.fsencode(model), 1)
        if not self.handle:
            sys.exit("the C side could not open the model")

    def block(self, iters, reuse):
        out = (ctypes.c_double * 2)()
        if self.lib.ofb_time(self.handle, iters, int(reuse), out):
            sys.exit("a C run failed")
        return out[0], out[1]

    def close(self):
        self.lib.ofb_close(self.handle)


def python_block(run, feeds, iters):
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(iters):
        run(feeds)
    cpu = (time.thread_time_ns() - c0) / iters
    return (time.perf_counter_ns() - t0) / iters, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "liboneflow.so"))
    ap.add_argument("--bench-lib", default=os.path.join(ROOT, "build", "liboneflow_binding_bench.so"))
    ap.add_argument("--width", type=int, default=4096, help="elements per input (default 4096)")
    ap.add_argument("--iters", type=int, default=1000, help="runs per block")
    ap.add_argument("--pairs", type=int, default=30, help="C/Python block pairs")
    ap.add_argument("--ctypes", action="store_true", help="also time the ctypes wrapper")
    args = ap.parse_args()
    for path in (args.lib, args.bench_lib):
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
        if not np.array_equal(session.run(feeds)["y"], np.maximum(feeds["a"] + feeds["b"], 0)):
            sys.exit("the Python run's output differs from numpy's")
        c_side = CSide(args.bench_lib, model)
        sides = {"c": lambda: c_side.block(args.iters, False), "c_reused": lambda: c_side.block(args.iters, True),
                 "python": lambda: python_block(session.run, feeds, args.iters)}
        if args.ctypes:
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            import oneflow_ctypes
            ct_session = oneflow_ctypes.Session(oneflow_ctypes.Library(args.lib), model, threads=1)
            sides["ctypes"] = lambda: python_block(ct_session.run, feeds, args.iters)
        for measure in sides.values():  # warm-up
            measure()
        samples = {k: [] for k in sides}  # per pair: (wall ns, cpu ns)
        for _ in range(args.pairs):
            for key, measure in sides.items():
                samples[key].append(measure())
        c_side.close()
        session.close()

    print(f"tiny model: Add+Relu on 2 x float32[1, {args.width}], 1 thread, "
          f"{args.pairs} alternating blocks of {args.iters} runs per way")
    labels = {"c": "C      (borrowed inputs per run)", "c_reused": "C      (input tensors reused)",
              "python": "Python oneflow.Session.run", "ctypes": "Python ctypes (oneflow_ctypes.py)"}
    print(f"  {'median per run':34} {'wall us':>9} {'CPU us':>9}")
    for key, rows in samples.items():
        print(f"  {labels[key]:34} {statistics.median(r[0] for r in rows) / 1e3:9.3f} "
              f"{statistics.median(r[1] for r in rows) / 1e3:9.3f}")

    def ratio(key, base, clock):
        return statistics.median(p[clock] / c[clock] for p, c in zip(samples[key], samples[base]))

    for clock, name in ((0, "wall"), (1, "CPU")):
        line = (f"ratio Python/C ({name:4}, median of paired blocks) = {ratio('python', 'c', clock):.3f}"
                f"   (vs C reusing its inputs: {ratio('python', 'c_reused', clock):.3f})")
        if "ctypes" in samples:
            line += f"   ctypes/C = {ratio('ctypes', 'c', clock):.3f}"
        print(line)


if __name__ == "__main__":
    main()
