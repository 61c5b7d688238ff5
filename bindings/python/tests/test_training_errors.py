"""Bad input to training sessions raises the engine's per-code exception with its message (or a Python
TypeError / ValueError for what the binding itself sees), never crashes, and leaves the session usable."""
import threading

import numpy as np
import pytest

import oneflow
from training_models import Linear, Mlp

X, Y = np.ones((3, 3), np.float32), np.zeros((3, 2), np.float32)
OPTS = oneflow.TrainingOptions(loss="mse", logits_output="y", optimizer="sgd", learning_rate=0.1)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return Linear().write(str(tmp_path_factory.mktemp("linear_err")))


def raised(fn, cls):
    with pytest.raises(cls) as info:
        fn()
    assert type(info.value) is cls
    return str(info.value)


def test_state_machine_errors(path):
    with oneflow.TrainingSession(path, OPTS) as s:
        assert "train-mode run first" in raised(s.backward, oneflow.InvalidArgumentError)
        assert "step needs gradients" in raised(s.step, oneflow.InvalidArgumentError)
        s.run({"x": X, "labels": Y})
        s.backward()
        assert "train-mode run first" in raised(s.backward, oneflow.InvalidArgumentError)  # twice after one run
        assert s.step() is True
        assert "step needs gradients" in raised(s.step, oneflow.InvalidArgumentError)  # step zeroed them
        s.set_run_mode("eval")
        assert "not computed in eval mode" in raised(lambda: s.run({"x": X}, outputs=["loss"]),
                                                     oneflow.InvalidArgumentError)
        s.set_run_mode("train")
        assert "'labels' is missing" in raised(lambda: s.run({"x": X}), oneflow.InvalidArgumentError)
        assert "'nope'" in raised(lambda: s.run({"x": X, "labels": Y, "nope": X}), oneflow.NotFoundError)
        with pytest.raises(ValueError, match="'train' or 'eval'"):
            s.set_run_mode("test")
        s.run({"x": X, "labels": Y})  # still usable after every error
        s.backward()
        assert s.step() is True and s.state.step == 2


def test_parameter_errors(path):
    with oneflow.TrainingSession(path, OPTS) as s:
        for call in (lambda: s.get_parameter("nope"), lambda: s.get_gradient("nope"),
                     lambda: s.set_parameter("nope", np.zeros((3, 2), np.float32))):
            assert "'nope'" in raised(call, oneflow.NotFoundError)
        assert "float32[3,2]" in raised(lambda: s.set_parameter("W", np.zeros((2, 3), np.float32)),
                                        oneflow.InvalidArgumentError)
        raised(lambda: s.set_parameter("W", np.zeros((3, 2), np.float64)), oneflow.InvalidArgumentError)
        with pytest.raises(TypeError):
            s.get_parameter(3)
        with pytest.raises(TypeError):
            s.set_parameter("W", np.zeros((3, 2), np.complex64))
        with pytest.raises(TypeError):
            s.set_parameter("W")
        value = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(3, 2))  # copied to C order first
        s.set_parameter("W", value)
        np.testing.assert_array_equal(s.get_parameter("W"), value)
        s.set_parameter("b", oneflow.from_dlpack(np.array([1, 2], np.float32)))  # a oneflow.Tensor as is
        np.testing.assert_array_equal(s.get_parameter("b"), [1, 2])


def test_option_errors(path, tmp_path):
    def create(**kw):
        return lambda: oneflow.TrainingSession(path, oneflow.TrainingOptions(**kw))
    assert "'logits'" in raised(create(logits_output="logits"), oneflow.InvalidArgumentError)  # no such output
    assert "logits_output" in raised(create(), oneflow.InvalidArgumentError)  # an appended loss needs it
    assert "Nesterov" in raised(create(logits_output="y", loss="mse", optimizer="sgd", nesterov=True),
                                oneflow.InvalidArgumentError)
    assert "intra_op_threads" in raised(create(logits_output="y", loss="mse", deterministic=True),
                                        oneflow.InvalidArgumentError)
    raised(create(logits_output="y", loss="mse", frozen=["nothing*"]), oneflow.InvalidArgumentError)
    assert "loss_output" in raised(create(loss="model_output"), oneflow.InvalidArgumentError)
    with pytest.raises(ValueError, match="optimizer"):
        create(logits_output="y", optimizer="rmsprop")()
    with pytest.raises(TypeError, match="frozen"):
        create(logits_output="y", loss="mse", frozen="W")()
    with pytest.raises(TypeError):
        oneflow.TrainingSession(path, {"loss": "mse"})
    with pytest.raises(TypeError):
        oneflow.TrainingSession(path, OPTS, oneflow.TrainingOptions())  # options in the wrong place
    # A model without float initializers has nothing to train.
    from onnx import helper
    from training_models import f32, write
    no_params = write(str(tmp_path), "relu", [helper.make_node("Relu", ["x"], ["y"])], [f32("x", [2])],
                      [f32("y", [2])], [])
    assert "no trainable parameter" in raised(
        lambda: oneflow.TrainingSession(no_params, oneflow.TrainingOptions(loss="mse", logits_output="y")),
        oneflow.InvalidArgumentError)


def test_nonfinite_policies(path):
    bad = np.full((3, 3), np.inf, np.float32)
    with oneflow.TrainingSession(path, OPTS) as s:  # skip (default): no update, step() says so
        before = s.parameters
        s.run({"x": bad, "labels": Y})
        s.backward()
        assert s.step() is False
        assert s.state.skipped_steps == 1 and s.state.step == 0
        np.testing.assert_array_equal(s.get_parameter("W"), before["W"])
    refuse = oneflow.TrainingOptions(loss="mse", logits_output="y", nonfinite_policy="refuse")
    with oneflow.TrainingSession(path, refuse) as s:
        s.run({"x": bad, "labels": Y})
        s.backward()
        assert "refused" in raised(s.step, oneflow.ExecutionError)
        s.zero_gradients()
        s.run({"x": X, "labels": Y})
        s.backward()
        assert s.step() is True


def test_closed_session_raises(path, tmp_path):
    s = oneflow.TrainingSession(path, OPTS)
    s.close()
    s.close()  # idempotent
    calls = [s.backward, s.step, s.zero_gradients, lambda: s.run({"x": X, "labels": Y}),
             lambda: s.get_parameter("W"), lambda: s.get_gradient("W"), lambda: s.set_parameter("W", X[:, :2]),
             lambda: s.set_run_mode("eval"), lambda: s.state, lambda: s.memory, s.planned_peak_bytes,
             lambda: s.save_checkpoint(tmp_path / "c.ckpt"), lambda: s.load_checkpoint(tmp_path / "c.ckpt"),
             lambda: s.export_model(tmp_path / "m.ofm")]
    for call in calls:
        with pytest.raises(ValueError, match="closed"):
            call()
    assert s.parameter_names == ("W", "b")  # what was read at creation stays readable


def test_inference_session_has_no_training_calls(path):
    with oneflow.Session(path, oneflow.SessionOptions(optimization_level=0)) as s:  # no fusion of MatMul + Add
        assert not hasattr(s, "backward") and not hasattr(s, "step")
        s.run({"x": X})
        assert s.planned_peak_bytes() > 0  # the MatMul result lives in the arena until the Add


def test_close_while_training_in_other_threads(tmp_path):
    """close() while other threads run, backward and step: their calls finish or raise ValueError."""
    path = Mlp().write(str(tmp_path))
    x = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32)
    y = np.zeros(64, np.int64)
    s = oneflow.TrainingSession(path, oneflow.TrainingOptions(logits_output="logits"))
    errors, started = [], threading.Barrier(3)

    def loop():
        started.wait()
        try:
            while True:
                s.run({"x": x, "labels": y})
                try:
                    s.backward()
                    s.step()
                except oneflow.InvalidArgumentError:
                    pass  # the other thread's backward or step came in between: the engine's state machine
        except ValueError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for t in threads:
        t.start()
    started.wait()
    s.close()
    for t in threads:
        t.join(timeout=60)
    assert errors == ["the session is closed"] * 2
