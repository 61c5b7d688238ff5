"""The narrow element types (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz, float4e2m1, float8e8m0,
int4/uint4/int2/uint2) through Cast, CastLike, QuantizeLinear and DequantizeLinear, against
independent references: ml_dtypes (which numpy-based tools, JAX and onnx.reference use) for every
value of every type and for the rounding of floats into them, onnx.numpy_helper.to_float8e8m0 for
float8e8m0's rounding modes, and onnx.reference for (de)quantization. Models carry the sub-byte
types packed, as ONNX stores them; the engine holds one element per byte. Run with PYTHONPATH
holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is the reference for the narrow types")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import oneflow  # noqa: E402

T = TensorProto
NARROW = {  # ONNX type -> the ml_dtypes type
    T.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn, T.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    T.FLOAT8E5M2: ml_dtypes.float8_e5m2, T.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
    T.FLOAT4E2M1: ml_dtypes.float4_e2m1fn, T.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu,
    T.INT4: ml_dtypes.int4, T.UINT4: ml_dtypes.uint4, T.INT2: ml_dtypes.int2, T.UINT2: ml_dtypes.uint2,
}
FLOAT8 = [T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ]
rng = np.random.default_rng(17)


def cast_chain(src_type, shape, steps, opset=25):
    """A model: input of src_type -> Cast(to=t, attrs) for each (t, attrs) in steps -> output."""
    nodes, prev = [], "x"
    for i, (to, attrs) in enumerate(steps):
        nodes.append(helper.make_node("Cast", [prev], [f"c{i}"], to=to, **attrs))
        prev = f"c{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", src_type, shape)],
                              [helper.make_tensor_value_info(prev, steps[-1][0], shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=11).SerializeToString()


def run(model_bytes, feeds):
    with oneflow.Session(model_bytes) as s:
        return {k: np.asarray(v) for k, v in s.run(feeds).items()}


def all_codes(onnx_type):
    """Every value of a narrow type, as float32 (through ml_dtypes)."""
    t = NARROW[onnx_type]
    bits = 4 if onnx_type in (T.INT4, T.UINT4, T.FLOAT4E2M1) else 2 if onnx_type in (T.INT2, T.UINT2) else 8
    codes = np.arange(2 ** bits, dtype=np.uint8)
    if onnx_type in (T.INT4, T.INT2):  # ml_dtypes stores the signed ones sign-extended
        codes = codes.astype(np.int8)
        codes = np.where(codes >= 2 ** (bits - 1), codes - 2 ** bits, codes).astype(np.int8)
    return codes.view(t).astype(np.float32) if codes.dtype.itemsize == 1 else None


def same(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    both_nan = np.isnan(got) & np.isnan(want)
    np.testing.assert_array_equal(np.where(both_nan, 0, got), np.where(both_nan, 0, want))


@pytest.mark.parametrize("onnx_type", list(NARROW))
def test_every_value_decodes_like_ml_dtypes(onnx_type):
    """Each value of the type, made by our own cast from float32 (exact: they are its values), read
    back as float32 and float16: the round trip is the identity, and the value is ml_dtypes'."""
    values = all_codes(onnx_type)
    if onnx_type == T.FLOAT8E8M0:  # 2^-127 is a float32 subnormal, which rounding "up" takes to 2^-126
        values = values[1:]
    for back in (T.FLOAT, T.FLOAT16):
        keep = {"saturate": 0} if onnx_type in FLOAT8 else {}  # E5M2's infinities stay infinities
        m = cast_chain(T.FLOAT, [values.size], [(onnx_type, keep), (back, {})])
        got = run(m, {"x": values})["c1"]
        same(got, values.astype(np.float16 if back == T.FLOAT16 else np.float32))


def rounding_probes(onnx_type):
    """Values between, on and past the type's values: midpoints (ties), near-midpoints, tiny
    values, the overflow threshold, infinities and NaN."""
    v = np.unique(all_codes(onnx_type)[np.isfinite(all_codes(onnx_type))])
    mids = (v[1:] + v[:-1]) / 2
    eps = np.abs(mids) * 1e-3 + 1e-30
    top = v.max()
    extra = [0.0, -0.0, top * 1.01, top * 1.2, top * 100, -top * 1.2, 1e-30, -1e-30, np.inf, -np.inf, np.nan]
    return np.concatenate([v, mids, mids + eps, mids - eps, rng.uniform(-top, top, 200), extra]).astype(np.float32)


@pytest.mark.parametrize("onnx_type", FLOAT8 + [T.FLOAT4E2M1])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float_rounding_into_minifloats(onnx_type, saturate):
    if onnx_type == T.FLOAT4E2M1 and not saturate:
        pytest.skip("float4e2m1 has no infinity or NaN: it always saturates")
    x = rounding_probes(onnx_type)
    m = cast_chain(T.FLOAT, [x.size], [(onnx_type, {"saturate": saturate}), (T.FLOAT, {})])
    got = run(m, {"x": x})["c1"]
    t = NARROW[onnx_type]
    rounded = x.astype(t).astype(np.float32)  # ml_dtypes: round to nearest even, no saturation
    if saturate and onnx_type != T.FLOAT4E2M1:
        # ONNX's table: where the rounded value overflows (ml_dtypes gives inf or NaN), and for the
        # infinities, the largest finite value of x's sign; NaN stays NaN.
        top = float(np.max(all_codes(onnx_type)[np.isfinite(all_codes(onnx_type))]))
        want = np.where(np.isnan(x), np.nan, np.where(np.isfinite(rounded), rounded, np.sign(x) * top))
    else:  # ml_dtypes' astype is ONNX's non-saturating conversion (float4e2m1 always saturates: NaN is -0)
        want = rounded
    same(got, want)


def test_float16_and_double_sources_round_once():
    x = rounding_probes(T.FLOAT8E4M3FN)
    for src, np_t in [(T.FLOAT16, np.float16), (T.DOUBLE, np.float64)]:
        xs = x.astype(np_t)
        m = cast_chain(src, [x.size], [(T.FLOAT8E5M2, {"saturate": 0}), (T.FLOAT, {})])
        same(run(m, {"x": xs})["c1"], xs.astype(ml_dtypes.float8_e5m2).astype(np.float32))


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8e8m0_rounding_modes(round_mode, saturate):
    x = np.concatenate([2.0 ** np.arange(-126, 128, 7), 1.5 * 2.0 ** np.arange(-20, 20), [0.75, 1.25, 1.75, 3.0],
                        rng.uniform(1e-3, 1e3, 100), [3.4e38, 1e-40]]).astype(np.float32)
    m = cast_chain(T.FLOAT, [x.size], [(T.FLOAT8E8M0, {"saturate": saturate, "round_mode": round_mode}), (T.FLOAT, {})])
    got = run(m, {"x": x})["c1"]
    want = numpy_helper.to_float8e8m0(x, saturate=bool(saturate), round_mode=round_mode).astype(np.float32)
    same(got, want)


@pytest.mark.parametrize("onnx_type", [T.INT4, T.UINT4, T.INT2, T.UINT2])
def test_integers_into_narrow_integers_keep_their_low_bits(onnx_type):
    x = np.arange(-40, 40, dtype=np.int32)
    m = cast_chain(T.INT32, [x.size], [(onnx_type, {}), (T.INT32, {})])
    got = run(m, {"x": x})["c1"]
    np.testing.assert_array_equal(got, x.astype(NARROW[onnx_type]).astype(np.int32))
    xf = np.array([-9.7, -8.5, -2.5, -0.5, 0.4, 1.5, 7.6, 15.5, 16.0, 300.0], np.float32)  # truncated first
    m = cast_chain(T.FLOAT, [xf.size], [(onnx_type, {}), (T.FLOAT, {})])
    np.testing.assert_array_equal(run(m, {"x": xf})["c1"], xf.astype(NARROW[onnx_type]).astype(np.float32))


def test_sub_byte_initializers_unpack_and_export_packed(tmp_path):
    """An odd number of int4 weights (the last byte half padding) and uint2 weights, packed in the
    file: read into the engine, cast to float, and written back by the exporter as ONNX packs them."""
    w4 = np.array([-8, 7, -1, 0, 3, -5, 6], dtype=ml_dtypes.int4)
    w2 = np.array([0, 1, 2, 3, 3, 2], dtype=ml_dtypes.uint2)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["w4"], ["f4"], to=T.FLOAT), helper.make_node("Cast", ["w2"], ["f2"], to=T.FLOAT)],
        "g", [], [helper.make_tensor_value_info("f4", T.FLOAT, [7]), helper.make_tensor_value_info("f2", T.FLOAT, [6])],
        [numpy_helper.from_array(w4, "w4"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11)
    data = m.SerializeToString()
    with oneflow.Session(data) as s:
        out = s.run({})
        np.testing.assert_array_equal(np.asarray(out["f4"]), w4.astype(np.float32))
        np.testing.assert_array_equal(np.asarray(out["f2"]), w2.astype(np.float32))
    m.graph.node.append(helper.make_node("Identity", ["w4"], ["raw4"]))
    m.graph.output.append(helper.make_tensor_value_info("raw4", T.INT4, [7]))
    with oneflow.Session(m.SerializeToString()) as s:
        with pytest.raises(TypeError, match="int4.*Cast"):  # numpy has no int4: the binding says so instead of guessing
            s.run({})
    path = tmp_path / "again.onnx"
    oneflow.save_model(data, str(path))
    native = tmp_path / "again.ofm"  # and through the native format, which keeps memory's one byte each
    oneflow.save_model(data, str(native))
    with oneflow.Session(str(native)) as s:
        np.testing.assert_array_equal(np.asarray(s.run({})["f4"]), w4.astype(np.float32))
    again = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in again.graph.initializer}
    np.testing.assert_array_equal(inits["w4"].astype(np.int8), w4.astype(np.int8))
    np.testing.assert_array_equal(inits["w2"].astype(np.uint8), w2.astype(np.uint8))


def qdq_model(op, x_type, x_shape, y_type, inits, opset, **attrs):
    names = ["x"] + [n for n, _ in inits]
    graph = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], op,
                              [helper.make_tensor_value_info("x", x_type, x_shape)],
                              [helper.make_tensor_value_info("y", y_type, x_shape)],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=11)


QUANT_CASES = [  # (type, opset, zero point value)
    (T.INT4, 21, 1), (T.UINT4, 21, 8), (T.INT2, 25, 0), (T.UINT2, 25, 1),
    (T.FLOAT8E4M3FN, 21, 0.0), (T.FLOAT8E5M2, 21, 0.0), (T.FLOAT8E4M3FNUZ, 21, 0.0), (T.FLOAT8E5M2FNUZ, 21, 0.0),
    (T.FLOAT4E2M1, 23, 0.0),
]


@pytest.mark.parametrize("onnx_type,opset,zp", QUANT_CASES)
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_and_dequantize_match_onnx_reference(onnx_type, opset, zp, per_axis):
    t = NARROW[onnx_type]
    x = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
    x[0, :] = [0.25, 0.75, 1.25, -0.75]  # ties of the rounding at scale 0.5
    scale = np.array([0.5, 0.25, 1.0, 0.125][:4], np.float32) if per_axis else np.array(0.5, np.float32)
    zero_point = np.full(scale.shape, zp).astype(t)
    axis = {"axis": 1} if per_axis else {}
    q = qdq_model("QuantizeLinear", T.FLOAT, [3, 4], onnx_type, [("s", scale), ("z", zero_point)], opset, **axis)
    want_q = ReferenceEvaluator(q).run(None, {"x": x})[0]
    # Read the quantized values through a Cast to float appended to the model (numpy has no such types).
    q.graph.node.append(helper.make_node("Cast", ["y"], ["yf"], to=T.FLOAT))
    q.graph.output[0].CopyFrom(helper.make_tensor_value_info("yf", T.FLOAT, [3, 4]))
    same(run(q.SerializeToString(), {"x": x})["yf"], np.asarray(want_q).astype(np.float32))
    # Dequantize the reference's quantized values (fed as an initializer: numpy has no such type).
    dq_graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **axis), helper.make_node("Add", ["y", "x"], ["out"])],
        "dq", [helper.make_tensor_value_info("x", T.FLOAT, [3, 4])], [helper.make_tensor_value_info("out", T.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.asarray(want_q).astype(t), "q"), numpy_helper.from_array(scale, "s"),
         numpy_helper.from_array(zero_point, "z")])
    dq = helper.make_model(dq_graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=11)
    zeros = np.zeros((3, 4), np.float32)
    same(run(dq.SerializeToString(), {"x": zeros})["out"], ReferenceEvaluator(dq).run(None, {"x": zeros})[0])


def test_errors_name_the_problem():
    m = cast_chain(T.FLOAT, [4], [(T.FLOAT8E8M0, {"round_mode": "sideways"})])
    with pytest.raises(oneflow.InvalidModelError, match="round_mode"):
        oneflow.Session(m)
    bad = qdq_model("QuantizeLinear", T.FLOAT, [4], T.INT4, [("s", np.array(1.0, np.float32)),
                                                           ("z", np.array(0, ml_dtypes.int4))], 19)
    with pytest.raises(oneflow.InvalidModelError, match="y_zero_point.*int4"):
        oneflow.Session(bad.SerializeToString())  # int4 arrived with opset 21
    t = numpy_helper.from_array(np.array([1, 2, 3], ml_dtypes.int4), "w")
    t.raw_data = t.raw_data[:1]  # 3 int4 need 2 bytes
    graph = helper.make_graph([helper.make_node("Cast", ["w"], ["y"], to=T.FLOAT)], "g", [],
                              [helper.make_tensor_value_info("y", T.FLOAT, [3])], [t])
    short = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11)
    with pytest.raises(oneflow.InvalidModelError, match="packed int4.*needs 2"):
        oneflow.Session(short.SerializeToString())
