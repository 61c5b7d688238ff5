#!/usr/bin/env python3
"""Load-to-first-output: the same model with ~1 GB of weights loaded from ONNX and from the native
format (.ofm), warm page cache, timed in one run through the C ABI.

The model is an embedding lookup (a [rows, 1024] float32 table, 1 GiB by default) followed by a
small dense head: y = Gather(table, ids) @ W. Its first output needs a few rows of the table, so
the time is the loader's, not a 1 GB GEMM's. One trial = oneflow_graph_load_file_ex +
oneflow_session_create + the first oneflow_session_run (outputs checked against numpy). Native
is timed twice: with per-tensor checksums verified at load (the default) and with weights trusted
(verify_checksums = 0), which leaves the weight pages untouched until used.

    python3 bench/load_bench.py [--lib build/liboneflow.so] [--cli build/oneflow] [--dir DIR]
                                [--gib 1.0] [--trials 5] [--threads 0]
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from oneflow_ctypes import Library, _SessionOptions  # noqa: E402

DIM, OUT, BATCH = 1024, 16, 8
_P = ctypes.c_void_p


class _LoadOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("verify_checksums", ctypes.c_int32),
                ("borrow_memory", ctypes.c_int32), ("external_data_dir", ctypes.c_char_p)]


def make_model(path, rows, seed=0):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, DIM), dtype=np.float32)
    w = rng.standard_normal((DIM, OUT), dtype=np.float32)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
             helper.make_node("MatMul", ["emb", "W"], ["y"])]
    g = helper.make_graph(nodes, "embedding", [helper.make_tensor_value_info("ids", TensorProto.INT64, [BATCH])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, OUT])],
                          initializer=[numpy_helper.from_array(table, "table"), numpy_helper.from_array(w, "W")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    tmp = path + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, path)
    return table, w


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def first_output(lib, path, verify, ids, threads):
    """Seconds from load to the first output, and that output."""
    opts = _LoadOptions()
    lib.oneflow_load_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts))
    opts.verify_checksums = 1 if verify else 0
    sopts = _SessionOptions()
    lib.oneflow_session_options_init_sized(ctypes.byref(sopts), ctypes.sizeof(sopts))
    sopts.intra_op_threads = threads
    graph, session, x, out = _P(), _P(), _P(), (_P * 1)()
    shape = (ctypes.c_int64 * 1)(BATCH)
    names = (ctypes.c_char_p * 1)(b"ids")
    t0 = time.perf_counter()
    lib.check(lib.oneflow_graph_load_file_ex(os.fsencode(path), ctypes.byref(opts), ctypes.byref(graph)))
    lib.check(lib.oneflow_session_create(None, graph, ctypes.byref(sopts), ctypes.byref(session)))
    lib.check(lib.oneflow_tensor_create_borrowed(7, shape, 1, ids.ctypes.data, ids.nbytes, None, None, ctypes.byref(x)))
    ins = (_P * 1)(x)
    lib.check(lib.oneflow_session_run(session, names, ins, 1, None, 0, out, 1))
    elapsed = time.perf_counter() - t0
    y = np.empty((BATCH, OUT), np.float32)
    ctypes.memmove(y.ctypes.data, lib.oneflow_tensor_data(out[0]), y.nbytes)
    for fn, h in ((lib.oneflow_tensor_release, out[0]), (lib.oneflow_tensor_release, x),
                  (lib.oneflow_session_release, session), (lib.oneflow_graph_release, graph)):
        fn(h)
    return elapsed, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "liboneflow.so"))
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "oneflow"))
    ap.add_argument("--dir", default="/tmp/oneflow_load_bench")
    ap.add_argument("--gib", type=float, default=1.0, help="embedding table size in GiB")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    lib = Library(args.lib)
    raw = lib._lib
    for name, res, argt in (("oneflow_load_options_init_sized", _P, [ctypes.POINTER(_LoadOptions), ctypes.c_size_t]),
                            ("oneflow_graph_load_file_ex", _P, [ctypes.c_char_p, ctypes.POINTER(_LoadOptions),
                                                                ctypes.POINTER(_P)])):
        getattr(raw, name).restype = res
        getattr(raw, name).argtypes = argt

    os.makedirs(args.dir, exist_ok=True)
    rows = int(args.gib * (1 << 30)) // (DIM * 4)
    onnx_path, ofm_path = os.path.join(args.dir, "embedding.onnx"), os.path.join(args.dir, "embedding.ofm")
    print(f"generating a {rows}x{DIM} float32 table ({rows * DIM * 4 / (1 << 30):.2f} GiB) ...", file=sys.stderr)
    table, w = make_model(onnx_path, rows)
    subprocess.run([args.cli, "convert", onnx_path, ofm_path], check=True, stdout=subprocess.DEVNULL)
    ids = np.random.default_rng(1).integers(0, rows, BATCH, dtype=np.int64)
    reference = table[ids] @ w
    del table

    modes = [("onnx", onnx_path, True), ("native", ofm_path, True), ("native_trusted", ofm_path, False)]
    results = {}
    for name, path, verify in modes:
        warm(path)
        first_output(lib, path, verify, ids, args.threads)  # untimed: warms the page cache and the allocator
        times = []
        for _ in range(args.trials):
            t, y = first_output(lib, path, verify, ids, args.threads)
            if not np.allclose(y, reference, rtol=1e-4, atol=1e-3):
                raise SystemExit(f"{name}: output differs from numpy (max err {np.max(np.abs(y - reference))})")
            times.append(t * 1e3)
        results[name] = dict(median_ms=round(statistics.median(times), 2), min_ms=round(min(times), 2),
                             file_bytes=os.path.getsize(path))
        print(json.dumps({"mode": name, **results[name]}), flush=True)
    onnx_ms = results["onnx"]["median_ms"]
    summary = {"onnx_ms": onnx_ms, "native_ms": results["native"]["median_ms"],
               "native_trusted_ms": results["native_trusted"]["median_ms"],
               "speedup_native": round(onnx_ms / results["native"]["median_ms"], 1),
               "speedup_native_trusted": round(onnx_ms / results["native_trusted"]["median_ms"], 1),
               "target": "native <= 50 ms and >= 20x faster than ONNX"}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
