"""The ai.onnx.ml ops (Binarizer, ArrayFeatureExtractor, TreeEnsemble) against onnxruntime (and
numpy, for the types onnxruntime's Binarizer lacks): every element type they take, 1-D to 3-D
inputs, repeated and [1, k] indices, random tree ensembles with every branch mode, NaN routing,
membership sets, every aggregation; plus their errors (NaN for Binarizer, as
onnxruntime; malformed trees). Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the
library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

rng = np.random.default_rng(5)


def ml_model(op, inputs, stored=(), ml_opset=3, **attrs):
    fed = [(n, a) for n, a in inputs if n not in stored]
    graph = helper.make_graph(
        [helper.make_node(op, [n for n, _ in inputs], ["z"], domain="ai.onnx.ml", **attrs)], op,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)) for n, a in fed],
        [onnx.ValueInfoProto(name="z")], [numpy_helper.from_array(a, n) for n, a in inputs if n in stored])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", ml_opset)],
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


# onnxruntime 1.31 matches membership sets only for non-negative members (a categorical bit set),
# so the sets compared with it stay there; negative members are checked against the ONNX reference.
MEMBER_VALUES = [0, 1, 2, 3]


def random_ensemble(trees, features, targets, modes, rng):
    """Random trees in TreeEnsemble's flat attribute form: nodes listed per tree, membership sets in
    node order, some roots that are a single leaf."""
    a = {k: [] for k in ("nodes_featureids", "nodes_modes", "nodes_splits", "nodes_truenodeids", "nodes_falsenodeids",
                         "nodes_trueleafs", "nodes_falseleafs", "nodes_missing_value_tracks_true", "leaf_targetids",
                         "leaf_weights", "tree_roots", "membership_values")}

    def leaf():
        a["leaf_targetids"].append(int(rng.integers(0, targets)))
        a["leaf_weights"].append(float(rng.uniform(-3, 3)))
        return len(a["leaf_targetids"]) - 1

    def branch(depth):
        i = len(a["nodes_featureids"])
        mode = int(rng.choice(modes))
        a["nodes_featureids"].append(int(rng.integers(0, features)))
        a["nodes_modes"].append(mode)
        a["nodes_splits"].append(float(rng.integers(-2, 3)) if mode != 6 else 0.0)
        a["nodes_missing_value_tracks_true"].append(int(rng.integers(0, 2)))
        if mode == 6:
            a["membership_values"] += [float(v) for v in rng.choice(MEMBER_VALUES, 2, replace=False)] + [np.nan]
        for side in ("true", "false"):
            a[f"nodes_{side}nodeids"].append(0)
            a[f"nodes_{side}leafs"].append(0)
        for side in ("true", "false"):
            if depth >= 3 or rng.random() < 0.3:
                a[f"nodes_{side}nodeids"][i], a[f"nodes_{side}leafs"][i] = leaf(), 1
            else:
                a[f"nodes_{side}nodeids"][i], a[f"nodes_{side}leafs"][i] = branch(depth + 1), 0
        return i

    for _ in range(trees):
        a["tree_roots"].append(branch(0))
    return a


def tree_attributes(a, dtype):
    """random_ensemble's lists as TreeEnsemble attributes over 3 targets (tensors in `dtype`)."""
    tensor = lambda key, t: numpy_helper.from_array(np.array(a[key], t), key)  # noqa: E731
    attrs = dict(n_targets=3, nodes_modes=tensor("nodes_modes", np.uint8), nodes_splits=tensor("nodes_splits", dtype),
                 leaf_weights=tensor("leaf_weights", dtype), membership_values=tensor("membership_values", dtype))
    for k in ("nodes_featureids", "nodes_truenodeids", "nodes_falsenodeids", "nodes_trueleafs", "nodes_falseleafs",
              "nodes_missing_value_tracks_true", "leaf_targetids", "tree_roots"):
        attrs[k] = a[k]
    return attrs


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tree_ensemble(aggregate, dtype):
    local = np.random.default_rng(100 + aggregate)
    a = random_ensemble(6, 5, 3, [0, 1, 2, 3, 4, 5, 6], local)
    x = local.integers(-2, 3, (40, 5)).astype(dtype) + local.choice([0, 0.5], (40, 5)).astype(dtype)
    x[local.random((40, 5)) < 0.1] = np.nan
    attrs = dict(tree_attributes(a, dtype), aggregate_function=aggregate)
    data, feeds = ml_model("TreeEnsemble", [("x", x)], ml_opset=5, **attrs)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    with oneflow.Session(data) as s:
        got = np.asarray(s.run(feeds)["z"])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tree_ensemble_negative_members_match_the_onnx_reference():
    from onnx.reference import ReferenceEvaluator
    global MEMBER_VALUES
    # (no 0: the reference's parser of membership_values stops a set at a 0 member)
    saved, MEMBER_VALUES = MEMBER_VALUES, [-2, -1, 1, 2]
    try:
        local = np.random.default_rng(7)
        a = random_ensemble(6, 5, 3, [0, 6], local)
    finally:
        MEMBER_VALUES = saved
    x = local.integers(-2, 3, (40, 5)).astype(np.float32)
    attrs = tree_attributes(a, np.float32)
    data, feeds = ml_model("TreeEnsemble", [("x", x)], ml_opset=5, **attrs)
    want = ReferenceEvaluator(onnx.load_from_string(data)).run(None, feeds)[0]
    with oneflow.Session(data) as s:
        got = np.asarray(s.run(feeds)["z"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tree_ensemble_errors():
    base = dict(n_targets=1, nodes_featureids=[0], nodes_truenodeids=[0], nodes_falsenodeids=[1],
                nodes_trueleafs=[1], nodes_falseleafs=[1], leaf_targetids=[0, 0], tree_roots=[0],
                nodes_modes=numpy_helper.from_array(np.array([0], np.uint8), "m"),
                nodes_splits=numpy_helper.from_array(np.array([0.5], np.float32), "s"),
                leaf_weights=numpy_helper.from_array(np.array([1, 2], np.float32), "w"))
    x = np.zeros((2, 1), np.float32)
    for change, message in [
        (dict(nodes_falsenodeids=[2]), "false child 2 is not a leaf index"),
        (dict(nodes_falseleafs=[0], nodes_falsenodeids=[0]), "reached again from its own branch"),
        (dict(leaf_targetids=[0, 3]), "adds to target 3, outside"),
        (dict(nodes_featureids=[4]), "the trees read feature 4 but X has 1"),
        (dict(nodes_modes=numpy_helper.from_array(np.array([6], np.uint8), "m")), "no NaN-terminated set"),
        (dict(post_transform=2), "post_transform 2 is not supported"),
        (dict(tree_roots=[3]), "tree root 3 is not a node index"),
    ]:
        data, _ = ml_model("TreeEnsemble", [("x", x)], ml_opset=5, **{**base, **change})
        with pytest.raises(oneflow.OneflowError, match=message):
            oneflow.Session(data)
