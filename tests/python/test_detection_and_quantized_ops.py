"""NonMaxSuppression, RoiAlign, QLinearMatMul, the window functions, BitCast and TensorScatter against
onnxruntime on inputs larger than the ONNX node tests' (random boxes with many overlaps and ties,
per-row / per-column quantization, every window flavour), plus their errors. The node tests check
them against onnx.reference as well. Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY
the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
from onnx import helper  # noqa: E402

import oneflow  # noqa: E402
from single_op import both, model  # noqa: E402

rng = np.random.default_rng(1011)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("score_threshold", [None, 0.3])
def test_non_max_suppression(center, score_threshold):
    b, n, c = 2, 60, 3
    xy = rng.uniform(0, 10, size=(b, n, 2))
    wh = rng.uniform(0.5, 4, size=(b, n, 2))
    boxes = (np.concatenate([xy, wh], -1) if center else np.concatenate([xy, xy + wh], -1)).astype(np.float32)
    scores = rng.choice([0.1, 0.35, 0.5, 0.8, 0.9], size=(b, c, n)).astype(np.float32)  # many ties
    inputs = [("boxes", boxes), ("scores", scores), ("max", np.array([7], np.int64)),
              ("iou", np.array([0.4], np.float32)),
              ("score", None if score_threshold is None else np.array([score_threshold], np.float32))]
    got, want = both(*model("NonMaxSuppression", inputs, 11, center_point_box=center))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("atype,ytype", [(np.uint8, np.uint8), (np.int8, np.int8)])  # onnxruntime: y has a's type
@pytest.mark.parametrize("per_axis", [False, True])
def test_qlinear_matmul(atype, ytype, per_axis):
    info_a, info_y = np.iinfo(atype), np.iinfo(ytype)
    m, k, n = 5, 33, 7
    a = rng.integers(info_a.min, info_a.max, size=(2, m, k), endpoint=True).astype(atype)
    b = rng.integers(-128, 127, size=(k, n), endpoint=True).astype(np.int8)
    a_scale = np.array(0.02, np.float32)
    b_scale = rng.uniform(0.001, 0.01, size=n).astype(np.float32) if per_axis else np.array(0.004, np.float32)
    b_zp = np.zeros(n, np.int8) if per_axis else np.array(0, np.int8)
    inputs = [("a", a), ("a_scale", a_scale), ("a_zero_point", np.array(info_a.min + 100, atype)), ("b", b),
              ("b_scale", b_scale), ("b_zero_point", b_zp), ("y_scale", np.array(0.05, np.float32)),
              ("y_zero_point", np.array((info_y.min + info_y.max + 1) // 2, ytype))]
    got, want = both(*model("QLinearMatMul", inputs, 10, stored=("b", "b_scale", "b_zero_point")))
    # A rounding tie can land on either side when the float product differs in its last bit.
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert (got == want).mean() > 0.99


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("size", [1, 2, 10, 257])
def test_windows(op, periodic, size):
    got, want = both(*model(op, [("size", np.array(size, np.int64))], 17, periodic=periodic))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("src,dst", [(np.float32, np.int32), (np.int64, np.float64), (np.uint16, np.float16),
                                     (np.int8, np.uint8)])
def test_bitcast(src, dst):
    x = rng.integers(-100, 100, size=(3, 4)).astype(src)
    got, want = both(*model("BitCast", [("x", x)], 26, to=helper.np_dtype_to_tensor_dtype(np.dtype(dst))))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))


def test_bitcast_width_mismatch_is_refused():
    data, _ = model("BitCast", [("x", np.zeros(3, np.float32))], 26, to=onnx.TensorProto.DOUBLE)
    with pytest.raises(oneflow.OneflowError, match="BitCast needs types of one width"):
        oneflow.Session(data)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode):
    past = rng.standard_normal((2, 3, 8, 4)).astype(np.float32)
    update = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)
    write = np.array([5, 6] if mode == "circular" else [0, 5], np.int64)
    got, want = both(*model("TensorScatter", [("past", past), ("update", update), ("write", write)], 24, mode=mode))
    np.testing.assert_array_equal(got, want)
    data, feeds = model("TensorScatter", [("past", past), ("update", update), ("write", write)], 24)
    if mode == "circular":  # linear writes past the end are an error, not a wrap
        with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match="outside the cache"):
            s.run(feeds)


def random_rois(count, height, width):
    """Regions of every kind: inside the image, partly and wholly outside, smaller than a pixel."""
    x1 = rng.uniform(-4, width, count)
    y1 = rng.uniform(-4, height, count)
    w = rng.choice([0.3, 2.0, 7.5, width * 1.5], count) * rng.uniform(0.5, 1.5, count)
    h = rng.choice([0.3, 2.0, 7.5, height * 1.5], count) * rng.uniform(0.5, 1.5, count)
    return np.stack([x1, y1, x1 + w, y1 + h], 1)


@pytest.mark.parametrize("opset,ct", [(10, None), (16, "half_pixel"), (16, "output_half_pixel")])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sampling,scale,out", [(0, 1.0, (3, 4)), (2, 0.5, (7, 7)), (1, 0.25, (1, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_roi_align(opset, ct, mode, sampling, scale, out, dtype):
    x = rng.standard_normal((2, 3, 12, 10)).astype(dtype)
    rois = (random_rois(9, 12 / scale, 10 / scale)).astype(dtype)
    batch = rng.integers(0, 2, 9).astype(np.int64)
    attrs = dict(mode=mode, output_height=out[0], output_width=out[1], sampling_ratio=sampling, spatial_scale=scale)
    if ct:
        attrs["coordinate_transformation_mode"] = ct
    got, want = both(*model("RoiAlign", [("x", x), ("rois", rois), ("batch", batch)], opset, **attrs))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_roi_align_errors():
    x = np.zeros((2, 1, 4, 4), np.float32)
    rois = np.array([[0, 0, 2, 2]], np.float32)
    data, feeds = model("RoiAlign", [("x", x), ("rois", rois), ("batch", np.array([2], np.int64))], 16)
    with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match=r"batch_indices\[0\] = 2 is not an image"):
        s.run(feeds)
    data, feeds = model("RoiAlign", [("x", x), ("rois", np.array([[0, 0, np.inf, 2]], np.float32)),
                                     ("batch", np.array([0], np.int64))], 16)
    with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match="not finite"):
        s.run(feeds)
    data, feeds = model("RoiAlign", [("x", x), ("rois", np.array([[0, 0, 1e9, 1e9]], np.float32)),
                                     ("batch", np.array([0], np.int64))], 16)
    with oneflow.Session(data) as s, pytest.raises(oneflow.OneflowError, match="samples per bin; set sampling_ratio"):
        s.run(feeds)
    data, _ = model("RoiAlign", [("x", x), ("rois", rois), ("batch", np.array([0], np.int64))], 16, mode="median")
    with pytest.raises(oneflow.OneflowError, match="mode must be avg or max"):
        oneflow.Session(data)
