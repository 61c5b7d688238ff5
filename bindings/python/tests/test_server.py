"""oneflow.serve: the embedded server answers tritonclient (HTTP and gRPC) like `oneflow serve`,
with outputs equal to numpy's, and stops with a drain."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import oneflow

tritonclient_http = pytest.importorskip("tritonclient.http", reason="tritonclient[http] is not installed")
tritonclient_grpc = pytest.importorskip("tritonclient.grpc", reason="tritonclient[grpc] is not installed")


@pytest.fixture()
def repository(tmp_path):
    """scale: y = x * 3 + 1 over float32[N, 5]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])
    three = helper.make_tensor("three", TensorProto.FLOAT, [], [3.0])
    one = helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])
    graph = helper.make_graph([helper.make_node("Mul", ["x", "three"], ["t"]), helper.make_node("Add", ["t", "one"], ["y"])],
                              "scale", [x], [y], [three, one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (tmp_path / "scale" / "1").mkdir(parents=True)
    onnx.save(model, str(tmp_path / "scale" / "1" / "model.onnx"))
    return tmp_path


def test_serve_answers_http_and_grpc(repository):
    x = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
    with oneflow.serve(repository, http_port=0, grpc_port=0, metrics_port=-1, threads=1) as server:
        assert server.ready
        assert server.http_port > 0 and server.grpc_port > 0 and server.metrics_port == -1
        http = tritonclient_http.InferenceServerClient(f"127.0.0.1:{server.http_port}")
        assert http.is_model_ready("scale")
        inp = tritonclient_http.InferInput("x", list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        np.testing.assert_array_equal(http.infer("scale", [inp]).as_numpy("y"), x * np.float32(3) + np.float32(1))
        grpc = tritonclient_grpc.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
        inp = tritonclient_grpc.InferInput("x", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        np.testing.assert_array_equal(grpc.infer("scale", [inp]).as_numpy("y"), x * np.float32(3) + np.float32(1))
        port = server.http_port
    with pytest.raises(ValueError, match="closed"):
        server.ready  # noqa: B018 - the property raises once the server is closed
    with pytest.raises(Exception):
        tritonclient_http.InferenceServerClient(f"127.0.0.1:{port}").is_server_live()


def test_serve_errors_name_the_problem(tmp_path):
    with pytest.raises(oneflow.NotFoundError, match="not-here"):
        oneflow.serve(tmp_path / "not-here", http_port=0, grpc_port=-1, metrics_port=-1)
    with pytest.raises(oneflow.InvalidArgumentError, match="HTTP port"):
        oneflow.serve(tmp_path, http_port=70000)
    with oneflow.serve(tmp_path, http_port=0, grpc_port=-1, metrics_port=-1) as server:
        with pytest.raises(ValueError, match="negative"):
            server.stop(drain_timeout=-1)
