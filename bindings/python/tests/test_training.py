"""TrainingSession against numpy: losses and gradients of tiny models (hand-written float64 backprop),
gradient accumulation, SGD / Adam / AdamW updates (PyTorch's documented rules, written in numpy), the
learning-rate schedules of the header's formula, and the train/eval run modes."""
import math

import numpy as np
import pytest

import oneflow
from training_models import Linear, Mlp

RTOL, ATOL = 1e-4, 1e-6


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    m = Mlp()
    return m, m.write(str(tmp_path_factory.mktemp("mlp")))


@pytest.fixture(scope="module")
def linear(tmp_path_factory):
    m = Linear()
    return m, m.write(str(tmp_path_factory.mktemp("linear")))


def batch(seed, n=6):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 3, n).astype(np.int64)


def test_cross_entropy_loss_and_gradients(mlp):
    model, path = mlp
    x, labels = batch(10)
    want_loss, want_grads = model.cross_entropy(model.params, x, labels)
    with oneflow.TrainingSession(path, oneflow.TrainingOptions(logits_output="logits")) as s:
        assert s.parameter_names == ("W1", "b1", "W2", "b2")
        assert [i.name for i in s.inputs] == ["x", "labels"] and s.inputs[1].dtype == "int64"
        assert [o.name for o in s.outputs] == ["logits", "loss"]
        out = s.run({"x": x, "labels": labels})
        assert list(out) == ["logits", "loss"]  # the model outputs, then the loss
        np.testing.assert_allclose(out["logits"], model.forward(model.params, x.astype(np.float64))[2], RTOL, ATOL)
        np.testing.assert_allclose(out["loss"], want_loss, RTOL)
        assert s.state.last_loss == pytest.approx(want_loss, rel=RTOL)
        assert all(not g.any() for g in s.gradients.values())  # nothing accumulated before backward
        s.backward()
        grads = s.gradients
        for name, want in want_grads.items():
            assert grads[name].dtype == np.float32 and grads[name].shape == want.shape
            np.testing.assert_allclose(grads[name], want, RTOL, ATOL, err_msg=name)
        for name, value in model.params.items():  # backward alone changes no parameter
            np.testing.assert_array_equal(s.get_parameter(name), value)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_gradients_and_accumulation(linear, reduction):
    model, path = linear
    rng = np.random.default_rng(3)
    batches = [(rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 2)).astype(np.float32))
               for n in (4, 7)]  # a second batch shape: re-planned by the engine
    opts = oneflow.TrainingOptions(loss="mse", logits_output="y", labels_input="target",
                                   loss_reduction_sum=reduction == "sum")
    with oneflow.TrainingSession(path, opts) as s:
        total = {k: 0.0 for k in model.params}
        for x, t in batches:
            loss, grads = model.mse(model.params, x, t, reduction)
            assert float(s.run({"x": x, "target": t})["loss"]) == pytest.approx(loss, rel=RTOL)
            s.backward()
            total = {k: total[k] + grads[k] for k in total}
            for name in total:  # gradients of several run+backward pairs add up
                np.testing.assert_allclose(s.get_gradient(name), total[name], RTOL, ATOL, err_msg=name)
        s.zero_gradients()
        assert all(not g.any() for g in s.gradients.values())


def test_model_output_loss(tmp_path):
    """A loss the model computes (ReduceSum(y * y)), named with loss="model_output"."""
    from onnx import helper, numpy_helper
    from training_models import f32, write
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Mul", ["y", "y"], ["sq"]),
             helper.make_node("ReduceSum", ["sq"], ["energy"], keepdims=0)]
    path = write(str(tmp_path), "energy", nodes, [f32("x", ["N", 3])], [f32("y", ["N", 2]), f32("energy", [])],
                 [numpy_helper.from_array(w, "W")])
    x = np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32)
    with oneflow.TrainingSession(path, oneflow.TrainingOptions(loss="model_output", loss_output="energy")) as s:
        assert [o.name for o in s.outputs] == ["y", "energy"]
        y = x.astype(np.float64) @ w
        out = s.run({"x": x})
        np.testing.assert_allclose(out["energy"], np.sum(y * y), RTOL)
        s.backward()
        np.testing.assert_allclose(s.get_gradient("W"), x.T.astype(np.float64) @ (2 * y), RTOL, ATOL)


# ---- optimizers: PyTorch's update rules (docs/training.md), in float64 numpy ----

def sgd(p, g, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    d = g + weight_decay * p
    if momentum:
        b = d if "b" not in state else momentum * state["b"] + (1 - dampening) * d
        state["b"] = b
        d = d + momentum * b if nesterov else b
    return p - lr * d


def adam(p, g, state, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False):
    t = state["t"] = state.get("t", 0) + 1
    if decoupled:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    m = state["m"] = beta1 * state.get("m", 0) + (1 - beta1) * g
    v = state["v"] = beta2 * state.get("v", 0) + (1 - beta2) * g * g
    return p - lr / (1 - beta1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - beta2 ** t) + eps)


CASES = {
    "sgd": (dict(optimizer="sgd", learning_rate=0.05), lambda p, g, s: sgd(p, g, s, 0.05)),
    "sgd_momentum_wd": (dict(optimizer="sgd", learning_rate=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
                        lambda p, g, s: sgd(p, g, s, 0.05, 0.9, 0.1, 0.01)),
    "sgd_nesterov": (dict(optimizer="sgd", learning_rate=0.05, momentum=0.8, nesterov=True),
                     lambda p, g, s: sgd(p, g, s, 0.05, 0.8, nesterov=True)),
    "adam": (dict(optimizer="adam", learning_rate=0.01, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.02),
             lambda p, g, s: adam(p, g, s, 0.01, 0.8, 0.99, 1e-6, 0.02)),
    "adamw": (dict(optimizer="adamw", learning_rate=0.01, weight_decay=0.1),
              lambda p, g, s: adam(p, g, s, 0.01, weight_decay=0.1, decoupled=True)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_optimizer_steps_follow_the_update_rule(linear, case):
    model, path = linear
    kwargs, rule = CASES[case]
    params = {k: v.astype(np.float64) for k, v in model.params.items()}
    states = {k: {} for k in params}
    rng = np.random.default_rng(5)
    opts = oneflow.TrainingOptions(loss="mse", logits_output="y", **kwargs)
    with oneflow.TrainingSession(path, opts) as s:
        for step in range(4):
            x, t = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((5, 2)).astype(np.float32)
            _, grads = model.mse(params, x, t)
            s.run({"x": x, "labels": t})
            s.backward()
            assert s.step() is True
            params = {k: rule(params[k], grads[k], states[k]) for k in params}
            for name, want in params.items():
                np.testing.assert_allclose(s.get_parameter(name), want, 1e-5, 1e-6, err_msg=f"{name} step {step}")
            assert s.state.step == step + 1
            assert not s.get_gradient("W").any()  # step zeroes the gradients


@pytest.mark.parametrize("schedule", ["step", "cosine"])
def test_learning_rate_schedules(linear, schedule):
    """state.learning_rate is the rate of the next update: the header's formula, warm-up included."""
    _, path = linear
    lr, warmup, start = 0.1, 2, 0.25
    if schedule == "step":
        opts = dict(lr_schedule="step", step_size=3, gamma=0.5)
        after = lambda s: 0.5 ** (s // 3)  # noqa: E731
    else:
        opts = dict(lr_schedule="cosine", decay_steps=4, min_lr_factor=0.1)
        after = lambda s: 0.1 + 0.9 * (1 + math.cos(math.pi * min(s, 4) / 4)) / 2  # noqa: E731
    expected = [lr * (start + (1 - start) * t / warmup if t < warmup else after(t - warmup)) for t in range(8)]
    x, y = np.ones((2, 3), np.float32), np.zeros((2, 2), np.float32)
    with oneflow.TrainingSession(path, oneflow.TrainingOptions(loss="mse", logits_output="y", optimizer="sgd",
                                                               learning_rate=lr, warmup_steps=warmup,
                                                               warmup_start_factor=start, **opts)) as s:
        for t, want in enumerate(expected):
            assert s.state.learning_rate == pytest.approx(want, rel=1e-6), f"update {t}"
            s.run({"x": x, "labels": y})
            s.backward()
            s.step()


def test_eval_mode_and_gradient_clipping(mlp):
    model, path = mlp
    x, labels = batch(11)
    _, grads = model.cross_entropy(model.params, x, labels)
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
    max_norm = norm / 4  # the update is scaled by max_norm / (norm + 1e-6)
    opts = oneflow.TrainingOptions(logits_output="logits", optimizer="sgd", learning_rate=0.5, max_grad_norm=max_norm)
    with oneflow.TrainingSession(path, opts, oneflow.SessionOptions(threads=1)) as s:
        s.set_run_mode("eval")
        out = s.run({"x": x})  # eval: no labels needed, no loss returned
        assert list(out) == ["logits"]
        np.testing.assert_allclose(out["logits"], model.forward(model.params, x.astype(np.float64))[2], RTOL, ATOL)
        with pytest.raises(oneflow.InvalidArgumentError, match="backward needs a train-mode run"):
            s.backward()  # an eval run keeps nothing for backward
        s.set_run_mode("train")
        s.run({"x": x, "labels": labels})
        s.backward()
        s.step()
        assert s.state.last_grad_norm == pytest.approx(norm, rel=RTOL)
        scale = max_norm / (norm + 1e-6)
        for name, g in grads.items():
            np.testing.assert_allclose(s.get_parameter(name), model.params[name] - 0.5 * scale * g, RTOL, ATOL)
        mem = s.memory
        assert mem.peak_bytes == mem.forward_arena_bytes + mem.saved_activation_bytes + mem.backward_arena_bytes
        assert mem.saved_activation_bytes > 0 and s.planned_peak_bytes() == mem.peak_bytes
