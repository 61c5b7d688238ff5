"""Checkpoints (save, perturb, load: parameters, optimizer state and step counter come back), export of
the trained model (.ofm and .onnx) served by an inference session and checked against numpy and
onnxruntime, oneflow.save_model conversions, frozen parameters."""
import numpy as np
import pytest

import oneflow
from training_models import Mlp

OPTS = oneflow.TrainingOptions(logits_output="logits", optimizer="adam", learning_rate=0.05)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    m = Mlp(seed=7)
    return m, m.write(str(tmp_path_factory.mktemp("mlp_io")))


def batches(n_batches, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((8, 4)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int64))
            for _ in range(n_batches)]


def train(s, data):
    for x, y in data:
        s.run({"x": x, "labels": y})
        s.backward()
        s.step()


def test_checkpoint_round_trip(mlp, tmp_path):
    _, path = mlp
    data = batches(6)
    ckpt = tmp_path / "run.ckpt"
    with oneflow.TrainingSession(path, OPTS) as s:
        train(s, data[:3])
        s.save_checkpoint(ckpt)
        saved, saved_state = s.parameters, s.state
        train(s, data[3:4])  # perturb: another step (parameters and Adam's moments move) ...
        s.set_parameter("W1", np.zeros_like(saved["W1"]))  # ... and an overwrite
        assert not np.array_equal(s.get_parameter("W2"), saved["W2"])
        s.load_checkpoint(ckpt)
        for name, value in saved.items():
            np.testing.assert_array_equal(s.get_parameter(name), value, err_msg=name)
        assert s.state.step == saved_state.step == 3
        train(s, data[3:])
        resumed = s.parameters
    # The optimizer state came back too: an uninterrupted run of the same batches ends identical.
    with oneflow.TrainingSession(path, OPTS) as ref:
        train(ref, data)
        for name, value in ref.parameters.items():
            np.testing.assert_allclose(resumed[name], value, rtol=1e-6, atol=1e-7, err_msg=name)
    # A fresh session resumes from the file alone.
    with oneflow.TrainingSession(path, OPTS) as fresh:
        fresh.load_checkpoint(ckpt)
        for name, value in saved.items():
            np.testing.assert_array_equal(fresh.get_parameter(name), value)


def test_bad_checkpoints_change_nothing(mlp, tmp_path):
    _, path = mlp
    with oneflow.TrainingSession(path, OPTS) as s:
        before = s.parameters
        with pytest.raises(oneflow.NotFoundError):
            s.load_checkpoint(tmp_path / "absent.ckpt")
        (tmp_path / "junk.ckpt").write_bytes(b"not a checkpoint at all" * 10)
        with pytest.raises(oneflow.OneflowError):
            s.load_checkpoint(tmp_path / "junk.ckpt")
        # A checkpoint of another optimizer is refused by name.
        with oneflow.TrainingSession(path, oneflow.TrainingOptions(logits_output="logits", optimizer="sgd",
                                                                   momentum=0.9)) as other:
            other.save_checkpoint(tmp_path / "sgd.ckpt")
        with pytest.raises(oneflow.InvalidArgumentError):
            s.load_checkpoint(tmp_path / "sgd.ckpt")
        for name, value in before.items():
            np.testing.assert_array_equal(s.get_parameter(name), value)
        with pytest.raises(oneflow.OneflowError):
            s.save_checkpoint(tmp_path / "no_such_dir" / "x.ckpt")


@pytest.mark.parametrize("suffix", [".ofm", ".onnx"])
def test_export_then_serve(mlp, tmp_path, suffix):
    model, path = mlp
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    out_path = tmp_path / ("trained" + suffix)
    with oneflow.TrainingSession(path, OPTS) as s:
        train(s, batches(3, seed=1))
        trained = s.parameters
        try:
            s.export_model(out_path)
        except oneflow.UnsupportedError as e:
            pytest.skip(f"this library has no ONNX exporter: {e}")
    want = Mlp.forward(trained, x.astype(np.float64))[2]
    assert not np.allclose(want, Mlp.forward(model.params, x.astype(np.float64))[2])  # training moved it
    with oneflow.Session(out_path) as served:
        assert [i.name for i in served.inputs] == ["x"]  # no labels, no loss: the model as loaded
        assert [o.name for o in served.outputs] == ["logits"]
        np.testing.assert_allclose(served.run({"x": x})["logits"], want, rtol=1e-5, atol=1e-6)
    if suffix == ".onnx":
        ort = pytest.importorskip("onnxruntime")
        sess = ort.InferenceSession(str(out_path), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6)


def test_save_model_converts(mlp, tmp_path):
    model, path = mlp
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    want = Mlp.forward(model.params, x.astype(np.float64))[2]
    oneflow.save_model(path, tmp_path / "m.ofm")
    assert (tmp_path / "m.ofm").read_bytes()[:4] != open(path, "rb").read()[:4]  # a different container
    oneflow.save_model(open(path, "rb").read(), tmp_path / "ext.ofm", external_data_file="ext.weights",
                       checksums=False)
    assert (tmp_path / "ext.weights").stat().st_size >= sum(v.nbytes for v in model.params.values())
    for saved in ("m.ofm", "ext.ofm"):
        with oneflow.Session(tmp_path / saved) as s:
            np.testing.assert_allclose(s.run({"x": x})["logits"], want, rtol=1e-5, atol=1e-6)
    # A training session trains a native model as well.
    with oneflow.TrainingSession(tmp_path / "m.ofm", OPTS) as t:
        assert t.parameter_names == ("W1", "b1", "W2", "b2")
    with pytest.raises(ValueError, match="format"):
        oneflow.save_model(path, tmp_path / "x.ofm", format="zip")
    with pytest.raises(oneflow.OneflowError):
        oneflow.save_model(path, tmp_path / "x.bin")  # no format from the extension


def test_frozen_parameters_stay(mlp, tmp_path):
    model, path = mlp
    opts = oneflow.TrainingOptions(logits_output="logits", optimizer="sgd", learning_rate=0.1, frozen=["W1", "b*"])
    with oneflow.TrainingSession(path, opts) as s:
        assert s.parameter_names == ("W2",)
        train(s, batches(2))
        assert not np.array_equal(s.get_parameter("W2"), model.params["W2"])
        with pytest.raises(oneflow.NotFoundError, match="W1"):
            s.get_parameter("W1")  # frozen: not a trained parameter
        s.export_model(tmp_path / "frozen.ofm")
        params = dict(model.params, W2=s.get_parameter("W2"))  # the frozen ones as loaded
    x = np.ones((1, 4), np.float32)
    with oneflow.Session(tmp_path / "frozen.ofm") as served:
        np.testing.assert_allclose(served.run({"x": x})["logits"], Mlp.forward(params, x.astype(np.float64))[2],
                                   rtol=1e-5, atol=1e-6)
