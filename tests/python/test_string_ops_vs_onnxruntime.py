"""String tensors end to end: the string ops (StringConcat, StringSplit, RegexFullMatch, StringNormalizer,
ai.onnx.ml LabelEncoder, Equal on strings, string Constants) checked against onnxruntime on the same
feeds, and against Python's own str methods where the spec follows them; string inputs and outputs
through the binding (str, bytes and object arrays in; object arrays of str out); a scikit-learn
classifier with string class labels converted by skl2onnx; and the errors bad string input gets. Run
with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import TensorProto, helper  # noqa: E402

import oneflow  # noqa: E402
from single_op import run_both  # noqa: E402  (oneflow's outputs, each checked against onnxruntime's)

ML = "ai.onnx.ml"
S = TensorProto.STRING
WORDS = ["", "a", "hello world", "  hello   world ! ", "o-n-n--x-", "Ünïcødé ß straße", "tab\tsep\nline",
         "www.google.com", "account@gmail.com", "x" * 300]


def string_model(nodes, inputs, outputs, opset=20, ml=None, inits=()):
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(ML, ml)] if ml else [])
    g = helper.make_graph(nodes, "strings", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=imports, ir_version=10).SerializeToString()


def sval(name, shape=None):
    return helper.make_tensor_value_info(name, S, shape)


def arr(values, shape=None):
    a = np.array(values, dtype=object)
    return a.reshape(shape) if shape is not None else a


# ---- StringConcat -------------------------------------------------------------------------------

@pytest.mark.parametrize("xs,ys", [((10,), (10,)), ((2, 5), (5,)), ((2, 1), (1, 3)), ((), (4,)), ((0, 3), (3,))])
def test_string_concat_broadcasts(xs, ys):
    rng = np.random.default_rng(1)
    x = arr(rng.choice(WORDS, int(np.prod(xs))).tolist(), xs)
    y = arr(rng.choice(WORDS, int(np.prod(ys))).tolist(), ys)
    data = string_model([helper.make_node("StringConcat", ["x", "y"], ["z"])], [sval("x"), sval("y")], [sval("z")])
    (z,) = run_both(data, {"x": x, "y": y})
    np.testing.assert_array_equal(z.astype(str), np.char.add(x.astype(str), y.astype(str)))


# ---- StringSplit --------------------------------------------------------------------------------

@pytest.mark.parametrize("delimiter,maxsplit", [(None, None), ("", None), (" ", None), ("-", None), ("--", None),
                                                (None, 1), ("-", 2), (" ", 0), ("ß", None)])
def test_string_split_matches_python(delimiter, maxsplit):
    attrs = {k: v for k, v in (("delimiter", delimiter), ("maxsplit", maxsplit)) if v is not None}
    data = string_model([helper.make_node("StringSplit", ["x"], ["y", "n"], **attrs)], [sval("x")],
                        [sval("y"), helper.make_tensor_value_info("n", TensorProto.INT64, None)])
    x = arr(WORDS[:9], (3, 3))
    with oneflow.Session(data) as s:
        out = s.run({"x": x})
    y, n = out["y"], out["n"]
    assert n.shape == x.shape and y.shape[:2] == x.shape
    for i, s in enumerate(x.ravel()):
        pieces = s.split(delimiter or None, -1 if maxsplit is None else maxsplit)
        assert n.ravel()[i] == len(pieces)
        row = y.reshape(-1, y.shape[-1])[i].tolist()
        assert row == pieces + [""] * (y.shape[-1] - len(pieces))
    # onnxruntime agrees on plain text. It departs from the spec's Python reference at the edges, where we
    # follow the reference: it splits on ' ' alone (not tabs or newlines), counts no pieces in "" with a
    # delimiter (Python: one, ""), and strips the trailing whitespace of a maxsplit remainder.
    plain = arr(["a", "hello world", "o-n-n--x-", "Ünïcødé ß straße", "www.google.com", "account@gmail.com",
                 "x y  z w", "a-b--c"], (2, 4))
    run_both(data, {"x": plain})


def test_string_split_empty_input():
    data = string_model([helper.make_node("StringSplit", ["x"], ["y", "n"])], [sval("x")],
                        [sval("y"), helper.make_tensor_value_info("n", TensorProto.INT64, None)])
    y, n = run_both(data, {"x": arr([], (0,))})
    assert y.shape == (0, 0) and n.shape == (0,)


# ---- RegexFullMatch -----------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", [r"www\.[\w.-]+\.\bcom\b", r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)",
                                     r"(?i)HELLO.*", r".*", r"[[:alpha:] ]+", r"\p{L}+ \p{L}+ \p{L}+", ""])
def test_regex_full_match(pattern):
    data = string_model([helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)], [sval("x")],
                        [helper.make_tensor_value_info("y", TensorProto.BOOL, None)])
    run_both(data, {"x": arr(WORDS, (2, 5))})


def test_bad_regex_is_refused_at_load():
    data = string_model([helper.make_node("RegexFullMatch", ["x"], ["y"], pattern="(unclosed")], [sval("x")],
                        [helper.make_tensor_value_info("y", TensorProto.BOOL, None)])
    with pytest.raises(oneflow.InvalidModelError, match="not a valid RE2 expression"):
        oneflow.Session(data)


# ---- StringNormalizer ---------------------------------------------------------------------------

def normalizer_reference(words, action, case_sensitive, stopwords):
    """The spec in Python: drop the stopwords (compared lower-cased unless case-sensitive), then change
    case. The words below have one-to-one case mappings, where Python's full mapping and the engine's
    simple one agree."""
    fold = (lambda w: w) if case_sensitive else str.lower
    stops = {fold(w) for w in stopwords}
    kept = [w for w in words if fold(w) not in stops]
    change = {"NONE": lambda w: w, "LOWER": str.lower, "UPPER": str.upper}[action]
    return [change(w) for w in kept] or [""]


@pytest.mark.parametrize("action", ["NONE", "LOWER", "UPPER"])
@pytest.mark.parametrize("case_sensitive", [0, 1])
@pytest.mark.parametrize("row", [False, True])
def test_string_normalizer(action, case_sensitive, row):
    words = ["Monday", "tuesday", "MONDAY", "Ünïcødé", "Ωμέγα", "monday", "ÉTÉ", "été"]
    stopwords = ["monday", "été"]
    x = arr(words, (1, len(words)) if row else None)
    data = string_model([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action=action,
                                          is_case_sensitive=case_sensitive, stopwords=stopwords)],
                        [sval("x")], [sval("y")], opset=10)
    want = normalizer_reference(words, action, case_sensitive, stopwords)
    if action == "NONE" and case_sensitive:  # else onnxruntime needs the en_US.UTF-8 locale, which hosts may lack
        (y,) = run_both(data, {"x": x})
    else:
        with oneflow.Session(data) as s:
            y = s.run({"x": x})["y"]
    assert y.shape == ((1, len(want)) if row else (len(want),))
    assert y.ravel().tolist() == want


def test_string_normalizer_maps_case_one_code_point_at_a_time():
    # Unicode's simple mapping: ß has no one-code-point upper case, so it stays (Python's full mapping
    # gives "SS"); bad UTF-8 is an error naming the element.
    data = string_model([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")],
                        [sval("x")], [sval("y")], opset=10)
    with oneflow.Session(data) as s:
        assert s.run({"x": arr(["straße", "ǆ"])})["y"].tolist() == ["STRAßE", "Ǆ"]
        with pytest.raises(oneflow.InvalidArgumentError, match="element 1 of X is not UTF-8"):
            s.run({"x": arr([b"ok", b"\xff\xfe"])})


def test_string_normalizer_drops_everything():
    data = string_model([helper.make_node("StringNormalizer", ["x"], ["y"], stopwords=["a"], is_case_sensitive=1)],
                        [sval("x")], [sval("y")], opset=10)
    for shape, want in (((2,), (1,)), ((1, 2), (1, 1))):
        (y,) = run_both(data, {"x": arr(["a", "a"], shape)})
        assert y.shape == want and y.ravel().tolist() == [""]


# ---- LabelEncoder -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["string_to_int", "int_to_string", "float_to_string", "string_to_float",
                                  "tensor_int16", "tensor_double_keys", "opset1_string_to_int"])
def test_label_encoder(case):
    i64, f32 = TensorProto.INT64, TensorProto.FLOAT
    nan = float("nan")
    if case == "string_to_int":
        attrs, x, xt, yt, ml = dict(keys_strings=["a", "b", "ß"], values_int64s=[3, 4, 5], default_int64=-7), \
            arr(["a", "ß", "c", ""]), S, i64, 2
    elif case == "int_to_string":
        attrs, x, xt, yt, ml = dict(keys_int64s=[1, 2, -3], values_strings=["one", "two", "minus three"],
                                    default_string="?"), np.array([[1, 5], [-3, 2]], np.int64), i64, S, 2
    elif case == "float_to_string":
        attrs, x, xt, yt, ml = dict(keys_floats=[0.5, nan, -0.0], values_strings=["half", "nan", "zero"]), \
            np.array([0.5, nan, 0.0, 1.0], np.float32), f32, S, 2
    elif case == "string_to_float":
        attrs, x, xt, yt, ml = dict(keys_strings=["x", "y"], values_floats=[1.5, -2.5]), arr(["y", "z", "x"]), S, f32, 2
    elif case == "tensor_int16":
        attrs = dict(keys_tensor=helper.make_tensor("k", S, [3], [b"a", b"b", b"c"]),
                     values_tensor=helper.make_tensor("v", TensorProto.INT16, [3], [7, 8, 9]),
                     default_tensor=helper.make_tensor("d", TensorProto.INT16, [1], [-9]))
        x, xt, yt, ml = arr(["c", "q", "a"]), S, TensorProto.INT16, 4
    elif case == "tensor_double_keys":
        attrs = dict(keys_tensor=helper.make_tensor("k", TensorProto.DOUBLE, [2], [0.25, 1e300]),
                     values_tensor=helper.make_tensor("v", S, [2], [b"quarter", b"huge"]))
        x, xt, yt, ml = np.array([1e300, 0.25, 3.0]), TensorProto.DOUBLE, S, 4
    else:
        attrs, x, xt, yt, ml = dict(classes_strings=["zero", "one"], default_int64=42), arr(["one", "two", "zero"]), \
            S, i64, 1
    data = string_model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, **attrs)],
                        [helper.make_tensor_value_info("x", xt, None)], [helper.make_tensor_value_info("y", yt, None)],
                        opset=17, ml=ml)
    run_both(data, {"x": x})


def test_label_encoder_bad_tables():
    def load(**attrs):
        data = string_model([helper.make_node("LabelEncoder", ["x"], ["y"], domain=ML, **attrs)], [sval("x")],
                            [helper.make_tensor_value_info("y", TensorProto.INT64, None)], opset=17, ml=2)
        return oneflow.Session(data)
    with pytest.raises(oneflow.InvalidModelError, match="2 keys but 1 values"):
        load(keys_strings=["a", "b"], values_int64s=[1])
    with pytest.raises(oneflow.InvalidModelError, match="exactly one of keys"):
        load(values_int64s=[1])


# ---- Equal, Constant, views, graph-level behaviour -----------------------------------------------

def test_equal_constant_and_reshape_on_strings():
    const = helper.make_node("Constant", [], ["c"], value_strings=["a", "ß", "c"])
    nodes = [const, helper.make_node("Equal", ["x", "c"], ["eq"]),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Identity", ["r"], ["same"])]
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 2])
    data = string_model(nodes, [sval("x", [2, 3])],
                        [helper.make_tensor_value_info("eq", TensorProto.BOOL, None), sval("same")], inits=[shape])
    eq, same = run_both(data, {"x": arr(["a", "b", "c", "ß", "ß", ""], (2, 3))})
    assert eq.tolist() == [[True, False, True], [False, True, False]]
    assert same.shape == (3, 2)


def test_binding_takes_str_bytes_and_object_arrays():
    data = string_model([helper.make_node("StringConcat", ["x", "y"], ["z"])], [sval("x"), sval("y")], [sval("z")])
    with oneflow.Session(data) as s:
        for x in (np.array(["ab", "ß"]), np.array([b"ab", "ß".encode()]), arr(["ab", "ß"]), ["ab", "ß"]):
            z = s.run({"x": x, "y": np.array(["!"])})["z"]
            assert z.dtype == object and z.tolist() == ["ab!", "ß!"]
        with pytest.raises(TypeError, match="element 1 is int"):
            s.run({"x": arr(["a", 3]), "y": np.array(["!"])})
        with pytest.raises(oneflow.InvalidArgumentError):
            s.run({"x": np.array([1.0], np.float32), "y": np.array(["!"])})


def test_ops_that_do_not_take_strings_are_refused_by_name():
    data = string_model([helper.make_node("Transpose", ["x"], ["y"])], [sval("x", [2, 2])], [sval("y")])
    with pytest.raises(oneflow.UnsupportedError, match="Transpose.*does not take string tensors"):
        oneflow.Session(data)


def test_string_model_saves_as_onnx_and_native(tmp_path):
    data = string_model([helper.make_node("StringConcat", ["x", "c"], ["z"])], [sval("x")], [sval("z")],
                        inits=[helper.make_tensor("c", S, [2], [b"-1", b"-2"])])
    with oneflow.Session(data) as s:
        want = s.run({"x": arr(["a", "b"])})["z"]
    oneflow.save_model(data, str(tmp_path / "m.onnx"))
    (z,) = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"]).run(
        None, {"x": arr(["a", "b"])})
    assert z.tolist() == want.tolist() == ["a-1", "b-2"]
    oneflow.save_model(data, str(tmp_path / "m.ofm"))  # string initializers as packed segments
    with oneflow.Session(str(tmp_path / "m.ofm")) as s:
        assert s.run({"x": arr(["a", "b"])})["z"].tolist() == ["a-1", "b-2"]


# ---- scikit-learn: string class labels ----------------------------------------------------------

def test_sklearn_classifier_with_string_labels():
    ensemble = pytest.importorskip("sklearn.ensemble", reason="scikit-learn trains the model")
    skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx converts the model")
    from skl2onnx.common.data_types import FloatTensorType
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 5)).astype(np.float32)
    y = np.array(["cat", "dog", "émeu"])[np.digitize(x[:, 0] + x[:, 1], [-0.5, 0.5])]
    for model in (ensemble.RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0),
                  ensemble.GradientBoostingClassifier(n_estimators=6, max_depth=3, random_state=0)):
        model.fit(x, y)
        onx = skl2onnx.convert_sklearn(model, initial_types=[("X", FloatTensorType([None, 5]))],
                                       options={id(model): {"zipmap": False}})
        test_x = rng.standard_normal((50, 5)).astype(np.float32)
        want = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": test_x})
        with oneflow.Session(onx.SerializeToString()) as s:
            got = s.run({"X": test_x})
        label, proba = got[onx.graph.output[0].name], got[onx.graph.output[1].name]
        assert label.tolist() == want[0].tolist() == model.predict(test_x).tolist()
        np.testing.assert_allclose(proba, want[1], rtol=1e-5, atol=1e-6)
