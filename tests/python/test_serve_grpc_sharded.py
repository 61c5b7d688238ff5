"""`oneflow serve` over gRPC with tritonclient.grpc, and sharded models: served in process over a
placement, and under `oneflow launch -n 2` with rank 0 fanning each batch out; outputs against
onnxruntime."""
import concurrent.futures
import json

import numpy as np
import onnxruntime as ort
import pytest

from serve_support import ServerProcess, mlp_model, server_fixture

grpcclient = pytest.importorskip("tritonclient.grpc", reason="tritonclient[grpc] is not installed")
httpclient = pytest.importorskip("tritonclient.http", reason="tritonclient[http] is not installed")
from tritonclient.utils import InferenceServerException  # noqa: E402

SHARDED_CONFIG = """
max_batch_size: 16
dynamic_batching { max_queue_delay_microseconds: 1000 }
parameters { key: "placement" value { string_value: "cpu:0-1" } }
parameters { key: "plan_mode" value { string_value: "data" } }
"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    rng = np.random.default_rng(7)
    mlp_model(str(root / "mlp" / "1" / "model.onnx"), rng, (16, 64, 32, 8))
    mlp_model(str(root / "mlp_tp" / "1" / "model.onnx"), np.random.default_rng(7), (16, 64, 32, 8))
    (root / "mlp_tp" / "config.pbtxt").write_text(SHARDED_CONFIG)
    return root


@pytest.fixture(scope="module")
def reference(repository):
    return ort.InferenceSession(str(repository / "mlp" / "1" / "model.onnx"), providers=["CPUExecutionProvider"])


server = server_fixture("--threads", "2")


def grpc_infer(client, model, x, **kw):
    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    return client.infer(model, [inp], **kw)


def test_grpc_health_metadata_config(server):
    c = grpcclient.InferenceServerClient(server.grpc)
    assert c.is_server_live() and c.is_server_ready()
    assert c.is_model_ready("mlp") and c.is_model_ready("mlp_tp")
    meta = c.get_server_metadata()
    assert meta.name == "oneflow" and "binary_tensor_data" in meta.extensions
    m = c.get_model_metadata("mlp")
    assert m.versions == ["1"] and m.inputs[0].name == "x" and list(m.inputs[0].shape) == [-1, 16]
    assert m.inputs[0].datatype == "FP32" and list(m.outputs[0].shape) == [-1, 8]
    config = c.get_model_config("mlp").config
    assert config.max_batch_size == 32 and config.input[0].name == "x"
    index = {(e.name, e.version): e.state for e in c.get_model_repository_index().models}
    assert index == {("mlp", "1"): "READY", ("mlp_tp", "1"): "READY"}


def test_grpc_infer_matches_onnxruntime(server, reference):
    c = grpcclient.InferenceServerClient(server.grpc)
    rng = np.random.default_rng(1)
    for batch in (1, 3, 32):
        x = rng.standard_normal((batch, 16)).astype(np.float32)
        r = grpc_infer(c, "mlp", x, request_id=f"req-{batch}")
        np.testing.assert_allclose(r.as_numpy("y"), reference.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
        assert r.get_response().id == f"req-{batch}" and r.get_response().model_version == "1"


def test_grpc_errors_have_codes_and_name_the_problem(server):
    c = grpcclient.InferenceServerClient(server.grpc)
    x = np.zeros((2, 16), np.float32)
    cases = [
        (lambda: grpc_infer(c, "nope", x), "StatusCode.NOT_FOUND", "unknown model 'nope'"),
        (lambda: grpc_infer(c, "mlp", x, model_version="9"), "StatusCode.NOT_FOUND", "version '9'"),
        (lambda: grpc_infer(c, "mlp", np.zeros((2, 15), np.float32)), "StatusCode.INVALID_ARGUMENT", "shape [2,15]"),
        (lambda: grpc_infer(c, "mlp", np.zeros((40, 16), np.float32)), "StatusCode.INVALID_ARGUMENT", "batch size 40"),
    ]
    for call, status, text in cases:
        with pytest.raises(InferenceServerException) as e:
            call()
        assert e.value.status() == status and text in e.value.message(), (status, text, str(e.value))
    inp = grpcclient.InferInput("x", [2, 16], "FP64")
    inp.set_data_from_numpy(np.zeros((2, 16), np.float64))
    with pytest.raises(InferenceServerException, match="datatype FP64 but model 'mlp' expects FP32"):
        c.infer("mlp", [inp])
    with pytest.raises(InferenceServerException, match="has no output 'z'"):
        c.infer("mlp", [grpcclient.InferInput("x", [2, 16], "FP32").set_data_from_numpy(x)],
                outputs=[grpcclient.InferRequestedOutput("z")])
    # A raw payload of the wrong size (the client library checks sizes itself, so send it raw).
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    import grpc
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(server.grpc))
    req = service_pb2.ModelInferRequest(model_name="mlp")
    req.inputs.add(name="x", datatype="FP32", shape=[2, 16])
    req.raw_input_contents.append(b"\0" * 100)
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "holds 100 bytes" in e.value.details()
    # The server is unharmed.
    assert grpc_infer(c, "mlp", x).as_numpy("y").shape == (2, 8)


def test_grpc_32_concurrent_clients(server, reference):
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal((int(rng.integers(1, 5)), 16)).astype(np.float32) for _ in range(256)]

    def one(i):
        c = grpcclient.InferenceServerClient(server.grpc)
        return i, grpc_infer(c, "mlp", inputs[i]).as_numpy("y")

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        for i, y in pool.map(one, range(len(inputs))):
            np.testing.assert_allclose(y, reference.run(None, {"x": inputs[i]})[0], rtol=1e-5, atol=1e-5)


def test_sharded_in_process_matches_single_device(server, reference):
    c = grpcclient.InferenceServerClient(server.grpc)
    h = httpclient.InferenceServerClient(server.http)
    rng = np.random.default_rng(3)
    for batch in (1, 7, 16):
        x = rng.standard_normal((batch, 16)).astype(np.float32)
        want = reference.run(None, {"x": x})[0]
        np.testing.assert_allclose(grpc_infer(c, "mlp_tp", x).as_numpy("y"), want, rtol=1e-5, atol=1e-5)
        inp = httpclient.InferInput("x", list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        np.testing.assert_allclose(h.infer("mlp_tp", [inp]).as_numpy("y"), want, rtol=1e-5, atol=1e-5)
    # The config shows the plan: the batch split over both devices (data parallel).
    plan = json.loads(h.get_model_config("mlp_tp")["parameters"]["oneflow_plan"]["string_value"])
    assert plan["placement"] == "cpu:0-1" and plan["devices"] == 2 and plan["mode"] == "data"
    assert any("S(0)" in op["in"] for op in plan["ops"]), plan["ops"]


def test_sharded_under_launch_two_ranks(repository, reference):
    s = ServerProcess(repository, "--threads", "1", launch=2)
    try:
        c = grpcclient.InferenceServerClient(s.grpc)
        rng = np.random.default_rng(4)
        inputs = [rng.standard_normal((int(rng.integers(1, 17)), 16)).astype(np.float32) for _ in range(24)]

        def one(i):
            return i, grpc_infer(grpcclient.InferenceServerClient(s.grpc), "mlp_tp", inputs[i]).as_numpy("y")

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for i, y in pool.map(one, range(len(inputs))):
                np.testing.assert_allclose(y, reference.run(None, {"x": inputs[i]})[0], rtol=1e-5, atol=1e-5)
        assert c.is_model_ready("mlp")  # a local model on rank 0 beside the sharded one
        assert s.terminate(timeout=60) == 0, s.log
        assert "rank 1: stopped by rank 0" in s.log and "rank 1: loaded sharded model 'mlp_tp'" in s.log, s.log
    finally:
        s.kill()
