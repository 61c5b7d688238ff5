"""The ai.onnx.ml ops (Binarizer, ArrayFeatureExtractor) against onnxruntime (and numpy, for the
types onnxruntime's Binarizer lacks) on every element type they take, 1-D to 3-D inputs, repeated and [1, k] indices; plus their errors (NaN for Binarizer, as onnxruntime). Run with
PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

rng = np.random.default_rng(5)


def ml_model(op, inputs, stored=(), **attrs):
    fed = [(n, a) for n, a in inputs if n not in stored]
    graph = helper.make_graph(
        [helper.make_node(op, [n for n, _ in inputs], ["z"], domain="ai.onnx.ml", **attrs)], op,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in fed],
        [onnx.ValueInfoProto(name="z")], [numpy_helper.from_array(a, n) for n, a in inputs if n in stored])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
                          ir_version=8)
    return m.SerializeToString(), dict(fed)


def both(data, feeds):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with oneflow.Session(data) as s:
        got = np.asarray(s.run(feeds)["z"])
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("threshold", [0.0, 1.5, -2.0])
def test_binarizer(dtype, threshold):
    x = (rng.standard_normal((3, 5, 4)) * 4).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        x[1, 1, 1] = threshold  # equal is not above
    data, feeds = ml_model("Binarizer", [("x", x)], threshold=threshold)
    if dtype == np.float32:  # onnxruntime has float only
        both(data, feeds)
    with oneflow.Session(data) as s:
        got = np.asarray(s.run(feeds)["z"])
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, (x > threshold).astype(dtype))


def test_binarizer_refuses_nan():  # as onnxruntime does
    x = np.array([[0.5, np.nan]], np.float32)
    data, feeds = ml_model("Binarizer", [("x", x)])
    with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match="X holds NaN at element 1"):
        s.run(feeds)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 3, 7)])
@pytest.mark.parametrize("indices", [[4], [0, 6, 6, 2], [[1, 3, 5]]])
def test_array_feature_extractor(dtype, shape, indices):
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    both(*ml_model("ArrayFeatureExtractor", [("x", x), ("i", np.array(indices, np.int64))], stored=("i",)))


def test_array_feature_extractor_errors():
    x = np.zeros((2, 3), np.float32)
    data, feeds = ml_model("ArrayFeatureExtractor", [("x", x), ("i", np.array([1, 3], np.int64))])
    with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match=r"index 3 \(Y\[1\]\) is outside"):
        s.run(feeds)
    data, _ = ml_model("ArrayFeatureExtractor", [("x", x), ("i", np.array([1], np.int32))])
    with pytest.raises(oneflow.OneflowError, match="must be int64"):
        oneflow.Session(data)
