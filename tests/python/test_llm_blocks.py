"""The blocks of recent language models that ONNX standardised in opsets 27-28, newer than
onnxruntime 1.31, against onnx.reference: SwiGLU, CausalConvWithState (Mamba / Gated DeltaNet's
short conv, with and without carried state) and LinearAttention (every update rule, grouped query
heads, decay per head and per dimension, beta per head and shared, carried state, float16, an
explicit scale), and their errors. Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the
library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import oneflow  # noqa: E402

rng = np.random.default_rng(2727)


def one_node(op, inputs, outputs=("y",), opset=27, **attrs):
    """inputs: [(name, array or None)]; None leaves an optional slot empty."""
    names = [n if a is not None else "" for n, a in inputs]
    fed = {n: a for n, a in inputs if a is not None}
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)  # noqa: E731
    graph = helper.make_graph([helper.make_node(op, names, list(outputs), **attrs)], op,
                              [helper.make_tensor_value_info(n, tt(a), list(a.shape)) for n, a in fed.items()],
                              [onnx.ValueInfoProto(name=o) for o in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=11)
    return m, fed


def against_reference(m, fed, rtol, atol):
    want = ReferenceEvaluator(m).run(None, fed)
    with oneflow.Session(m.SerializeToString()) as s:
        got = s.run(fed)
    for name, w in zip([o.name for o in m.graph.output], want):
        g = np.asarray(got[name])
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, err_msg=name)


def test_swiglu_against_onnx_reference():
    for dtype, tol in [(np.float32, 1e-6), (np.float64, 1e-12), (np.float16, 2e-3)]:
        a = (rng.standard_normal((3, 4, 33)) * 4).astype(dtype)
        b = rng.standard_normal((3, 4, 33)).astype(dtype)
        for alpha in [1.0, 1.702]:
            against_reference(*one_node("SwiGLU", [("A", a), ("B", b)], opset=28, alpha=alpha), tol, tol)


@pytest.mark.parametrize("activation", ["none", "silu"])
@pytest.mark.parametrize("with_past,with_bias", [(False, False), (True, True), (True, False)])
@pytest.mark.parametrize("k", [1, 4])
def test_causal_conv_with_state_against_onnx_reference(activation, with_past, with_bias, k):
    b, c, length = 2, 5, 9
    x = rng.standard_normal((b, c, length)).astype(np.float32)
    w = rng.standard_normal((c, 1, k)).astype(np.float32)
    inputs = [("input", x), ("weight", w), ("bias", rng.standard_normal(c).astype(np.float32) if with_bias else None),
              ("past_state", rng.standard_normal((b, c, k - 1)).astype(np.float32) if with_past else None)]
    m, fed = one_node("CausalConvWithState", inputs, outputs=("y", "state"), activation=activation)
    against_reference(m, fed, 1e-5, 1e-6)


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("heads", [(2, 2), (4, 2), (4, 1)])  # (query, key/value): MHA, GQA, MQA
@pytest.mark.parametrize("with_past", [False, True])
def test_linear_attention_against_onnx_reference(rule, heads, with_past):
    hq, hkv = heads
    b, t, dk, dv = 2, 7, 8, 6
    q = rng.standard_normal((b, t, hq * dk)).astype(np.float32)
    k = (rng.standard_normal((b, t, hkv * dk)) / np.sqrt(dk)).astype(np.float32)  # keeps the delta rule stable
    v = rng.standard_normal((b, t, hkv * dv)).astype(np.float32)
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    decay = -rng.uniform(0.01, 0.5, (b, t, hkv * (dk if hq == 4 else 1))).astype(np.float32) if gated else None
    beta = rng.uniform(0.1, 0.9, (b, t, hkv if hkv > 1 else 1)).astype(np.float32) if delta else None
    past = rng.standard_normal((b, hkv, dk, dv)).astype(np.float32) * 0.1 if with_past else None
    m, fed = one_node("LinearAttention", [("q", q), ("k", k), ("v", v), ("past", past), ("decay", decay), ("beta", beta)],
                      outputs=("y", "state"), q_num_heads=hq, kv_num_heads=hkv, update_rule=rule)
    against_reference(m, fed, 2e-5, 2e-5)


def test_linear_attention_float16_and_explicit_scale():
    b, t, h, dk, dv = 1, 5, 2, 4, 4
    q = rng.standard_normal((b, t, h * dk)).astype(np.float16)
    k = (rng.standard_normal((b, t, h * dk)) * 0.5).astype(np.float16)
    v = rng.standard_normal((b, t, h * dv)).astype(np.float16)
    decay = -rng.uniform(0.05, 0.3, (b, t, h)).astype(np.float16)
    beta = rng.uniform(0.2, 0.8, (b, t, h)).astype(np.float16)
    m, fed = one_node("LinearAttention", [("q", q), ("k", k), ("v", v), ("past", None), ("decay", decay), ("beta", beta)],
                      outputs=("y", "state"), q_num_heads=h, kv_num_heads=h, scale=0.3)
    against_reference(m, fed, 2e-3, 2e-3)


def test_errors_name_the_problem():
    m, _ = one_node("SwiGLU", [("A", np.ones((2, 3), np.float32)), ("B", np.ones((3,), np.float32))], opset=28)
    with pytest.raises(oneflow.InvalidModelError, match="does not broadcast"):
        oneflow.Session(m.SerializeToString())
    x = np.ones((1, 3, 8), np.float32)
    m, _ = one_node("LinearAttention", [("q", x), ("k", x), ("v", x)], outputs=("y", "state"), q_num_heads=1,
                    kv_num_heads=1, update_rule="gated")
    with pytest.raises(oneflow.InvalidModelError, match="needs decay"):
        oneflow.Session(m.SerializeToString())
    m, _ = one_node("LinearAttention", [("q", x), ("k", x), ("v", x)], outputs=("y", "state"), q_num_heads=3,
                    kv_num_heads=2, update_rule="linear")
    with pytest.raises(oneflow.InvalidModelError, match="multiple of kv_num_heads"):
        oneflow.Session(m.SerializeToString())
    m, _ = one_node("CausalConvWithState", [("input", x), ("weight", np.ones((3, 1, 4), np.float32))],
                    outputs=("y", "state"), activation="gelu")
    with pytest.raises(oneflow.InvalidModelError, match="activation"):
        oneflow.Session(m.SerializeToString())
