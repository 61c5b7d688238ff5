"""Starting `oneflow serve` (or `oneflow launch -n N -- oneflow serve`) for a test, the way a user
does, and small model builders shared by the serving tests."""
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

import onnx
import pytest
from onnx import TensorProto, helper

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli_path():
    path = os.environ.get("ONEFLOW_CLI") or os.path.join(REPO_ROOT, "build", "oneflow")
    if not os.path.exists(path):
        pytest.skip(f"the oneflow CLI is not built ({path}); set ONEFLOW_CLI")
    return path


class ServerProcess:
    """`oneflow serve` on ports the system picks; `stderr` keeps the log for failure messages."""

    def __init__(self, repository, *extra, launch=0, ready_timeout=60):
        cmd = [cli_path(), "serve", "--model-repository", str(repository), "--http-port", "0", "--grpc-port", "0",
               "--metrics-port", "0", *map(str, extra)]
        if launch:
            # one host: launch picks a free port for the job's rendezvous store
            cmd = [cli_path(), "launch", "-n", str(launch), "--", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self._ports = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ports.wait(ready_timeout):
            self.kill()
            raise AssertionError("oneflow serve did not start:\n" + self.log)
        deadline = time.time() + ready_timeout
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"http://{self.http}/v2/health/live", timeout=2).status == 200:
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise AssertionError("oneflow serve never answered:\n" + self.log)

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(r"HTTP on ([\d.]+:\d+)(?:; gRPC on ([\d.]+:\d+))?(?:; metrics on ([\d.]+:\d+))?", line)
            if m:
                self.http, self.grpc, self.metrics = m.group(1), m.group(2), m.group(3)
                self._ports.set()

    @property
    def log(self):
        return "".join(self.lines)

    def terminate(self, timeout=60):
        """SIGTERM, then the exit status (the drain must end within `timeout`)."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def server_fixture(*extra):
    """A module-scoped pytest fixture: `oneflow serve` (with `extra` arguments) over the module's
    `repository` fixture, killed when the module's tests are done."""
    @pytest.fixture(scope="module")
    def server(repository):
        s = ServerProcess(repository, *extra)
        yield s
        s.kill()
    return server


def save_model(path, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, os.path.basename(os.path.dirname(os.path.dirname(path))), inputs, outputs,
                              list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)
    return path


def mlp_model(path, rng, sizes=(16, 32, 8)):
    """y = Relu(x W1 + b1) W2 + b2 over float32[N, sizes[0]] (random weights from `rng`)."""
    import numpy as np
    from onnx import numpy_helper
    inits, nodes, x = [], [], "x"
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits += [numpy_helper.from_array((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(b).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]), helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"])]
        x = f"a{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    return save_model(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", sizes[0]])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", sizes[-1]])], inits)
