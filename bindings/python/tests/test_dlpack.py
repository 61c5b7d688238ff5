"""DLPack both ways: numpy (and torch, when installed) into oneflow tensors and back, without copies,
with the producer's memory kept alive as long as a consumer holds it."""
import gc

import numpy as np
import pytest
from onnx import TensorProto

import oneflow


def test_numpy_to_oneflow_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = oneflow.from_dlpack(a)
    assert isinstance(t, oneflow.Tensor)
    assert (t.dtype, t.shape, t.ndim, t.size, t.nbytes, t.readonly) == ("float32", (3, 4), 2, 12, 48, False)
    view = t.numpy()
    assert np.shares_memory(view, a)
    a[1, 2] = -7
    assert view[1, 2] == -7
    assert np.asarray(t)[1, 2] == -7 and np.asarray(t, dtype=np.float64).dtype == np.float64
    copy = np.array(t, copy=True)
    assert not np.shares_memory(copy, a)
    assert np.shares_memory(t.__array__(copy=False), a)
    with pytest.raises(ValueError, match="copy=False"):
        t.__array__(np.float64, copy=False)


def test_imported_memory_outlives_the_producer_reference():
    a = np.arange(1000, dtype=np.int64)
    t = oneflow.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(1000))


def test_oneflow_to_numpy_shares_memory_and_outlives_the_tensor(c_api_fixture):
    from conftest import load_f32
    x, b = load_f32(c_api_fixture, "x3.f32", (3, 4)), load_f32(c_api_fixture, "b3.f32", (3, 4))
    with oneflow.Session(c_api_fixture / "model.onnx") as s:
        t = s.run_tensors({"x": x, "b": b})["y"]
    assert t.__dlpack_device__() == (1, 0)
    arr = np.from_dlpack(t)
    assert np.shares_memory(arr, t.numpy())
    del t
    gc.collect()
    np.testing.assert_allclose(arr, load_f32(c_api_fixture, "y3.f32", (3, 4)), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64", "uint8", "uint64", "bool"])
def test_round_trip_per_dtype(dtype):
    a = (np.arange(10) % 2 == 0) if dtype == "bool" else np.arange(10).astype(dtype)
    t = oneflow.from_dlpack(a)
    assert t.dtype == dtype
    back = np.from_dlpack(t)
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)


def test_imported_tensors_feed_runs(models):
    path = models.binary("mul_f64", "Mul", TensorProto.DOUBLE, [5])
    a, b = np.linspace(0, 1, 5), np.linspace(2, 3, 5)
    with oneflow.Session(path) as s:
        y = s.run({"a": oneflow.from_dlpack(a), "b": b})["y"]
    np.testing.assert_allclose(y, a * b, rtol=1e-15)


def test_read_only_arrays_give_read_only_tensors():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = oneflow.from_dlpack(a)
    assert t.readonly
    assert not t.numpy().flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        t.__dlpack__()  # a pre-1.0 capsule cannot carry the flag
    back = np.from_dlpack(t)  # numpy asks for a versioned capsule, which carries it
    assert not back.flags.writeable
    np.testing.assert_array_equal(back, a)


def test_copy_request_gives_an_independent_tensor():
    a = np.arange(6, dtype=np.float32)
    t = oneflow.from_dlpack(a)
    copied = oneflow._oneflow._tensor_from_capsule(t.__dlpack__(max_version=(1, 0), copy=True))
    a[0] = 100
    assert t.numpy()[0] == 100 and copied.numpy()[0] == 0
    np.testing.assert_array_equal(copied.numpy()[1:], a[1:])


def test_refusals():
    with pytest.raises(BufferError, match="C-contiguous"):
        oneflow.from_dlpack(np.arange(10.0)[::2])
    with pytest.raises(TypeError, match="DLPack"):
        oneflow.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="DLPack"):
        oneflow.from_dlpack(np.arange(3, dtype=np.complex64))
    capsule = np.arange(3.0).__dlpack__()
    oneflow._oneflow._tensor_from_capsule(capsule)
    with pytest.raises(TypeError, match="unconsumed"):
        oneflow._oneflow._tensor_from_capsule(capsule)  # a capsule is consumed once
    t = oneflow.from_dlpack(np.arange(3.0))
    with pytest.raises(BufferError, match="CPU"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=1)
    with pytest.raises(TypeError):
        oneflow.Tensor()


def test_torch_both_ways(models):
    torch = pytest.importorskip("torch", reason="torch is optional; numpy covers DLPack when it is absent")
    src = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = oneflow.from_dlpack(src)
    src[0, 0] = 42
    assert t.numpy()[0, 0] == 42  # zero-copy
    back = torch.from_dlpack(t)
    assert back.data_ptr() == src.data_ptr()
    path = models.unary("to_bf16_torch", "Cast", TensorProto.FLOAT, [3], out_type=TensorProto.BFLOAT16,
                        to=TensorProto.BFLOAT16)
    x = np.array([1.0, -2.5, 0.15625], np.float32)
    with oneflow.Session(path) as s:
        bf = torch.from_dlpack(s.run_tensors({"x": x})["y"])
    assert bf.dtype == torch.bfloat16
    np.testing.assert_array_equal(bf.float().numpy(), x)
