"""The unary elementwise ops (src/graph/ops/unary_ops.h) against onnxruntime, an independent
implementation: each op with its default attributes and with others, in float32, on graph inputs
fed at run time. ONNX Runtime's contrib ops QuickGelu and Gelu (domain com.microsoft; its Gelu
shares ONNX Gelu's name) are checked the same way, alone and as a fused MatMul epilogue. Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import TensorProto, helper  # noqa: E402

import oneflow  # noqa: E402

# (op, attributes, input range, domain, opset); the opset is the op's newest form onnxruntime runs.
CASES = [
    ("Relu", {}, (-4, 4)), ("LeakyRelu", {}, (-4, 4)), ("LeakyRelu", {"alpha": 0.3}, (-4, 4)),
    ("Sigmoid", {}, (-9, 9)), ("Tanh", {}, (-5, 5)), ("Gelu", {}, (-5, 5)),
    ("Gelu", {"approximate": "tanh"}, (-5, 5)), ("HardSigmoid", {}, (-5, 5)),
    ("HardSigmoid", {"alpha": 0.5, "beta": 0.25}, (-5, 5)), ("HardSwish", {}, (-5, 5)),
    ("Exp", {}, (-9, 9)), ("Log", {}, (0.01, 9)), ("Neg", {}, (-4, 4)), ("Abs", {}, (-4, 4)),
    ("Sqrt", {}, (0, 9)), ("Reciprocal", {}, (0.1, 4)), ("Erf", {}, (-4, 4)), ("Softplus", {}, (-9, 9)),
    ("Floor", {}, (-4, 4)), ("Ceil", {}, (-4, 4)), ("Round", {}, (-4, 4)), ("Sign", {}, (-4, 4)),
    ("Sin", {}, (-6, 6)), ("Cos", {}, (-6, 6)), ("Tan", {}, (-1.4, 1.4)), ("Asin", {}, (-0.99, 0.99)),
    ("Acos", {}, (-0.99, 0.99)), ("Atan", {}, (-6, 6)), ("Sinh", {}, (-4, 4)), ("Cosh", {}, (-4, 4)),
    ("Asinh", {}, (-6, 6)), ("Acosh", {}, (1, 8)), ("Atanh", {}, (-0.99, 0.99)), ("Elu", {}, (-4, 4)),
    ("Elu", {"alpha": 0.5}, (-4, 4)), ("Selu", {}, (-4, 4)), ("Selu", {"alpha": 1.5, "gamma": 2.0}, (-4, 4)),
    ("Celu", {}, (-4, 4)), ("Celu", {"alpha": 2.0}, (-4, 4)), ("Softsign", {}, (-4, 4)), ("Mish", {}, (-5, 5)),
    ("ThresholdedRelu", {}, (-4, 4)), ("ThresholdedRelu", {"alpha": 0.5}, (-4, 4)),
]
CONTRIB = [("QuickGelu", {}, (-6, 6)), ("QuickGelu", {"alpha": 1.2}, (-6, 6)), ("Gelu", {}, (-6, 6))]


def run_both(op, attrs, lo, hi, domain, opset):
    rng = np.random.default_rng(abs(hash((op, tuple(sorted(attrs))))) % 2**32)
    x = rng.uniform(lo, hi, size=(3, 67)).astype(np.float32)
    node = helper.make_node(op, ["x"], ["y"], domain=domain, **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    imports = [helper.make_opsetid("", 20)] + ([helper.make_opsetid(domain, opset)] if domain else [])
    model = helper.make_model(graph, opset_imports=imports, ir_version=9)
    data = model.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with oneflow.Session(data) as s:
        got = np.array(s.run({"x": x})["y"])
    return x, got, want


def check(x, got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    close = np.isclose(got, want, rtol=2e-5, atol=2e-6)
    if not close.all():
        i = np.flatnonzero(~close.ravel())[:5]
        rows = [f"x={x.ravel()[k]!r} got={got.ravel()[k]!r} onnxruntime={want.ravel()[k]!r}" for k in i]
        pytest.fail(f"{what}: {int((~close).sum())} of {close.size} differ:\n  " + "\n  ".join(rows))


@pytest.mark.parametrize("op,attrs,rng", CASES, ids=[f"{c[0]}{'-' + '-'.join(c[1]) if c[1] else ''}" for c in CASES])
def test_onnx_unary_matches_onnxruntime(op, attrs, rng):
    x, got, want = run_both(op, attrs, *rng, "", 20)
    check(x, got, want, f"{op} {attrs}")


@pytest.mark.parametrize("op,attrs,rng", CONTRIB, ids=[f"{c[0]}{'-' + '-'.join(c[1]) if c[1] else ''}" for c in CONTRIB])
def test_contrib_unary_matches_onnxruntime(op, attrs, rng):
    x, got, want = run_both(op, attrs, *rng, "com.microsoft", 1)
    check(x, got, want, f"com.microsoft {op} {attrs}")


@pytest.mark.parametrize("op,attrs", [("Gelu", {}), ("QuickGelu", {"alpha": 1.2})])
def test_contrib_activation_after_matmul_matches_onnxruntime(op, attrs):
    """MatMul -> com.microsoft activation: the fusion pass makes the activation a MatMul epilogue,
    which must pick the contrib row (not ONNX Gelu, which shares the name) and its attributes."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-2, 2, size=(5, 16)).astype(np.float32)
    w = rng.uniform(-0.5, 0.5, size=(16, 8)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node(op, ["h"], ["y"], domain="com.microsoft", **attrs)]
    graph = helper.make_graph(nodes, "mm_act", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 8])],
                              [helper.make_tensor("w", TensorProto.FLOAT, [16, 8], w.ravel())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=9)
    data = model.SerializeToString()
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with oneflow.Session(data) as s:
        got = np.array(s.run({"x": x})["y"])
    check(x, got, want, f"MatMul -> com.microsoft {op} {attrs}")
