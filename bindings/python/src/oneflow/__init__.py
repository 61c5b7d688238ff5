"""oneflow: the Python binding of the OneFlow engine, a thin layer over liboneflow.so's C ABI.

    import numpy as np, oneflow
    with oneflow.Session("model.onnx", oneflow.SessionOptions(threads=2)) as s:
        y = s.run({"x": np.ones((1, 4), np.float32)})["y"]

The engine library is the one bundled in this package at build time, or the file the environment
variable ONEFLOW_LIBRARY names (read once, at import).
"""
import os as _os

from . import _oneflow


def _library_path() -> str:
    explicit = _os.environ.get("ONEFLOW_LIBRARY")
    if explicit:
        return explicit
    bundled = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "liboneflow.so")
    if not _os.path.exists(bundled):
        raise ImportError(f"{bundled} is missing (reinstall the package) and ONEFLOW_LIBRARY is not set")
    return bundled


_oneflow._load(_library_path())

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
from ._session import Session, SessionOptions, ValueInfo  # noqa: E402

#: The loaded library's version (the package bundles the library it was built with).
__version__: str = _oneflow.version()
#: The C ABI version the loaded library implements.
ABI_VERSION: int = _oneflow.api_version()

__all__ = [
    "ABI_VERSION", "ExecutionError", "InternalError", "InvalidArgumentError", "InvalidModelError", "IoError",
    "NotFoundError", "OneflowError", "OutOfMemoryError", "Session", "SessionOptions", "Tensor",
    "UnsupportedError", "ValueInfo", "__version__", "from_dlpack",
]
