"""Random ops and the ai.onnx.preview.training optimizers.

Random draws cannot match another engine's numbers, so the random ops are held to their distributions
(sample mean, spread and range over many draws, within bounds that fail a wrong formula by tens of
standard errors), to their seeds (one seed: the same stream in every session; runs advance it), and
to their shapes and dtypes. The optimizers (Adagrad, Momentum, Adam) are checked against the
formulas of the ONNX specification written in numpy (the conformance suite also runs onnx's own
cases). Run with PYTHONPATH holding the binding and ONEFLOW_LIBRARY the library."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
from onnx import helper, TensorProto  # noqa: E402

import oneflow  # noqa: E402

F, D, I32, I64 = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64
N = 20000


def model(nodes, inputs, outputs, opset=18, extra_opsets=()):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] +
                          [helper.make_opsetid(d, v) for d, v in extra_opsets])
    m.ir_version = 8
    return m.SerializeToString()


def vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def run(data, feeds=None, runs=1):
    with oneflow.Session(data) as s:
        return [s.run(feeds or {})["y"] for _ in range(runs)]


@pytest.mark.parametrize("dtype,np_dtype", [(F, np.float32), (D, np.float64), (TensorProto.FLOAT16, np.float16)])
def test_random_normal_distribution_seed_and_dtype(dtype, np_dtype):
    data = model([helper.make_node("RandomNormal", [], ["y"], shape=[N], mean=2.0, scale=3.0, seed=5.0, dtype=dtype)],
                 [], [vi("y", dtype, [N])])
    a, b = run(data, runs=2)
    assert a.dtype == np_dtype and a.shape == (N,)
    x = a.astype(np.float64)
    se = 3.0 / np.sqrt(N)
    assert abs(x.mean() - 2.0) < 6 * se
    assert abs(x.std() - 3.0) < 0.05 * 3.0
    assert not np.array_equal(a, b)  # the stream advances run to run (not folded into a constant)
    (c,) = run(data)
    np.testing.assert_array_equal(a, c)  # the seed: the same first draw in a new session


def test_random_uniform_like_takes_shape_and_dtype():
    data = model([helper.make_node("RandomUniformLike", ["x"], ["y"], low=-1.0, high=3.0)],
                 [vi("x", D, [100, 200])], [vi("y", D, [100, 200])])
    (y,) = run(data, {"x": np.zeros((100, 200), np.float64)})
    assert y.dtype == np.float64 and y.shape == (100, 200)
    assert y.min() >= -1.0 and y.max() < 3.0
    assert abs(y.mean() - 1.0) < 6 * (4.0 / np.sqrt(12)) / np.sqrt(y.size)
    # Each quarter of [low, high) gets a quarter of the draws.
    counts = np.histogram(y, bins=4, range=(-1.0, 3.0))[0] / y.size
    np.testing.assert_allclose(counts, 0.25, atol=0.01)


def test_bernoulli_rates_and_refused_probabilities():
    p = np.repeat(np.array([0.0, 0.1, 0.5, 0.9, 1.0], np.float32)[:, None], 4000, axis=1)
    data = model([helper.make_node("Bernoulli", ["p"], ["y"], seed=1.0, dtype=I64)], [vi("p", F, list(p.shape))],
                 [vi("y", I64, list(p.shape))])
    (y,) = run(data, {"p": p})
    assert y.dtype == np.int64 and set(np.unique(y)) <= {0, 1}
    rates = y.mean(axis=1)
    assert rates[0] == 0 and rates[4] == 1
    np.testing.assert_allclose(rates[1:4], [0.1, 0.5, 0.9], atol=6 * 0.5 / np.sqrt(4000))
    with oneflow.Session(data) as s, pytest.raises(oneflow.InvalidArgumentError, match=r"probability 0 is 1.5"):
        s.run({"p": np.full(p.shape, 1.5, np.float32)})


def test_multinomial_frequencies_follow_softmax():
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]], np.float32))
    data = model([helper.make_node("Multinomial", ["x"], ["y"], sample_size=N, seed=3.0, dtype=I64)],
                 [vi("x", F, [2, 3])], [vi("y", I64, [2, N])])
    (y,) = run(data, {"x": logits})
    assert y.shape == (2, N) and y.dtype == np.int64 and y.min() >= 0 and y.max() <= 2
    for row, probs in zip(y, np.exp(logits)):
        freq = np.bincount(row, minlength=3) / N
        np.testing.assert_allclose(freq, probs, atol=6 * 0.5 / np.sqrt(N))


def test_random_attributes_are_checked():
    bad = model([helper.make_node("RandomUniform", [], ["y"], shape=[2], low=2.0, high=1.0)], [], [vi("y", F, [2])])
    with pytest.raises(oneflow.InvalidModelError, match=r"low \(2\) and high \(1\)"):
        oneflow.Session(bad)
    bad = model([helper.make_node("RandomNormal", [], ["y"], shape=[2, -1])], [], [vi("y", F)])
    with pytest.raises(oneflow.InvalidModelError, match="negative dimension"):
        oneflow.Session(bad)
    bad = model([helper.make_node("Multinomial", ["x"], ["y"], dtype=F)], [vi("x", F, [1, 3])], [vi("y", F)])
    with pytest.raises(oneflow.InvalidModelError, match="int32 or int64"):
        oneflow.Session(bad)


# ---- ai.onnx.preview.training ---------------------------------------------------------------------

TRAINING = [("ai.onnx.preview.training", 1)]
RNG = np.random.default_rng(3)


def optimizer_model(op, n_tensors, groups, **attrs):
    names = [f"{g}{i}" for g in "XGVH"[:groups] for i in range(n_tensors)]
    outs = [f"{g}{i}_new" for g in ("X" + "VH"[:groups - 2] if op != "Adagrad" else "XH") for i in range(n_tensors)]
    node = helper.make_node(op, ["R", "T"] + names, outs, domain="ai.onnx.preview.training", **attrs)
    inputs = [vi("R", F, []), vi("T", I64, [])] + [vi(n, F, [3, 2]) for n in names]
    return model([node], inputs, [vi(o, F, [3, 2]) for o in outs], extra_opsets=TRAINING), names, outs


def test_optimizers_match_the_spec_formulas():
    x, g, v, h = (RNG.standard_normal((3, 2)).astype(np.float32) for _ in range(4))
    h = np.abs(h)
    r, t = np.float32(0.1), np.int64(3)
    feeds = {"R": np.array(r), "T": np.array(t), "X0": x, "G0": g}

    data, _, outs = optimizer_model("Adagrad", 1, 3, decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.01)
    with oneflow.Session(data) as s:
        got = s.run({**feeds, "V0": h})
    r_ = r / (1 + t * 0.1)
    g_reg = 0.01 * x + g
    h_new = h + g_reg * g_reg
    np.testing.assert_allclose(got["H0_new"], h_new, rtol=1e-5)
    np.testing.assert_allclose(got["X0_new"], x - r_ * g_reg / (np.sqrt(h_new) + 1e-5), rtol=1e-5)

    for mode in ("standard", "nesterov"):
        data, _, _ = optimizer_model("Momentum", 1, 3, alpha=0.9, beta=0.5, mode=mode, norm_coefficient=0.02)
        with oneflow.Session(data) as s:
            got = s.run({**feeds, "V0": v})
        g_reg = 0.02 * x + g
        v_new = 0.9 * v + 0.5 * g_reg
        x_new = x - r * v_new if mode == "standard" else x - r * (g_reg + 0.9 * v_new)
        np.testing.assert_allclose(got["V0_new"], v_new, rtol=1e-5)
        np.testing.assert_allclose(got["X0_new"], x_new, rtol=1e-5)

    data, _, _ = optimizer_model("Adam", 1, 4, alpha=0.8, beta=0.95, epsilon=1e-4, norm_coefficient=0.01,
                                 norm_coefficient_post=0.02)
    with oneflow.Session(data) as s:
        got = s.run({**feeds, "V0": v, "H0": h})
    g_reg = 0.01 * x + g
    v_new = 0.8 * v + 0.2 * g_reg
    h_new = 0.95 * h + 0.05 * g_reg * g_reg
    r_adj = r * np.sqrt(1 - 0.95 ** 3) / (1 - 0.8 ** 3)
    np.testing.assert_allclose(got["V0_new"], v_new, rtol=1e-5)
    np.testing.assert_allclose(got["H0_new"], h_new, rtol=1e-5)
    np.testing.assert_allclose(got["X0_new"], 0.98 * (x - r_adj * v_new / (np.sqrt(h_new) + 1e-4)), rtol=1e-5)


def test_optimizer_signature_errors():
    node = helper.make_node("Adam", ["R", "T", "X0", "G0", "V0"], ["X0_new", "V0_new"],
                            domain="ai.onnx.preview.training")
    data = model([node], [vi("R", F, []), vi("T", I64, [])] + [vi(n, F, [2]) for n in ("X0", "G0", "V0")],
                 [vi("X0_new", F), vi("V0_new", F)], extra_opsets=TRAINING)
    with pytest.raises(oneflow.InvalidModelError, match=r"4 inputs per optimized tensor"):
        oneflow.Session(data)
    data, _, _ = optimizer_model("Momentum", 1, 3, alpha=0.9, beta=0.5, mode="heavy", norm_coefficient=0.0)
    x = np.zeros((3, 2), np.float32)
    with oneflow.Session(data) as s, pytest.raises(oneflow.InvalidArgumentError, match="mode 'heavy'"):
        s.run({"R": np.array(0.1, np.float32), "T": np.array(1, np.int64), "X0": x, "G0": x, "V0": x})
