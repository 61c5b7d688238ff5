"""oneflow: the Python binding of the OneFlow engine, a thin layer over liboneflow.so's C ABI.

    import numpy as np, oneflow
    with oneflow.Session("model.onnx", oneflow.SessionOptions(threads=2)) as s:
        y = s.run({"x": np.ones((1, 4), np.float32)})["y"]

    opts = oneflow.TrainingOptions(logits_output="logits", optimizer="sgd", learning_rate=0.1)
    with oneflow.TrainingSession("model.onnx", opts) as t:
        loss = t.run({"input": x, "labels": y})["loss"]; t.backward(); t.step()
        t.export_model("trained.ofm")

    with oneflow.serve("models", http_port=0) as server:   # KServe v2 over HTTP and gRPC
        print(server.http_port)

The engine library is the one bundled in this package at build time (oneflow/_native/, with the
libraries it needs), or the file the environment variable ONEFLOW_LIBRARY names (read once, at import).
The distribution is `oneflow-engine`; the `oneflow` command runs the bundled CLI.
"""
import os as _os

from . import _oneflow


def _library_path() -> str:
    explicit = _os.environ.get("ONEFLOW_LIBRARY")
    if explicit:
        return explicit
    bundled = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "_native", "liboneflow.so")
    if not _os.path.exists(bundled):
        raise ImportError(f"{bundled} is missing (reinstall the package) and ONEFLOW_LIBRARY is not set")
    return bundled


def _load_library() -> None:
    try:
        _oneflow._load(_library_path())
    except ImportError as e:
        # The loader's message names the library it could not find; say what is expected of the machine.
        hint = ("the package carries every library the engine needs except the C/C++ runtime (glibc, "
                "libstdc++) and, in a CUDA build, cuBLAS, cuDNN and NCCL, which the system must provide "
                "(docs/install.md)")
        raise ImportError(f"{e}; {hint}") from None


_load_library()

from ._dlpack import from_dlpack  # noqa: E402
from ._oneflow import (  # noqa: E402
    ExecutionError,
    InternalError,
    InvalidArgumentError,
    InvalidModelError,
    IoError,
    NotFoundError,
    OneflowError,
    OutOfMemoryError,
    Tensor,
    UnsupportedError,
)
from ._model_io import save_model  # noqa: E402
from ._server import Server, serve  # noqa: E402
from ._session import Session, SessionOptions, ValueInfo  # noqa: E402
from ._training import TrainingMemory, TrainingOptions, TrainingSession, TrainingState  # noqa: E402

#: The loaded library's version (the package bundles the library it was built with).
__version__: str = _oneflow.version()
#: The C ABI version the loaded library implements.
ABI_VERSION: int = _oneflow.api_version()

__all__ = [
    "ABI_VERSION", "ExecutionError", "InternalError", "InvalidArgumentError", "InvalidModelError", "IoError",
    "NotFoundError", "OneflowError", "OutOfMemoryError", "Server", "Session", "SessionOptions", "Tensor", "TrainingMemory",
    "TrainingOptions", "TrainingSession", "TrainingState", "UnsupportedError", "ValueInfo", "__version__",
    "from_dlpack", "save_model", "serve",
]
