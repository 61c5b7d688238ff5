"""Session: outputs against numpy references, dynamic dims, output selection, model sources, options,
I/O descriptions, versions, zero-copy outputs and the session's life cycle."""
import os
import pathlib

import numpy as np
import pytest
from onnx import TensorProto

import oneflow
from conftest import load_f32


def reference(fixture, batch):
    x, b = (load_f32(fixture, f"{n}{batch}.f32", (batch, 4)) for n in ("x", "b"))
    return x, b, load_f32(fixture, f"y{batch}.f32", (batch, 4)), load_f32(fixture, f"z{batch}.f32", (batch, 4))


def test_run_matches_numpy_for_each_batch_of_a_dynamic_dim(c_api_fixture):
    with oneflow.Session(str(c_api_fixture / "model.onnx")) as s:
        for batch in (3, 5):  # one session, two shapes of the symbolic dim
            x, b, y, z = reference(c_api_fixture, batch)
            out = s.run({"x": x, "b": b})
            assert list(out) == ["y", "z:0/out"]
            np.testing.assert_allclose(out["y"], y, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(out["z:0/out"], z, rtol=1e-6, atol=1e-6)
            assert out["y"].dtype == np.float32 and out["y"].shape == (batch, 4)


def test_outputs_selects_and_orders(c_api_fixture):
    x, b, y, z = reference(c_api_fixture, 3)
    with oneflow.Session(c_api_fixture / "model.onnx") as s:  # a pathlib.Path
        out = s.run({"x": x, "b": b}, outputs=["z:0/out"])
        assert list(out) == ["z:0/out"]
        np.testing.assert_allclose(out["z:0/out"], z, rtol=1e-6)
        out = s.run({"x": x, "b": b}, ("z:0/out", "y"))
        assert list(out) == ["z:0/out", "y"]
        np.testing.assert_allclose(out["y"], y, rtol=1e-6)
        assert list(s.run({"x": x, "b": b}, outputs=[])) == ["y", "z:0/out"]  # empty: all, as in the C ABI


def test_model_from_bytes_and_external_data(c_api_fixture):
    xc = load_f32(c_api_fixture, "xc.f32", (2, 3))
    yc = load_f32(c_api_fixture, "yc.f32", (2, 3))
    data = (c_api_fixture / "const_model.onnx").read_bytes()
    for model in (data, bytearray(data), memoryview(data)):
        with oneflow.Session(model) as s:
            np.testing.assert_allclose(s.run({"x": xc})["y"], yc, rtol=1e-6)
    ext = c_api_fixture / "ext" / "model.onnx"
    with oneflow.Session(str(ext)) as s:
        np.testing.assert_allclose(s.run({"x": xc})["y"], yc, rtol=1e-6)
    with oneflow.Session(ext.read_bytes(), external_data_dir=str(ext.parent)) as s:
        np.testing.assert_allclose(s.run({"x": xc})["y"], yc, rtol=1e-6)
    with pytest.raises(ValueError, match="external_data_dir"):
        oneflow.Session(str(ext), external_data_dir=str(ext.parent))


def test_options_threads_and_optimization_levels_agree(c_api_fixture):
    x, b, y, _ = reference(c_api_fixture, 5)
    for threads in (None, 1, 2):
        for level in (None, 0, 1, 2):
            opts = oneflow.SessionOptions(threads=threads, optimization_level=level)
            with oneflow.Session(c_api_fixture / "model.onnx", opts) as s:
                np.testing.assert_allclose(s.run({"x": x, "b": b})["y"], y, rtol=1e-6)
    with pytest.raises(oneflow.InvalidArgumentError, match="optimization_level"):
        oneflow.Session(c_api_fixture / "model.onnx", oneflow.SessionOptions(optimization_level=7))
    with pytest.raises(oneflow.InvalidArgumentError, match="intra_op_threads"):
        oneflow.Session(c_api_fixture / "model.onnx", oneflow.SessionOptions(threads=-1))
    with pytest.raises(TypeError):
        oneflow.Session(c_api_fixture / "model.onnx", {"threads": 1})


def test_io_info_with_symbolic_and_unnamed_dims(c_api_fixture, models):
    with oneflow.Session(c_api_fixture / "model.onnx") as s:
        assert s.inputs == (oneflow.ValueInfo("x", "float32", ("batch", 4)),
                            oneflow.ValueInfo("b", "float32", ("batch", 4)))
        assert [o.name for o in s.outputs] == ["y", "z:0/out"]
        assert s.outputs[1].shape == ("batch", 4)
    path = models.unary("relu_dims", "Relu", TensorProto.FLOAT, [None, 3])  # a dim with neither value nor name
    with oneflow.Session(path) as s:
        assert s.inputs[0].shape == (None, 3)
        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
        np.testing.assert_array_equal(s.run({"x": x})["y"], np.maximum(x, 0))


def test_versions():
    assert oneflow.__version__.count(".") == 2
    assert oneflow.ABI_VERSION >= oneflow._oneflow.HEADER_API_VERSION >= 1
    # The package's metadata version is the version CMakeLists.txt declares, like the library's. The
    # distribution is oneflow-engine (PyPI's "oneflow" is another project); the import name is oneflow.
    from importlib.metadata import version
    assert version("oneflow-engine") == oneflow.__version__


def test_outputs_are_zero_copy_views_that_outlive_the_session(c_api_fixture):
    x, b, y, _ = reference(c_api_fixture, 3)
    s = oneflow.Session(c_api_fixture / "model.onnx")
    out = s.run({"x": x, "b": b})["y"]
    s.close()
    del s
    assert isinstance(out.base, oneflow.Tensor)  # the array views the engine tensor's memory
    assert out.flags.writeable and out.flags.c_contiguous
    assert np.shares_memory(out, out.base.numpy())
    np.testing.assert_allclose(out, y, rtol=1e-6)  # still valid after the session is gone
    out += 1  # the caller owns it
    np.testing.assert_allclose(out, y + 1, rtol=1e-6)


def test_inputs_needing_a_copy_give_the_same_results(c_api_fixture):
    x, b, y, _ = reference(c_api_fixture, 5)
    with oneflow.Session(c_api_fixture / "model.onnx") as s:
        x_t = np.asfortranarray(x)                       # not C-contiguous
        b_strided = np.repeat(b, 2, axis=1)[:, ::2]      # a strided view
        np.testing.assert_allclose(s.run({"x": x_t, "b": b_strided})["y"], y, rtol=1e-6)
        raw = np.zeros(x.nbytes + 1, np.uint8)[1:].view(np.float32).reshape(x.shape)  # misaligned
        raw[...] = x
        assert not raw.flags.aligned
        np.testing.assert_allclose(s.run({"x": raw, "b": b})["y"], y, rtol=1e-6)
        swapped = b.astype(">f4")                        # non-native byte order
        np.testing.assert_allclose(s.run({"x": x, "b": swapped})["y"], y, rtol=1e-6)
        # A list becomes numpy's default dtype, float64 here: the engine refuses it by name.
        with pytest.raises(oneflow.InvalidArgumentError, match="float64"):
            s.run({"x": x.tolist(), "b": b})
    # the caller's arrays are not modified
    np.testing.assert_array_equal(x, reference(c_api_fixture, 5)[0])


def test_close_and_context_manager(c_api_fixture):
    x, b, _, _ = reference(c_api_fixture, 3)
    s = oneflow.Session(c_api_fixture / "model.onnx")
    assert not s.closed and "open" in repr(s)
    s.close()
    s.close()  # idempotent
    assert s.closed and "closed" in repr(s)
    with pytest.raises(ValueError, match="closed"):
        s.run({"x": x, "b": b})
    with pytest.raises(ValueError, match="closed"):
        s.run_tensors({"x": x, "b": b})
    assert s.inputs[0].name == "x"  # descriptions stay readable
    with oneflow.Session(c_api_fixture / "model.onnx") as s2:
        s2.run({"x": x, "b": b})
    assert s2.closed
    with pytest.raises(RuntimeError, match="once"):
        s2.__init__(c_api_fixture / "model.onnx")


def test_uninitialized_session_is_refused():
    s = oneflow.Session.__new__(oneflow.Session)
    with pytest.raises(ValueError, match="not initialized"):
        s.run({})


def test_str_and_pathlike_are_paths_bytes_are_contents(c_api_fixture):
    path = c_api_fixture / "model.onnx"
    assert oneflow.Session(pathlib.PurePath(str(path))).outputs[0].name == "y"
    with pytest.raises(oneflow.InvalidModelError):  # bytes are the model itself, not a path
        oneflow.Session(os.fsencode(str(path)))


def test_many_inputs_and_outputs(models):
    """More inputs and outputs than the binding keeps on its stack (8)."""
    from onnx import helper
    n = 12
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(n)]
    path = models.build("relu12", nodes, [models.value(f"x{i}", TensorProto.FLOAT, [i + 1]) for i in range(n)],
                        [models.value(f"y{i}", TensorProto.FLOAT, [i + 1]) for i in range(n)])
    feeds = {f"x{i}": np.linspace(-1, 1, i + 1, dtype=np.float32) for i in range(n)}
    with oneflow.Session(path) as s:
        out = s.run(feeds)
        assert list(out) == [f"y{i}" for i in range(n)]
        for i in range(n):
            np.testing.assert_array_equal(out[f"y{i}"], np.maximum(feeds[f"x{i}"], 0))
        wanted = [f"y{i}" for i in reversed(range(n))]
        assert list(s.run(feeds, outputs=wanted)) == wanted
