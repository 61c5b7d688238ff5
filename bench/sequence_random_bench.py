#!/usr/bin/env python3
"""The sequence and random ops against onnxruntime, one thread, in one process per instruction-set
tier (the host's, then capped with ONEFLOW_MAX_ISA=avx2 and sse4.2, so every compiled copy of the
kernels is timed), as ratios ours/onnxruntime of the median of alternating block medians
(run_bench.time_engines).

Rows: RandomUniform and RandomNormal of 1M float32, Bernoulli over 1M probabilities, SplitToSequence of
a [256, 4096] float32 tensor into 64-column pieces concatenated back (ConcatFromSequence), and a
SequenceConstruct/SequenceInsert/SequenceAt chain on [512, 512] tensors. Random rows are checked by
shape and range (draws differ between engines), the sequence rows by equal outputs.

    python3 bench/sequence_random_bench.py [--lib build/liboneflow.so] [--isa native,avx2,sse4.2]
"""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (time_engines, machine_info, load_binding, make_ort_session)

F = TensorProto.FLOAT
N = 1 << 20


def _model(nodes, inputs, outputs, opset=18):
    m = helper.make_model(helper.make_graph(nodes, "bench", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _const(name, value):
    return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value), name))


def rows():
    """(name, model, feeds, check) where check(ours, ort) raises on a wrong output."""
    vi = helper.make_tensor_value_info
    rng = np.random.default_rng(0)

    def in_range(lo, hi):
        def check(ours, ort):
            assert ours.shape == ort.shape and ours.dtype == ort.dtype
            assert lo <= ours.min() and ours.max() <= hi
        return check

    def equal(ours, ort):
        np.testing.assert_array_equal(ours, ort)

    x = rng.standard_normal((256, 4096)).astype(np.float32)
    a, b = (rng.standard_normal((512, 512)).astype(np.float32) for _ in range(2))
    return [
        ("RandomUniform 1M", _model([helper.make_node("RandomUniform", [], ["y"], shape=[N], seed=1.0)], [],
                                    [vi("y", F, [N])]), {}, in_range(0.0, 1.0)),
        ("RandomNormal 1M", _model([helper.make_node("RandomNormal", [], ["y"], shape=[N], seed=1.0)], [],
                                   [vi("y", F, [N])]), {}, in_range(-10.0, 10.0)),
        ("Bernoulli 1M", _model([helper.make_node("Bernoulli", ["p"], ["y"], seed=1.0)], [vi("p", F, [N])],
                                [vi("y", F, [N])]), {"p": rng.random(N).astype(np.float32)}, in_range(0.0, 1.0)),
        ("SplitToSequence+Concat [256,4096]",
         _model([_const("k", np.int64(64)), helper.make_node("SplitToSequence", ["x", "k"], ["s"], axis=1),
                 helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=1)],
                [vi("x", F, [256, 4096])], [vi("y", F, [256, 4096])]), {"x": x}, equal),
        ("SequenceInsert/At [512,512]",
         _model([_const("i", np.int64(1)), helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
                 helper.make_node("SequenceInsert", ["s", "a"], ["s2"]),
                 helper.make_node("SequenceAt", ["s2", "i"], ["y"])],
                [vi("a", F, [512, 512]), vi("b", F, [512, 512])], [vi("y", F, [512, 512])]), {"a": a, "b": b}, equal),
    ]


def run_tier(lib, max_seconds):
    """Times every row in this process (its ONEFLOW_MAX_ISA already set); prints JSON rows."""
    oneflow = run_bench.load_binding(lib)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, feeds, check in rows():
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            ort_sess = run_bench.make_ort_session(path, 1)
            ours_sess = oneflow.Session(path, oneflow.SessionOptions(threads=1))
            check(ours_sess.run(feeds)["y"], ort_sess.run(["y"], feeds)[0])
            row = {"row": name}
            run_bench.time_engines([("ours", lambda: ours_sess.run(feeds)), ("ort", lambda: ort_sess.run(["y"], feeds))],
                                   iters=50, warmup=5, max_seconds=max_seconds, row=row, blocks=10, min_seconds=0.5)
            out.append({"row": name, "ours_ms": row["ours"]["p50_ms"], "ort_ms": row["ort"]["p50_ms"]})
            ours_sess.close()
    print(json.dumps(out))


def main():
    return run_bench.tier_bench_main(__file__, __doc__.splitlines()[0], run_tier)


if __name__ == "__main__":
    sys.exit(main())
