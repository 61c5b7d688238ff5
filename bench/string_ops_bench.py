#!/usr/bin/env python3
"""The string ops (StringSplit, StringConcat, RegexFullMatch, LabelEncoder, StringNormalizer) against
onnxruntime, one thread, as ratios ours/onnxruntime of the median of alternating block medians
(run_bench.time_engines); outputs checked against onnxruntime's first. The kernels are compiled once (no
instruction-set tiers: byte scanning and hashing), so --isa only repeats the same code; the default runs
the native tier alone.

Rows (fixed seeds; words from a 2000-word vocabulary of 3-10 letters):
  StringSplit      4096 sentences of 4-16 words, split on " "
  StringConcat     8192 words + a [1] suffix (broadcast)
  RegexFullMatch   4096 e-mail-like strings against ONNX's node-test pattern
  LabelEncoder     16384 words through a 1000-key vocabulary (string -> int64)
  StringNormalizer 4096 words, 50 stopwords dropped (case NONE: onnxruntime's case mapping needs a locale)

    python3 bench/string_ops_bench.py [--lib build/liboneflow.so] [--isa native]
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_bench  # noqa: E402  (time_rows_vs_ort, tier_bench_main)


def rows():
    from onnx import TensorProto, helper
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, rng.integers(3, 11))) for _ in range(2000)]
    S = TensorProto.STRING

    def model(node, outputs, opset=20, ml=False):
        imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("ai.onnx.ml", 2)] if ml else [])
        graph = helper.make_graph([node], "bench", [helper.make_tensor_value_info("x", S, None)],
                                  [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                                  [helper.make_tensor("suffix", S, [1], [b"_tail"])] if "suffix" in node.input else [])
        return helper.make_model(graph, opset_imports=imports, ir_version=10)

    sentences = np.array([" ".join(rng.choice(vocab, rng.integers(4, 17))) for _ in range(4096)], dtype=object)
    words = np.array(rng.choice(vocab, 16384).tolist(), dtype=object)
    mails = np.array([f"{rng.choice(vocab)}.{rng.choice(vocab)}@{rng.choice(['gmail', 'yahoo', 'example'])}.com"
                      for _ in range(4096)], dtype=object)
    return [
        ("StringSplit 4096 sentences", model(helper.make_node("StringSplit", ["x"], ["y", "n"], delimiter=" "),
                                             [("y", S), ("n", TensorProto.INT64)]), {"x": sentences}),
        ("StringConcat 8192 + suffix", model(helper.make_node("StringConcat", ["x", "suffix"], ["y"]), [("y", S)]),
         {"x": words[:8192]}),
        ("RegexFullMatch 4096 e-mails", model(helper.make_node(
            "RegexFullMatch", ["x"], ["y"], pattern=r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)"),
            [("y", TensorProto.BOOL)]), {"x": mails}),
        ("LabelEncoder 16384 via 1000 keys", model(helper.make_node(
            "LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=vocab[:1000],
            values_int64s=list(range(1000)), default_int64=-1), [("y", TensorProto.INT64)], opset=17, ml=True),
         {"x": words}),
        ("StringNormalizer 4096, 50 stopwords", model(helper.make_node(
            "StringNormalizer", ["x"], ["y"], is_case_sensitive=1, stopwords=vocab[:50]), [("y", S)], opset=10),
         {"x": words[:4096]}),
    ]


def run_tier(lib, max_seconds):
    run_bench.time_rows_vs_ort(lib, max_seconds, rows(), rtol=0, atol=0)


def main():
    if "--isa" not in sys.argv:
        sys.argv += ["--isa", "native"]
    return run_bench.tier_bench_main(__file__, __doc__.splitlines()[0], run_tier)


if __name__ == "__main__":
    sys.exit(main())
