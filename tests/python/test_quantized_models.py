"""Int8 models as onnxruntime's quantizer writes them, and the ops they are made of, against
onnxruntime: an MLP quantized by onnxruntime.quantization.quantize_dynamic (DynamicQuantizeLinear,
MatMulInteger, Cast, Mul), with signed and unsigned, per-tensor and per-channel weights; then
QuantizeLinear (ties, saturation, NaN and infinities, per axis, every integer output type),
DynamicQuantizeLinear (ranges that are all positive, all negative, empty) and MatMulInteger (every
8-bit type pair, per-row and per-column zero points, batches, 1-D operands) one node at a time; and
the errors of bad types and shapes. The op-case table (tests/ops/make_op_cases.py) checks the ops
against onnx.reference too. Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
quantization = pytest.importorskip("onnxruntime.quantization", reason="onnxruntime's quantizer makes the models")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import oneflow  # noqa: E402


def tensor_type(a):
    return helper.np_dtype_to_tensor_dtype(np.asarray(a).dtype)


def one_node(op, inputs, outputs, opset, stored=(), **attrs):
    """A model of one `op` node: `inputs` is [(name, array or None)] (None: an omitted optional
    input), `outputs` [(name, element type)]; inputs named in `stored` become initializers."""
    names = [n if a is not None else "" for n, a in inputs]
    present = [(n, np.asarray(a)) for n, a in inputs if a is not None]
    graph = helper.make_graph(
        [helper.make_node(op, names, [n for n, _ in outputs], **attrs)], op,
        [helper.make_tensor_value_info(n, tensor_type(a), list(a.shape)) for n, a in present if n not in stored],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
        [numpy_helper.from_array(a, n) for n, a in present if n in stored])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    return m.SerializeToString(), {n: a for n, a in present if n not in stored}


def run_both(data, feeds):
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    with oneflow.Session(data) as s:
        got = [np.array(v) for v in s.run(feeds).values()]
    return got, want


def assert_same(data, feeds):
    got, want = run_both(data, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


# ---- a model from onnxruntime's dynamic quantizer -------------------------------------------------

def float_mlp(path, rng):
    """784 -> 256 -> 128 -> 10, MatMul + Add (+ Relu), batch dimension symbolic."""
    dims, nodes, inits, prev = [784, 256, 128, 10], [], [], "x"
    for i, (a, b) in enumerate(zip(dims, dims[1:])):
        inits += [numpy_helper.from_array((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(b)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        prev = f"a{i}"
        if i < 2:
            nodes.append(helper.make_node("Relu", [prev], [f"r{i}"]))
            prev = f"r{i}"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 784])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["batch", 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)


@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamically_quantized_mlp_matches_onnxruntime(tmp_path, weight_type, per_channel):
    rng = np.random.default_rng(11)
    float_mlp(str(tmp_path / "mlp.onnx"), rng)
    quantization.quantize_dynamic(str(tmp_path / "mlp.onnx"), str(tmp_path / "mlp_int8.onnx"),
                                  weight_type=getattr(quantization.QuantType, weight_type), per_channel=per_channel)
    data = (tmp_path / "mlp_int8.onnx").read_bytes()
    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops, ops  # the quantizer did quantize
    x = rng.standard_normal((32, 784)).astype(np.float32)
    got, want = run_both(data, {"x": x})
    # The same integer arithmetic in the same order: equal to the last bit.
    np.testing.assert_array_equal(got[0], want[0])
    fp32 = ort.InferenceSession(str(tmp_path / "mlp.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(got[0] - fp32).max() < 0.1 * np.abs(fp32).max()  # and close to the float model


# ---- QuantizeLinear --------------------------------------------------------------------------------

OUT_TYPES = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.int16: TensorProto.INT16,
             np.uint16: TensorProto.UINT16}


@pytest.mark.parametrize("out", [np.uint8, np.int8, np.int16, np.uint16])
@pytest.mark.parametrize("stored", [(), ("y_scale", "y_zero_point")])
def test_quantize_linear_edges_per_tensor_and_per_axis(out, stored):
    info = np.iinfo(out)
    edges = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e9, -1e9, np.inf, -np.inf, 0.0, -0.0,
                      info.max + 0.5, info.min - 0.5, 3.4999, 1e-30], np.float32)
    rng = np.random.default_rng(3)
    x = np.concatenate([edges, rng.uniform(-400, 400, 8).astype(np.float32)]).reshape(2, 3, 4)
    for scale, zp, attrs in [
        (np.float32(1.0), np.asarray(info.min + (info.max - info.min) // 3, out), {}),
        (np.float32(0.37), np.asarray(0, out), {}),
        (rng.uniform(0.05, 2.0, 3).astype(np.float32), rng.integers(info.min, info.max, 3, endpoint=True).astype(out),
         {"axis": 1}),
        (rng.uniform(0.05, 2.0, 4).astype(np.float32), rng.integers(info.min, info.max, 4, endpoint=True).astype(out),
         {"axis": -1}),
    ]:
        assert_same(*one_node("QuantizeLinear", [("x", x), ("y_scale", scale), ("y_zero_point", zp)],
                              [("y", OUT_TYPES[out])], 21, stored, **attrs))


def test_quantize_linear_nan_gives_the_minimum_as_onnxruntime_does():
    x = np.array([np.nan, 1.0, -np.nan, 7.0], np.float32)
    for out in [np.uint8, np.int8]:
        assert_same(*one_node("QuantizeLinear", [("x", x), ("y_scale", np.float32(0.5)),
                                                 ("y_zero_point", np.asarray(3, out))], [("y", OUT_TYPES[out])], 13))


def test_quantize_linear_default_output_and_float16():
    rng = np.random.default_rng(4)
    x = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
    assert_same(*one_node("QuantizeLinear", [("x", x), ("y_scale", np.float32(0.02))], [("y", TensorProto.UINT8)], 13))
    xh = x.astype(np.float16)
    assert_same(*one_node("QuantizeLinear", [("x", xh), ("y_scale", np.float16(0.0137)),
                                             ("y_zero_point", np.int8(-4))], [("y", TensorProto.INT8)], 19))


def test_quantize_linear_blocked():
    rng = np.random.default_rng(5)
    x = rng.uniform(-50, 50, (3, 10)).astype(np.float32)
    scale = rng.uniform(0.1, 0.5, (3, 4)).astype(np.float32)  # ceil(10 / 3) = 4 blocks along axis 1
    zp = rng.integers(-20, 20, (3, 4)).astype(np.int8)
    assert_same(*one_node("QuantizeLinear", [("x", x), ("y_scale", scale), ("y_zero_point", zp)],
                          [("y", TensorProto.INT8)], 21, axis=1, block_size=3))


# ---- DynamicQuantizeLinear -------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["mixed", "positive", "negative", "zeros", "one_value"])
def test_dynamic_quantize_linear(case):
    rng = np.random.default_rng(6)
    x = {"mixed": rng.uniform(-3, 7, (5, 7)), "positive": rng.uniform(0.5, 4, (5, 7)),
         "negative": rng.uniform(-9, -1, (5, 7)), "zeros": np.zeros((5, 7)),
         "one_value": np.full((5, 7), 2.5)}[case].astype(np.float32)
    assert_same(*one_node("DynamicQuantizeLinear", [("x", x)],
                          [("y", TensorProto.UINT8), ("y_scale", TensorProto.FLOAT),
                           ("y_zero_point", TensorProto.UINT8)], 13))


# ---- MatMulInteger ---------------------------------------------------------------------------------

def full_range(rng, dtype, shape):
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    if v.size:
        v.flat[0], v.flat[-1] = info.min, info.max
    return v


@pytest.mark.parametrize("ta", [np.uint8, np.int8])
@pytest.mark.parametrize("tb", [np.uint8, np.int8])
@pytest.mark.parametrize("stored", [(), ("B", "b_zero_point")])  # a stored B is packed once (uint8 x int8:
def test_matmul_integer_types_and_zero_points(ta, tb, stored):   # the VNNI byte path where the CPU has it)
    rng = np.random.default_rng(7)
    a, b = full_range(rng, ta, (6, 37)), full_range(rng, tb, (37, 70))  # 70 columns: a full and a partial panel
    for za, zb in [(None, None), (full_range(rng, ta, ()), full_range(rng, tb, ())),
                   (full_range(rng, ta, (6,)), full_range(rng, tb, (70,)))]:
        data, feeds = one_node("MatMulInteger", [("A", a), ("B", b), ("a_zero_point", za), ("b_zero_point", zb)],
                               [("Y", TensorProto.INT32)], 13, stored)
        if za is not None and za.ndim:  # onnxruntime takes only a per-tensor a_zero_point
            with oneflow.Session(data) as s:
                got = [np.array(v) for v in s.run(feeds).values()]
        else:
            got, want = run_both(data, feeds)
            np.testing.assert_array_equal(got[0], want[0])
        # and numpy, in int64 (the spec: a zero point vector is per row of A, per column of B)
        za64 = np.zeros(1) if za is None else za.astype(np.int64).reshape(-1, 1) if za.ndim else za.astype(np.int64)
        zb64 = 0 if zb is None else zb.astype(np.int64)
        np.testing.assert_array_equal(got[0], ((a.astype(np.int64) - za64) @ (b.astype(np.int64) - zb64)))


def test_matmul_integer_batches_and_vectors():
    rng = np.random.default_rng(8)
    for sa, sb in [((2, 3, 5, 16), (16, 4)), ((5, 16), (3, 16, 4)), ((2, 1, 5, 16), (3, 16, 4)), ((16,), (16, 4)),
                   ((5, 16), (16,)), ((2, 0, 16), (16, 4))]:
        a, b = full_range(rng, np.uint8, sa), full_range(rng, np.int8, sb)
        assert_same(*one_node("MatMulInteger", [("A", a), ("B", b), ("a_zero_point", np.uint8(128))],
                              [("Y", TensorProto.INT32)], 13, stored=("a_zero_point",)))


# ---- errors ----------------------------------------------------------------------------------------

def test_errors_name_the_problem():
    x = np.ones((4, 6), np.float32)
    a, b = np.ones((4, 6), np.uint8), np.ones((6, 3), np.int8)
    bad = [
        (one_node("QuantizeLinear", [("x", x.astype(np.float64)), ("y_scale", np.float32(1))], [("y", 2)], 19),
         "float64"),
        (one_node("QuantizeLinear", [("x", x), ("y_scale", np.float32(1)), ("y_zero_point", np.int32(0))],
                  [("y", 6)], 19), "y_zero_point of int8, uint8, float8.*got int32"),
        (one_node("QuantizeLinear", [("x", x), ("y_scale", np.float32(1)), ("y_zero_point", np.int16(0))],
                  [("y", 5)], 19), "int16"),  # int16 arrives in opset 21
        (one_node("QuantizeLinear", [("x", x), ("y_scale", np.ones(6, np.float32))], [("y", 2)], 13, axis=0),
         "entries for axis"),
        (one_node("QuantizeLinear", [("x", x), ("y_scale", np.ones(6, np.float32))], [("y", 2)], 13, axis=3),
         "axis 3 is out of range"),
        (one_node("QuantizeLinear", [("x", x), ("y_scale", np.float32(1)), ("y_zero_point", np.uint8(0))],
                  [("y", 2)], 21, output_dtype=TensorProto.INT8), "differs from y_zero_point"),
        (one_node("DynamicQuantizeLinear", [("x", x.astype(np.float16))], [("y", 2), ("s", 1), ("z", 2)], 13),
         "float32"),
        (one_node("MatMulInteger", [("A", a.astype(np.int16)), ("B", b)], [("Y", 6)], 13), "A must be int8 or uint8"),
        (one_node("MatMulInteger", [("A", a), ("B", b), ("a_zero_point", np.int8(0))], [("Y", 6)], 13),
         "a_zero_point must have A's type"),
        (one_node("MatMulInteger", [("A", a), ("B", b), ("a_zero_point", None), ("b_zero_point", np.ones((2, 3), np.int8))],
                  [("Y", 6)], 13), "b_zero_point must be a scalar or a vector"),
        (one_node("MatMulInteger", [("A", a), ("B", b.reshape(3, 6))], [("Y", 6)], 13), "inner dimensions differ"),
    ]
    for (data, _), needle in bad:
        with pytest.raises(oneflow.OneflowError, match=needle):
            oneflow.Session(data)


def test_a_zero_point_of_the_wrong_length_fails_at_run_time():
    a, b = np.ones((4, 6), np.uint8), np.ones((6, 3), np.uint8)
    data, feeds = one_node("MatMulInteger", [("A", a), ("B", b), ("a_zero_point", np.ones(5, np.uint8))],
                           [("Y", 6)], 13)
    with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match="a_zero_point .* must be a scalar or have 4"):
        s.run(feeds)
