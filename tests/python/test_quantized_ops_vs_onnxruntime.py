"""ConvInteger, QLinearConv and ONNX Runtime's quantized contrib ops (DynamicQuantizeMatMul,
MatMulIntegerToFloat, QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
QLinearGlobalAveragePool, QLinearConcat) against onnxruntime, one node at a time over their
options, then a CNN quantized by onnxruntime.quantization.quantize_static in its QOperator format
(QLinearConv, QLinearGlobalAveragePool), and one in its QDQ format (the QDQ fusion pass). Int8
outputs may differ from onnxruntime by one quantization step where its kernels round differently
(a vectorized sigmoid; QLinearAdd/Mul in fixed point): the tests say where they allow it, and for
how many elements. Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402

MS = "com.microsoft"
rng = np.random.default_rng(4242)


def one_node(op, inputs, opset=17, domain="", stored=(), **attrs):
    """inputs: [(name, array or None)]; None leaves an optional slot empty. One output, 'y'."""
    names = [n if a is not None else "" for n, a in inputs]
    fed = [(n, a) for n, a in inputs if a is not None and n not in stored]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in inputs if a is not None and n in stored]
    tt = lambda a: helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype)  # noqa: E731
    graph = helper.make_graph([helper.make_node(op, names, ["y"], domain=domain, **attrs)], op,
                              [helper.make_tensor_value_info(n, tt(a), list(np.shape(a))) for n, a in fed],
                              [onnx.ValueInfoProto(name="y")], inits)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(MS, 1)] if domain == MS else [])
    m = helper.make_model(graph, opset_imports=imports, ir_version=8)
    return m.SerializeToString(), {n: np.asarray(a) for n, a in fed}


def against_onnxruntime(data, feeds, max_step=0, max_fraction=0.02):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    with oneflow.Session(data) as s:
        got = np.asarray(s.run(feeds)["y"])
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert diff.max(initial=0) <= max_step, f"{np.count_nonzero(diff)} elements differ, by up to {diff.max()}"
        assert np.count_nonzero(diff) <= max_fraction * diff.size, f"{np.count_nonzero(diff)} of {diff.size} differ"
    return got


def q(shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("xt,wt", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("geometry", [
    dict(shape=(2, 6, 9, 11), kernel=(3, 3), pads=[1, 1, 1, 1], strides=[1, 1], group=1),
    dict(shape=(1, 8, 10, 10), kernel=(3, 3), pads=[0, 1, 2, 1], strides=[2, 2], group=2, dilations=[1, 2]),
    dict(shape=(1, 4, 7, 7), kernel=(3, 3), pads=[1, 1, 1, 1], strides=[1, 1], group=4),  # depthwise
    dict(shape=(2, 5, 17), kernel=(4,), pads=[2, 1], strides=[3], group=1),  # 1-D
    dict(shape=(1, 3, 4, 5, 6), kernel=(2, 3, 2), pads=[0, 1, 1, 1, 0, 0], strides=[1, 2, 1], group=1),  # 3-D
])
def test_conv_integer(xt, wt, geometry):
    g = dict(geometry)
    shape, kernel, group = g.pop("shape"), g.pop("kernel"), g["group"]
    m = 6 if group != shape[1] else shape[1]
    x, w = q(shape, xt), q((m, shape[1] // group) + kernel, wt)
    zx, zw = np.array(rng.integers(0, 20), xt), np.array(rng.integers(0, 10), wt)
    for stored in [("w", "x_zero_point", "w_zero_point"), ()]:  # packed once, and per run
        against_onnxruntime(*one_node("ConvInteger", [("x", x), ("w", w), ("x_zero_point", zx), ("w_zero_point", zw)],
                                      stored=stored, **g))


@pytest.mark.parametrize("xt,wt", [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8)])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv(xt, wt, per_channel, bias):
    x, w = q((2, 6, 12, 10), xt), q((8, 3, 3, 3), wt)
    w_scale = (rng.uniform(0.002, 0.01, 8) if per_channel else np.array(0.004)).astype(np.float32)
    w_zp = np.zeros(8 if per_channel else (), wt) if wt == np.int8 else np.full(8 if per_channel else (), 128, wt)
    inputs = [("x", x), ("x_scale", np.array(0.05, np.float32)), ("x_zero_point", np.array(3, xt)), ("w", w),
              ("w_scale", w_scale), ("w_zero_point", w_zp), ("y_scale", np.array(0.3, np.float32)),
              ("y_zero_point", np.array(-2 if xt == np.int8 else 120, xt)),
              ("B", rng.integers(-3000, 3000, 8).astype(np.int32) if bias else None)]
    against_onnxruntime(*one_node("QLinearConv", inputs, stored=("w", "w_scale", "w_zero_point", "B"), group=2,
                                  pads=[1, 1, 1, 1], strides=[1, 2]))


@pytest.mark.parametrize("bt", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_dynamic_quantize_matmul(bt, per_column, bias):
    a = (rng.standard_normal((2, 5, 40)) * 2).astype(np.float32)
    b = q((40, 24), bt)
    b_scale = (rng.uniform(0.01, 0.05, 24) if per_column else np.array(0.02)).astype(np.float32)
    b_zp = (np.full(b_scale.shape, 3) if bt == np.int8 else np.full(b_scale.shape, 130)).astype(bt)
    inputs = [("A", a), ("B", b), ("b_scale", b_scale), ("b_zero_point", b_zp),
              ("bias", rng.standard_normal(24).astype(np.float32) if bias else None)]
    for stored in [("B", "b_scale", "b_zero_point", "bias"), ()]:
        against_onnxruntime(*one_node("DynamicQuantizeMatMul", inputs, domain=MS, stored=stored))


@pytest.mark.parametrize("at,bt", [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8)])
def test_matmul_integer_to_float(at, bt):
    a, b = q((3, 7, 33), at), q((33, 20), bt)
    inputs = [("A", a), ("B", b), ("a_scale", np.array(0.03, np.float32)),
              ("b_scale", rng.uniform(0.01, 0.02, 20).astype(np.float32)), ("a_zero_point", np.array(5, at)),
              ("b_zero_point", np.full(20, 2, bt)), ("bias", rng.standard_normal(20).astype(np.float32))]
    against_onnxruntime(*one_node("MatMulIntegerToFloat", inputs, domain=MS, stored=("B", "b_scale", "b_zero_point")))


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("b_shape", [(4, 6, 5), (6, 1), ()])
def test_qlinear_binary(op, t, b_shape):
    a, b = q((4, 6, 5), t), q(b_shape, t)
    zp = lambda v: np.array(v if t == np.uint8 else v - 128, t)  # noqa: E731
    inputs = [("A", a), ("A_scale", np.array(0.02, np.float32)), ("A_zero_point", zp(128)), ("B", b),
              ("B_scale", np.array(0.035, np.float32)), ("B_zero_point", zp(120)),
              ("C_scale", np.array(0.05 if op == "QLinearAdd" else 0.4, np.float32)), ("C_zero_point", zp(130))]
    # onnxruntime's x86 kernels compute these in fixed point (22-bit multipliers and a shift) rather
    # than float: values within that error of a rounding tie land one step away. So: within one step
    # of onnxruntime, and rounded correctly against the exact (float64) definition.
    got = against_onnxruntime(*one_node(op, inputs, domain=MS), max_step=1, max_fraction=0.1)
    d = dict(inputs)
    da = (a.astype(np.float64) - d["A_zero_point"]) * np.float64(d["A_scale"])
    db = (b.astype(np.float64) - d["B_zero_point"]) * np.float64(d["B_scale"])
    exact = (da * db if op == "QLinearMul" else da + db) / np.float64(d["C_scale"]) + np.float64(d["C_zero_point"])
    exact = np.clip(exact, np.iinfo(t).min, np.iinfo(t).max)
    assert np.abs(got.astype(np.float64) - exact).max() <= 0.5 + 1e-4


@pytest.mark.parametrize("op,attrs", [("QLinearSigmoid", {}), ("QLinearLeakyRelu", {"alpha": 0.2})])
@pytest.mark.parametrize("t", [np.uint8, np.int8])
def test_qlinear_lookup_ops(op, attrs, t):
    x = np.arange(np.iinfo(t).min, np.iinfo(t).max + 1).astype(t).reshape(16, 16)  # every byte
    inputs = [("X", x), ("X_scale", np.array(0.06, np.float32)), ("X_zero_point", np.array(7, t)),
              ("Y_scale", np.array(1 / 255 if op == "QLinearSigmoid" else 0.05, np.float32)),
              ("Y_zero_point", np.array(0 if t == np.uint8 else -128, t) if op == "QLinearSigmoid" else np.array(9, t))]
    # onnxruntime's sigmoid is a vectorized approximation: a value within an ulp of a rounding tie
    # may land one step over.
    against_onnxruntime(*one_node(op, inputs, domain=MS, **attrs), max_step=1 if op == "QLinearSigmoid" else 0)


@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
def test_qlinear_global_average_pool(t, channels_last):
    x = q((2, 5, 6, 7), t)
    inputs = [("X", x), ("x_scale", np.array(0.1, np.float32)), ("x_zero_point", np.array(4, t)),
              ("y_scale", np.array(0.07, np.float32)), ("y_zero_point", np.array(-3 if t == np.int8 else 10, t))]
    against_onnxruntime(*one_node("QLinearGlobalAveragePool", inputs, domain=MS, channels_last=channels_last))


@pytest.mark.parametrize("t", [np.uint8, np.int8])
@pytest.mark.parametrize("axis", [1, -1])
def test_qlinear_concat(t, axis):
    parts = [q((2, 3, 4), t), q((2, 3, 4), t), q((2, 3, 4), t)]
    inputs = [("Y_scale", np.array(0.1, np.float32)), ("Y_zero_point", np.array(5, t))]
    for k, (p, s, z) in enumerate(zip(parts, [0.1, 0.05, 0.3], [5, 0, 12])):  # the first needs no requantizing
        inputs += [(f"x{k}", p), (f"s{k}", np.array(s, np.float32)), (f"z{k}", np.array(z, t))]
    against_onnxruntime(*one_node("QLinearConcat", inputs, domain=MS, axis=axis))


def calibration(quantization, samples):
    """A CalibrationDataReader over `samples` (feeds of input 'x')."""
    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": s} for s in samples])

        def get_next(self):
            return next(self.it, None)
    return Reader()


def test_statically_quantized_cnn_in_qoperator_format(tmp_path):
    """A CNN as onnxruntime.quantization.quantize_static writes it in its QOperator format."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    inits = [numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) * 0.1, "b1"),
             numpy_helper.from_array((rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32), "w2"),
             numpy_helper.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]), helper.make_node("GlobalAveragePool", ["r2"], ["y"])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])], inits)
    src, dst = tmp_path / "cnn.onnx", tmp_path / "cnn_int8.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(src))
    samples = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(8)]

    quantization.quantize_static(str(src), str(dst), calibration(quantization, samples), quant_format=quantization.QuantFormat.QOperator,
                                 per_channel=True)
    ops = {n.op_type for n in onnx.load(str(dst)).graph.node}
    assert {"QLinearConv", "QuantizeLinear", "DequantizeLinear"} <= ops, ops
    sess = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
    with oneflow.Session(str(dst)) as ours:
        for s in samples[:3]:
            want = sess.run(None, {"x": s})[0]
            got = np.asarray(ours.run({"x": s})["y"])
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def small_resnet_block(tmp_path):
    """conv-relu, conv, a residual Add, relu, global average pool, a MatMul head: float32."""
    c = 8
    inits = [numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w0"),
             numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) * 0.15).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) * 0.1, "b1"),
             numpy_helper.from_array((rng.standard_normal((c, 10)) * 0.3).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "r0"], ["s"]), helper.make_node("Relu", ["s"], ["r1"]),
             helper.make_node("GlobalAveragePool", ["r1"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("MatMul", ["f", "fc"], ["y"])]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    path = tmp_path / "block.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


@pytest.mark.parametrize("activation_type", ["QUInt8", "QInt8"])
def test_qdq_model_runs_as_integer_ops_and_matches_onnxruntime(tmp_path, activation_type):
    """quantize_static's default QDQ format: the QDQ pass makes QLinearConv, QLinearAdd,
    QLinearGlobalAveragePool and QLinearMatMul of the groups (onnxruntime does the same); outputs
    agree with onnxruntime's to within a quantization step of the output (one rounding may tie
    differently)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    src, dst = small_resnet_block(tmp_path), tmp_path / "block_qdq.onnx"
    samples = [rng.standard_normal((1, 3, 12, 12)).astype(np.float32) for _ in range(8)]

    quantization.quantize_static(str(src), str(dst), calibration(quantization, samples), quant_format=quantization.QuantFormat.QDQ,
                                 activation_type=getattr(quantization.QuantType, activation_type),
                                 weight_type=quantization.QuantType.QInt8, per_channel=True)
    model = onnx.load(str(dst))
    assert {"QuantizeLinear", "DequantizeLinear", "Conv"} <= {n.op_type for n in model.graph.node}
    out_scale = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name.startswith("y_scale")]
    step = float(out_scale[0]) if out_scale else 0.05
    sess = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
    with oneflow.Session(str(dst)) as ours:
        for s in samples[:4]:
            want = sess.run(None, {"x": s})[0]
            got = np.asarray(ours.run({"x": s})["y"])
            np.testing.assert_allclose(got, want, rtol=0, atol=2.01 * step)
    with oneflow.Session(str(dst), oneflow.SessionOptions(optimization_level=1)) as unfused:  # the float path
        got = np.asarray(unfused.run({"x": samples[0]})["y"])
        np.testing.assert_allclose(got, sess.run(None, {"x": samples[0]})[0], rtol=0, atol=2.01 * step)


def test_errors_name_the_problem():
    x = q((1, 4, 5, 5), np.uint8)
    data, _ = one_node("ConvInteger", [("x", x), ("w", q((2, 3, 3, 3), np.int8))])  # 4 channels vs 3
    with pytest.raises(oneflow.InvalidModelError, match="channels"):
        oneflow.Session(data)
    data, _ = one_node("QLinearAdd", [("A", q((3,), np.uint8)), ("A_scale", np.array([0.1, 0.2], np.float32)),
                                      ("A_zero_point", None), ("B", q((3,), np.uint8)),
                                      ("B_scale", np.array(0.1, np.float32)), ("B_zero_point", None),
                                      ("C_scale", np.array(0.1, np.float32))], domain=MS)
    with pytest.raises(oneflow.InvalidModelError, match="A_scale must be a scalar"):
        oneflow.Session(data)
    data, _ = one_node("QLinearSoftmax", [("X", x)], domain=MS)
    with pytest.raises(oneflow.UnsupportedError, match="QLinearSoftmax.*com.microsoft"):
        oneflow.Session(data)
