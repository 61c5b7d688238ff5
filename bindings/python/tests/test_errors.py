"""Every engine status becomes its own exception class carrying the engine's message; wrong Python
types are TypeErrors raised by the binding."""
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import oneflow

CLASSES = {
    1: oneflow.InvalidArgumentError, 2: oneflow.NotFoundError, 3: oneflow.InvalidModelError,
    4: oneflow.UnsupportedError, 5: oneflow.OutOfMemoryError, 6: oneflow.IoError, 7: oneflow.ExecutionError,
    8: oneflow.InternalError,
}
CODE_NAMES = {1: "INVALID_ARGUMENT", 2: "NOT_FOUND", 3: "INVALID_MODEL", 4: "UNSUPPORTED", 5: "OUT_OF_MEMORY",
              6: "IO", 7: "RUNTIME", 8: "INTERNAL"}  # oneflow_code_t, from include/oneflow_c.h


def test_one_class_per_code():
    assert len(set(CLASSES.values())) == len(CLASSES)
    for code, cls in CLASSES.items():
        assert issubclass(cls, oneflow.OneflowError) and cls is not oneflow.OneflowError
        assert cls.code == code and cls.code_name == CODE_NAMES[code]
        assert cls.__module__ == "oneflow"


def raised(fn, cls):
    with pytest.raises(cls) as info:
        fn()
    assert type(info.value) is cls
    return str(info.value)


def test_run_errors_name_the_problem(c_api_fixture):
    x = np.zeros((3, 4), np.float32)
    with oneflow.Session(c_api_fixture / "model.onnx") as s:
        assert "'b' is missing" in raised(lambda: s.run({"x": x}), oneflow.InvalidArgumentError)
        assert "float64" in raised(lambda: s.run({"x": x, "b": x.astype(np.float64)}), oneflow.InvalidArgumentError)
        msg = raised(lambda: s.run({"x": x, "b": np.zeros((3, 5), np.float32)}), oneflow.InvalidArgumentError)
        assert "'b'" in msg
        assert "'c'" in raised(lambda: s.run({"x": x, "b": x, "c": x}), oneflow.NotFoundError)
        assert "'nope'" in raised(lambda: s.run({"x": x, "b": x}, outputs=["nope"]), oneflow.NotFoundError)
        s.run({"x": x, "b": x})  # still usable after errors


def test_load_errors(c_api_fixture, tmp_path):
    f = c_api_fixture
    assert "does not exist" in raised(lambda: oneflow.Session(tmp_path / "absent.onnx"), oneflow.NotFoundError)
    raised(lambda: oneflow.Session(f / "missing_ext.onnx"), oneflow.NotFoundError)
    raised(lambda: oneflow.Session(f / "escape" / "model.onnx"), oneflow.InvalidModelError)
    raised(lambda: oneflow.Session(b"not a model"), oneflow.InvalidModelError)
    raised(lambda: oneflow.Session(f / "empty.onnx"), oneflow.InvalidModelError)
    assert "FrobnicateOp" in raised(lambda: oneflow.Session(f / "unknown_op.onnx"), oneflow.UnsupportedError)
    raised(lambda: oneflow.Session(f / "opset29.onnx"), oneflow.UnsupportedError)
    assert "directory" in raised(lambda: oneflow.Session(tmp_path), oneflow.InvalidArgumentError)


def test_short_external_data_is_an_invalid_model(tmp_path):
    w = np.arange(6, dtype=np.float32)
    init = numpy_helper.from_array(w, "W")
    init.ClearField("raw_data")
    init.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(w.nbytes))):
        e = init.external_data.add()
        e.key, e.value = k, v
    graph = helper.make_graph([helper.make_node("Add", ["x", "W"], ["y"])], "short",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])], initializer=[init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    (tmp_path / "w.bin").write_bytes(w[:2].tobytes())  # shorter than the declared length
    assert "runs past the end" in raised(lambda: oneflow.Session(tmp_path / "m.onnx"), oneflow.InvalidModelError)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root opens files whatever their permissions, so the IO status cannot be provoked")
def test_unreadable_model_is_an_io_error(c_api_fixture, tmp_path):
    path = tmp_path / "locked.onnx"
    path.write_bytes((c_api_fixture / "model.onnx").read_bytes())
    path.chmod(0)
    assert "cannot open" in raised(lambda: oneflow.Session(path), oneflow.IoError)


def test_execution_error_from_a_kernel(models):
    path = models.build("gather", [helper.make_node("Gather", ["data", "idx"], ["y"])],
                        [models.value("data", TensorProto.FLOAT, [3]), models.value("idx", TensorProto.INT64, [1])],
                        [models.value("y", TensorProto.FLOAT, [1])])
    with oneflow.Session(path) as s:
        data = np.array([1, 2, 3], np.float32)
        np.testing.assert_array_equal(s.run({"data": data, "idx": np.array([2])})["y"], [3])
        assert "out of range" in raised(lambda: s.run({"data": data, "idx": np.array([7])}), oneflow.ExecutionError)


def test_binding_type_errors(c_api_fixture):
    x = np.zeros((3, 4), np.float32)
    with oneflow.Session(c_api_fixture / "model.onnx") as s:
        for call in (lambda: s.run([("x", x)]), lambda: s.run({1: x, "b": x}), lambda: s.run({"x": x, "b": x}, "y"),
                     lambda: s.run({"x": x, "b": x}, [1]), lambda: s.run(), lambda: s.run({}, None, None),
                     lambda: s.run({"x": x, "b": x}, outputs=["y"], extra=1),
                     lambda: oneflow.Session(c_api_fixture / "model.onnx", oneflow.SessionOptions(threads="2"))):
            with pytest.raises(TypeError):
                call()
