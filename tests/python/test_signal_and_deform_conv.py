"""DFT, STFT, MelWeightMatrix and DeformConv against onnxruntime (and numpy's FFT), on sizes beyond
the ONNX node tests': power-of-two and other lengths (the two transform paths), real and complex
inputs, every axis, one-sided and inverse transforms, dft_length padding and truncation; STFT with
and without a window; DeformConv with groups, offset groups, masks, bias, strides, pads and
dilations, offsets pointing outside the image; plus their errors. Run with PYTHONPATH holding the
binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")

import oneflow  # noqa: E402
from single_op import both, model, ours  # noqa: E402

rng = np.random.default_rng(2027)


def as_complex(a):
    return a[..., 0] + 1j * a[..., 1] if a.shape[-1] == 2 else a[..., 0]


def interleave(c):
    return np.stack([c.real, c.imag], -1)


# ---- DFT ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [16, 12, 7])  # radix-2 and direct
@pytest.mark.parametrize("axis", [1, 2, -2])
@pytest.mark.parametrize("complex_input,onesided", [(False, 0), (True, 0), (False, 1)])  # one-sided: real input only
def test_dft_forward_matches_numpy(n, complex_input, axis, onesided):
    x = rng.standard_normal((2, n, n + 1, 2 if complex_input else 1)).astype(np.float32)
    data, feeds = model("DFT", [("x", x), ("len", None), ("axis", np.array(axis, np.int64))], 20, stored=("axis",),
                        onesided=onesided)
    got = ours(data, feeds)
    a = axis % 4
    want = (np.fft.rfft if onesided else np.fft.fft)(as_complex(x.astype(np.float64)), axis=a)
    np.testing.assert_allclose(got, interleave(want), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("length", [8, 20, 5])  # truncated, zero-padded, odd
def test_dft_length_and_inverse(length):
    x = rng.standard_normal((3, 10, 2)).astype(np.float32)
    for inverse in (0, 1):
        data, feeds = model("DFT", [("x", x), ("len", np.array(length, np.int64)), ("axis", np.array(1, np.int64))],
                            20, stored=("len", "axis"), inverse=inverse)
        got = ours(data, feeds)
        want = (np.fft.ifft if inverse else np.fft.fft)(as_complex(x.astype(np.float64)), n=length, axis=1)
        np.testing.assert_allclose(got, interleave(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("length", [None, 9, 14])
def test_dft_inverse_onesided_is_irfft(length):
    spectrum = rng.standard_normal((2, 6, 3, 2)).astype(np.float32)
    inputs = [("x", spectrum), ("len", None if length is None else np.array(length, np.int64)),
              ("axis", np.array(1, np.int64))]
    data, feeds = model("DFT", inputs, 20, stored=("len", "axis"), inverse=1, onesided=1)
    got = ours(data, feeds)
    want = np.fft.irfft(as_complex(spectrum.astype(np.float64)), n=length, axis=1)[..., None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dft_opset17_axis_attribute_against_onnxruntime():
    x = rng.standard_normal((2, 8, 6, 1)).astype(np.float32)
    got, want = both(*model("DFT", [("x", x)], 17, axis=2))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ---- STFT and MelWeightMatrix ------------------------------------------------------------------

@pytest.mark.parametrize("window", [None, "hann"])
@pytest.mark.parametrize("frame,step", [(16, 4), (12, 5)])
@pytest.mark.parametrize("onesided", [0, 1])
def test_stft_against_onnxruntime(window, frame, step, onesided):
    signal = rng.standard_normal((2, 100, 1)).astype(np.float32)
    w = None if window is None else np.hanning(frame).astype(np.float32)
    inputs = [("signal", signal), ("step", np.array(step, np.int64)), ("window", w),
              ("frame_length", np.array(frame, np.int64) if w is None else None)]
    got, want = both(*model("STFT", inputs, 17, stored=("step", "frame_length"), onesided=onesided))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mel,dft,rate,lo,hi", [(8, 16, 8192, 0.0, 4096.0), (40, 512, 16000, 20.0, 7600.0),
                                                (10, 64, 22050, 100.0, 11025.0)])
def test_mel_weight_matrix_against_onnxruntime(mel, dft, rate, lo, hi):
    inputs = [("mel", np.array(mel, np.int64)), ("dft", np.array(dft, np.int64)), ("rate", np.array(rate, np.int64)),
              ("lo", np.array(lo, np.float32)), ("hi", np.array(hi, np.float32))]
    got, want = both(*model("MelWeightMatrix", inputs, 17, stored=("mel", "dft")))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_signal_errors():
    x = rng.standard_normal((2, 8, 3)).astype(np.float32)  # last dim 3: neither real nor complex
    with pytest.raises(oneflow.OneflowError, match="last dim must be 1 \\(real\\) or 2 \\(complex\\)"):
        oneflow.Session(model("DFT", [("x", x)], 17)[0])
    x = rng.standard_normal((2, 8, 1)).astype(np.float32)
    with pytest.raises(oneflow.OneflowError, match="axis 2 is not a signal axis"):
        oneflow.Session(model("DFT", [("x", x), ("len", None), ("axis", np.array(2, np.int64))], 20, stored=("axis",))[0])
    signal = rng.standard_normal((1, 10, 1)).astype(np.float32)
    with pytest.raises(oneflow.OneflowError, match="shorter than a frame"):
        oneflow.Session(model("STFT", [("signal", signal), ("step", np.array(2, np.int64)), ("window", None),
                                       ("frame_length", np.array(16, np.int64))], 17, stored=("step", "frame_length"))[0])


# ---- DeformConv --------------------------------------------------------------------------------

def deform_inputs(n=2, c=4, h=9, w=8, m=6, k=(3, 3), group=1, offset_group=1, strides=(1, 1), pads=(1, 1, 1, 1),
                  dilations=(1, 1), mask=True, bias=True, spread=1.5):
    oh = (h + pads[0] + pads[2] - (dilations[0] * (k[0] - 1) + 1)) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - (dilations[1] * (k[1] - 1) + 1)) // strides[1] + 1
    taps = k[0] * k[1]
    inputs = [("X", rng.standard_normal((n, c, h, w)).astype(np.float32)),
              ("W", rng.standard_normal((m, c // group, *k)).astype(np.float32)),
              ("offset", (rng.standard_normal((n, offset_group * 2 * taps, oh, ow)) * spread).astype(np.float32)),
              ("B", rng.standard_normal(m).astype(np.float32) if bias else None),
              ("mask", rng.uniform(0, 1, (n, offset_group * taps, oh, ow)).astype(np.float32) if mask else None)]
    attrs = dict(group=group, offset_group=offset_group, strides=list(strides), pads=list(pads),
                 dilations=list(dilations), kernel_shape=list(k))
    return inputs, attrs


@pytest.mark.parametrize("case", [
    {},
    {"group": 2, "offset_group": 2},
    {"offset_group": 4, "mask": False, "bias": False},
    {"strides": (2, 2), "dilations": (2, 1), "pads": (2, 0, 1, 2)},
    {"k": (1, 3), "spread": 6.0},  # offsets far outside the image
    {"k": (2, 2), "pads": (0, 0, 0, 0), "n": 1, "c": 3, "m": 5},
])
def test_deform_conv_against_onnxruntime(case):
    inputs, attrs = deform_inputs(**case)
    got, want = both(*model("DeformConv", inputs, 19, stored=("W", "B"), **attrs))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_deform_conv_with_zero_offsets_is_a_conv():
    inputs, attrs = deform_inputs(mask=False, group=2)
    inputs[2] = ("offset", np.zeros_like(inputs[2][1]))
    got = ours(*model("DeformConv", inputs, 19, **attrs))
    conv_inputs = [inputs[0], inputs[1], inputs[3]]
    del attrs["offset_group"]
    want = ours(*model("Conv", conv_inputs, 17, **attrs))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_deform_conv_errors():
    inputs, attrs = deform_inputs()
    bad = list(inputs)
    bad[2] = ("offset", inputs[2][1][:, :10])
    with pytest.raises(oneflow.OneflowError, match="channels \\(2 per kernel tap and offset group\\)"):
        oneflow.Session(model("DeformConv", bad, 19, **attrs)[0])
    with pytest.raises(oneflow.OneflowError, match="not divisible by offset_group 3"):
        oneflow.Session(model("DeformConv", inputs, 19, **dict(attrs, offset_group=3))[0])
