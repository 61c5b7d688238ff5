#!/usr/bin/env python3
"""onnxruntime's count on the same ONNX node cases the conformance runner uses, beside ours.

Runs every materialized case (materialize_node_tests.py) through onnxruntime's CPU provider and
compares with the expected outputs at the case's tolerance, as oneflow_conformance does: same
shape, same dtype, values within rtol/atol (NaN where NaN is expected). With --ours FILE (the
runner's --write-passing list, or tests/conformance/expected_pass.txt), prints how the two sets
relate and lists the cases onnxruntime passes and we do not, grouped by op — the work list of the
real-world-ONNX issue.

Usage: onnxruntime_baseline.py NODE_TEST_DIR [--ours PASSING.txt] [--list]
"""
import argparse
import collections
import os
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node_test_data import read_value  # noqa: E402


def load_case(case_dir, graph):
    """Per test_data_set: {"input": {j: value}, "output": {j: value}} (node_test_data.read_value)."""
    sets = []
    for ds in sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_")):
        path = os.path.join(case_dir, ds)
        values = {"input": {}, "output": {}}
        for f in os.listdir(path):
            kind, _, index = f[:-3].partition("_")
            infos = graph.input if kind == "input" else graph.output
            values[kind][int(index)] = read_value(os.path.join(path, f), infos[int(index)].type)
        sets.append(values)
    return sets


def matches(got, want, rtol, atol):
    """Same kind, shape, dtype, and values within tolerance, through sequences (lists) and None."""
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            matches(g, w, rtol, atol) for g, w in zip(got, want))
    g = np.asarray(got)
    if g.shape != want.shape or g.dtype != want.dtype:
        return False
    if want.dtype.kind in "fc":
        return bool(np.allclose(g, want, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(g, want))


def run_case(case_dir):
    """'pass', 'fail' or 'refused' (onnxruntime cannot load or run the model, or the case's data
    cannot be represented)."""
    model_path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(model_path)
    rtol, atol = (float(v) for v in open(os.path.join(case_dir, "tolerance.txt")).read().split())
    try:
        sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    except Exception:
        return "refused"
    names_in = [i.name for i in model.graph.input]
    names_out = [o.name for o in model.graph.output]
    for ds in load_case(case_dir, model.graph):
        if len(ds["input"]) != len(names_in) or len(ds["output"]) != len(names_out):
            return "refused"  # maps, or dtypes the materializer could not write
        feeds = {names_in[j]: v for j, v in ds["input"].items()}
        try:
            got = sess.run(None, feeds)
        except Exception:
            return "refused"
        for j, want in ds["output"].items():
            if not matches(got[j], want, rtol, atol):
                return "fail"
    return "pass"


def op_of(case_dir):
    nodes = onnx.load(os.path.join(case_dir, "model.onnx")).graph.node
    return nodes[0].op_type if len(nodes) == 1 else "+".join(sorted({n.op_type for n in nodes}))[:60]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--ours", help="the cases oneflow passes, one per line")
    ap.add_argument("--list", action="store_true", help="print every case onnxruntime passes and we do not")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    ort.set_default_logger_severity(4)
    cases = sorted(d for d in os.listdir(a.dir) if os.path.isfile(os.path.join(a.dir, d, "model.onnx")))
    result = {c: run_case(os.path.join(a.dir, c)) for c in cases}
    count = collections.Counter(result.values())
    print(f"onnxruntime {ort.__version__}: passed {count['pass']}, failed {count['fail']}, refused {count['refused']} "
          f"(of {len(cases)}, onnx {onnx.__version__})")
    if not a.ours:
        return 0
    ours = {line.strip() for line in open(a.ours) if line.strip() and not line.startswith("#")}
    theirs = {c for c, r in result.items() if r == "pass"}
    only_theirs = sorted(theirs - ours)
    print(f"oneflow: passed {len(ours & set(cases))} ({100 * len(ours & set(cases)) / len(cases):.1f}%); both "
          f"{len(ours & theirs)}; onnxruntime only {len(only_theirs)}; oneflow only {len(ours - theirs)}")
    by_op = collections.Counter(op_of(os.path.join(a.dir, c)) for c in only_theirs)
    print("onnxruntime only, by op: " + ", ".join(f"{op} {n}" for op, n in by_op.most_common()))
    if a.list:
        for c in only_theirs:
            print("  " + c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
