"""Sequences and optionals against onnxruntime: the Sequence* ops, SplitToSequence and
ConcatFromSequence on every form of their arguments, sequences as graph inputs and outputs (a Python
list in, a list out), Loop carrying a sequence, SequenceMap and the Optional ops (checked with numpy
where onnxruntime has no kernel), the same models after a native save, and the errors of bad
positions, empty optionals and values of the wrong kind. Run with PYTHONPATH holding the binding and
ONEFLOW_LIBRARY the library."""
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402

import oneflow  # noqa: E402

F, I64, I32, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL
OPSET = 18
RNG = np.random.default_rng(11)


def vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def seq_vi(name, elem, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


def opt_vi(name, inner):
    return helper.make_value_info(name, helper.make_optional_type_proto(inner))


def model(nodes, inputs, outputs, opset=OPSET):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def assert_same(got, want, name):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (name, type(got))
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{name}[{k}]")
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


def compare(data, feeds):
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))
    with oneflow.Session(data) as sess:
        got = sess.run(feeds)
    assert set(got) == set(want)
    for name, w in want.items():
        assert_same(got[name], w, name)
    return got


X = RNG.standard_normal((2, 3)).astype(np.float32)
Y = RNG.standard_normal((2, 3)).astype(np.float32)


@pytest.mark.parametrize("pos", [0, 1, 2, -1, -2])
def test_construct_insert_erase_at_length(pos):
    data = model(
        [helper.make_node("SequenceConstruct", ["x", "y"], ["s"]),
         helper.make_node("Mul", ["x", "y"], ["xy"]),
         helper.make_node("SequenceInsert", ["s", "xy", "pos"], ["s2"]),
         helper.make_node("SequenceErase", ["s2"], ["s3"]),  # the last element
         helper.make_node("SequenceLength", ["s2"], ["n"]),
         helper.make_node("SequenceAt", ["s2", "pos"], ["at"]),
         helper.make_node("ConcatFromSequence", ["s2"], ["cat"], axis=1),
         helper.make_node("ConcatFromSequence", ["s3"], ["stack"], axis=-1, new_axis=1)],
        [vi("x", F, [2, 3]), vi("y", F, [2, 3]), vi("pos", I64, [])],
        [seq_vi("s2", F), seq_vi("s3", F), vi("n", I64, []), vi("at", F), vi("cat", F), vi("stack", F)])
    compare(data, {"x": X, "y": Y, "pos": np.array(pos, np.int64)})


@pytest.mark.parametrize("case", ["ones", "ones_nokeep", "scalar_uneven", "sizes", "negative_axis"])
def test_split_to_sequence(case):
    x = RNG.standard_normal((5, 4, 3)).astype(np.float32)
    inputs, attrs, feeds = ["x"], {}, {"x": x}
    if case == "ones_nokeep":
        attrs = {"axis": 1, "keepdims": 0}
    elif case == "scalar_uneven":
        inputs.append("split"), feeds.update(split=np.array(2, np.int64))
    elif case == "sizes":
        inputs.append("split"), feeds.update(split=np.array([1, 0, 3], np.int32)), attrs.update(axis=1)
    elif case == "negative_axis":
        inputs.append("split"), feeds.update(split=np.array([2, 1], np.int64)), attrs.update(axis=-1)
    split_vi = [vi("split", I64 if feeds.get("split", np.zeros(0, np.int64)).dtype == np.int64 else I32, None)]
    data = model([helper.make_node("SplitToSequence", inputs, ["s"], **attrs),
                  helper.make_node("ConcatFromSequence", ["s"], ["back"], axis=attrs.get("axis", 0),
                                   new_axis=1 if case == "ones_nokeep" else 0)],
                 [vi("x", F, list(x.shape))] + (split_vi if len(inputs) > 1 else []),
                 [seq_vi("s", F), vi("back", F)])
    got = compare(data, feeds)
    np.testing.assert_array_equal(got["back"], x)  # split then concatenated: the input again


def test_sequence_inputs_and_outputs_of_any_shape():
    """A list in (elements of different lengths), elements picked and concatenated, a list out."""
    data = model([helper.make_node("SequenceAt", ["s", "i"], ["at"]),
                  helper.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0),
                  helper.make_node("Identity", ["s"], ["same"])],
                 [seq_vi("s", F), vi("i", I64, [])], [vi("at", F), vi("cat", F), seq_vi("same", F)])
    seq = [RNG.standard_normal((n, 2)).astype(np.float32) for n in (1, 4, 2)]
    got = compare(data, {"s": seq, "i": np.array(-2, np.int64)})
    assert isinstance(got["same"], list) and len(got["same"]) == 3
    # An empty list is an empty sequence of the declared dtype.
    length = model([helper.make_node("SequenceLength", ["s"], ["n"])], [seq_vi("s", F)], [vi("n", I64, [])])
    compare(length, {"s": []})


def test_loop_carries_a_growing_sequence():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         helper.make_node("Unsqueeze", ["i", "axes"], ["i1"]),
         helper.make_node("Cast", ["i1"], ["f"], to=F),
         helper.make_node("Add", ["f", "x"], ["v"]),
         helper.make_node("SequenceInsert", ["s", "v"], ["s_out"])],
        "body", [vi("i", I64, []), vi("c", B, []), seq_vi("s", F)], [vi("c_out", B, []), seq_vi("s_out", F)],
        [numpy_helper.from_array(np.array([0], np.int64), "axes")])
    data = model([helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
                  helper.make_node("Loop", ["n", "", "empty"], ["out"], body=body),
                  helper.make_node("ConcatFromSequence", ["out"], ["cat"], axis=0)],
                 [vi("n", I64, []), vi("x", F, [1])], [seq_vi("out", F), vi("cat", F)])
    for n in (0, 1, 4):
        feeds = {"n": np.array(n, np.int64), "x": np.array([0.5], np.float32)}
        if n == 0:  # concatenating an empty sequence is an error in both
            with oneflow.Session(data) as s, pytest.raises(oneflow.InvalidArgumentError, match="empty sequence"):
                s.run(feeds)
            continue
        compare(data, feeds)


def test_sequence_map_against_numpy():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Shape", ["a"], ["shape"])],
                             "body", [vi("a", F), vi("b", F)], [vi("c", F), vi("shape", I64)])
    data = model([helper.make_node("SequenceMap", ["s", "t"], ["sums", "shapes"], body=body)],
                 [seq_vi("s", F), vi("t", F, [3])], [seq_vi("sums", F), seq_vi("shapes", I64)])
    seq = [RNG.standard_normal((n, 3)).astype(np.float32) for n in (2, 1, 5)]
    t = RNG.standard_normal(3).astype(np.float32)
    with oneflow.Session(data) as s:
        got = s.run({"s": seq, "t": t})
    assert_same(got["sums"], [a + t for a in seq], "sums")
    assert_same(got["shapes"], [np.array(a.shape, np.int64) for a in seq], "shapes")


def test_optionals_against_numpy():
    tensor_t = helper.make_tensor_type_proto(F, None)
    seq_t = helper.make_sequence_type_proto(tensor_t)
    data = model([helper.make_node("OptionalHasElement", ["o"], ["has"]),
                  helper.make_node("If", ["has"], ["value"],
                                   then_branch=helper.make_graph(
                                       [helper.make_node("OptionalGetElement", ["o"], ["v"])], "then", [],
                                       [seq_vi("v", F)]),
                                   else_branch=helper.make_graph(
                                       [helper.make_node("SequenceConstruct", ["x"], ["v2"])], "else", [],
                                       [seq_vi("v2", F)])),
                  helper.make_node("Optional", [], ["none"], type=tensor_t),
                  helper.make_node("OptionalHasElement", ["none"], ["none_has"])],
                 [opt_vi("o", seq_t), vi("x", F, [2, 3])],
                 [vi("has", B, []), seq_vi("value", F), opt_vi("none", tensor_t), vi("none_has", B, [])])
    with oneflow.Session(data) as s:
        assert [i.kind for i in s.inputs] == ["optional_sequence", "tensor"]
        assert [o.kind for o in s.outputs] == ["tensor", "sequence", "optional", "tensor"]
        full = s.run({"o": [Y, X], "x": X})
        empty = s.run({"o": None, "x": X})
    assert full["has"] and not empty["has"]
    assert_same(full["value"], [Y, X], "value")
    assert_same(empty["value"], [X], "value")
    assert full["none"] is None and not full["none_has"]


def test_native_save_keeps_sequence_types(tmp_path):
    data = model([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0),
                  helper.make_node("SequenceInsert", ["s", "y"], ["s2"])],
                 [vi("x", F, [2, 3]), vi("y", F, [1, 3])], [seq_vi("s2", F)])
    src = tmp_path / "m.onnx"
    src.write_bytes(data)
    for ext in ("ofm", "onnx"):
        dst = tmp_path / f"saved.{ext}"
        oneflow.save_model(str(src), str(dst))
        with oneflow.Session(str(dst)) as s:
            got = s.run({"x": X, "y": Y[:1]})["s2"]
        assert_same(got, [X[:1], X[1:], Y[:1]], ext)


# ---- bad input ------------------------------------------------------------------------------------

def test_bad_positions_and_empty_values_are_clear_errors():
    at = model([helper.make_node("SequenceAt", ["s", "i"], ["y"])], [seq_vi("s", F), vi("i", I64, [])], [vi("y", F)])
    with oneflow.Session(at) as s:
        with pytest.raises(oneflow.InvalidArgumentError, match=r"position 2 is out of range for a sequence of 2"):
            s.run({"s": [X, Y], "i": np.array(2, np.int64)})
        with pytest.raises(oneflow.InvalidArgumentError, match=r"position -1 is out of range for a sequence of 0"):
            s.run({"s": [], "i": np.array(-1, np.int64)})
        with pytest.raises(TypeError, match="input 's' is a sequence"):
            s.run({"s": X, "i": np.array(0, np.int64)})
        with pytest.raises(oneflow.InvalidArgumentError, match="int64"):
            s.run({"s": [X.astype(np.int64)], "i": np.array(0, np.int64)})
    get = model([helper.make_node("OptionalGetElement", ["o"], ["y"])],
                [opt_vi("o", helper.make_tensor_type_proto(F, None))], [vi("y", F)])
    with oneflow.Session(get) as s:
        with pytest.raises(oneflow.InvalidArgumentError, match="the optional is empty"):
            s.run({"o": None})
        np.testing.assert_array_equal(s.run({"o": X})["y"], X)
    split = model([helper.make_node("SplitToSequence", ["x", "split"], ["s"])],
                  [vi("x", F, [2, 3]), vi("split", I64, [2])], [seq_vi("s", F)])
    with oneflow.Session(split) as s, pytest.raises(oneflow.InvalidArgumentError, match="sum to 3"):
        s.run({"x": X, "split": np.array([1, 2], np.int64)})


def test_values_of_the_wrong_kind_are_refused_at_load():
    # A sequence where the op takes a tensor.
    add = model([helper.make_node("SequenceConstruct", ["x"], ["s"]), helper.make_node("Add", ["s", "x"], ["y"])],
                [vi("x", F, [2, 3])], [vi("y", F)])
    with pytest.raises(oneflow.InvalidModelError, match=r"Add.*is seq\(float32"):
        oneflow.Session(add)
    # A tensor where the op takes a sequence.
    length = model([helper.make_node("SequenceLength", ["x"], ["n"])], [vi("x", F, [2])], [vi("n", I64, [])])
    with pytest.raises(oneflow.InvalidModelError, match=r"SequenceLength.*is float32\[2\]"):
        oneflow.Session(length)
    # Elements of two dtypes.
    mixed = model([helper.make_node("SequenceConstruct", ["x", "i"], ["s"])], [vi("x", F, [2]), vi("i", I64, [2])],
                  [seq_vi("s", F)])
    with pytest.raises(oneflow.InvalidModelError, match="cannot hold a tensor of int64"):
        oneflow.Session(mixed)
    # Maps are not supported: refused by name.
    m = onnx.load_from_string(length)
    m.graph.input[0].type.CopyFrom(helper.make_map_type_proto(I64, helper.make_tensor_type_proto(F, [])))
    with pytest.raises(oneflow.UnsupportedError, match="is a map"):
        oneflow.Session(m.SerializeToString())
