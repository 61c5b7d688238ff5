"""DequantizeLinear against onnxruntime at the opsets models use (13, 19, 21): per tensor, per axis
and blocked, every integer type of each opset with its extremes, scales and zero points fed at run
time or stored in the model; and the errors of bad types and shapes. The op-case table
(tests/ops/make_op_cases.py) checks it against onnx.reference too. Run with PYTHONPATH holding the
binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402


def model(x, scale, zp, opset, stored=(), **attrs):
    """One DequantizeLinear node; inputs named in `stored` become initializers."""
    arrays = {"x": x, "x_scale": scale, "x_zero_point": zp}
    names = ["x", "x_scale"] + (["x_zero_point"] if zp is not None else [])
    fed = [n for n in names if n not in stored]
    inits = [numpy_helper.from_array(arrays[n], n) for n in names if n in stored]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", names, ["y"], **attrs)], "dq",
        [helper.make_tensor_value_info(n, tt(arrays[n]), list(arrays[n].shape)) for n in fed],
        [helper.make_tensor_value_info("y", tt(scale), list(x.shape))], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    return m.SerializeToString(), {n: arrays[n] for n in fed}


def ints(rng, dtype, shape):
    """The type's whole range with its extremes, except int32: onnxruntime computes x - zero_point
    in int32 and wraps on overflow, so int32 stays within +-2^30 (int32 is the bias type, its zero
    point 0 in practice)."""
    info = np.iinfo(dtype)
    lo, hi = (-(2**30), 2**30) if dtype == np.int32 else (info.min, info.max)
    v = rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if v.size:
        v.flat[0], v.flat[-1] = lo, hi
    return v


def compare(data, feeds):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with oneflow.Session(data) as s:
        got = np.array(s.run(feeds)["y"])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6, atol=0)


@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int16, np.uint16])
@pytest.mark.parametrize("stored", [(), ("x_scale", "x_zero_point")])
def test_per_tensor_and_per_axis(opset, dtype, stored):
    if dtype in (np.int16, np.uint16) and opset < 21:
        pytest.skip("int16 and uint16 arrive in opset 21")
    rng = np.random.default_rng(opset * 7 + np.dtype(dtype).itemsize)
    x = ints(rng, dtype, (2, 5, 3))
    for scale, zp, attrs in [
        (np.float32(0.02), ints(rng, dtype, ()), {}),                                         # per tensor
        (rng.uniform(0.001, 0.1, 5).astype(np.float32), ints(rng, dtype, (5,)), {}),            # axis 1 (default)
        (rng.uniform(0.001, 0.1, 3).astype(np.float32), None, {"axis": -1}),                    # last axis, no zp
        (rng.uniform(0.001, 0.1, 2).astype(np.float32), ints(rng, dtype, (2,)), {"axis": 0}),
    ]:
        compare(*model(x, np.asarray(scale), None if zp is None else np.asarray(zp), opset,
                       stored=[s for s in stored if s != "x_zero_point" or zp is not None], **attrs))


@pytest.mark.parametrize("scale_dtype", [np.float16, np.float32])
def test_blocked_with_a_remainder_block(scale_dtype):
    rng = np.random.default_rng(21)
    x = ints(rng, np.int8, (3, 10, 2))
    scale = rng.uniform(0.01, 0.2, (3, 4, 2)).astype(scale_dtype)  # ceil(10 / 3) = 4 blocks along axis 1
    zp = ints(rng, np.int8, (3, 4, 2))
    compare(*model(x, scale, zp, 21, block_size=3, axis=1))


def test_errors_name_the_problem():
    rng = np.random.default_rng(5)
    x = ints(rng, np.int8, (4, 6))
    bad = [
        (model(x.astype(np.int64), np.float32(0.1), None, 19), "int64"),
        (model(x, np.float32(0.1), np.asarray(np.uint8(3)), 19), "x_zero_point"),
        (model(x, np.ones(4, np.float32), None, 19, axis=1), "entries for axis"),
        (model(x, np.ones(6, np.float32), None, 19, axis=2), "axis 2 is out of range"),
        (model(x, np.ones((4, 2), np.float32), None, 21, axis=1, block_size=2), "does not block"),  # wants [4, 3]
        (model(x, np.float32(0.1).astype(np.float16).reshape(()), None, 13), "float32"),
        (model(x, np.float32(0.1), None, 23, output_dtype=onnx.TensorProto.FLOAT16), "output_dtype"),
    ]
    for (data, _), needle in bad:
        with pytest.raises(oneflow.OneflowError, match=needle):
            oneflow.Session(data)
