"""Det against numpy.linalg.det (float64) and onnxruntime: batched, 1x1, singular, permuted
(negative) and ill-conditioned matrices, float32 and float64; and the errors a non-square input
gets. Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
from onnx import helper  # noqa: E402

import oneflow  # noqa: E402


def det_model(shape, dtype):
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("Det", ["x"], ["y"])
    graph = helper.make_graph([node], "det", [helper.make_tensor_value_info("x", t, list(shape))],
                              [helper.make_tensor_value_info("y", t, list(shape[:-2]))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def run(x):
    with oneflow.Session(det_model(x.shape, x.dtype)) as s:
        return np.array(s.run({"x": x})["y"])


def matrices(rng, dtype):
    yield rng.standard_normal((5, 4, 4)).astype(dtype)             # a batch
    yield rng.standard_normal((2, 3, 6, 6)).astype(dtype)          # two batch dims
    yield np.array([[3.5]], dtype=dtype)                           # 1x1, no batch dims
    yield np.array([[1, 2], [2, 4]], dtype=dtype)                  # singular
    yield np.eye(5, dtype=dtype)[[1, 0, 2, 4, 3]]                  # two swaps: +1
    yield np.eye(3, dtype=dtype)[[1, 0, 2]]                        # one swap: -1
    yield np.array([[0, 2, 1], [1, 0, 3], [4, 5, 0]], dtype=dtype)  # a zero on the diagonal: pivoting needed
    h = 1.0 / (np.arange(1, 6)[:, None] + np.arange(5)[None, :])   # Hilbert 5x5, det ~3.7e-12
    yield h.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    for x in matrices(rng, dtype):
        got = run(x)
        want = np.linalg.det(x.astype(np.float64))
        assert got.shape == want.shape and got.dtype == np.dtype(dtype)
        # Both sides factor the same values in float64: they differ by rounding amplified by the
        # matrix's conditioning (relative to |det|, or to Hadamard's bound, the product of the row
        # norms, for a singular one), plus the float32 output's own rounding.
        n = x.shape[-1]
        xd = x.astype(np.float64)
        cond = np.minimum(np.linalg.cond(xd), 1e12) if n > 1 else np.ones(x.shape[:-2])
        hadamard = np.prod(np.linalg.norm(xd, axis=-1), axis=-1)
        out_eps = 6e-8 if dtype == np.float32 else 0.0
        bound = (out_eps + 10 * n * 2.2e-16 * cond) * np.abs(want) + 10 * n * 2.2e-16 * hadamard
        assert np.all(np.abs(got - want) <= bound), (x, got, want, bound)


def test_det_matches_onnxruntime():
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the second reference")
    x = np.random.default_rng(4).standard_normal((7, 5, 5)).astype(np.float32)
    want = ort.InferenceSession(det_model(x.shape, x.dtype), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(run(x), want, rtol=1e-5, atol=1e-6)


def test_det_rejects_non_square_and_integer_input():
    with pytest.raises(oneflow.OneflowError, match="square"):
        oneflow.Session(det_model((2, 3, 4), np.float32))
    with pytest.raises(oneflow.OneflowError, match="floating"):
        oneflow.Session(det_model((3, 3), np.int32))
