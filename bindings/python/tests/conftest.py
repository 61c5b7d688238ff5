"""Shared fixtures: the C API test models with their numpy references (tests/c_api/make_c_api_fixture.py)
and a small builder for single-purpose ONNX models written to a temporary directory."""
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
from onnx import helper  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.fixture(scope="session")
def c_api_fixture(tmp_path_factory):
    """Directory with model.onnx (x, b: float32[batch, 4] -> y = Relu(x + b) + x, "z:0/out" = Relu(y)),
    const_model.onnx, ext/, unknown_op.onnx ... and raw float32 references computed by numpy."""
    sys.path.insert(0, os.path.join(REPO, "tests", "c_api"))
    try:
        import make_c_api_fixture
    finally:
        sys.path.pop(0)
    out = tmp_path_factory.mktemp("c_api_fixture")
    assert make_c_api_fixture.main(str(out)) == 0
    return out


def load_f32(directory, name, shape):
    return np.fromfile(os.path.join(directory, name), dtype="<f4").reshape(shape)


class ModelBuilder:
    """Writes a one-graph ONNX model: build(name, nodes, inputs, outputs) -> path."""

    def __init__(self, directory):
        self.directory = directory

    @staticmethod
    def value(name, elem_type, shape):
        return helper.make_tensor_value_info(name, elem_type, shape)

    def build(self, name, nodes, inputs, outputs, initializers=(), opset=17):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
        path = os.path.join(self.directory, name + ".onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return path

    def unary(self, name, op, elem_type, shape, out_type=None, **attrs):
        """x -> op(x) -> y."""
        return self.build(name, [helper.make_node(op, ["x"], ["y"], **attrs)], [self.value("x", elem_type, shape)],
                          [self.value("y", out_type if out_type is not None else elem_type, shape)])

    def binary(self, name, op, elem_type, shape, out_type=None):
        """a, b -> op(a, b) -> y."""
        return self.build(name, [helper.make_node(op, ["a", "b"], ["y"])],
                          [self.value("a", elem_type, shape), self.value("b", elem_type, shape)],
                          [self.value("y", out_type if out_type is not None else elem_type, shape)])


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    return ModelBuilder(str(tmp_path_factory.mktemp("models")))
