"""ai.onnx.ml's linear models and encoders as skl2onnx writes them for scikit-learn: LinearClassifier
(LogisticRegression binary and multinomial, LinearSVC, RidgeClassifier; int64 and string labels),
LinearRegressor (LinearRegression, Ridge with two targets), Normalizer (l1, l2, max), OneHotEncoder
(string and integer categories), and ArrayFeatureExtractor over strings (OrdinalEncoder, a
nearest-neighbours classifier with string labels) — each checked against onnxruntime on the same
feeds and against scikit-learn's own predictions; then hand-written nodes for the forms skl2onnx does
not write and the errors a malformed model gets. Run with PYTHONPATH holding the binding and
ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx converts the models")
sklearn = pytest.importorskip("sklearn", reason="scikit-learn trains the models")
from onnx import TensorProto, helper  # noqa: E402
from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType  # noqa: E402

import oneflow  # noqa: E402
from single_op import run_both  # noqa: E402  (oneflow's outputs, each checked against onnxruntime's)

ML = "ai.onnx.ml"
rng = np.random.default_rng(21)


def features():
    x = rng.standard_normal((240, 5)).astype(np.float32)
    return x, x[:, 0] - 0.5 * x[:, 1] + 0.2 * x[:, 2] ** 2


@pytest.mark.parametrize("name", ["logistic_binary", "logistic_three", "logistic_strings", "linear_svc",
                                  "ridge_classifier", "logistic_binary_strings"])
def test_sklearn_linear_classifiers(name):
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.svm import LinearSVC
    x, t = features()
    three = np.digitize(t, [-0.5, 0.5])
    model, y = {
        "logistic_binary": (LogisticRegression(max_iter=500), (t > 0).astype(np.int64)),
        "logistic_three": (LogisticRegression(max_iter=500), three.astype(np.int64) * 2 + 1),
        "logistic_strings": (LogisticRegression(max_iter=500), np.array(["low", "mid", "hïgh"])[three]),
        "linear_svc": (LinearSVC(), three.astype(np.int64)),
        "ridge_classifier": (RidgeClassifier(), three.astype(np.int64)),
        "logistic_binary_strings": (LogisticRegression(max_iter=500), np.array(["no", "yes"])[(t > 0).astype(int)]),
    }[name]
    model.fit(x, y)
    options = {id(model): {"zipmap": False}} if hasattr(model, "predict_proba") else None
    onx = skl2onnx.convert_sklearn(model, initial_types=[("X", FloatTensorType([None, 5]))], options=options)
    assert "LinearClassifier" in {n.op_type for n in onx.graph.node}
    test_x = rng.standard_normal((64, 5)).astype(np.float32)
    got = run_both(onx.SerializeToString(), {"X": test_x})
    assert got[0].tolist() == model.predict(test_x).tolist()
    if hasattr(model, "predict_proba"):
        np.testing.assert_allclose(got[1], model.predict_proba(test_x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("targets", [1, 2])
def test_sklearn_linear_regressors(targets):
    from sklearn.linear_model import LinearRegression, Ridge
    x, t = features()
    y = t if targets == 1 else np.stack([t, -2 * t + 1], 1)
    for model in (LinearRegression(), Ridge(alpha=0.5)):
        model.fit(x, y)
        onx = skl2onnx.convert_sklearn(model, initial_types=[("X", FloatTensorType([None, 5]))])
        assert "LinearRegressor" in {n.op_type for n in onx.graph.node}
        test_x = rng.standard_normal((32, 5)).astype(np.float32)
        (got,) = run_both(onx.SerializeToString(), {"X": test_x})
        np.testing.assert_allclose(got.reshape(model.predict(test_x).shape), model.predict(test_x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_sklearn_normalizer(norm):
    from sklearn.preprocessing import Normalizer
    x = rng.standard_normal((20, 6)).astype(np.float32)
    x[3] = 0  # a zero row stays zero
    model = Normalizer(norm=norm).fit(x)
    onx = skl2onnx.convert_sklearn(model, initial_types=[("X", FloatTensorType([None, 6]))])
    (got,) = run_both(onx.SerializeToString(), {"X": x})
    if norm == "max":  # the op divides by max(x) (spec, onnxruntime); scikit-learn by max(|x|)
        x = np.abs(x)
        (got,) = run_both(onx.SerializeToString(), {"X": x})
    np.testing.assert_allclose(got, model.transform(x), rtol=1e-5, atol=1e-6)


def test_sklearn_one_hot_and_ordinal_encoders():
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder
    cats = np.array([["red", "s"], ["blue", "m"], ["green", "l"], ["red", "m"], ["grün", "xl"]], dtype=object)
    seen = cats[[0, 1, 2, 3, 4, 2, 1]]
    unseen = np.array([["purple", "m"], ["red", "xxl"]], dtype=object)
    onehot = OneHotEncoder(handle_unknown="ignore").fit(cats)
    onx = skl2onnx.convert_sklearn(onehot, initial_types=[("X", StringTensorType([None, 2]))])
    assert "OneHotEncoder" in {n.op_type for n in onx.graph.node}
    for x in (seen, unseen):
        (got,) = run_both(onx.SerializeToString(), {"X": x})
        np.testing.assert_array_equal(got, onehot.transform(x).toarray())
    ordinal = OrdinalEncoder().fit(cats)
    onx = skl2onnx.convert_sklearn(ordinal, initial_types=[("X", StringTensorType([None, 2]))])
    (got,) = run_both(onx.SerializeToString(), {"X": seen})
    np.testing.assert_array_equal(got, ordinal.transform(seen))
    ints = np.array([[3, 10], [5, 10], [3, 20], [7, 30]], np.int64)
    onehot_int = OneHotEncoder(handle_unknown="ignore").fit(ints)
    onx = skl2onnx.convert_sklearn(onehot_int, initial_types=[("X", Int64TensorType([None, 2]))])
    (got,) = run_both(onx.SerializeToString(), {"X": np.array([[5, 30], [4, 10]], np.int64)})
    np.testing.assert_array_equal(got, onehot_int.transform(np.array([[5, 30], [4, 10]])).toarray())


def test_nearest_neighbours_with_string_labels():
    # skl2onnx picks the label with ArrayFeatureExtractor over a string constant.
    from sklearn.neighbors import KNeighborsClassifier
    x, t = features()
    y = np.array(["cat", "dog", "émeu"])[np.digitize(t, [-0.5, 0.5])]
    model = KNeighborsClassifier(n_neighbors=3).fit(x, y)
    onx = skl2onnx.convert_sklearn(model, initial_types=[("X", FloatTensorType([None, 5]))],
                                   options={id(model): {"zipmap": False}})
    test_x = rng.standard_normal((16, 5)).astype(np.float32)
    got = run_both(onx.SerializeToString(), {"X": test_x})
    assert got[0].tolist() == model.predict(test_x).tolist()


# ---- hand-written nodes -------------------------------------------------------------------------

def ml_model(node, x_type, outputs, x_shape=(None, 3)):
    graph = helper.make_graph([node], "ml", [helper.make_tensor_value_info("X", x_type, list(x_shape))],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64])
def test_linear_classifier_post_transforms_and_input_types(post, x_type):
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, post_transform=post,
                            coefficients=[0.5, -1.0, 0.25, 1.5, 0.0, -0.75, -0.2, 0.3, 0.1],
                            intercepts=[0.1, -0.2, 0.05], classlabels_ints=[7, 8, 9])
    data = ml_model(node, x_type, [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)])
    if x_type == TensorProto.INT64:
        x = rng.integers(-3, 4, (30, 3)).astype(np.int64)
    else:
        x = rng.uniform(-1, 1, (30, 3)).astype(np.float32 if x_type == TensorProto.FLOAT else np.float64)
    if post == "PROBIT":  # onnxruntime keeps the closed-form erfinv's ~1e-4 error; ours is exact (docs/ml-ops.md)
        with oneflow.Session(data) as s:
            got = s.run({"X": x})
        want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"X": x})
        np.testing.assert_allclose(got["Z"], want[1], rtol=2e-3, atol=2e-3)
        return
    run_both(data, {"X": x})


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX"])
def test_linear_classifier_binary_form(post):
    # One coefficient row, two labels: onnxruntime's binary rule (docs/ml-ops.md).
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, post_transform=post,
                            coefficients=[0.5, -1.0, 0.25], intercepts=[0.1], classlabels_strings=["neg", "pos"])
    data = ml_model(node, TensorProto.FLOAT, [("Y", TensorProto.STRING), ("Z", TensorProto.FLOAT)])
    run_both(data, {"X": rng.uniform(-1, 1, (25, 3)).astype(np.float32)})


def test_linear_classifier_binary_probit_is_refused():
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, post_transform="PROBIT",
                            coefficients=[0.5, -1.0, 0.25], intercepts=[0.1], classlabels_ints=[0, 1])
    with pytest.raises(oneflow.UnsupportedError, match="PROBIT on a one-row binary classifier"):
        oneflow.Session(ml_model(node, TensorProto.FLOAT, [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)]))


def test_linear_regressor_targets_and_one_row():
    node = helper.make_node("LinearRegressor", ["X"], ["Y"], domain=ML, targets=2,
                            coefficients=[0.5, -1.0, 0.25, 1.5, 0.0, -0.75], intercepts=[0.1, -0.2])
    data = ml_model(node, TensorProto.FLOAT, [("Y", TensorProto.FLOAT)])
    run_both(data, {"X": rng.uniform(-1, 1, (9, 3)).astype(np.float32)})
    data1 = ml_model(node, TensorProto.FLOAT, [("Y", TensorProto.FLOAT)], x_shape=(3,))
    run_both(data1, {"X": np.array([1.0, 2.0, -1.0], np.float32)})


def test_one_hot_encoder_numbers_and_zeros():
    node = helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ML, cats_int64s=[1, 4, 9], zeros=1)
    run_both(ml_model(node, TensorProto.DOUBLE, [("Y", TensorProto.FLOAT)], x_shape=(None,)),
             {"X": np.array([4.0, 9.7, 2.0, 1.0])})
    strict = helper.make_node("OneHotEncoder", ["X"], ["Y"], domain=ML, cats_strings=["a", "b"], zeros=0)
    with oneflow.Session(ml_model(strict, TensorProto.STRING, [("Y", TensorProto.FLOAT)], x_shape=(None,))) as s:
        np.testing.assert_array_equal(s.run({"X": np.array(["b", "a"], dtype=object)})["Y"], [[0, 1], [1, 0]])
        with pytest.raises(oneflow.InvalidArgumentError, match="element 1 \\(c\\) is in no category and zeros=0"):
            s.run({"X": np.array(["a", "c"], dtype=object)})


@pytest.mark.parametrize("attrs,message", [
    (dict(coefficients=[1.0, 2.0, 3.0], intercepts=[0.0, 1.0], classlabels_ints=[0, 1]), "do not split into 2 rows"),
    (dict(coefficients=[1.0, 2.0, 3.0], intercepts=[0.0], classlabels_ints=[0, 1], classlabels_strings=["a", "b"]),
     "exactly one of classlabels_ints and classlabels_strings"),
    (dict(coefficients=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], intercepts=[0.0, 1.0], classlabels_ints=[0, 1, 2]),
     "2 coefficient rows for 3 class labels"),
    (dict(coefficients=[1.0, 2.0], intercepts=[0.0], classlabels_ints=[0, 1]), "X has 3 features but the model has 2"),
    (dict(coefficients=[1.0, 2.0, 3.0], intercepts=[0.0], classlabels_ints=[0, 1], post_transform="SQUARE"),
     "post_transform must be"),
])
def test_malformed_linear_classifiers_are_refused(attrs, message):
    node = helper.make_node("LinearClassifier", ["X"], ["Y", "Z"], domain=ML, **attrs)
    with pytest.raises(oneflow.InvalidModelError, match=message):
        oneflow.Session(ml_model(node, TensorProto.FLOAT, [("Y", TensorProto.INT64), ("Z", TensorProto.FLOAT)]))
