"""`oneflow serve` over HTTP as users drive it: the real tritonclient.http client (JSON and binary
tensors) and raw http.client / socket requests for malformed input, against a server started as a
subprocess (`oneflow serve` on port 0) over a Triton-style repository of ONNX models generated here.
Every answer is checked against onnxruntime or numpy, never against the server's earlier output.

The CLI comes from ONEFLOW_CLI (ctest passes $<TARGET_FILE:oneflow_cli>), else build/oneflow under
the repository root; without either the file is skipped.

    ONEFLOW_CLI=build/oneflow python3 -m pytest -q tests/python/test_serve_http.py
"""
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tests build their models with the onnx package")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
httpclient = pytest.importorskip("tritonclient.http", reason="tritonclient[http] is the client under test")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60

# ---------------------------------------------------------------------------------------------
# The CLI and a server subprocess
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def cli():
    env = os.environ.get("ONEFLOW_CLI")
    path = Path(env) if env else REPO_ROOT / "build" / "oneflow"
    if not env and not path.exists():
        pytest.skip(f"no oneflow CLI: set ONEFLOW_CLI or build {path}")
    # The binary may be in the middle of a rebuild: give it a moment to reappear.
    deadline = time.monotonic() + 60
    while not (path.is_file() and os.access(path, os.X_OK)):
        if time.monotonic() > deadline:
            pytest.fail(f"ONEFLOW_CLI={path} is not an executable file")
        time.sleep(0.5)
    return str(path.resolve())


class Server:
    """`oneflow serve` as a subprocess: HTTP and metrics on ports the kernel picks (read back from the
    log line), gRPC off, stderr collected by a background thread for failure messages."""

    PORTS = re.compile(r"HTTP on [^\s;]+:(\d+)")
    METRICS_PORT = re.compile(r"metrics on [^\s;]+:(\d+)/metrics")

    def __init__(self, cli, repository, *args, require_ready=True):
        self.repository = Path(repository)
        self.lines = []
        self._ports_seen = threading.Event()
        self.http_port = self.metrics_port = None
        command = [cli, "serve", "--model-repository", str(repository), "--host", "127.0.0.1", "--http-port", "0",
                   "--grpc-port", "-1", "--metrics-port", "0", "--threads", "2", *args]
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        try:
            self._wait_started(require_ready)
        except BaseException:
            self.kill()
            raise

    def _read_stderr(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self.lines.append(line)
            http_match, metrics_match = self.PORTS.search(line), self.METRICS_PORT.search(line)
            if http_match and metrics_match:
                self.http_port, self.metrics_port = int(http_match.group(1)), int(metrics_match.group(1))
                self._ports_seen.set()

    def log(self):
        return "".join(self.lines)

    def _wait_started(self, require_ready):
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ports_seen.wait(0.05):
            if self.proc.poll() is not None:
                self._reader.join(5)
                pytest.fail(f"oneflow serve exited with {self.proc.returncode} before serving:\n{self.log()}")
            if time.monotonic() > deadline:
                pytest.fail(f"oneflow serve did not report its ports in {START_TIMEOUT_S} s:\n{self.log()}")
        path = "/v2/health/ready" if require_ready else "/v2/health/live"
        while True:
            try:
                status, _, _ = request("GET", self.http_port, path)
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"GET {path} never answered 200:\n{self.log()}")
            time.sleep(0.05)

    @property
    def url(self):
        return f"127.0.0.1:{self.http_port}"

    def client(self):
        return httpclient.InferenceServerClient(self.url, connection_timeout=30, network_timeout=60)

    def metrics(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=30)
        try:
            conn.request("GET", "/metrics")
            response = conn.getresponse()
            assert response.status == 200, response.read()
            return parse_prometheus(response.read().decode())
        finally:
            conn.close()

    def alive(self):
        return self.proc.poll() is None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(30)
        finally:
            self._reader.join(5)


@pytest.fixture()
def make_server(cli):
    """Starts servers for one test; every one is killed at teardown whatever happened."""
    started = []

    def start(repository, *args, require_ready=True):
        server = Server(cli, repository, *args, require_ready=require_ready)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def request(method, port, path, body=None, headers=None, timeout=30):
    """One raw HTTP request on a fresh connection: (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def parse_prometheus(text):
    """{(name, frozenset(labels.items())): value} of the text exposition format."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$", line)
        assert m, f"unparsable metrics line: {line!r}"
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        samples[(m.group(1), frozenset(labels.items()))] = float(m.group(3))
    return samples


def metric(samples, name, model, version="1", **labels):
    key = (name, frozenset({"model": model, "version": version, **labels}.items()))
    assert key in samples, f"no sample {name}{{model={model},version={version},{labels}}}"
    return samples[key]


COUNTERS = ("nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
            "nv_inference_exec_count", "oneflow_inference_batch_size_sum", "oneflow_inference_batch_size_count")
BUCKETS = ("1", "2", "4", "8", "16", "32", "64", "128", "+Inf")


def model_counters(server, model):
    s = server.metrics()
    c = {name: metric(s, name, model) for name in COUNTERS}
    for le in BUCKETS:
        c[f"le={le}"] = metric(s, "oneflow_inference_batch_size_bucket", model, le=le)
    return c


def delta(before, after):
    return {k: after[k] - before[k] for k in before}


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.002)


# ---------------------------------------------------------------------------------------------
# Models (onnx.helper) and their references (onnxruntime)
# ---------------------------------------------------------------------------------------------

IN_DIM, HIDDEN, OUT_DIM = 16, 32, 8
SLOW_DIM, SLOW_LAYERS = 512, 20  # ~20 MatMuls of [512,512]x[512,512] per row: >= 50 ms on 2 cores


def make_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def mlp_model(seed):
    """y = relu(x W1 + b1) W2 + b2 over float32[N, 16]; the hidden activation is a second output."""
    rng = np.random.default_rng(seed)
    w = {"W1": rng.standard_normal((IN_DIM, HIDDEN)) / 4, "b1": rng.standard_normal(HIDDEN) / 4,
         "W2": rng.standard_normal((HIDDEN, OUT_DIM)) / 4, "b2": rng.standard_normal(OUT_DIM) / 4}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["hidden"]), helper.make_node("MatMul", ["hidden", "W2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    vi = helper.make_tensor_value_info
    return make_model(nodes, [vi("x", TP.FLOAT, ["N", IN_DIM])],
                      [vi("hidden", TP.FLOAT, ["N", HIDDEN]), vi("y", TP.FLOAT, ["N", OUT_DIM])], inits)


MULTI_INPUTS = {  # name: (numpy dtype, protocol datatype, width)
    "a": (np.int64, "INT64", 3), "b": (np.int64, "INT64", 3), "p": (np.bool_, "BOOL", 4), "q": (np.bool_, "BOOL", 4),
    "h": (np.float16, "FP16", 5), "d": (np.float64, "FP64", 5), "i8": (np.int8, "INT8", 6), "u8": (np.uint8, "UINT8", 6)}
MULTI_OUTPUTS = {"sum": (np.int64, "INT64", 3), "not_p": (np.bool_, "BOOL", 4), "and_pq": (np.bool_, "BOOL", 4),
                 "h2": (np.float16, "FP16", 5), "d2": (np.float64, "FP64", 5), "i8_out": (np.int8, "INT8", 6),
                 "u8_out": (np.uint8, "UINT8", 6)}


def multi_model():
    """Several inputs and outputs of other datatypes: INT64 Add, BOOL Not/And, FP16/FP64 Add, INT8/UINT8 Identity."""
    t = {np.int64: TP.INT64, np.bool_: TP.BOOL, np.float16: TP.FLOAT16, np.float64: TP.DOUBLE, np.int8: TP.INT8,
         np.uint8: TP.UINT8}
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Not", ["p"], ["not_p"]),
             helper.make_node("And", ["p", "q"], ["and_pq"]), helper.make_node("Add", ["h", "h"], ["h2"]),
             helper.make_node("Add", ["d", "d"], ["d2"]), helper.make_node("Identity", ["i8"], ["i8_out"]),
             helper.make_node("Identity", ["u8"], ["u8_out"])]
    vi = helper.make_tensor_value_info
    return make_model(nodes, [vi(n, t[dt], ["N", w]) for n, (dt, _, w) in MULTI_INPUTS.items()],
                      [vi(n, t[dt], ["N", w]) for n, (dt, _, w) in MULTI_OUTPUTS.items()])


def static_model():
    """y = 2x over a fixed float32[2, 3]: no dynamic leading dim, so no batching is derived."""
    vi = helper.make_tensor_value_info
    return make_model([helper.make_node("Add", ["x", "x"], ["y"])], [vi("x", TP.FLOAT, [2, 3])],
                      [vi("y", TP.FLOAT, [2, 3])])


def slow_model():
    """float32[N, 512] -> expanded to [N, 512, 512] -> SLOW_LAYERS MatMuls -> mean over axis 1: slow, small I/O."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array([1, SLOW_DIM, SLOW_DIM], np.int64), "expanded")]
    nodes = [helper.make_node("Unsqueeze", ["x", "axis1"], ["x1"]), helper.make_node("Expand", ["x1", "expanded"], ["t0"])]
    for k in range(SLOW_LAYERS):
        w = (rng.standard_normal((SLOW_DIM, SLOW_DIM)) / np.sqrt(SLOW_DIM)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"W{k}"))
        nodes.append(helper.make_node("MatMul", [f"t{k}", f"W{k}"], [f"t{k + 1}"]))
    nodes.append(helper.make_node("ReduceMean", [f"t{SLOW_LAYERS}"], ["y"], axes=[1], keepdims=0))
    vi = helper.make_tensor_value_info
    return make_model(nodes, [vi("x", TP.FLOAT, ["N", SLOW_DIM])], [vi("y", TP.FLOAT, ["N", SLOW_DIM])], inits)


def mlp_config(name, max_batch_size, extra=""):
    return f"""name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: {max_batch_size}
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {IN_DIM} ] }} ]
output [
  {{ name: "hidden" data_type: TYPE_FP32 dims: [ {HIDDEN} ] }},
  {{ name: "y" data_type: TYPE_FP32 dims: [ {OUT_DIM} ] }}
]
{extra}
"""


def slow_config(max_queue_size):
    return f"""max_batch_size: 1
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
dynamic_batching {{
  default_queue_policy {{ max_queue_size: {max_queue_size} allow_timeout_override: true }}
}}
"""


class Reference:
    """onnxruntime sessions of the generated models, by model name."""

    def __init__(self):
        self.models, self._sessions, self._lock = {}, {}, threading.Lock()

    def add(self, name, model):
        self.models[name] = model.SerializeToString()

    def run(self, name, feeds, outputs=None):
        with self._lock:
            if name not in self._sessions:
                options = ort.SessionOptions()
                options.intra_op_num_threads = 2
                self._sessions[name] = ort.InferenceSession(self.models[name], options,
                                                            providers=["CPUExecutionProvider"])
            session = self._sessions[name]
        names = outputs or [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))


def write_model(root, name, model, config=None, version=1):
    version_dir = Path(root) / name / str(version)
    version_dir.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(version_dir / "model.onnx"))
    if config is not None:
        (Path(root) / name / "config.pbtxt").write_text(config)


@pytest.fixture(scope="module")
def reference():
    r = Reference()
    r.add("mlp", mlp_model(1))  # check_good_inference's model, on every server
    return r


@pytest.fixture(scope="module")
def main_repository(tmp_path_factory, reference):
    root = tmp_path_factory.mktemp("repository")
    models = {
        "mlp": (mlp_model(1), None),  # no config: derived, max_batch_size 32, dynamic batching
        "mlp_cfg": (mlp_model(2), mlp_config("mlp_cfg", 8, "dynamic_batching { }")),
        "multi": (multi_model(), None),
        "static": (static_model(), None),
        # Test 5: a batch runs when it reaches the preferred size 4 (or after 1 s).
        "mlp_pref4": (mlp_model(3), mlp_config("mlp_pref4", 8, """dynamic_batching {
  preferred_batch_size: [ 4 ]
  max_queue_delay_microseconds: 1000000
}""")),
        # 32 clients in lock step: a batch runs only when it is full (32) or after 5 s.
        "mlp_rendezvous": (mlp_model(4), mlp_config("mlp_rendezvous", 32,
                                                    "dynamic_batching { max_queue_delay_microseconds: 5000000 }")),
        # Two single-threaded instances, no dynamic batching: one execution per request.
        "mlp2": (mlp_model(5), mlp_config("mlp2", 16, """instance_group [ { count: 2 kind: KIND_CPU } ]
parameters { key: "intra_op_threads" value { string_value: "1" } }""")),
        "slow": (slow_model(), slow_config(1)),
        "slow_q8": (slow_model(), slow_config(8)),
    }
    for name, (model, config) in models.items():
        write_model(root, name, model, config)
        reference.add(name, model)
    return root


@pytest.fixture(scope="module")
def server(cli, main_repository):
    s = Server(cli, main_repository)
    yield s
    s.kill()


# ---------------------------------------------------------------------------------------------
# Helpers for requests and answers
# ---------------------------------------------------------------------------------------------


def mlp_input(rng, batch):
    return rng.standard_normal((batch, IN_DIM)).astype(np.float32)


def infer_mlp(client, model, x, binary=True, outputs=("hidden", "y"), **kwargs):
    """outputs=None asks for none by name: the server sends all (tritonclient then asks for binary)."""
    inp = httpclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    requested = [httpclient.InferRequestedOutput(o, binary_data=binary) for o in outputs] if outputs else None
    return client.infer(model, [inp], outputs=requested, **kwargs)


def assert_mlp(reference, model, x, result, outputs=("hidden", "y")):
    want = reference.run(model, {"x": x})
    for name in outputs:
        got = result.as_numpy(name)
        assert got is not None, f"output {name} missing from {result.get_response()}"
        assert got.dtype == np.float32 and got.shape == want[name].shape, (name, got.dtype, got.shape)
        np.testing.assert_allclose(got, want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def slow_input(seed):
    return np.random.default_rng(1000 + seed).standard_normal((1, SLOW_DIM)).astype(np.float32)


def infer_slow(client, model, x, **kwargs):
    inp = httpclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    return client.infer(model, [inp], outputs=[httpclient.InferRequestedOutput("y", binary_data=True)], **kwargs)


def assert_slow(reference, model, x, y):
    want = reference.run(model, {"x": x})["y"]
    assert y is not None and y.shape == want.shape and y.dtype == np.float32
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4 * float(np.abs(want).max()))


def check_good_inference(server, reference):
    """The server still serves: one correct MLP inference on a fresh client."""
    assert server.alive(), server.log()
    x = mlp_input(np.random.default_rng(99), 2)
    assert_mlp(reference, "mlp", x, infer_mlp(server.client(), "mlp", x))


def assert_error(status, body, expected_status, *mentions):
    """A refusal: the expected status and a JSON body {"error": message} whose message names the problem."""
    assert status == expected_status, f"expected HTTP {expected_status}, got {status}: {body[:500]!r}"
    try:
        message = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        pytest.fail(f'HTTP {status} body is not JSON {{"error": ...}}: {body[:500]!r}')
    assert isinstance(message, str) and message
    for word in mentions:
        assert word.lower() in message.lower(), f"error {message!r} does not mention {word!r}"
    return message


def infer_raises(expected_status, fn, *mentions):
    with pytest.raises(InferenceServerException) as info:
        fn()
    e = info.value
    assert e.status() == str(expected_status), f"expected HTTP {expected_status}, got {e.status()}: {e.message()}"
    for word in mentions:
        assert word.lower() in e.message().lower(), f"error {e.message()!r} does not mention {word!r}"
    return e.message()


def run_threads(n, target):
    """Runs target(i) on n threads started together; returns their results (exceptions re-raised)."""
    results, errors = [None] * n, [None] * n
    barrier = threading.Barrier(n)

    def body(i):
        try:
            results[i] = target(i, barrier)
        except BaseException as e:  # noqa: BLE001 - re-raised on the main thread
            errors[i] = e
            barrier.abort()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a client thread hung"
    for e in errors:
        if e is not None and not isinstance(e, threading.BrokenBarrierError):
            raise e
    for e in errors:
        if e is not None:
            raise e
    return results


# ---------------------------------------------------------------------------------------------
# 1. Health, metadata, config
# ---------------------------------------------------------------------------------------------


def test_health_and_server_metadata(server):
    c = server.client()
    assert c.is_server_live()
    assert c.is_server_ready()
    meta = c.get_server_metadata()
    assert meta["name"] == "oneflow" and meta["version"]
    assert "binary_tensor_data" in meta["extensions"] and "model_repository" in meta["extensions"]
    for model in ("mlp", "mlp_cfg", "multi", "static", "slow"):
        assert c.is_model_ready(model), model
        assert c.is_model_ready(model, "1"), model
    assert not c.is_model_ready("no_such_model")
    assert not c.is_model_ready("mlp", "2")


def test_model_metadata(server):
    c = server.client()
    meta = c.get_model_metadata("mlp")
    assert meta["name"] == "mlp" and meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, IN_DIM]}]
    assert meta["outputs"] == [{"name": "hidden", "datatype": "FP32", "shape": [-1, HIDDEN]},
                               {"name": "y", "datatype": "FP32", "shape": [-1, OUT_DIM]}]
    assert c.get_model_metadata("mlp", "1") == meta

    multi = c.get_model_metadata("multi")
    assert [(t["name"], t["datatype"], t["shape"]) for t in multi["inputs"]] == [
        (n, dt, [-1, w]) for n, (_, dt, w) in MULTI_INPUTS.items()]
    assert [(t["name"], t["datatype"], t["shape"]) for t in multi["outputs"]] == [
        (n, dt, [-1, w]) for n, (_, dt, w) in MULTI_OUTPUTS.items()]

    static = c.get_model_metadata("static")
    assert static["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [2, 3]}]


def dims(tensor):
    return [int(d) for d in tensor.get("dims", [])]


def test_model_config_derived(server):
    c = server.client()
    cfg = c.get_model_config("mlp")
    assert cfg["name"] == "mlp"
    assert cfg["max_batch_size"] == 32
    assert [(t["name"], t["data_type"], dims(t)) for t in cfg["input"]] == [("x", "TYPE_FP32", [IN_DIM])]
    assert [(t["name"], t["data_type"], dims(t)) for t in cfg["output"]] == [
        ("hidden", "TYPE_FP32", [HIDDEN]), ("y", "TYPE_FP32", [OUT_DIM])]
    assert "dynamic_batching" in cfg

    static = c.get_model_config("static")
    assert static["max_batch_size"] == 0
    assert [(t["name"], dims(t)) for t in static["input"]] == [("x", [2, 3])]
    assert "dynamic_batching" not in static


def test_model_config_from_pbtxt(server):
    c = server.client()
    cfg = c.get_model_config("mlp_cfg")
    assert cfg["name"] == "mlp_cfg" and cfg["max_batch_size"] == 8
    assert [(t["name"], t["data_type"], dims(t)) for t in cfg["input"]] == [("x", "TYPE_FP32", [IN_DIM])]
    assert [t["name"] for t in cfg["output"]] == ["hidden", "y"]

    pref = c.get_model_config("mlp_pref4")
    assert [int(b) for b in pref["dynamic_batching"]["preferred_batch_size"]] == [4]
    assert int(pref["dynamic_batching"]["max_queue_delay_microseconds"]) == 1000000

    two = c.get_model_config("mlp2")
    assert sum(int(g["count"]) for g in two["instance_group"]) == 2
    assert all(g["kind"] == "KIND_CPU" for g in two["instance_group"])
    assert two["parameters"]["intra_op_threads"]["string_value"] == "1"

    slow = c.get_model_config("slow")
    assert slow["max_batch_size"] == 1
    assert int(slow["dynamic_batching"]["default_queue_policy"]["max_queue_size"]) == 1


# ---------------------------------------------------------------------------------------------
# 2. Inference equal to onnxruntime
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_mlp_matches_onnxruntime(server, reference, binary):
    c = server.client()
    rng = np.random.default_rng(11)
    for batch in (1, 2, 5, 32):
        x = mlp_input(rng, batch)
        result = infer_mlp(c, "mlp", x, binary=binary)
        assert result.get_response()["model_name"] == "mlp"
        assert result.get_response()["model_version"] == "1"
        assert_mlp(reference, "mlp", x, result)
        # No outputs named: all of them come back.
        assert_mlp(reference, "mlp", x, infer_mlp(c, "mlp", x, binary=binary, outputs=None))
        # A model with a config.pbtxt, at its max_batch_size.
        x = mlp_input(rng, min(batch, 8))
        assert_mlp(reference, "mlp_cfg", x, infer_mlp(c, "mlp_cfg", x, binary=binary))


def test_mlp_json_input_binary_output_and_back(server, reference):
    c = server.client()
    x = mlp_input(np.random.default_rng(12), 3)
    inp = httpclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=False)
    result = c.infer("mlp", [inp], outputs=[httpclient.InferRequestedOutput("y", binary_data=True),
                                            httpclient.InferRequestedOutput("hidden", binary_data=False)])
    assert_mlp(reference, "mlp", x, result)
    by_name = {o["name"]: o for o in result.get_response()["outputs"]}
    assert "binary_data_size" in by_name["y"].get("parameters", {}) and "data" not in by_name["y"]
    assert "data" in by_name["hidden"]


def multi_inputs(rng, batch):
    return {"a": rng.integers(-2**40, 2**40, (batch, 3), dtype=np.int64),
            "b": rng.integers(-2**40, 2**40, (batch, 3), dtype=np.int64),
            "p": rng.random((batch, 4)) < 0.5, "q": rng.random((batch, 4)) < 0.5,
            "h": (rng.standard_normal((batch, 5)) * 10).astype(np.float16),
            "d": rng.standard_normal((batch, 5)) * 1e100,
            "i8": rng.integers(-128, 128, (batch, 6), dtype=np.int8),
            "u8": rng.integers(0, 256, (batch, 6), dtype=np.uint8)}


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_multi_dtype_model_matches_onnxruntime(server, reference, binary):
    c = server.client()
    rng = np.random.default_rng(13)
    for batch in (1, 4):
        feeds = multi_inputs(rng, batch)
        inputs = []
        for name, value in feeds.items():
            inp = httpclient.InferInput(name, list(value.shape), MULTI_INPUTS[name][1])
            inp.set_data_from_numpy(value, binary_data=binary)
            inputs.append(inp)
        outputs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in MULTI_OUTPUTS]
        result = c.infer("multi", inputs, outputs=outputs)
        want = reference.run("multi", feeds)
        for name, (dtype, datatype, _) in MULTI_OUTPUTS.items():
            got = result.as_numpy(name)
            assert result.get_output(name)["datatype"] == datatype
            assert got.dtype == np.dtype(dtype) and got.shape == want[name].shape, (name, got.dtype, got.shape)
            np.testing.assert_array_equal(got, want[name], err_msg=name)


def test_integer_extremes_round_trip(server, reference):
    c = server.client()
    feeds = multi_inputs(np.random.default_rng(14), 2)
    feeds["a"] = np.array([[2**62, -2**62, 2**63 - 1], [-2**63, 0, 1]], np.int64)
    feeds["b"] = np.array([[2**62 - 1, -2**62, 0], [0, 0, -1]], np.int64)
    feeds["i8"] = np.array([[-128, 127, 0, -1, 1, 100]] * 2, np.int8)
    feeds["u8"] = np.array([[0, 255, 128, 1, 254, 7]] * 2, np.uint8)
    want = reference.run("multi", feeds)
    for binary in (False, True):
        inputs = []
        for name, value in feeds.items():
            inp = httpclient.InferInput(name, list(value.shape), MULTI_INPUTS[name][1])
            inp.set_data_from_numpy(value, binary_data=binary)
            inputs.append(inp)
        result = c.infer("multi", inputs, outputs=[httpclient.InferRequestedOutput(n, binary_data=binary)
                                                   for n in ("sum", "i8_out", "u8_out")])
        for name in ("sum", "i8_out", "u8_out"):
            np.testing.assert_array_equal(result.as_numpy(name), want[name], err_msg=f"{name} binary={binary}")


def test_subset_of_outputs(server, reference):
    c = server.client()
    feeds = multi_inputs(np.random.default_rng(15), 3)
    inputs = []
    for name, value in feeds.items():
        inp = httpclient.InferInput(name, list(value.shape), MULTI_INPUTS[name][1])
        inp.set_data_from_numpy(value, binary_data=True)
        inputs.append(inp)
    result = c.infer("multi", inputs, outputs=[httpclient.InferRequestedOutput("and_pq", binary_data=False),
                                               httpclient.InferRequestedOutput("d2", binary_data=True)])
    assert sorted(o["name"] for o in result.get_response()["outputs"]) == ["and_pq", "d2"]
    want = reference.run("multi", feeds, outputs=["and_pq", "d2"])
    np.testing.assert_array_equal(result.as_numpy("and_pq"), want["and_pq"])
    np.testing.assert_array_equal(result.as_numpy("d2"), want["d2"])
    assert result.as_numpy("sum") is None

    x = mlp_input(np.random.default_rng(16), 4)
    result = infer_mlp(c, "mlp", x, binary=False, outputs=["y"])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["y"]
    assert_mlp(reference, "mlp", x, result, outputs=("y",))


def test_request_id_is_echoed(server, reference):
    c = server.client()
    x = mlp_input(np.random.default_rng(17), 1)
    result = infer_mlp(c, "mlp", x, request_id="req-42/ü")
    assert result.get_response()["id"] == "req-42/ü"
    assert_mlp(reference, "mlp", x, result)
    assert infer_mlp(c, "mlp", x).get_response().get("id", "") == ""


def test_static_model_without_batch_dimension(server):
    c = server.client()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 3
    inp = httpclient.InferInput("x", [2, 3], "FP32")
    inp.set_data_from_numpy(x, binary_data=False)
    np.testing.assert_array_equal(c.infer("static", [inp]).as_numpy("y"), x + x)


def test_raw_json_with_nested_data(server, reference):
    x = mlp_input(np.random.default_rng(18), 2)
    body = json.dumps({"id": "nested", "inputs": [{"name": "x", "shape": [2, IN_DIM], "datatype": "FP32",
                                                   "data": x.tolist()}],
                       "outputs": [{"name": "y"}]})
    status, headers, raw = request("POST", server.http_port, "/v2/models/mlp/infer", body,
                                   {"Content-Type": "application/json"})
    assert status == 200, raw
    response = json.loads(raw)
    assert response["id"] == "nested" and response["model_name"] == "mlp"
    (y,) = response["outputs"]
    assert y["name"] == "y" and y["datatype"] == "FP32" and y["shape"] == [2, OUT_DIM]
    np.testing.assert_allclose(np.array(y["data"], np.float32).reshape(2, OUT_DIM),
                               reference.run("mlp", {"x": x})["y"], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# 3. Bad input: the right 4xx, a message naming the problem, and the server keeps serving
# ---------------------------------------------------------------------------------------------

def json_infer_body(inputs, **extra):
    return json.dumps({"inputs": inputs, **extra}).encode()


def binary_infer_body(name, array, datatype, declared_size=None, payload=None):
    header = json.dumps({"inputs": [{"name": name, "shape": list(array.shape), "datatype": datatype,
                                     "parameters": {"binary_data_size": declared_size
                                                    if declared_size is not None else array.nbytes}}]}).encode()
    data = array.tobytes() if payload is None else payload
    return header + data, {"Inference-Header-Content-Length": str(len(header)),
                           "Content-Type": "application/octet-stream"}


X1 = np.linspace(-1, 1, IN_DIM, dtype=np.float32).reshape(1, IN_DIM)


def _bad_requests():
    good_x = {"name": "x", "shape": [1, IN_DIM], "datatype": "FP32", "data": X1.ravel().tolist()}
    multi_full = {n: {"name": n, "shape": [1, w], "datatype": dt,
                      "data": [False] * w if dt == "BOOL" else [0] * w} for n, (_, dt, w) in MULTI_INPUTS.items()}
    cases = {}
    cases["malformed_json"] = ("mlp", b'{"inputs": [{"name": "x", "shape": [1, 16], ', {}, 400, ["json"])
    cases["not_an_object"] = ("mlp", b'[1, 2, 3]', {}, 400, ["object"])
    cases["no_inputs"] = ("mlp", b'{"outputs": []}', {}, 400, ["inputs"])
    body = json_infer_body([good_x])
    cases["header_length_past_body"] = ("mlp", body, {"Inference-Header-Content-Length": str(len(body) + 100)}, 400,
                                        ["Inference-Header-Content-Length"])
    cases["header_length_not_a_number"] = ("mlp", body, {"Inference-Header-Content-Length": "12abc"}, 400,
                                           ["Inference-Header-Content-Length"])
    b, h = binary_infer_body("x", X1, "FP32", payload=X1.tobytes()[:32])
    cases["truncated_binary"] = ("mlp", b, h, 400, ["'x'", "bytes"])
    b, h = binary_infer_body("x", X1, "FP32", payload=X1.tobytes() + b"0123456789")
    cases["leftover_bytes"] = ("mlp", b, h, 400, ["10 bytes"])
    b, h = binary_infer_body("x", X1, "FP32", declared_size=60, payload=X1.tobytes()[:60])
    cases["binary_size_not_matching_shape"] = ("mlp", b, h, 400, ["'x'", "60"])
    cases["wrong_input_name"] = ("mlp", json_infer_body([dict(good_x, name="bogus_input")]), {}, 400, ["bogus_input"])
    missing = [v for n, v in multi_full.items() if n != "b"]
    cases["missing_input"] = ("multi", json_infer_body(missing), {}, 400, ["'b'", "missing"])
    cases["input_given_twice"] = ("mlp", json_infer_body([good_x, good_x]), {}, 400, ["'x'", "twice"])
    cases["wrong_datatype"] = ("mlp", json_infer_body([dict(good_x, datatype="FP64")]), {}, 400, ["FP64", "FP32"])
    cases["unknown_datatype"] = ("mlp", json_infer_body([dict(good_x, datatype="FP33")]), {}, 400, ["FP33"])
    cases["wrong_shape"] = ("mlp", json_infer_body([dict(good_x, shape=[1, 15], data=good_x["data"][:15])]), {}, 400,
                            ["shape", "15"])
    cases["wrong_rank"] = ("mlp", json_infer_body([dict(good_x, shape=[IN_DIM])]), {}, 400, ["shape"])
    cases["element_count_short"] = ("mlp", json_infer_body([dict(good_x, shape=[2, IN_DIM])]), {}, 400,
                                    ["'x'", "32"])
    cases["element_count_long"] = ("mlp", json_infer_body([dict(good_x, data=good_x["data"] * 2)]), {}, 400,
                                   ["'x'", "16"])
    cases["non_number_element"] = ("mlp", json_infer_body([dict(good_x, data=["a"] * IN_DIM)]), {}, 400, ["'x'"])
    over = dict(multi_full, i8=dict(multi_full["i8"], data=[0, 0, 200, 0, 0, 0]))
    cases["int8_out_of_range"] = ("multi", json_infer_body(list(over.values())), {}, 400, ["i8", "range"])
    under = dict(multi_full, u8=dict(multi_full["u8"], data=[0, -1, 0, 0, 0, 0]))
    cases["uint8_negative"] = ("multi", json_infer_body(list(under.values())), {}, 400, ["u8", "range"])
    frac = dict(multi_full, a=dict(multi_full["a"], data=[0, 1.5, 0]))
    cases["int64_fraction"] = ("multi", json_infer_body(list(frac.values())), {}, 400, ["'a'"])
    batch9 = {"name": "x", "shape": [9, IN_DIM], "datatype": "FP32", "data": [0.0] * (9 * IN_DIM)}
    cases["batch_over_max_batch_size"] = ("mlp_cfg", json_infer_body([batch9]), {}, 400, ["batch", "8"])
    batch0 = {"name": "x", "shape": [0, IN_DIM], "datatype": "FP32", "data": []}
    cases["batch_zero"] = ("mlp", json_infer_body([batch0]), {}, 400, ["batch"])
    cases["unknown_output"] = ("mlp", json_infer_body([good_x], outputs=[{"name": "nope"}]), {}, 400, ["nope"])
    cases["negative_dimension"] = ("mlp", json_infer_body([dict(good_x, shape=[-1, IN_DIM])]), {}, 400, ["'x'"])
    cases["bad_timeout_parameter"] = ("mlp", json_infer_body([good_x], parameters={"timeout": "soon"}), {}, 400,
                                      ["timeout"])
    # A few bytes declaring a tensor of 2^40 elements: refused as a bad request, never allocated.
    cases["huge_declared_shape_json"] = ("mlp", json_infer_body([dict(good_x, shape=[1048576, 1048576], data=[])]),
                                         {}, 400, ["'x'"])
    header = json.dumps({"inputs": [{"name": "x", "shape": [1, 2**40], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 64}}]}).encode()
    cases["huge_declared_shape_binary"] = ("mlp", header + X1.tobytes(),
                                           {"Inference-Header-Content-Length": str(len(header))}, 400, ["'x'"])
    return cases


BAD_REQUESTS = _bad_requests()


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
def test_bad_request_is_refused_and_server_keeps_serving(server, reference, case):
    model, body, headers, expected, mentions = BAD_REQUESTS[case]
    status, _, raw = request("POST", server.http_port, f"/v2/models/{model}/infer", body,
                             {"Content-Type": "application/json", **headers})
    assert_error(status, raw, expected, *mentions)
    check_good_inference(server, reference)


def test_bad_requests_through_tritonclient(server, reference):
    c = server.client()
    x = mlp_input(np.random.default_rng(19), 2)
    # Wrong name, datatype, shape as a client would send them.
    inp = httpclient.InferInput("bogus_input", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    infer_raises(400, lambda: c.infer("mlp", [inp]), "bogus_input")
    inp = httpclient.InferInput("x", list(x.shape), "FP64")
    inp.set_data_from_numpy(x.astype(np.float64), binary_data=True)
    infer_raises(400, lambda: c.infer("mlp", [inp]), "FP64")
    inp = httpclient.InferInput("x", [2, 8, 2], "FP32")
    inp.set_data_from_numpy(x.reshape(2, 8, 2), binary_data=False)
    infer_raises(400, lambda: c.infer("mlp", [inp]), "shape")
    big = mlp_input(np.random.default_rng(20), 33)  # derived max_batch_size is 32
    infer_raises(400, lambda: infer_mlp(c, "mlp", big), "batch", "32")
    check_good_inference(server, reference)


def test_unknown_model_and_version(server, reference):
    c = server.client()
    x = mlp_input(np.random.default_rng(21), 1)
    infer_raises(404, lambda: infer_mlp(c, "no_such_model", x), "no_such_model")
    infer_raises(404, lambda: infer_mlp(c, "mlp", x, model_version="7"), "7")
    infer_raises(404, lambda: c.get_model_metadata("no_such_model"), "no_such_model")
    infer_raises(404, lambda: c.get_model_metadata("mlp", "7"), "7")
    infer_raises(404, lambda: c.get_model_config("no_such_model"), "no_such_model")
    for path in ("/v2/models/no_such_model/ready", "/v2/models/mlp/versions/7/ready", "/v2/models/mlp/versions/x"):
        status, _, raw = request("GET", server.http_port, path)
        assert_error(status, raw, 404)
    # The explicit version that exists serves.
    assert_mlp(reference, "mlp", x, infer_mlp(c, "mlp", x, model_version="1"))


@pytest.mark.parametrize("path", ["/", "/v1/models", "/v2/nothing", "/v2/models/mlp/infer/extra",
                                  "/v2/health/dead", "/metrics"])
def test_unknown_path_is_404(server, reference, path):
    status, _, raw = request("GET", server.http_port, path)
    assert_error(status, raw, 404)
    check_good_inference(server, reference)


@pytest.mark.parametrize("method,path", [("GET", "/v2/models/mlp/infer"), ("PUT", "/v2/models/mlp/infer"),
                                         ("DELETE", "/v2/models/mlp"), ("POST", "/v2/health/live"),
                                         ("GET", "/v2/repository/index")])
def test_wrong_http_method_is_405(server, reference, method, path):
    # The resource exists but does not take this method: 405 Method Not Allowed (as Triton answers).
    body = json_infer_body([]) if method in ("PUT", "POST") else None
    status, headers, raw = request(method, server.http_port, path, body)
    assert_error(status, raw, 405)
    check_good_inference(server, reference)


def test_body_over_the_limit_is_413(make_server, tmp_path, reference):
    write_model(tmp_path, "mlp", mlp_model(1))
    small = make_server(tmp_path, "--max-request-mb", "1")
    rows = 2 * 1024 * 1024 // (IN_DIM * 4) + 1  # ~2 MB of binary FP32 rows
    x = np.zeros((rows, IN_DIM), np.float32)
    body, headers = binary_infer_body("x", x, "FP32")
    assert len(body) > 2 * 1024 * 1024
    # libevent has no hook between the headers and the body, so the server reads a body of up to 4x
    # its limit and then refuses it with a JSON error (larger ones are cut off by libevent itself).
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", small.http_port), timeout=30) as s:
        s.sendall(f"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: localhost\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                  .encode() + body)
        response = http.client.HTTPResponse(s)
        response.begin()
        status, raw = response.status, response.read()
    assert status == 413, (status, raw[:300])
    # And as a client sees it: a 413 with a JSON error it can show.
    inp = httpclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    infer_raises(413, lambda: small.client().infer("mlp", [inp]))
    assert_error(status, raw, 413)
    check_good_inference(small, reference)
    # Far over the limit (past the 4x libevent reads): still 413, sent before the body is read, and the
    # server keeps serving. Only the headers and a little of the body are sent.
    huge = 6 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", small.http_port), timeout=30) as s:
        s.sendall(f"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: localhost\r\n{head}Content-Length: {huge}\r\n\r\n"
                  .encode() + body[:65536])
        response = http.client.HTTPResponse(s)
        response.begin()
        assert response.status == 413, (response.status, response.read()[:300])
    check_good_inference(small, reference)


def test_half_request_then_close(server, reference):
    partials = [
        b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: localhost\r\nContent-Len",
        b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{\"inputs\": [",
        b"GET /v2/health/re",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello on a plain HTTP port
    ]
    for partial in partials:
        with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as s:
            s.sendall(partial)
        # And one that resets (RST) instead of closing cleanly.
        s = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.sendall(partial)
        s.close()
    time.sleep(0.1)
    check_good_inference(server, reference)


def test_garbage_request_line_gets_400(server, reference):
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as s:
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        reply = s.recv(4096)
    assert reply.startswith(b"HTTP/1.") and reply.split()[1][:1] == b"4", reply[:200]
    check_good_inference(server, reference)


def test_client_disconnects_before_the_reply(server, reference):
    body, headers = binary_infer_body("x", slow_input(0), "FP32")
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    raw = (f"POST /v2/models/slow_q8/infer HTTP/1.1\r\nHost: localhost\r\n{head}Content-Length: {len(body)}\r\n\r\n"
           .encode() + body)
    for i in range(6):  # the first runs, the others queue behind it and are cancelled
        s = socket.create_connection(("127.0.0.1", server.http_port), timeout=10)
        s.sendall(raw)
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    # Every abandoned request is answered or dropped: nothing stays in flight.
    wait_until(lambda: metric(server.metrics(), "oneflow_inference_inflight_request_count", "slow_q8") == 0, 20,
               "the abandoned requests to leave the queue")
    assert server.alive(), server.log()
    x = slow_input(1)
    assert_slow(reference, "slow_q8", x, infer_slow(server.client(), "slow_q8", x).as_numpy("y"))
    check_good_inference(server, reference)


@pytest.mark.parametrize("where", ["infer_data", "infer_body", "repository_index"])
def test_deeply_nested_json_is_refused_not_fatal(make_server, tmp_path, reference, where):
    # ~400 KB of brackets, well under the request limit: a recursive parser must not overflow its stack.
    write_model(tmp_path, "mlp", mlp_model(1))
    srv = make_server(tmp_path)
    depth = 200_000
    nested = "[" * depth + "]" * depth
    if where == "infer_data":
        body, path = f'{{"inputs":[{{"name":"x","shape":[1,{IN_DIM}],"datatype":"FP32","data":{nested}}}]}}', \
            "/v2/models/mlp/infer"
    elif where == "infer_body":
        body, path = f'{{"inputs":{nested}}}', "/v2/models/mlp/infer"
    else:
        body, path = f'{{"ready":{nested}}}', "/v2/repository/index"
    try:
        status, _, raw = request("POST", srv.http_port, path, body.encode())
    except (ConnectionError, http.client.HTTPException) as e:
        srv.proc.wait(10)
        pytest.fail(f"the server dropped the connection ({e!r}); exit code {srv.proc.returncode}\n{srv.log()}")
    assert_error(status, raw, 400)
    check_good_inference(srv, reference)


def test_reload_under_load_keeps_serving(make_server, tmp_path, reference):
    # POST .../load of a ready model swaps in a new instance while the old one keeps serving: clients
    # hammering the model all the while never see an error.
    write_model(tmp_path, "mlp", mlp_model(1))
    srv = make_server(tmp_path)
    stop = threading.Event()
    failures, answered = [], [0] * 6

    def hammer(i):
        c = srv.client()
        rng = np.random.default_rng(100 + i)
        while not stop.is_set():
            x = mlp_input(rng, 1 + i % 3)
            try:
                result = infer_mlp(c, "mlp", x, binary=bool(i % 2))
            except InferenceServerException as e:
                failures.append((e.status(), e.message()))
                continue
            try:
                assert_mlp(reference, "mlp", x, result)
            except AssertionError as e:
                failures.append(("wrong answer", str(e)[:300]))
                continue
            answered[i] += 1

    threads = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(len(answered))]
    for t in threads:
        t.start()
    try:
        c = srv.client()
        for _ in range(300):
            c.load_model("mlp")
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert all(answered), answered
    assert not failures, f"{len(failures)} of {len(failures) + sum(answered)} requests failed during reloads: " \
                         f"{failures[:3]}"
    assert srv.alive(), srv.log()


# ---------------------------------------------------------------------------------------------
# 4. Concurrency, with metrics
# ---------------------------------------------------------------------------------------------


def test_32_concurrent_clients_match_onnxruntime_and_metrics_count_them(server, reference):
    clients, per_client = 32, 6
    rng = np.random.default_rng(23)
    work = [[mlp_input(rng, int(rng.integers(1, 4))) for _ in range(per_client)] for _ in range(clients)]
    before = model_counters(server, "mlp")

    def client_thread(i, barrier):
        c = server.client()
        assert c.is_server_live()  # connected before the start
        barrier.wait()
        out = []
        for j, x in enumerate(work[i]):
            out.append(infer_mlp(c, "mlp", x, binary=bool((i + j) % 2), request_id=f"{i}-{j}"))
        return out

    results = run_threads(clients, client_thread)
    for i in range(clients):
        for j, x in enumerate(work[i]):
            assert results[i][j].get_response()["id"] == f"{i}-{j}"
            assert_mlp(reference, "mlp", x, results[i][j])

    d = delta(before, model_counters(server, "mlp"))
    requests = clients * per_client
    rows = sum(x.shape[0] for w in work for x in w)
    assert d["nv_inference_request_success"] == requests
    assert d["nv_inference_request_failure"] == 0
    assert d["nv_inference_count"] == rows
    assert 1 <= d["nv_inference_exec_count"] <= requests
    assert d["nv_inference_count"] >= d["nv_inference_exec_count"]
    assert d["oneflow_inference_batch_size_count"] == d["nv_inference_exec_count"]
    assert d["oneflow_inference_batch_size_sum"] == rows
    assert d["le=+Inf"] == d["nv_inference_exec_count"] and d["le=64"] == d["le=+Inf"]  # max_batch_size 32


def test_32_clients_in_lock_step_run_as_full_batches(server, reference):
    # mlp_rendezvous: max_batch_size 32 and a 5 s queue delay without preferred sizes, so a batch runs
    # only once it holds 32 requests. 32 clients, each with one batch-1 request outstanding at a time,
    # make every execution a full batch of 32: exactly one execution per round.
    clients, rounds = 32, 3
    rng = np.random.default_rng(24)
    work = [[mlp_input(rng, 1) for _ in range(rounds)] for _ in range(clients)]
    before = model_counters(server, "mlp_rendezvous")

    def client_thread(i, barrier):
        c = server.client()
        assert c.is_server_live()
        barrier.wait()
        return [infer_mlp(c, "mlp_rendezvous", x, binary=bool(i % 2)) for x in work[i]]

    start = time.monotonic()
    results = run_threads(clients, client_thread)
    elapsed = time.monotonic() - start
    for i in range(clients):
        for j, x in enumerate(work[i]):
            assert_mlp(reference, "mlp_rendezvous", x, results[i][j])
    d = delta(before, model_counters(server, "mlp_rendezvous"))
    assert d["nv_inference_request_success"] == clients * rounds
    assert d["nv_inference_count"] == clients * rounds
    assert d["nv_inference_exec_count"] == rounds, (d, elapsed)
    assert d["le=16"] == 0 and d["le=32"] == rounds


# ---------------------------------------------------------------------------------------------
# 5. Dynamic batching with preferred_batch_size
# ---------------------------------------------------------------------------------------------


def test_four_concurrent_requests_run_as_one_batch_of_four(server, reference):
    rng = np.random.default_rng(25)
    xs = [mlp_input(rng, 1) for _ in range(4)]
    before = model_counters(server, "mlp_pref4")

    def client_thread(i, barrier):
        c = server.client()
        assert c.is_server_live()
        barrier.wait()
        t0 = time.monotonic()
        result = infer_mlp(c, "mlp_pref4", xs[i], binary=bool(i % 2))
        return result, time.monotonic() - t0

    results = run_threads(4, client_thread)
    for x, (result, _) in zip(xs, results):
        assert_mlp(reference, "mlp_pref4", x, result)  # each request got its own rows back
    d = delta(before, model_counters(server, "mlp_pref4"))
    assert d["nv_inference_request_success"] == 4
    assert d["nv_inference_exec_count"] == 1, d
    assert d["nv_inference_count"] == 4
    assert d["oneflow_inference_batch_size_sum"] == 4
    assert d["le=2"] == 0 and d["le=4"] == 1, d
    # The batch ran when it reached the preferred size, not after the 1 s queue delay.
    assert max(t for _, t in results) < 0.9, [t for _, t in results]


def test_preferred_batch_size_one_request_waits_the_queue_delay(server, reference):
    # Alone, a request waits max_queue_delay_microseconds (1 s) for company, then runs as a batch of 1.
    x = mlp_input(np.random.default_rng(26), 1)
    before = model_counters(server, "mlp_pref4")
    t0 = time.monotonic()
    result = infer_mlp(server.client(), "mlp_pref4", x)
    elapsed = time.monotonic() - t0
    assert_mlp(reference, "mlp_pref4", x, result)
    d = delta(before, model_counters(server, "mlp_pref4"))
    assert d["nv_inference_exec_count"] == 1 and d["le=1"] == 1
    assert 0.9 <= elapsed < 5, elapsed


# ---------------------------------------------------------------------------------------------
# 6. Queue full -> 503, timeout -> 504
# ---------------------------------------------------------------------------------------------


def test_queue_full_is_503_and_the_rest_are_correct(server, reference):
    n = 12
    before = model_counters(server, "slow")

    def client_thread(i, barrier):
        c = server.client()
        assert c.is_server_live()
        barrier.wait()
        if i > 0:
            # Request 0 goes first and is running (or done: a run takes >= 50 ms) when the rest
            # arrive, so one of them takes the queue's slot and is served: at least two succeed
            # however the threads are scheduled (on a loaded machine all 12 could otherwise meet
            # request 0 still in the queue).
            time.sleep(0.05)
        try:
            return 200, infer_slow(c, "slow", slow_input(i)).as_numpy("y")
        except InferenceServerException as e:
            return int(e.status() or 0), e.message()

    results = run_threads(n, client_thread)
    statuses = [s for s, _ in results]
    assert set(statuses) <= {200, 503}, results
    full = [m for s, m in results if s == 503]
    assert full, f"no request was refused with a queue of 1 and {n} concurrent requests: {statuses}"
    for message in full:
        assert "queue is full" in message.lower(), message
    assert statuses.count(200) >= 2, statuses  # the running one and the queued one at least
    for i, (status, y) in enumerate(results):
        if status == 200:
            assert_slow(reference, "slow", slow_input(i), y)
    d = delta(before, model_counters(server, "slow"))
    assert d["nv_inference_request_success"] == statuses.count(200)
    assert d["nv_inference_exec_count"] == statuses.count(200)  # max_batch_size 1
    check_good_inference(server, reference)


def test_timeout_in_queue_is_504(server, reference):
    c = server.client()
    model = "slow_q8"
    outcomes = {}

    def slow_request(i):
        try:
            outcomes[i] = (200, infer_slow(server.client(), model, slow_input(i)).as_numpy("y"))
        except InferenceServerException as e:
            outcomes[i] = (e.status(), e.message())

    def inflight():
        return metric(server.metrics(), "oneflow_inference_inflight_request_count", model)

    wait_until(lambda: inflight() == 0, 20, f"{model} to be idle")
    threads = [threading.Thread(target=slow_request, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    wait_until(lambda: inflight() == 3, 20, "three slow requests to be accepted")
    # Queued behind ~2 executions of >= 50 ms each, a 1 ms timeout expires before an instance is free.
    t0 = time.monotonic()
    message = infer_raises(504, lambda: infer_slow(c, model, slow_input(9), timeout=1000))
    assert "time" in message.lower(), message
    assert time.monotonic() - t0 < 20
    for t in threads:
        t.join(60)
    for i in range(3):
        assert outcomes[i][0] == 200, outcomes[i]
        assert_slow(reference, model, slow_input(i), outcomes[i][1])
    # A generous timeout does not fire.
    x = slow_input(10)
    assert_slow(reference, model, x, infer_slow(c, model, x, timeout=30_000_000).as_numpy("y"))


# ---------------------------------------------------------------------------------------------
# 9. Two instances with one intra-op thread each
# ---------------------------------------------------------------------------------------------


def test_two_instances_correct_under_concurrency(server, reference):
    clients, per_client = 8, 8
    rng = np.random.default_rng(27)
    work = [[mlp_input(rng, int(rng.integers(1, 17))) for _ in range(per_client)] for _ in range(clients)]
    before = model_counters(server, "mlp2")

    def client_thread(i, barrier):
        c = server.client()
        assert c.is_server_live()
        barrier.wait()
        return [infer_mlp(c, "mlp2", x, binary=bool(j % 2)) for j, x in enumerate(work[i])]

    results = run_threads(clients, client_thread)
    for i in range(clients):
        for j, x in enumerate(work[i]):
            assert_mlp(reference, "mlp2", x, results[i][j])
    d = delta(before, model_counters(server, "mlp2"))
    assert d["nv_inference_request_success"] == clients * per_client
    # No dynamic_batching in its config: every request is an execution of its own.
    assert d["nv_inference_exec_count"] == clients * per_client
    assert d["nv_inference_count"] == sum(x.shape[0] for w in work for x in w)


# ---------------------------------------------------------------------------------------------
# 7. Repository API
# ---------------------------------------------------------------------------------------------


def index_by_name(client):
    index = client.get_model_repository_index()
    assert isinstance(index, list)
    by_name = {}
    for entry in index:
        by_name.setdefault(entry["name"], []).append(entry)
    return by_name


@pytest.fixture()
def repository_server(make_server, tmp_path, reference):
    """A server over: good (an MLP), broken_config (a config.pbtxt with a syntax error) and garbage (a
    model.onnx of random bytes)."""
    reference.add("repo_good", mlp_model(31))
    reference.add("repo_new", mlp_model(32))
    reference.add("repo_fixed", mlp_model(33))
    write_model(tmp_path, "good", mlp_model(31))
    write_model(tmp_path, "broken_config", mlp_model(33), 'max_batch_size: 4\ninput [ { name: "x" data_type: TYPE_FP32 ')
    (tmp_path / "garbage" / "1").mkdir(parents=True)
    (tmp_path / "garbage" / "1" / "model.onnx").write_bytes(bytes(random.Random(5).randrange(256) for _ in range(4096)))
    return make_server(tmp_path, require_ready=False)


REPO_X = np.random.default_rng(34).standard_normal((3, IN_DIM)).astype(np.float32)


def assert_repo_model_serves(client, reference, name="good", ref="repo_good"):
    assert_mlp(reference, ref, REPO_X, infer_mlp(client, name, REPO_X))


def repository_post(srv, model, action, body=b""):
    """POST /v2/repository/models/{model}/{action} as curl sends it: (status, body)."""
    status, _, raw = request("POST", srv.http_port, f"/v2/repository/models/{model}/{action}", body, timeout=60)
    return status, raw


def test_repository_index_shows_broken_models_while_others_serve(repository_server, reference):
    srv = repository_server
    c = srv.client()
    index = index_by_name(c)
    assert [(e.get("version"), e["state"]) for e in index["good"]] == [("1", "READY")]
    for broken in ("broken_config", "garbage"):
        assert broken in index, index
        (entry,) = index[broken]
        assert entry["state"] == "UNAVAILABLE" and entry.get("reason"), entry
        assert not c.is_model_ready(broken)
        infer_raises(503, lambda: infer_mlp(c, broken, REPO_X), broken)
    assert "config.pbtxt" in index["broken_config"][0]["reason"], index["broken_config"]
    assert c.is_server_live()
    assert not c.is_server_ready()  # not every model is ready
    assert c.is_model_ready("good")
    assert_repo_model_serves(c, reference)
    status, _, raw = request("POST", srv.http_port, "/v2/repository/index", b'{"ready": true}')
    assert status == 200, raw
    assert [e["name"] for e in json.loads(raw)] == ["good"]
    assert srv.alive(), srv.log()


def test_model_warmup_runs_before_ready_and_a_bad_sample_is_named(make_server, tmp_path, reference):
    """Triton's model_warmup: the samples (zero, random and file data) run on every instance before
    the model is READY, and the load's log line says so; the model then answers as onnxruntime
    does. A sample naming an input the model lacks leaves that model UNAVAILABLE with the reason,
    while the other serves."""
    reference.add("warm", mlp_model(41))
    warmup = f"""instance_group [ {{ count: 2 kind: KIND_CPU }} ]
model_warmup [
  {{ name: "zeros" batch_size: 8 count: 2
    inputs {{ key: "x" value {{ data_type: TYPE_FP32 dims: [ {IN_DIM} ] zero_data: true }} }} }},
  {{ name: "random" batch_size: 3 inputs {{ key: "x" value {{ data_type: TYPE_FP32 dims: [ {IN_DIM} ] random_data: true }} }} }},
  {{ name: "file" batch_size: 1 inputs {{ key: "x" value {{ data_type: TYPE_FP32 dims: [ {IN_DIM} ] input_data_file: "x.bin" }} }} }}
]"""
    write_model(tmp_path, "warm", mlp_model(41), mlp_config("warm", 8, warmup))
    (tmp_path / "warm" / "warmup").mkdir()
    (tmp_path / "warm" / "warmup" / "x.bin").write_bytes(np.ones(IN_DIM, np.float32).tobytes())
    write_model(tmp_path, "cold", mlp_model(42), mlp_config("cold", 8, """model_warmup [
  { name: "typo" batch_size: 1 inputs { key: "X" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } }
]"""))
    srv = make_server(tmp_path, require_ready=False)
    line = next((l for l in srv.lines if "model 'warm' version 1 ready" in l), "")
    assert "warmed up: 'zeros' 2x on 2 instance(s)" in line and "'random' 1x" in line and "'file' 1x" in line, srv.log()
    c = srv.client()
    assert c.is_model_ready("warm")
    assert_mlp(reference, "warm", REPO_X, infer_mlp(c, "warm", REPO_X))
    (entry,) = index_by_name(c)["cold"]
    assert entry["state"] == "UNAVAILABLE", entry
    assert "model_warmup 'typo' gives data for 'X', which is not an input of the model" in entry["reason"], entry
    assert srv.alive(), srv.log()


def test_repository_unload_load_and_a_new_model(repository_server, reference, tmp_path):
    srv = repository_server
    c = srv.client()
    # unload (as curl sends it: no body): not ready, inference refused; load: back.
    status, raw = repository_post(srv, "good", "unload")
    assert status == 200, raw
    assert not c.is_model_ready("good")
    assert [e["state"] for e in index_by_name(c)["good"]] != ["READY"]
    infer_raises(503, lambda: infer_mlp(c, "good", REPO_X), "good")
    c.load_model("good")
    assert c.is_model_ready("good")
    assert [e["state"] for e in index_by_name(c)["good"]] == ["READY"]
    assert_repo_model_serves(c, reference)

    # A model directory added while running is listed, then loads.
    write_model(tmp_path, "newcomer", mlp_model(32))
    assert "newcomer" in index_by_name(c)
    assert not c.is_model_ready("newcomer")
    c.load_model("newcomer")
    assert c.is_model_ready("newcomer")
    assert_repo_model_serves(c, reference, "newcomer", "repo_new")
    assert c.get_model_metadata("newcomer")["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, IN_DIM]}]

    # Loading what cannot load names the problem and leaves the others serving.
    infer_raises(400, lambda: c.load_model("garbage"), "garbage")
    infer_raises(404, lambda: c.load_model("no_such_model"), "no_such_model")
    assert_repo_model_serves(c, reference)

    # The broken config, fixed on disk, loads.
    (tmp_path / "broken_config" / "config.pbtxt").write_text(mlp_config("broken_config", 4))
    c.load_model("broken_config")
    assert c.is_model_ready("broken_config")
    assert_repo_model_serves(c, reference, "broken_config", "repo_fixed")
    assert c.get_model_config("broken_config")["max_batch_size"] == 4

    # With the garbage model unloaded, every remaining model is ready, so the server is.
    status, raw = repository_post(srv, "garbage", "unload", b"{}")
    assert status == 200, raw
    assert c.is_server_ready()
    assert_repo_model_serves(c, reference)
    assert srv.alive(), srv.log()


def test_tritonclient_unload_model_and_load_model(repository_server, reference):
    # tritonclient's unload_model always sends {"parameters": {"unload_dependents": false}}.
    srv = repository_server
    c = srv.client()
    c.unload_model("good")
    assert not c.is_model_ready("good")
    infer_raises(503, lambda: infer_mlp(c, "good", REPO_X), "good")
    c.load_model("good")
    assert c.is_model_ready("good")
    assert_repo_model_serves(c, reference)
    c.unload_model("good", unload_dependents=True)
    assert not c.is_model_ready("good")


# ---------------------------------------------------------------------------------------------
# 8. SIGTERM drains
# ---------------------------------------------------------------------------------------------


def test_sigterm_drains_in_flight_requests_and_exits_0(make_server, tmp_path, reference):
    write_model(tmp_path, "slow", slow_model(), slow_config(16))
    reference.add("drain_slow", slow_model())
    drain_timeout = 20
    srv = make_server(tmp_path, "--drain-timeout-s", str(drain_timeout))
    n = 4
    outcomes = [None] * n

    def slow_request(i):
        try:
            outcomes[i] = (200, infer_slow(srv.client(), "slow", slow_input(i)).as_numpy("y"))
        except Exception as e:  # noqa: BLE001 - reported below
            outcomes[i] = ("error", repr(e))

    threads = [threading.Thread(target=slow_request, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    wait_until(lambda: metric(srv.metrics(), "oneflow_inference_inflight_request_count", "slow") == n, 20,
               f"{n} slow requests to be in flight")
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)

    # Once the signal is taken the server stops being ready: ready answers 503, or new connections
    # are no longer served.
    def not_ready():
        try:
            return request("GET", srv.http_port, "/v2/health/ready", timeout=drain_timeout + 10)[0] == 503
        except (ConnectionRefusedError, ConnectionResetError, http.client.RemoteDisconnected):
            return True

    wait_until(not_ready, 10, "ready to turn false after SIGTERM")

    for t in threads:
        t.join(drain_timeout + 10)
        assert not t.is_alive()
    try:
        rc = srv.proc.wait(drain_timeout + 10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"oneflow serve did not exit within the drain deadline:\n{srv.log()}")
    elapsed = time.monotonic() - t0
    for i, outcome in enumerate(outcomes):
        assert outcome[0] == 200, f"in-flight request {i}: {outcome}\n{srv.log()}"
        assert_slow(reference, "drain_slow", slow_input(i), outcome[1])
    assert rc == 0, srv.log()
    assert elapsed < drain_timeout, elapsed
    for port in (srv.http_port, srv.metrics_port):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_sigterm_past_the_drain_deadline_answers_the_queue_with_503(make_server, tmp_path, reference):
    # --drain-timeout-s 0: the batch already running finishes, what is still queued is answered 503,
    # and the process exits 0 promptly; no client is left without an answer.
    write_model(tmp_path, "slow", slow_model(), slow_config(16))
    reference.add("drain_slow", slow_model())
    srv = make_server(tmp_path, "--drain-timeout-s", "0")
    n = 4
    outcomes = [None] * n

    def slow_request(i):
        try:
            outcomes[i] = (200, infer_slow(srv.client(), "slow", slow_input(i)).as_numpy("y"))
        except InferenceServerException as e:
            outcomes[i] = (int(e.status() or 0), e.message())
        except Exception as e:  # noqa: BLE001 - reported below
            outcomes[i] = ("error", repr(e))

    threads = [threading.Thread(target=slow_request, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    wait_until(lambda: metric(srv.metrics(), "oneflow_inference_inflight_request_count", "slow") == n, 20,
               f"{n} slow requests to be in flight")
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(30)
        assert not t.is_alive(), "a client was left without an answer"
    rc = srv.proc.wait(30)
    assert rc == 0, srv.log()
    assert time.monotonic() - t0 < 5
    statuses = [o[0] for o in outcomes]
    assert set(statuses) <= {200, 503}, outcomes
    assert statuses.count(503) >= 1, statuses
    for i, (status, value) in enumerate(outcomes):
        if status == 200:
            assert_slow(reference, "drain_slow", slow_input(i), value)
        else:
            assert "slow" in value, value


def test_sigint_with_nothing_in_flight_exits_0_quickly(make_server, tmp_path, reference):
    write_model(tmp_path, "mlp", mlp_model(1))
    srv = make_server(tmp_path)
    check_good_inference(srv, reference)
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGINT)
    assert srv.proc.wait(15) == 0, srv.log()
    assert time.monotonic() - t0 < 5
