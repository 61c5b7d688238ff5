"""Models at ONNX opsets 1 to 12, in the forms those opsets define (attributes that later became
inputs, Softmax's 2-D coercion, Upsample, Resize-10, Scatter, BatchNormalization's `spatial`),
run by the engine (which upgrades them to opset 13 at import) against onnxruntime, which runs each
opset natively (opsets 1-6, which onnxruntime does not run: against numpy). Also the errors: the
old forms the upgrade refuses.
Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

F = TensorProto.FLOAT
IR = {1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3, 7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7}


def model(opset, nodes, inputs, outputs, inits=()):
    inits = [numpy_helper.from_array(v, k) for k, v in inits]
    if IR[opset] < 4:  # IR 3 lists every initializer among the graph inputs too
        inputs = list(inputs) + [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in inits]
    graph = helper.make_graph(nodes, f"legacy_{opset}", inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR[opset])
    onnx.checker.check_model(m)
    return m.SerializeToString()


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def compare(data, feeds, rtol=1e-5, atol=1e-5):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    names = [o.name for o in onnx.load_from_string(data).graph.output]
    for name, w in zip(names, want):
        g = np.array(got[name])
        assert g.shape == w.shape, (name, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


RNG = np.random.default_rng(9)


def test_opset9_cnn_with_attribute_forms():
    """Conv, BatchNormalization-9, Upsample-9 (scales input), Pad-2 (pads and value attributes),
    Slice-1 (attributes), Clip-6 (min/max attributes), Squeeze/Unsqueeze/ReduceSum/Split
    (attributes), Dropout-7 (ratio), Gemm, Softmax-1 on axis 1 of 2-D, TopK-1 (k attribute)."""
    c = 4
    inits = {
        "w": RNG.standard_normal((c, 3, 3, 3)).astype(np.float32) * 0.3,
        "scale": RNG.uniform(0.5, 1.5, c).astype(np.float32), "bias": RNG.standard_normal(c).astype(np.float32),
        "mean": RNG.standard_normal(c).astype(np.float32) * 0.1, "var": RNG.uniform(0.5, 1.5, c).astype(np.float32),
        "up": np.array([1, 1, 2, 2], np.float32),
        "fc": RNG.standard_normal((c * 2 * 12, 10)).astype(np.float32) * 0.1,
        "fcb": RNG.standard_normal(10).astype(np.float32) * 0.1,  # Gemm's C is required before opset 11
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"], epsilon=1e-5),
        helper.make_node("Relu", ["b"], ["r"]),
        helper.make_node("Upsample", ["r", "up"], ["u"], mode="nearest"),                # [1,4,12,12]
        helper.make_node("Pad", ["u"], ["p"], pads=[0, 0, 1, 2, 0, 0, 1, 0], value=0.5),  # [1,4,14,14]
        helper.make_node("Slice", ["p"], ["s"], starts=[0, 2], ends=[12, 14], axes=[3, 2]),  # [1,4,12,12]
        helper.make_node("Clip", ["s"], ["k"], min=0.1, max=2.0),
        helper.make_node("Split", ["k"], ["k1", "k2"], axis=2, split=[4, 8]),
        helper.make_node("ReduceSum", ["k2"], ["rs"], axes=[2], keepdims=1),              # [1,4,1,12]
        helper.make_node("Concat", ["k1", "rs"], ["cat"], axis=2),                          # [1,4,5,12]
        helper.make_node("Slice", ["cat"], ["cat2"], starts=[0], ends=[2], axes=[2]),       # [1,4,2,12]
        helper.make_node("Unsqueeze", ["cat2"], ["uq"], axes=[0]),                          # [1,1,4,2,12]
        helper.make_node("Squeeze", ["uq"], ["sq"], axes=[0, 1]),                          # [4,2,12]
        helper.make_node("Flatten", ["sq"], ["fl"], axis=0),                                # [1,96]
        helper.make_node("Dropout", ["fl"], ["dr"], ratio=0.3),
        helper.make_node("Gemm", ["dr", "fc", "fcb"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1),
        helper.make_node("TopK", ["logits"], ["top", "idx"], k=3, axis=1),
    ]
    data = model(9, nodes, [vi("x", [1, 3, 6, 6])],
                 [vi("y", [1, 10]), vi("top", [1, 3]), vi("idx", [1, 3], TensorProto.INT64)], inits.items())
    compare(data, {"x": RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)})


def test_opset11_softmax_coerced_to_2d_and_attribute_axes():
    """Softmax-11 and LogSoftmax-11 on axis 1 of a 3-D input normalize over dims 1 and 2 together
    (the 2-D coercion); on axis -1 over the last dim alone. Split/Squeeze/ReduceSum keep attribute
    axes until opset 13, Dropout its ratio attribute until 12; TopK-11 and Pad-11 and Clip-11 take
    inputs."""
    nodes = [
        helper.make_node("Softmax", ["x"], ["sm1"], axis=1),
        helper.make_node("LogSoftmax", ["x"], ["lsm"]),  # default axis 1
        helper.make_node("Softmax", ["x"], ["sm_last"], axis=-1),
        helper.make_node("Split", ["x"], ["a", "b"], axis=-1, split=[2, 3]),
        helper.make_node("ReduceSum", ["b"], ["s"], axes=[-1, 1], keepdims=0),
        helper.make_node("Unsqueeze", ["s"], ["su"], axes=[-1]),
        helper.make_node("Squeeze", ["su"], ["sq"], axes=[1]),
        helper.make_node("Dropout", ["a"], ["d", "mask"], ratio=0.25),
        helper.make_node("Pad", ["d", "pads", "cv"], ["pd"], mode="constant"),
        helper.make_node("Clip", ["pd", "lo", "hi"], ["cl"]),
        helper.make_node("TopK", ["x", "k"], ["tv", "ti"], axis=1, largest=0),
    ]
    inits = {"pads": np.array([0, 1, 0, 0, 0, 1], np.int64), "cv": np.array(-1.0, np.float32),
             "lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32), "k": np.array([2], np.int64)}
    data = model(11, nodes, [vi("x", [2, 4, 5])],
                 [vi("sm1", [2, 4, 5]), vi("lsm", [2, 4, 5]), vi("sm_last", [2, 4, 5]), vi("sq", [2]),
                  vi("cl", [2, 5, 3]), vi("tv", [2, 2, 5]), vi("ti", [2, 2, 5], TensorProto.INT64)], inits.items())
    compare(data, {"x": RNG.standard_normal((2, 4, 5)).astype(np.float32)})


def test_opset10_resize_scatter_slice_inputs():
    """Resize-10 (nearest and linear: the asymmetric transformation), Scatter-10, Slice-10 with
    inputs and steps, TopK-10 with a K input."""
    nodes = [
        helper.make_node("Resize", ["x", "sc"], ["rn"], mode="nearest"),
        helper.make_node("Resize", ["x", "sc"], ["rl"], mode="linear"),
        helper.make_node("Scatter", ["x", "ind", "upd"], ["sc_out"], axis=3),
        helper.make_node("Slice", ["x", "st", "en", "ax", "stp"], ["sl"]),
    ]
    inits = {"sc": np.array([1, 1, 2, 3], np.float32), "ind": np.array([[[[0, 2], [1, 0]]]], np.int64),
             "upd": np.array([[[[9, 8], [7, 6]]]], np.float32), "st": np.array([3, 0], np.int64),
             "en": np.array([0, 2], np.int64), "ax": np.array([3, 2], np.int64), "stp": np.array([-2, 1], np.int64)}
    data = model(10, nodes, [vi("x", [1, 1, 2, 4])],
                 [vi("rn", [1, 1, 4, 12]), vi("rl", [1, 1, 4, 12]), vi("sc_out", [1, 1, 2, 4]), vi("sl", [1, 1, 2, 2])],
                 inits.items())
    compare(data, {"x": RNG.standard_normal((1, 1, 2, 4)).astype(np.float32)})


def test_opset7_upsample_scales_attribute_and_batchnorm_spatial():
    nodes = [
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], spatial=1, epsilon=1e-3),
        helper.make_node("Upsample", ["bn"], ["up"], scales=[1.0, 1.0, 3.0, 2.0], mode="linear"),
        helper.make_node("Upsample", ["bn"], ["un"], scales=[1.0, 1.0, 2.0, 2.0]),
        helper.make_node("Softmax", ["up"], ["y"], axis=2),  # rows of dims 2 and 3 together
    ]
    inits = {"s": np.array([1.5, 0.5], np.float32), "b": np.array([0.1, -0.2], np.float32),
             "m": np.array([0.3, 0.0], np.float32), "v": np.array([1.0, 2.0], np.float32)}
    data = model(7, nodes, [vi("x", [1, 2, 3, 3])], [vi("y", [1, 2, 9, 6]), vi("un", [1, 2, 6, 6])], inits.items())
    compare(data, {"x": RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)})


@pytest.mark.parametrize("opset", [1, 3, 4, 5, 6])
def test_opsets_1_to_6_in_their_own_forms(opset):
    """consumed_inputs, broadcast=1 (trailing alignment) and broadcast=0, is_test, Gemm's broadcast,
    Concat-1 without an axis, Reshape's shape attribute (before 5), Cast naming its type (before 6),
    Pad-1's paddings, and ops that never changed (Not, Transpose, MatMul)."""
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], broadcast=1, consumed_inputs=[0, 0]),
        helper.make_node("Relu", ["a"], ["r"], consumed_inputs=[0]),
        helper.make_node("Mul", ["x", "x"], ["m"], broadcast=0),
        helper.make_node("Transpose", ["m"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Dropout", ["r"], ["d"], is_test=1, ratio=0.3),
        helper.make_node("Greater", ["x", "zero"], ["pos"], broadcast=1),
        helper.make_node("Not", ["pos"], ["neg"]),
        helper.make_node("Gemm", ["x2", "w", "c"], ["gm"], broadcast=1, transB=1),
    ]
    if opset < 5:
        nodes.append(helper.make_node("Reshape", ["d"], ["flat"], shape=[6, 4]))
    else:
        nodes.append(helper.make_node("Reshape", ["d", "shape"], ["flat"]))
    nodes.append(helper.make_node("Concat", ["flat", "flat"], ["cat"]) if opset < 4 else
                 helper.make_node("Concat", ["flat", "flat"], ["cat"], axis=1))
    nodes.append(helper.make_node("Cast", ["cat"], ["ci"], to="INT32" if opset < 6 else TensorProto.INT32))
    if opset < 2:
        nodes.append(helper.make_node("Pad", ["x"], ["p"], paddings=[0, 1, 0, 0, 2, 1], value=0.5))
    else:
        nodes.append(helper.make_node("Pad", ["x"], ["p"], pads=[0, 1, 0, 0, 2, 1], value=0.5))
    inits = {"b": RNG.standard_normal(4).astype(np.float32), "zero": np.zeros(1, np.float32),
             "w": RNG.standard_normal((5, 4)).astype(np.float32), "c": RNG.standard_normal(5).astype(np.float32),
             "shape": np.array([6, 4], np.int64)}
    if opset < 5:
        del inits["shape"]
    outputs = [vi("ci", [6, 8], TensorProto.INT32), vi("t", [2, 4, 3]), vi("neg", [2, 3, 4], TensorProto.BOOL),
               vi("gm", [3, 5]), vi("p", [2, 6, 5])]
    tensors = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    listed = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in tensors]  # IR 3
    graph = helper.make_graph(nodes, "old", [vi("x", [2, 3, 4]), vi("x2", [3, 4])] + listed, outputs, tensors)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3)
    data = m.SerializeToString()
    feeds = {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32) * 3,
             "x2": RNG.standard_normal((3, 4)).astype(np.float32)}
    # onnxruntime runs nothing older than opset 7, and onnx.version_converter has no adapters for
    # several of these forms: numpy is the reference.
    x, x2 = feeds["x"], feeds["x2"]
    flat = np.maximum(x + inits["b"], 0).reshape(6, 4)
    want = {"ci": np.concatenate([flat, flat], 1).astype(np.int32), "t": (x * x).transpose(0, 2, 1),
            "neg": ~(x > 0), "gm": x2 @ inits["w"].T + inits["c"],
            "p": np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=0.5)}
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    for name, w in want.items():
        assert got[name].dtype == w.dtype and got[name].shape == w.shape, name
        np.testing.assert_allclose(got[name], w, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("opset,node,message", [
    (5, helper.make_node("Add", ["x", "b"], ["y"], broadcast=1, axis=0), "broadcasting B along axis 0"),
    (5, helper.make_node("Tile", ["x", "b"], ["y"]), "Tile changed meaning at opset 6"),
    (6, helper.make_node("PRelu", ["x", "b"], ["y"]), "PRelu changed meaning at opset 7"),
    (4, helper.make_node("Cast", ["x"], ["y"], to="FLOAT7"), "names no data type: 'FLOAT7'"),
])
def test_opsets_1_to_6_refuse_what_they_do_not_reproduce(opset, node, message):
    graph = helper.make_graph([node], "old", [vi("x", [2, 3])], [vi("y", [2, 3])],
                              [numpy_helper.from_array(np.ones(2, np.float32), "b")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3).SerializeToString()
    with pytest.raises(oneflow.OneflowError, match=message):
        oneflow.Session(data)


def test_errors_name_the_problem():
    bn = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0)
    inits = {k: np.ones(2, np.float32) for k in "sbmv"}
    data = model(7, [bn], [vi("x", [1, 2, 3])], [vi("y", [1, 2, 3])], inits.items())
    with pytest.raises(oneflow.UnsupportedError, match="BatchNormalization.*spatial = 0"):
        oneflow.Session(data)
    down = helper.make_node("Resize", ["x", "sc"], ["y"], mode="nearest")
    data = model(10, [down], [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 2, 2])],
                 {"sc": np.array([1, 1, 0.5, 0.5], np.float32)}.items())
    with pytest.raises(oneflow.UnsupportedError, match="nearest downsampling"):
        oneflow.Session(data)
