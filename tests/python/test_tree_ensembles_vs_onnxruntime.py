"""ai.onnx.ml TreeEnsembleRegressor and TreeEnsembleClassifier (opsets 1 and 3): scikit-learn models
converted by skl2onnx as users convert them, checked against onnxruntime and against scikit-learn's
own predictions; hand-written ensembles for every aggregation, post-transform, branch mode, missing
value rule and the opset-3 tensor attributes; and the errors a malformed ensemble gets. Run with
PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

ML = "ai.onnx.ml"
rng = np.random.default_rng(11)


def run_both(data, feeds):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    names = [o.name for o in onnx.load_from_string(data).graph.output]
    return [got[n] for n in names], want


# ---- scikit-learn models through skl2onnx -------------------------------------------------------

def sklearn_cases():
    ensemble = pytest.importorskip("sklearn.ensemble", reason="scikit-learn trains the models")
    tree = pytest.importorskip("sklearn.tree", reason="scikit-learn trains the models")
    x = rng.standard_normal((200, 6)).astype(np.float32)
    y_reg = (x[:, 0] * 2 - x[:, 1] ** 2 + 0.1 * rng.standard_normal(200)).astype(np.float32)
    y_bin = (x[:, 0] + x[:, 2] > 0).astype(np.int64)
    y_three = np.digitize(x[:, 1] - x[:, 3], [-0.5, 0.5]).astype(np.int64) * 3 + 2  # labels 2, 5, 8
    return x, {
        "decision_tree_regressor": (tree.DecisionTreeRegressor(max_depth=5, random_state=0), y_reg),
        "random_forest_regressor": (ensemble.RandomForestRegressor(n_estimators=8, max_depth=4, random_state=0), y_reg),
        "gradient_boosting_regressor": (ensemble.GradientBoostingRegressor(n_estimators=12, max_depth=3, random_state=0),
                                        y_reg),
        "random_forest_two_targets": (ensemble.RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0),
                                      np.stack([y_reg, -y_reg], 1)),
        "decision_tree_classifier": (tree.DecisionTreeClassifier(max_depth=4, random_state=0), y_bin),
        "random_forest_binary": (ensemble.RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0), y_bin),
        "random_forest_three": (ensemble.RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0), y_three),
        "gradient_boosting_binary": (ensemble.GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0),
                                     y_bin),
        "gradient_boosting_three": (ensemble.GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0),
                                    y_three),
    }


@pytest.mark.parametrize("name", ["decision_tree_regressor", "random_forest_regressor", "gradient_boosting_regressor",
                                  "random_forest_two_targets", "decision_tree_classifier", "random_forest_binary",
                                  "random_forest_three", "gradient_boosting_binary", "gradient_boosting_three"])
def test_sklearn_models(name):
    skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx converts the models")
    from skl2onnx.common.data_types import FloatTensorType
    x, cases = sklearn_cases()
    model, y = cases[name]
    model.fit(x, y)
    classifier = hasattr(model, "predict_proba")
    onx = skl2onnx.convert_sklearn(model, initial_types=[("X", FloatTensorType([None, x.shape[1]]))],
                                   options={id(model): {"zipmap": False}} if classifier else None)
    ops = {n.op_type for n in onx.graph.node}
    assert ("TreeEnsembleClassifier" if classifier else "TreeEnsembleRegressor") in ops, ops
    test_x = rng.standard_normal((64, x.shape[1])).astype(np.float32)
    got, want = run_both(onx.SerializeToString(), {"X": test_x})
    if classifier:
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got[0], model.predict(test_x))
        np.testing.assert_allclose(got[1], model.predict_proba(test_x), rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[0].reshape(model.predict(test_x).shape), model.predict(test_x), rtol=1e-4,
                                   atol=1e-4)


# ---- hand-written ensembles --------------------------------------------------------------------

# Two trees over 3 features. Tree 0: node 0 tests x0 (mode varies), leaves 1 and 2; tree 1 (ids 3-7):
# node 3 tests x1 <= 0.5 with NaN going true, node 4 tests x2 < -1, leaves 5, 6, 7. (onnxruntime
# wants node ids below the ensemble's node count.)
TREES = dict(
    nodes_treeids=[0, 0, 0, 1, 1, 1, 1, 1],
    nodes_nodeids=[0, 1, 2, 3, 4, 5, 6, 7],
    nodes_featureids=[0, 0, 0, 1, 2, 0, 0, 0],
    nodes_values=[0.25, 0, 0, 0.5, -1.0, 0, 0, 0],
    nodes_truenodeids=[1, 0, 0, 4, 5, 0, 0, 0],
    nodes_falsenodeids=[2, 0, 0, 7, 6, 0, 0, 0],
    nodes_missing_value_tracks_true=[0, 0, 0, 1, 0, 0, 0, 0],
)
LEAVES = [(0, 1), (0, 2), (1, 5), (1, 6), (1, 7)]


def ensemble(op, mode="BRANCH_LEQ", opset=1, as_tensor=False, x_type=TensorProto.FLOAT, **attrs):
    a = dict(TREES)
    a["nodes_modes"] = [mode, "LEAF", "LEAF", "BRANCH_LEQ", "BRANCH_LT", "LEAF", "LEAF", "LEAF"]
    a.update(attrs)
    if as_tensor:
        for key in ["nodes_values", "base_values", "target_weights", "class_weights"]:
            if key in a:
                a[key + "_as_tensor"] = numpy_helper.from_array(np.asarray(a.pop(key), np.float32), key)
    label = TensorProto.STRING if "classlabels_strings" in a and "classlabels_int64s" not in a else TensorProto.INT64
    outs = [helper.make_tensor_value_info("Y", label if op.endswith("Classifier") else TensorProto.FLOAT, None)]
    if op.endswith("Classifier"):
        outs.append(helper.make_tensor_value_info("Z", TensorProto.FLOAT, None))
    graph = helper.make_graph([helper.make_node(op, ["X"], [o.name for o in outs], domain=ML, **a)], "trees",
                              [helper.make_tensor_value_info("X", x_type, [None, 3])], outs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, opset)])
    m.ir_version = 8
    return m.SerializeToString()


def features(n=40):
    x = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    x[:6, 0] = [0.25, -0.0, 0.0, 0.25, np.nextafter(np.float32(0.25), np.float32(1)), 2]  # the split's edges
    x[6:9, 1] = np.nan  # missing values
    return x


def targets_weights(n_targets, seed=0):
    r = np.random.default_rng(seed)
    trees, nodes, ids, weights = [], [], [], []
    for tree, node in LEAVES:
        for t in range(n_targets):
            trees.append(tree), nodes.append(node), ids.append(t), weights.append(float(r.uniform(-1.5, 1.5)))
    return trees, nodes, ids, weights


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"])
def test_regressor_aggregations_and_transforms(aggregate, post):
    trees, nodes, ids, weights = targets_weights(3)
    data = ensemble("TreeEnsembleRegressor", n_targets=3, target_treeids=trees, target_nodeids=nodes, target_ids=ids,
                    target_weights=weights, base_values=[0.5, -0.25, 0.0], aggregate_function=aggregate,
                    post_transform=post)
    got, want = run_both(data, {"X": features()})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_regressor_probit_and_opset3_tensors():
    trees, nodes, ids, weights = targets_weights(2)
    weights = [abs(w) / 4 + 0.05 for w in weights]  # PROBIT's domain is (0, 1)
    data = ensemble("TreeEnsembleRegressor", opset=3, as_tensor=True, n_targets=2, target_treeids=trees,
                    target_nodeids=nodes, target_ids=ids, target_weights=weights, post_transform="PROBIT",
                    aggregate_function="AVERAGE")
    got, want = run_both(data, {"X": features()})
    # onnxruntime's probit is a closed-form approximation (~1e-4); ours is refined to float precision.
    np.testing.assert_allclose(got[0], want[0], rtol=5e-4, atol=5e-4)


@pytest.mark.parametrize("mode", ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"])
def test_branch_modes_and_missing_values(mode):
    trees, nodes, ids, weights = targets_weights(1)
    data = ensemble("TreeEnsembleRegressor", mode=mode, n_targets=1, target_treeids=trees, target_nodeids=nodes,
                    target_ids=ids, target_weights=weights)
    x = features()
    x[9:12, 0] = np.nan  # NaN at a node without the missing-value flag: false, except NEQ
    got, want = run_both(data, {"X": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64])
def test_classifier_three_classes(post, x_type):
    trees, nodes, ids, weights = targets_weights(3, seed=3)
    data = ensemble("TreeEnsembleClassifier", x_type=x_type, class_treeids=trees, class_nodeids=nodes, class_ids=ids,
                    class_weights=weights, classlabels_int64s=[7, 8, 9], post_transform=post, base_values=[0.1, 0, -0.1])
    x = features()
    x = np.nan_to_num(x).round().astype(np.int64) if x_type == TensorProto.INT64 else x
    x = x.astype(np.float64) if x_type == TensorProto.DOUBLE else x
    got, want = run_both(data, {"X": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("signs", ["positive", "mixed"])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
@pytest.mark.parametrize("base", [None, [0.2]])
def test_classifier_binary_one_score(signs, post, base):
    """Weights for one class only (what converters write for two classes): the binary rules."""
    trees, nodes, ids, weights = targets_weights(1, seed=5)
    weights = [abs(w) / 3 for w in weights] if signs == "positive" else weights
    extra = {"base_values": base} if base else {}
    data = ensemble("TreeEnsembleClassifier", class_treeids=trees, class_nodeids=nodes, class_ids=ids,
                    class_weights=weights, classlabels_int64s=[0, 1], post_transform=post, **extra)
    got, want = run_both(data, {"X": features()})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_classifier_binary_both_scores():
    trees, nodes, ids, weights = targets_weights(2, seed=9)
    data = ensemble("TreeEnsembleClassifier", class_treeids=trees, class_nodeids=nodes, class_ids=ids,
                    class_weights=[abs(w) for w in weights], classlabels_int64s=[3, 4], post_transform="SOFTMAX")
    got, want = run_both(data, {"X": features()})
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    # The label: onnxruntime writes the literal 1/0 here, not the class label; ours is the label.
    np.testing.assert_array_equal(got[0], np.where(want[0] == 1, 4, 3))


@pytest.mark.parametrize("change,message", [
    (dict(nodes_truenodeids=[5, 0, 0, 4, 5, 0, 0, 0]), "true child 5 is not a node of its tree"),
    (dict(nodes_nodeids=[0, 1, 1, 3, 4, 5, 6, 7]), "listed twice"),
    (dict(nodes_modes=["BRANCH_XX", "LEAF", "LEAF", "BRANCH_LEQ", "BRANCH_LT", "LEAF", "LEAF", "LEAF"]), "BRANCH_XX"),
    (dict(target_ids=[0, 0, 0, 0, 4]), "target 4, outside"),
    (dict(target_nodeids=[1, 2, 5, 6, 4]), "not a leaf"),
    (dict(post_transform="SIGMOID"), "post_transform must be"),
])
def test_malformed_ensembles_are_refused(change, message):
    trees, nodes, ids, weights = targets_weights(1)
    attrs = dict(target_treeids=trees, target_nodeids=nodes, target_ids=ids, target_weights=weights)
    attrs.update(change)
    mode = attrs.pop("nodes_modes", None)
    data = ensemble("TreeEnsembleRegressor", **attrs)
    if mode:
        m = onnx.load_from_string(data)
        m.graph.node[0].attribute[[a.name for a in m.graph.node[0].attribute].index("nodes_modes")].CopyFrom(
            helper.make_attribute("nodes_modes", mode))
        data = m.SerializeToString()
    with pytest.raises(oneflow.OneflowError, match=message):
        with oneflow.Session(data) as s:
            s.run({"X": features()})


def test_string_labels_match_onnxruntime_and_both_label_kinds_are_refused():
    # String class labels give a string Y (tests/python/test_string_ops_vs_onnxruntime.py runs skl2onnx's
    # string-labelled forests); a classifier may not name its classes both ways.
    trees, nodes, ids, weights = targets_weights(1)
    data = ensemble("TreeEnsembleClassifier", class_treeids=trees, class_nodeids=nodes, class_ids=ids,
                    class_weights=weights, classlabels_strings=["no", "yes"])
    got, want = run_both(data, {"X": features()})
    assert got[0].tolist() == want[0].tolist() and set(want[0].tolist()) <= {"no", "yes"}
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    both = ensemble("TreeEnsembleClassifier", class_treeids=trees, class_nodeids=nodes, class_ids=ids,
                    class_weights=weights, classlabels_strings=["no", "yes"], classlabels_int64s=[0, 1])
    with pytest.raises(oneflow.InvalidModelError, match="exactly one of classlabels_int64s and classlabels_strings"):
        oneflow.Session(both)
