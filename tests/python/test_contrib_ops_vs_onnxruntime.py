"""ONNX Runtime's contrib ops (FastGelu, BiasGelu, FusedMatMul, SkipLayerNormalization,
SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization) against onnxruntime itself, which
defines them: every optional input and output, broadcast skips, f16 and f64 where onnxruntime runs
them; a model that onnxruntime's transformer optimizer rewrote into these ops; and the refusal of a
contrib op we do not implement, naming it and its domain. Run with PYTHONPATH holding the binding
and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime defines these ops and is the reference")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

MS = "com.microsoft"


def one_node(op, inputs, n_outputs, domain=MS, stored=(), opset=17, **attrs):
    """inputs: [(name, array or None)]; None leaves the slot empty. Returns (bytes, feeds, outputs)."""
    names = [n if a is not None else "" for n, a in inputs]
    outs = [f"out{k}" if k in n_outputs else "" for k in range(max(n_outputs) + 1)]
    fed = [(n, a) for n, a in inputs if a is not None and n not in stored]
    inits = [numpy_helper.from_array(a, n) for n, a in inputs if a is not None and n in stored]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    graph = helper.make_graph(
        [helper.make_node(op, names, outs, domain=domain, **attrs)], op,
        [helper.make_tensor_value_info(n, tt(a), list(a.shape)) for n, a in fed],
        [onnx.ValueInfoProto(name=o) for o in outs if o], inits)  # types left to inference
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    m = helper.make_model(graph, opset_imports=imports, ir_version=8)
    return m.SerializeToString(), dict(fed), [o for o in outs if o]


def compare(data, feeds, outputs, rtol=1e-5, atol=1e-5):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(outputs, feeds)
    with oneflow.Session(data) as s:
        got = s.run(feeds)
    for name, w in zip(outputs, want):
        g = np.asarray(got[name])
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, err_msg=name)


rng = np.random.default_rng(2026)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("op", ["FastGelu", "BiasGelu"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_gelus(op, with_bias):
    if op == "BiasGelu" and not with_bias:
        pytest.skip("BiasGelu's bias is required")
    x = f32(2, 5, 16, scale=3.0)
    compare(*one_node(op, [("X", x), ("bias", f32(16) if with_bias else None)], [0]), rtol=1e-5, atol=2e-6)


def test_fast_gelu_f16():
    x = f32(3, 32, scale=3.0).astype(np.float16)
    compare(*one_node("FastGelu", [("X", x), ("bias", f32(32).astype(np.float16))], [0]), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("ta,tb,alpha", [(0, 0, 1.0), (1, 0, 0.5), (0, 1, 2.0), (1, 1, -1.25)])
def test_fused_matmul(ta, tb, alpha):
    a = f32(2, 3, 7, 5) if ta else f32(2, 3, 5, 7)
    b = f32(3, 4, 7) if tb else f32(3, 7, 4)  # batch broadcast: [3] against [2, 3]
    compare(*one_node("FusedMatMul", [("A", a), ("B", b)], [0], transA=ta, transB=tb, alpha=alpha, stored=("B",)),
            rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("skip_shape", [(2, 6, 32), (6, 32), (1, 6, 32)])
@pytest.mark.parametrize("beta,bias", [(True, True), (False, False), (True, False)])
def test_skip_layer_normalization(skip_shape, beta, bias):
    x, skip = f32(2, 6, 32), f32(*skip_shape)
    inputs = [("input", x), ("skip", skip), ("gamma", f32(32)), ("beta", f32(32) if beta else None),
              ("bias", f32(32) if bias else None)]
    compare(*one_node("SkipLayerNormalization", inputs, [0, 1, 2, 3], epsilon=1e-5), rtol=1e-4, atol=1e-5)


def test_skip_layer_normalization_output_alone_f16():
    x = f32(2, 4, 16).astype(np.float16)
    inputs = [("input", x), ("skip", f32(2, 4, 16).astype(np.float16)), ("gamma", f32(16).astype(np.float16)),
              ("beta", f32(16).astype(np.float16))]
    compare(*one_node("SkipLayerNormalization", inputs, [0]), rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("bias", [True, False])
def test_skip_simplified_layer_normalization(bias):
    inputs = [("input", f32(3, 5, 24)), ("skip", f32(3, 5, 24)), ("gamma", f32(24)),
              ("bias", f32(24) if bias else None)]
    compare(*one_node("SkipSimplifiedLayerNormalization", inputs, [0, 3], epsilon=1e-6), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 1])
def test_simplified_layer_normalization(axis):
    x = f32(4, 6, 8)
    scale = f32(6, 8) if axis == 1 else f32(8)
    compare(*one_node("SimplifiedLayerNormalization", [("X", x), ("scale", scale)], [0, 1], domain="",
                      axis=axis, epsilon=1e-5), rtol=1e-4, atol=1e-5)


def test_transformer_optimizer_output(tmp_path):
    """A BERT-style layer written as exporters write it, rewritten by onnxruntime's transformer
    optimizer into SkipLayerNormalization and its GELU contrib op: same outputs."""
    optimizer = pytest.importorskip("onnxruntime.transformers.optimizer", reason="onnxruntime's transformers tools")
    pytest.importorskip("torch", reason="onnxruntime's transformer optimizer imports torch (pip install torch)")
    d, ffn = 32, 64
    nodes, inits = [], []

    def const(name, a):
        inits.append(numpy_helper.from_array(a, name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def layer_norm(x, p):
        return node("LayerNormalization", [x, const(p + ".g", 1 + f32(d, scale=0.1)), const(p + ".b", f32(d, scale=0.1))],
                    p + ".out", axis=-1, epsilon=1e-5)

    x = "input"
    h = node("Add", [node("MatMul", [x, const("w1", f32(d, d, scale=0.2))], "mm1"), const("b1", f32(d))], "fc1")
    x1 = layer_norm(node("Add", [x, h], "res1"), "ln1")
    u = node("Add", [node("MatMul", [x1, const("w2", f32(d, ffn, scale=0.2))], "mm2"), const("b2", f32(ffn))], "fc2")
    # GELU as torch writes it: x * 0.5 * (1 + erf(x / sqrt(2)))
    e = node("Erf", [node("Div", [u, const("sqrt2", np.array(1.4142135, np.float32))], "div")], "erf")
    g = node("Mul", [node("Mul", [u, node("Add", [e, const("one", np.array(1.0, np.float32))], "erf1")], "mulx"),
                     const("half", np.array(0.5, np.float32))], "gelu")
    v = node("Add", [node("MatMul", [g, const("w3", f32(ffn, d, scale=0.2))], "mm3"), const("b3", f32(d))], "fc3")
    layer_norm(node("Add", [x1, v], "res2"), "ln2")
    nodes[-1].output[0] = "output"
    graph = helper.make_graph(nodes, "layer", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [2, 8, d])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, 8, d])], inits)
    src = tmp_path / "layer.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(src))
    opt = optimizer.optimize_model(str(src), model_type="bert", num_heads=0, hidden_size=0, opt_level=1)
    ops = {(n.domain, n.op_type) for n in opt.model.graph.node}
    assert (MS, "SkipLayerNormalization") in ops and any(o in ops for o in [(MS, "BiasGelu"), (MS, "Gelu")]), ops
    data = opt.model.SerializeToString()
    compare(data, {"input": f32(2, 8, d)}, ["output"], rtol=1e-4, atol=1e-4)


def test_unsupported_contrib_op_is_refused_by_name():
    data, feeds, _ = one_node("QOrderedMatMul", [("A", f32(2, 2)), ("B", f32(2, 2))], [0])
    with pytest.raises(oneflow.OneflowError, match=r"QOrderedMatMul.*com\.microsoft"):
        oneflow.Session(data)


def test_fused_matmul_batch_transposes_are_refused():
    data, feeds, _ = one_node("FusedMatMul", [("A", f32(2, 3, 4)), ("B", f32(2, 4, 5))], [0], transBatchA=1)
    with pytest.raises(oneflow.OneflowError, match="transBatchA"):
        with oneflow.Session(data) as s:
            s.run(feeds)


def test_skip_shape_mismatch_is_an_error():
    data, feeds, _ = one_node("SkipLayerNormalization", [("input", f32(2, 4, 8)), ("skip", f32(3, 8)),
                                                         ("gamma", f32(8))], [0])
    with pytest.raises(oneflow.OneflowError, match="skip"):
        with oneflow.Session(data) as s:
            s.run(feeds)
