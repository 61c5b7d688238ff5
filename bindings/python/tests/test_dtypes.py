"""Every numpy dtype the engine shares goes in and comes out with its values (numpy is the reference);
dtypes the engine lacks are refused with TypeError; bfloat16 travels as oneflow.Tensor."""
import numpy as np
import pytest
from onnx import TensorProto

import oneflow

NUMERIC = [
    (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE), (np.float16, TensorProto.FLOAT16),
    (np.int8, TensorProto.INT8), (np.int16, TensorProto.INT16), (np.int32, TensorProto.INT32),
    (np.int64, TensorProto.INT64), (np.uint8, TensorProto.UINT8), (np.uint16, TensorProto.UINT16),
    (np.uint32, TensorProto.UINT32), (np.uint64, TensorProto.UINT64),
]


@pytest.mark.parametrize("np_type,onnx_type", NUMERIC, ids=[np.dtype(t).name for t, _ in NUMERIC])
def test_add_in_each_numeric_dtype(models, np_type, onnx_type):
    dtype = np.dtype(np_type)
    path = models.binary(f"add_{dtype.name}", "Add", onnx_type, ["n", 3])
    # Quarter steps in [-8, 8) are exact in every float type; integers stay in range of every int type.
    rng = np.random.default_rng(7)
    raw = rng.integers(0 if dtype.kind == "u" else -32, 32, size=(2, 5, 3))
    values = raw / 4 if dtype.kind == "f" else raw
    a, b = values.astype(dtype)
    with oneflow.Session(path) as s:
        assert s.inputs[0].dtype == dtype.name and s.outputs[0].dtype == dtype.name
        y = s.run({"a": a, "b": b})["y"]
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, a + b)


def test_bool_in_and_out(models):
    path = models.binary("and_bool", "And", TensorProto.BOOL, [4])
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    with oneflow.Session(path) as s:
        y = s.run({"a": a, "b": b})["y"]
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, a & b)
    with oneflow.Session(models.unary("not_bool", "Not", TensorProto.BOOL, [2, 2])) as s:
        x = np.array([[True, False], [False, True]])
        np.testing.assert_array_equal(s.run({"x": x})["y"], ~x)


def test_scalar_and_zero_sized_tensors(models):
    with oneflow.Session(models.binary("add_scalar", "Add", TensorProto.INT64, [])) as s:
        y = s.run({"a": np.int64(40), "b": np.array(2, dtype=np.int64)})["y"]
        assert y.shape == () and y == 42
    with oneflow.Session(models.unary("relu_dyn", "Relu", TensorProto.FLOAT, ["n", 3])) as s:
        y = s.run({"x": np.zeros((0, 3), np.float32)})["y"]
        assert y.shape == (0, 3) and y.dtype == np.float32


@pytest.mark.parametrize("bad", [np.zeros(3, np.complex64), np.zeros(3, "datetime64[s]")], ids=["complex64", "datetime"])
def test_dtypes_without_an_engine_counterpart_raise_type_error(models, bad):
    with oneflow.Session(models.unary("relu_any", "Relu", TensorProto.FLOAT, ["n"])) as s:
        with pytest.raises(TypeError, match="input 'x'.*no oneflow counterpart"):
            s.run({"x": bad})


def test_strings_are_a_dtype_and_other_objects_are_not(models):
    # str arrays become string tensors, which a float input refuses naming both dtypes; an object array
    # feeds strings only when each element is str or bytes.
    with oneflow.Session(models.unary("relu_str", "Relu", TensorProto.FLOAT, ["n"])) as s:
        with pytest.raises(oneflow.InvalidArgumentError, match="input 'x' has dtype string, the model expects float32"):
            s.run({"x": np.array(["a", "b"])})
        with pytest.raises(TypeError, match="input 'x': element 0 is object; a string tensor takes str or bytes"):
            s.run({"x": np.array([object()])})


def test_bfloat16_outputs_come_as_tensors_and_feed_back(models):
    to_bf16 = models.unary("to_bf16", "Cast", TensorProto.FLOAT, [4], out_type=TensorProto.BFLOAT16,
                           to=TensorProto.BFLOAT16)
    x = np.array([1.0, -2.5, 0.15625, 3072.0], np.float32)  # exact in bfloat16
    with oneflow.Session(to_bf16) as s:
        with pytest.raises(TypeError, match="bfloat16.*run_tensors"):
            s.run({"x": x})
        t = s.run_tensors({"x": x})["y"]
    assert isinstance(t, oneflow.Tensor) and t.dtype == "bfloat16" and t.shape == (4,) and t.nbytes == 8
    with pytest.raises(TypeError, match="bfloat16"):
        t.numpy()
    # Back to float32 in the engine, fed the bfloat16 tensor directly.
    from_bf16 = models.unary("from_bf16", "Cast", TensorProto.BFLOAT16, [4], out_type=TensorProto.FLOAT,
                             to=TensorProto.FLOAT)
    with oneflow.Session(from_bf16) as s:
        np.testing.assert_array_equal(s.run({"x": t})["y"], x)
    # DLPack carries it (kDLBfloat); a oneflow import of the export is the same tensor.
    again = oneflow.from_dlpack(t)
    assert again.dtype == "bfloat16" and again.shape == (4,)
    with oneflow.Session(from_bf16) as s:
        np.testing.assert_array_equal(s.run({"x": again})["y"], x)
