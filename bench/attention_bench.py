#!/usr/bin/env python3
"""The attention ops against onnxruntime, one thread, in one process per instruction-set tier (the
host's, then capped with ONEFLOW_MAX_ISA=avx2 and sse4.2, so every compiled copy of the kernels is
timed), as ratios ours/onnxruntime of the median of alternating block medians
(run_bench.time_engines). Outputs are checked against onnxruntime's first.

Rows (all f32, batch 1):
  com.microsoft Attention   BERT-base layer: input [1, 128, 768], 12 heads, key lengths mask
  MultiHeadAttention        Whisper-tiny-style cross attention: 64 queries over 1500 keys, 6 heads
  GroupQueryAttention       Llama-style 32 query / 8 KV heads of 64: a 256-token prompt with rotary,
                            and one decode step over a 1024-token cache
  ONNX Attention (23)       the standard op: 8 heads of 64 over 256 tokens, causal

    python3 bench/attention_bench.py [--lib build/liboneflow.so] [--isa native,avx2,sse4.2]
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (time_rows_vs_ort, tier_bench_main)

MS = "com.microsoft"


def _model(op, inputs, n_outputs, domain=MS, stored=(), opset=23, **attrs):
    """One node; inputs [(name, array or None)], `stored` ones as initializers."""
    names = [n if a is not None else "" for n, a in inputs]
    outs = [f"out{k}" for k in range(n_outputs)]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    fed = {n: a for n, a in inputs if a is not None and n not in stored}
    graph = helper.make_graph(
        [helper.make_node(op, names, outs, domain=domain, **attrs)], op,
        [helper.make_tensor_value_info(n, tt(a), list(a.shape)) for n, a in fed.items()],
        [onnx.ValueInfoProto(name=o) for o in outs],
        [numpy_helper.from_array(a, n) for n, a in inputs if a is not None and n in stored])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    m.ir_version = 9
    return m, fed, outs


def rows():
    rng = np.random.default_rng(0)
    f32 = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731
    out = []
    d = 768
    out.append(("ms Attention BERT-base S=128", _model(
        "Attention", [("input", f32(1, 128, d)), ("weights", f32(d, 3 * d, scale=0.03)), ("bias", f32(3 * d)),
                      ("mask_index", i32([120]))], 1, stored=("weights", "bias"), num_heads=12)))
    out.append(("MultiHeadAttention cross 64x1500", _model(
        "MultiHeadAttention", [("query", f32(1, 64, 384)), ("key", f32(1, 1500, 384)), ("value", f32(1, 1500, 384))],
        1, num_heads=6)))
    nq, nkv, h = 32, 8, 64
    inv = 1.0 / (10000 ** (np.arange(0, h, 2) / h))
    ang = np.arange(2048)[:, None] * inv[None]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    s = 256
    out.append(("GQA prompt S=256 rotary", _model(
        "GroupQueryAttention", [("query", f32(1, s, nq * h)), ("key", f32(1, s, nkv * h)), ("value", f32(1, s, nkv * h)),
                                ("past_key", None), ("past_value", None), ("seqlens_k", i32([s - 1])),
                                ("total_sequence_length", i32(s)), ("cos_cache", cos), ("sin_cache", sin)], 3,
        stored=("cos_cache", "sin_cache"), num_heads=nq, kv_num_heads=nkv, do_rotary=1)))
    past = 1024
    out.append(("GQA decode past=1024", _model(
        "GroupQueryAttention", [("query", f32(1, 1, nq * h)), ("key", f32(1, 1, nkv * h)), ("value", f32(1, 1, nkv * h)),
                                ("past_key", f32(1, nkv, past, h)), ("past_value", f32(1, nkv, past, h)),
                                ("seqlens_k", i32([past])), ("total_sequence_length", i32(past + 1))], 3,
        num_heads=nq, kv_num_heads=nkv)))
    out.append(("ONNX Attention 8x64 S=256 causal", _model(
        "Attention", [("Q", f32(1, 8, 256, 64)), ("K", f32(1, 8, 256, 64)), ("V", f32(1, 8, 256, 64))], 1,
        domain="", is_causal=1)))
    return out


def run_tier(lib, max_seconds):
    """Times every row in this process (its ONEFLOW_MAX_ISA already set); prints JSON rows."""
    run_bench.time_rows_vs_ort(lib, max_seconds, [(name, model, feeds) for name, (model, feeds, _) in rows()],
                               rtol=1e-3, atol=1e-4)


def main():
    return run_bench.tier_bench_main(__file__, __doc__.splitlines()[0], run_tier)


if __name__ == "__main__":
    sys.exit(main())
