"""Integer ops at the edges of every integer type, against numpy (docs/architecture.md, "Integer edge
cases"): Abs/Neg of the minimum wrap; Add/Sub/Mul/Sum and Pow wrap; Div truncates, x / 0 is 0 and
INT_MIN / -1 is INT_MIN; Mod (fmod 0 and 1) by 0 is 0; BitShift past the width gives 0 (or the sign);
Cast wraps between integers and saturates from floats (NaN -> 0), a rule computed here in Python.

Each case runs twice: with graph inputs fed at run time, and with the inputs as initializers, so the
node is evaluated by constant folding when the session is created (where a fuzzer once found
`0 - INT_MIN` in Abs). Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import base64
import math
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
INT_IDS = [np.dtype(t).name for t in INT_TYPES]
FLOAT_TYPES = [np.float16, np.float32, np.float64]
ONNX_TYPE = {np.dtype(t): helper.np_dtype_to_tensor_dtype(np.dtype(t))
             for t in INT_TYPES + FLOAT_TYPES + [np.bool_]}
MODES = ["run", "folded"]


def edges(dt):
    """0, 1, -1, min, max, min+1, max-1 and a few small values of integer type dt, sorted."""
    info = np.iinfo(dt)
    vals = {0, 1, 2, 7, info.min, info.min + 1, info.max, info.max - 1}
    if info.min < 0:
        vals |= {-1, -2, -7}
    return np.array(sorted(vals), dtype=dt)


def pairs(xs, ys):
    """Every (x, y) combination, as two flat arrays."""
    return np.repeat(xs, len(ys)), np.tile(ys, len(xs))


def run_node(op, inputs, out_dtype, mode, **attrs):
    """One `op` node on `inputs` (numpy arrays) -> its output as numpy. mode "run" feeds graph inputs;
    "folded" makes the inputs initializers, so the session computes the node at load."""
    names = [f"in{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    out = helper.make_tensor_value_info("y", ONNX_TYPE[np.dtype(out_dtype)], list(inputs[0].shape))
    if mode == "folded":
        graph = helper.make_graph([node], op, [], [out],
                                  initializer=[numpy_helper.from_array(a, n) for a, n in zip(inputs, names)])
        feeds = {}
    else:
        graph = helper.make_graph(
            [node], op, [helper.make_tensor_value_info(n, ONNX_TYPE[a.dtype], list(a.shape))
                         for a, n in zip(inputs, names)], [out])
        feeds = dict(zip(names, inputs))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with oneflow.Session(model.SerializeToString()) as s:
        y = s.run(feeds)["y"]
    assert y.dtype == np.dtype(out_dtype)
    return np.array(y)  # a copy: the engine's buffer goes with the session


def check(got, want, inputs):
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)[:8]
        rows = [f"  in={[a[i] for a in inputs]} got={got[i]} want={want[i]}" for i in bad]
        pytest.fail(f"{len(np.flatnonzero(got != want))} mismatches, first:\n" + "\n".join(rows))


def trunc_div(a, b):
    """ONNX integer Div (C truncation) from numpy's floor division: one up where they differ. numpy
    gives x // 0 = 0 and INT_MIN // -1 = INT_MIN, the results the engine defines."""
    adjust = (np.fmod(a, b) != 0) & ((a < 0) != (b < 0))
    return np.floor_divide(a, b) + adjust.astype(a.dtype)


BINARY = {
    "Add": (np.add, {}),
    "Sub": (np.subtract, {}),
    "Mul": (np.multiply, {}),
    "Div": (trunc_div, {}),
    "Mod_fmod0": (np.remainder, {"fmod": 0}),  # sign of the divisor, like Python's %
    "Mod_fmod1": (np.fmod, {"fmod": 1}),       # sign of the dividend, like C's %
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INT_TYPES, ids=INT_IDS)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_at_the_edges(op, dt, mode):
    fn, attrs = BINARY[op]
    a, b = pairs(edges(dt), edges(dt))  # includes x / 0, INT_MIN / -1 and every overflow
    with np.errstate(all="ignore"):
        want = fn(a, b)
    got = run_node(op.split("_")[0], [a, b], dt, mode, **attrs)
    check(got, want, [a, b])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INT_TYPES, ids=INT_IDS)
@pytest.mark.parametrize("op,fn", [("Abs", np.abs), ("Neg", np.negative)], ids=["Abs", "Neg"])
def test_unary_at_the_edges(op, fn, dt, mode):
    x = edges(dt)
    with np.errstate(all="ignore"):
        want = fn(x)
    got = run_node(op, [x], dt, mode)
    check(got, want, [x])
    if np.iinfo(dt).min < 0:
        assert got[0] == np.iinfo(dt).min  # |min| and -min wrap to min, as numpy


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INT_TYPES, ids=INT_IDS)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift_past_the_width(direction, dt, mode):
    bits = np.dtype(dt).itemsize * 8
    amounts = [0, 1, bits - 1, bits, bits + 1, 2 * bits, np.iinfo(dt).max]
    if np.iinfo(dt).min < 0:
        amounts += [-1, np.iinfo(dt).min]  # numpy shifts everything out for negative amounts too
    x, s = pairs(edges(dt), np.array(amounts, dtype=dt))
    want = (np.left_shift if direction == "LEFT" else np.right_shift)(x, s)
    got = run_node("BitShift", [x, s], dt, mode, direction=direction)
    check(got, want, [x, s])
    if np.iinfo(dt).min == 0:
        assert not got[s >= bits].any()  # unsigned: 0 in both directions


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INT_TYPES, ids=INT_IDS)
def test_sum_of_three_wraps(dt, mode):
    a, b = pairs(edges(dt), edges(dt))
    c = np.roll(a, 3)
    with np.errstate(all="ignore"):
        want = np.add(np.add(a, b), c)
    check(run_node("Sum", [a, b, c], dt, mode), want, [a, b, c])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", INT_TYPES, ids=INT_IDS)
def test_pow_wraps(dt, mode):
    top = int(np.iinfo(dt).max)  # uint64's top exponent is negative as int64: taken unsigned
    exps = np.array(sorted(v for v in {0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 63, 64, top} if v <= top), dtype=dt)
    x, e = pairs(edges(dt), exps)
    with np.errstate(all="ignore"):
        want = np.power(x, e)
    check(run_node("Pow", [x, e], dt, mode), want, [x, e])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64], ids=["int8", "int32", "int64"])
def test_pow_outside_numpy(dt, mode):
    # numpy refuses negative integer exponents; the engine gives the truncated quotient 1 / x^-e
    # (and 0 for 0^-e). A float exponent computes in double and converts back as Cast does.
    x, e = pairs(np.array([-2, -1, 0, 1, 2], dt), np.array([-1, -2, -3], dt))
    want = np.where(x == 1, 1, np.where(x == -1, np.where(e % 2 == 0, 1, -1), 0)).astype(dt)
    check(run_node("Pow", [x, e], dt, mode), want, [x, e])
    info = np.iinfo(dt)
    x = np.array([0, 2, -8, 2, 3, -2], dt)
    e = np.array([-1.0, 200.0, 0.5, 3.0, 2.5, 201.0])
    want = np.array([info.max, info.max, 0, 8, 15, info.min], dt)  # inf, 2^200, NaN, 8, 15.58, -2^201
    check(run_node("Pow", [x, e], dt, mode), want, [x, e])


def saturate(v, dt):
    """The engine's float -> integer rule: NaN -> 0, beyond either end -> that end, else truncation."""
    info = np.iinfo(dt)
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return info.max if v > 0 else info.min
    return min(max(math.trunc(v), info.min), info.max)


CAST_VALUES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.7, -2.7,
               127.5, -128.9, 255.5, 256.0, -129.0, 32767.5, -32768.5, 65535.9, 65536.0, 2.0**31 - 1, 2.0**31,
               -2.0**31, -2.0**31 - 1, 2.0**32, 2.0**53, 2.0**63, -2.0**63, 2.0**64, 1e20, -1e20, 1e300, -1e300]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dst", INT_TYPES, ids=INT_IDS)
@pytest.mark.parametrize("src", FLOAT_TYPES, ids=[np.dtype(t).name for t in FLOAT_TYPES])
def test_cast_float_to_integer_saturates(src, dst, mode):
    with np.errstate(over="ignore"):
        x = np.array(CAST_VALUES, dtype=src)  # what the source type holds (1e300 is inf in float32)
    want = np.array([saturate(float(v), dst) for v in x], dtype=dst)
    # Where the value truncates into range, the rule is numpy's conversion, on every platform.
    info = np.iinfo(dst)
    inside = np.array([math.isfinite(v) and info.min <= math.trunc(v) <= info.max for v in map(float, x)])
    assert inside.sum() >= 8
    np.testing.assert_array_equal(want[inside], x[inside].astype(dst))
    got = run_node("Cast", [x], dst, mode, to=ONNX_TYPE[np.dtype(dst)])
    check(got, want, [x])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", INT_TYPES, ids=INT_IDS)
def test_cast_from_integers_as_numpy(src, mode):
    # Between integers the low bits are kept (wrap); to floats and bool as numpy converts.
    x = edges(src)
    for dst in INT_TYPES + FLOAT_TYPES + [np.bool_]:
        got = run_node("Cast", [x], dst, mode, to=ONNX_TYPE[np.dtype(dst)])
        with np.errstate(over="ignore"):  # int32 max is inf in float16
            want = x.astype(dst)
        check(got, want, [x])


@pytest.mark.parametrize("mode", MODES)
def test_cast_with_bool(mode):
    x = np.array([math.nan, math.inf, -0.0, 0.0, 0.25, -3.0], np.float32)
    check(run_node("Cast", [x], np.bool_, mode, to=TensorProto.BOOL), x.astype(np.bool_), [x])
    b = np.array([True, False, True])
    for dst in INT_TYPES + FLOAT_TYPES:
        check(run_node("Cast", [b], dst, mode, to=ONNX_TYPE[np.dtype(dst)]), b.astype(dst), [b])


def test_fuzzer_abs_int_min_regression_loads():
    # The libFuzzer input that made constant folding compute 0 - INT_MIN in Abs (UBSan: signed
    # integer overflow); it is also in the fuzzer's seed corpus (tests/fuzz/make_seed_corpus.py).
    # The session may refuse the model (its output is a map), but only with a proper error.
    sys.path.insert(0, os.path.join(REPO, "tests", "fuzz"))
    try:
        import make_seed_corpus
    finally:
        sys.path.pop(0)
    data = base64.b64decode(make_seed_corpus.REGRESSIONS["abs_int_min_constant"])
    try:
        with oneflow.Session(data):
            pass
    except oneflow.OneflowError:
        pass
