"""The embedded inference server: `oneflow serve` inside this process (docs/serving.md)."""
from __future__ import annotations

import os
from typing import Optional

from . import _oneflow

_PORT_HTTP, _PORT_GRPC, _PORT_METRICS = 0, 1, 2


class Server:
    """A running KServe v2 server over a Triton-style model repository (HTTP, gRPC, /metrics).

    Made by :func:`serve`. Stop it with :meth:`stop` (drains accepted requests) or use it as a
    context manager; ports given as 0 are chosen by the system and readable afterwards.
    """

    def __init__(self, handle: "_oneflow._Server"):
        self._handle = handle

    @property
    def http_port(self) -> int:
        """The HTTP port (-1 when HTTP is off)."""
        return self._handle.port(_PORT_HTTP)

    @property
    def grpc_port(self) -> int:
        """The gRPC port (-1 when gRPC is off)."""
        return self._handle.port(_PORT_GRPC)

    @property
    def metrics_port(self) -> int:
        """The Prometheus metrics port (-1 when off)."""
        return self._handle.port(_PORT_METRICS)

    @property
    def ready(self) -> bool:
        """True while serving, not stopping, with every model ready."""
        return self._handle.ready()

    def stop(self, drain_timeout: float = 30.0) -> None:
        """Stops accepting requests, finishes accepted ones for up to `drain_timeout` seconds,
        then closes the ports. Idempotent."""
        if drain_timeout < 0:
            raise ValueError(f"drain_timeout must not be negative, got {drain_timeout}")
        self._handle.stop(int(drain_timeout * 1000))
        self._handle.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(model_repository: "str | os.PathLike[str]", *, host: str = "127.0.0.1", http_port: int = 8000,
          grpc_port: int = 8001, metrics_port: int = 8002, threads: int = 0, http_threads: int = 0,
          max_request_bytes: int = 256 << 20, idle_timeout: int = 60, access_log: bool = False) -> Server:
    """Starts serving `model_repository` (DIR/<model>/<version>/model.onnx or model.ofm, optional
    DIR/<model>/config.pbtxt) in this process and returns once it answers.

        with oneflow.serve("models", http_port=0, grpc_port=0) as server:
            print(server.http_port)   # tritonclient.http.InferenceServerClient(f"localhost:{...}")

    A port of 0 lets the system choose; -1 turns that front end off. `threads` (0: one per core)
    are shared by the model instances. A model that fails to load does not fail the call: it is
    listed UNAVAILABLE with its reason in /v2/repository/index.
    """
    handle = _oneflow._Server(os.fspath(model_repository), host, http_port, grpc_port, metrics_port, threads,
                              http_threads, max_request_bytes, idle_timeout, bool(access_log))
    handle.start()
    return Server(handle)
