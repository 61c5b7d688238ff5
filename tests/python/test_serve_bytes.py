"""`oneflow serve` with string tensors (KServe's BYTES datatype) as Triton's own clients send them:
tritonclient.http with JSON and binary data, tritonclient.grpc with raw contents, and gRPC's typed
bytes_contents; dynamically batched requests that must not mix their strings; malformed BYTES data and
non-UTF-8 output asked for as JSON, refused with a message. Outputs are checked against onnxruntime
running the same model."""
import concurrent.futures
import json
import struct
import urllib.error
import urllib.request

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from serve_support import server_fixture

grpcclient = pytest.importorskip("tritonclient.grpc", reason="tritonclient[grpc] is not installed")
httpclient = pytest.importorskip("tritonclient.http", reason="tritonclient[http] is not installed")
from tritonclient.utils import InferenceServerException  # noqa: E402

CONFIG = """
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 20000 }
"""


def text_model(path):
    """text: string[N, 2] -> shout = text + "!", id = LabelEncoder(text) ({"cat": 1, "dog": 2}, else -1),
    greeting = RegexFullMatch(text, "(?i)hello.*")."""
    nodes = [helper.make_node("StringConcat", ["text", "bang"], ["shout"]),
             helper.make_node("LabelEncoder", ["text"], ["id"], domain="ai.onnx.ml", keys_strings=["cat", "dog"],
                              values_int64s=[1, 2], default_int64=-1),
             helper.make_node("RegexFullMatch", ["text"], ["greeting"], pattern="(?i)hello.*")]
    graph = helper.make_graph(nodes, "text", [helper.make_tensor_value_info("text", TensorProto.STRING, ["n", 2])],
                              [helper.make_tensor_value_info("shout", TensorProto.STRING, ["n", 2]),
                               helper.make_tensor_value_info("id", TensorProto.INT64, ["n", 2]),
                               helper.make_tensor_value_info("greeting", TensorProto.BOOL, ["n", 2])],
                              [helper.make_tensor("bang", TensorProto.STRING, [], [b"!"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("ai.onnx.ml", 4)],
                              ir_version=9)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    text_model(root / "text" / "1" / "model.onnx")
    (root / "text" / "config.pbtxt").write_text(CONFIG)
    return root


@pytest.fixture(scope="module")
def reference(repository):
    return ort.InferenceSession(str(repository / "text" / "1" / "model.onnx"), providers=["CPUExecutionProvider"])


server = server_fixture("--threads", "2")


def sample(i=0):
    words = ["Hello there", "cat", "dog", "", "héllo wörld", "a b c", "Hello", "zebra"]
    return np.array([[words[(i + k) % 8], words[(3 * i + k + 1) % 8]] for k in range(1 + i % 3)], dtype=object)


def check(result_as_numpy, reference, text):
    want = dict(zip(["shout", "id", "greeting"], reference.run(None, {"text": text})))
    shout = result_as_numpy("shout")
    # tritonclient returns binary BYTES as bytes objects and JSON ones as str; onnxruntime gives str.
    as_text = [[b.decode() if isinstance(b, bytes) else b for b in row] for row in shout.tolist()]
    assert as_text == want["shout"].tolist()
    np.testing.assert_array_equal(result_as_numpy("id"), want["id"])
    np.testing.assert_array_equal(result_as_numpy("greeting"), want["greeting"])


@pytest.mark.parametrize("binary", [True, False])
def test_http_bytes_match_onnxruntime(server, reference, binary):
    client = httpclient.InferenceServerClient(server.http)
    text = sample(2)
    inp = httpclient.InferInput("text", list(text.shape), "BYTES")
    inp.set_data_from_numpy(text, binary_data=binary)
    outs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in ("shout", "id", "greeting")]
    result = client.infer("text", [inp], outputs=outs)
    check(result.as_numpy, reference, text)


def test_grpc_bytes_match_onnxruntime(server, reference):
    client = grpcclient.InferenceServerClient(server.grpc)
    text = sample(1)
    inp = grpcclient.InferInput("text", list(text.shape), "BYTES")
    inp.set_data_from_numpy(text)
    check(client.infer("text", [inp]).as_numpy, reference, text)


def test_grpc_typed_bytes_contents(server, reference):
    # bytes_contents instead of raw_input_contents: the typed field a hand-written client may use.
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    import grpc
    text = sample(0)
    req = service_pb2.ModelInferRequest(model_name="text")
    t = req.inputs.add(name="text", datatype="BYTES", shape=list(text.shape))
    t.contents.bytes_contents.extend(s.encode() for s in text.ravel())
    with grpc.insecure_channel(server.grpc) as channel:
        reply = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(req)
    shout = reply.raw_output_contents[[o.name for o in reply.outputs].index("shout")]
    got, pos = [], 0
    while pos < len(shout):
        (n,) = struct.unpack_from("<I", shout, pos)
        got.append(shout[pos + 4:pos + 4 + n].decode())
        pos += 4 + n
    assert got == reference.run(["shout"], {"text": text})[0].ravel().tolist()


def test_batched_requests_keep_their_own_strings(server, reference):
    # Sent together, the requests are joined along the batch dimension and split again: each must get
    # exactly its own strings back.
    client = httpclient.InferenceServerClient(server.http, concurrency=8)

    def one(i):
        text = sample(i)
        inp = httpclient.InferInput("text", list(text.shape), "BYTES")
        inp.set_data_from_numpy(text, binary_data=i % 2 == 0)
        return text, client.async_infer("text", [inp])

    before = counters(server)
    pending = [one(i) for i in range(16)]
    for text, request in pending:
        check(request.get_result().as_numpy, reference, text)
    after = counters(server)
    requests = after["nv_inference_request_success"] - before["nv_inference_request_success"]
    runs = after["nv_inference_exec_count"] - before["nv_inference_exec_count"]
    assert requests == 16 and runs < requests, (requests, runs)  # some requests did share a batch


def counters(server):
    """The text model's Prometheus counters."""
    text = urllib.request.urlopen(f"http://{server.metrics}/metrics").read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("nv_inference_") and 'model="text"' in line:
            out[line.split("{")[0]] = float(line.rsplit(" ", 1)[1])
    return out


def post(server, body, header_length=None):
    headers = {"Content-Type": "application/octet-stream" if header_length else "application/json"}
    if header_length:
        headers["Inference-Header-Content-Length"] = str(header_length)
    req = urllib.request.Request(f"http://{server.http}/v2/models/text/infer", data=body, headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read(int(r.headers.get("Inference-Header-Content-Length") or -1) if
                                               r.headers.get("Inference-Header-Content-Length") else None))
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("packed,message", [
    (struct.pack("<I", 5) + b"abc", "element 0 claims 5 bytes but 3 remain"),
    (struct.pack("<I", 1) + b"a" + b"\x01\x00", "ends inside the length of element 1"),
    (b"".join(struct.pack("<I", 1) + b"x" for _ in range(3)), "has 3 BYTES elements but shape [1,2] holds 2"),
])
def test_malformed_binary_bytes_are_refused(server, packed, message):
    header = json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1, 2],
                                     "parameters": {"binary_data_size": len(packed)}}]}).encode()
    status, reply = post(server, header + packed, len(header))
    assert status == 400 and message in reply["error"], reply


def test_json_bytes_must_be_strings(server):
    body = json.dumps({"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1, 2], "data": ["a", 3]}]}).encode()
    status, reply = post(server, body)
    assert status == 400 and "expected a string (datatype BYTES)" in reply["error"], reply


def test_non_utf8_output_needs_binary(server):
    client = httpclient.InferenceServerClient(server.http)
    text = np.array([[b"\xff\xfe", b"ok"]], dtype=object)
    inp = httpclient.InferInput("text", [1, 2], "BYTES")
    inp.set_data_from_numpy(text, binary_data=True)
    result = client.infer("text", [inp], outputs=[httpclient.InferRequestedOutput("shout", binary_data=True)])
    assert result.as_numpy("shout").tolist() == [[b"\xff\xfe!", b"ok!"]]
    with pytest.raises(InferenceServerException, match="not UTF-8, so JSON cannot carry it"):
        client.infer("text", [inp], outputs=[httpclient.InferRequestedOutput("shout", binary_data=False)])
    assert client.is_server_live()
