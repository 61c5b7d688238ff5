"""If, Loop and Scan against onnxruntime: subgraphs that read values of the enclosing graphs (nested
two levels deep), loops stopped by the trip count or by the condition (zero iterations included),
loop-carried values that grow, scan outputs, Scan's axes and directions, opset-8 Scan over a
batch; the same models after an ONNX export and a native save; and the errors of malformed
subgraphs and control inputs. Models are built with onnx.helper here. Run with PYTHONPATH holding
the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper, numpy_helper, TensorProto  # noqa: E402

import oneflow  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
OPSET = 17


def vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=(), opset=OPSET):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # No onnx.checker here: onnx 1.23's checker wants a shape on every graph output, and an If whose
    # branches differ in rank has none; onnxruntime validates each model when the reference loads it.
    return m.SerializeToString()


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def reference(data, feeds):
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def compare(data, feeds, **tol):
    want = reference(data, feeds)
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    assert set(got) == set(want)
    for name, w in want.items():
        assert got[name].shape == w.shape, name
        assert got[name].dtype == w.dtype, name
        np.testing.assert_allclose(got[name], w, rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 1e-6), err_msg=name)
    return got


RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4)).astype(np.float32)
W = RNG.standard_normal(4).astype(np.float32)


# ---- If ----------------------------------------------------------------------------------------

def if_model(else_rank_differs=False):
    """y = x + w when flag, else x * 2 - w (or a reduction of another rank): both branches read the
    graph input x and the initializer w from the enclosing graph."""
    then = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"])], "then", [], [vi("t", F)])
    if else_rank_differs:
        other = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)], "else", [], [vi("e", F)])
    else:
        other = helper.make_graph([const("two", np.float32(2)), helper.make_node("Mul", ["x", "two"], ["m"]),
                                   helper.make_node("Sub", ["m", "w"], ["e"])], "else", [], [vi("e", F)])
    node = helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other)
    return model([node], [vi("x", F, [3, 4]), vi("flag", B, [])], [vi("y", F)],
                 [numpy_helper.from_array(W, "w")])


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("rank_differs", [False, True])
def test_if_runs_the_branch_cond_picks(flag, rank_differs):
    compare(if_model(rank_differs), {"x": X, "flag": np.array(flag)})


def test_if_cond_of_one_element_tensor():
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", F)])
    other = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [], [vi("e", F)])
    data = model([helper.make_node("Greater", ["s", "zero"], ["c"]),
                  helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                 [vi("x", F, [3, 4]), vi("s", F, [1])], [vi("y", F)], [numpy_helper.from_array(np.zeros(1, np.float32), "zero")])
    for s in (-1.0, 1.0):
        compare(data, {"x": X, "s": np.array([s], np.float32)})


# ---- Loop --------------------------------------------------------------------------------------

def loop_model(with_m=True, with_cond=True):
    """acc += x each iteration (x read from the enclosing graph); the iteration's acc * i is a scan
    output; the loop goes on while sum(acc) < limit."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Mul", ["acc_out", "i_f"], ["scaled"]),
         helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["c_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F, [3, 4])],
        [vi("c_out", B, []), vi("acc_out", F, [3, 4]), vi("scaled", F, [3, 4])])
    node = helper.make_node("Loop", ["M" if with_m else "", "cond" if with_cond else "", "acc0"],
                            ["acc", "scans"], body=body)
    inputs = [vi("x", F, [3, 4]), vi("acc0", F, [3, 4]), vi("limit", F, [])]
    if with_m:
        inputs.append(vi("M", I64, []))
    if with_cond:
        inputs.append(vi("cond", B, []))
    return model([node], inputs, [vi("acc", F), vi("scans", F)])


XP = np.abs(X) + 0.5  # positive, so the running sum grows


@pytest.mark.parametrize("trips,cond,limit", [
    (4, True, 1e9),    # stopped by M
    (100, True, 40.0), # stopped by the body's condition
    (0, True, 1e9),    # no iteration: acc0 comes back, the scan output is empty
    (5, False, 1e9),   # cond false on entry: no iteration
])
def test_loop_with_trip_count_and_condition(trips, cond, limit):
    feeds = {"x": XP, "acc0": np.ones((3, 4), np.float32), "limit": np.array(limit, np.float32), "M": np.array(trips, np.int64),
             "cond": np.array(cond)}
    got = compare(loop_model(), feeds)
    if trips == 0 or not cond:
        assert got["scans"].shape == (0, 3, 4)


def test_loop_with_only_a_trip_count_or_only_a_condition():
    feeds = {"x": XP, "acc0": np.zeros((3, 4), np.float32), "limit": np.array(30.0, np.float32)}
    # A for loop whose body's condition turns false first: onnxruntime (and the ONNX reference
    # implementation) stop there, though the spec's pseudo-code calls that output ignored.
    compare(loop_model(with_cond=False), dict(feeds, M=np.array(6, np.int64)))
    compare(loop_model(with_cond=False), dict(feeds, M=np.array(2, np.int64)))
    compare(loop_model(with_m=False), dict(feeds, cond=np.array(True)))
    # Neither: a do-while loop that only the body's condition ends.
    compare(loop_model(with_m=False, with_cond=False), feeds)


def test_loop_carried_value_that_grows():
    """seq = concat(seq, [i]) each iteration: the carried shape changes, as in torch's exported loops."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_f"], to=F),
         const("axes", np.array([0], np.int64)),
         helper.make_node("Unsqueeze", ["i_f", "axes"], ["i_1"]),
         helper.make_node("Concat", ["seq_in", "i_1"], ["seq_out"], axis=0),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("seq_in", F, [None])],
        [vi("c_out", B, []), vi("seq_out", F, [None])])
    data = model([helper.make_node("Loop", ["M", "", "seq0"], ["seq"], body=body)],
                 [vi("M", I64, []), vi("seq0", F, [None])], [vi("seq", F, [None])])
    for m in (0, 1, 6):
        compare(data, {"M": np.array(m, np.int64), "seq0": np.array([-1.0], np.float32)})


def test_subgraphs_nested_two_deep_read_the_outermost_values():
    """A Loop body holds an If whose branches read x and w, two graphs out."""
    then = helper.make_graph([helper.make_node("Add", ["acc_in", "x"], ["t"])], "then", [], [vi("t", F)])
    other = helper.make_graph([helper.make_node("Sub", ["acc_in", "w"], ["e"])], "else", [], [vi("e", F)])
    body = helper.make_graph(
        [const("two", np.int64(2)),
         helper.make_node("Mod", ["i", "two"], ["parity"]),
         const("zero", np.int64(0)),
         helper.make_node("Equal", ["parity", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["acc_out"], then_branch=then, else_branch=other),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc_in", F, [3, 4])],
        [vi("c_out", B, []), vi("acc_out", F, [3, 4])])
    data = model([helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
                 [vi("x", F, [3, 4]), vi("M", I64, []), vi("acc0", F, [3, 4])], [vi("acc", F, [3, 4])],
                 [numpy_helper.from_array(W, "w")])
    compare(data, {"x": X, "M": np.array(5, np.int64), "acc0": np.zeros((3, 4), np.float32)})


# ---- Scan --------------------------------------------------------------------------------------

def scan_model(opset=OPSET):
    """A running sum over x's rows (axis 0, forward) and y's columns (axis 1, reversed); the sums go
    out stacked on axis 0 and the differences on axis 1, in reverse."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["xi", "yi"], ["p"]),
         helper.make_node("Add", ["s_in", "p"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["sums"]),
         helper.make_node("Sub", ["xi", "yi"], ["diffs"])],
        "body", [vi("s_in", F, [4]), vi("xi", F, [4]), vi("yi", F, [4])],
        [vi("s_out", F, [4]), vi("sums", F, [4]), vi("diffs", F, [4])])
    node = helper.make_node("Scan", ["s0", "xs", "ys"], ["s", "all_sums", "all_diffs"], body=body, num_scan_inputs=2,
                            scan_input_axes=[0, 1], scan_input_directions=[0, 1], scan_output_axes=[0, 1],
                            scan_output_directions=[0, 1])
    return model([node], [vi("s0", F, [4]), vi("xs", F, [5, 4]), vi("ys", F, [4, 5])],
                 [vi("s", F), vi("all_sums", F), vi("all_diffs", F)], opset=opset)


@pytest.mark.parametrize("opset", [9, 11, OPSET])
def test_scan_axes_and_directions(opset):
    got = compare(scan_model(opset), {"s0": np.zeros(4, np.float32), "xs": RNG.standard_normal((5, 4)).astype(np.float32),
                                      "ys": RNG.standard_normal((4, 5)).astype(np.float32)}, rtol=1e-5, atol=1e-6)
    assert got["all_diffs"].shape == (4, 5)


def test_scan_reads_an_outer_value():
    body = helper.make_graph([helper.make_node("Mul", ["xi", "w"], ["p"]), helper.make_node("Add", ["s_in", "p"], ["s_out"])],
                             "body", [vi("s_in", F, [4]), vi("xi", F, [4])], [vi("s_out", F, [4])])
    data = model([helper.make_node("Scan", ["s0", "xs"], ["s"], body=body, num_scan_inputs=1)],
                 [vi("s0", F, [4]), vi("xs", F, [6, 4])], [vi("s", F, [4])], [numpy_helper.from_array(W, "w")])
    compare(data, {"s0": np.ones(4, np.float32), "xs": RNG.standard_normal((6, 4)).astype(np.float32)}, rtol=1e-5)


# ---- Saving ------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,feeds", [
    (lambda: if_model(), {"x": X, "flag": np.array(False)}),
    (lambda: loop_model(), {"x": XP, "acc0": np.ones((3, 4), np.float32), "limit": np.array(40.0, np.float32),
                            "M": np.array(9, np.int64), "cond": np.array(True)}),
    (lambda: scan_model(), {"s0": np.zeros(4, np.float32), "xs": np.arange(20, dtype=np.float32).reshape(5, 4),
                            "ys": np.ones((4, 5), np.float32)}),
])
def test_exported_and_native_copies_run_the_same(tmp_path, make, feeds):
    data = make()
    want = reference(data, feeds)
    exported = tmp_path / "m.onnx"
    oneflow.save_model(data, str(exported))
    onnx.checker.check_model(str(exported))
    again = reference(exported.read_bytes(), feeds)  # onnxruntime reads our export
    native = tmp_path / "m.ofm"
    oneflow.save_model(data, str(native))
    with oneflow.Session(str(native)) as s:
        ours = s.run(feeds)
    for name, w in want.items():
        np.testing.assert_allclose(again[name], w, rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(ours[name], w, rtol=1e-6, atol=1e-6, err_msg=name)


# ---- Errors ------------------------------------------------------------------------------------

def raw_model(nodes, inputs, outputs, initializers=()):
    """A model the checker might refuse: built without check_model."""
    g = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return m.SerializeToString()


def test_subgraph_reading_an_undefined_name_is_refused():
    then = helper.make_graph([helper.make_node("Neg", ["nowhere"], ["t"])], "then", [], [vi("t", F)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F)])
    data = raw_model([helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other)],
                     [vi("x", F, [3]), vi("flag", B, [])], [vi("y", F)])
    with pytest.raises(oneflow.OneflowError, match="reads 'nowhere', which is not defined in this subgraph or an enclosing"):
        oneflow.Session(data)


def test_branches_with_different_output_counts_are_refused():
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["t"]), helper.make_node("Abs", ["x"], ["u"])], "then", [],
                             [vi("t", F), vi("u", F)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F)])
    data = raw_model([helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other)],
                     [vi("x", F, [3]), vi("flag", B, [])], [vi("y", F)])
    with pytest.raises(oneflow.OneflowError, match="then_branch returns 2 and else_branch 1"):
        oneflow.Session(data)


def test_if_cond_of_wrong_type_is_refused():
    then = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [vi("t", F)])
    data = raw_model([helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=then)],
                     [vi("x", F, [3]), vi("flag", F, [])], [vi("y", F)])
    with pytest.raises(oneflow.OneflowError, match="cond must be bool"):
        oneflow.Session(data)


def test_loop_control_inputs_of_wrong_type_are_refused():
    m = onnx.load_from_string(loop_model())
    m.graph.input[3].type.tensor_type.elem_type = F  # M as float
    with pytest.raises(oneflow.OneflowError, match=r"M \(the trip count\) must be int64"):
        oneflow.Session(m.SerializeToString())


def test_loop_body_changing_a_carried_dtype_is_refused():
    body = helper.make_graph([helper.make_node("Cast", ["v_in"], ["v_out"], to=I64),
                              helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
                             [vi("i", I64, []), vi("c_in", B, []), vi("v_in", F, [3])], [vi("c_out", B, []), vi("v_out", I64, [3])])
    data = raw_model([helper.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
                     [vi("M", I64, []), vi("v0", F, [3])], [vi("v", F)])
    with pytest.raises(oneflow.OneflowError, match="enters the body as float32\\[3\\] and leaves it as int64"):
        oneflow.Session(data)


def test_scan_inputs_of_different_lengths_are_refused_at_run_time():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "body", [vi("a", F, [2]), vi("b", F, [2])],
                             [vi("c", F, [2])])
    data = model([helper.make_node("Scan", ["xs", "ys"], ["cs"], body=body, num_scan_inputs=2)],
                 [vi("xs", F, ["n", 2]), vi("ys", F, ["m", 2])], [vi("cs", F)])
    with oneflow.Session(data) as s:
        with pytest.raises(oneflow.OneflowError, match="has 4 steps along its axis; scan input 0 has 3"):
            s.run({"xs": np.zeros((3, 2), np.float32), "ys": np.zeros((4, 2), np.float32)})


def test_scan_with_too_many_scan_inputs_is_refused():
    body = helper.make_graph([helper.make_node("Neg", ["a"], ["c"])], "body", [vi("a", F, [2])], [vi("c", F, [2])])
    data = raw_model([helper.make_node("Scan", ["xs"], ["cs"], body=body, num_scan_inputs=3)],
                     [vi("xs", F, [3, 2])], [vi("cs", F)])
    with pytest.raises(oneflow.OneflowError, match=r"num_scan_inputs is 3; it must be in \[1, 1\]"):
        oneflow.Session(data)


@pytest.mark.parametrize("directions", [[0, 0], [1, 0], [0, 1]])
def test_opset8_scan_over_a_batch(directions):
    """Scan-8 (states [B, ...], scan inputs [B, T, ...], no sequence_lens), with two states, two scan
    inputs in their own directions and a value read from the enclosing graph: upgraded at import to
    a Scan over the batch rows around the Scan of one row."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "a"], ["sum_out"]),
         helper.make_node("Mul", ["b", "w"], ["bw"]),
         helper.make_node("Max", ["max_in", "bw"], ["max_out"]),
         helper.make_node("Sub", ["sum_out", "max_out"], ["step"])],
        "body", [vi("sum_in", F, [3]), vi("max_in", F, [3]), vi("a", F, [3]), vi("b", F, [3])],
        [vi("sum_out", F, [3]), vi("max_out", F, [3]), vi("step", F, [3])])
    node = helper.make_node("Scan", ["", "s0", "m0", "xs", "ys"], ["s", "m", "steps"], num_scan_inputs=2,
                            directions=directions, body=body)
    data = model([node], [vi("s0", F, [2, 3]), vi("m0", F, [2, 3]), vi("xs", F, [2, 5, 3]), vi("ys", F, [2, 5, 3])],
                 [vi("s", F, [2, 3]), vi("m", F, [2, 3]), vi("steps", F, [2, 5, 3])],
                 [numpy_helper.from_array(np.array([1.0, -2.0, 0.5], np.float32), "w")], opset=8)
    feeds = {"s0": RNG.standard_normal((2, 3)).astype(np.float32), "m0": np.full((2, 3), -9, np.float32),
             "xs": RNG.standard_normal((2, 5, 3)).astype(np.float32),
             "ys": RNG.standard_normal((2, 5, 3)).astype(np.float32)}
    compare(data, feeds)


def test_opset8_scan_sequence_lens_is_refused():
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x"], ["s_out"])], "body",
                             [vi("s_in", F, [3]), vi("x", F, [3])], [vi("s_out", F, [3])])
    node = helper.make_node("Scan", ["lens", "s0", "xs"], ["s"], num_scan_inputs=1, body=body)
    data = model([node], [vi("lens", I64, [2]), vi("s0", F, [2, 3]), vi("xs", F, [2, 4, 3])], [vi("s", F, [2, 3])],
                 opset=8)
    with pytest.raises(oneflow.OneflowError, match="sequence_lens is not reproduced"):
        oneflow.Session(data)
