"""Session: a compiled model. The engine work and the per-run conversions are in the C base class
(`_oneflow._Session`); this layer adds option and model-argument handling and the I/O descriptions.
The training session (_training.py) derives from Session."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple, Optional, Tuple, Union

from . import _oneflow

Dim = Union[int, str, None]
ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


@dataclass(frozen=True)
class SessionOptions:
    """Session settings; None keeps the engine's default (oneflow_session_options_init)."""

    threads: Optional[int] = None
    """Threads per run (intra-op); 0 or None: one per core."""
    optimization_level: Optional[int] = None
    """0 none; 1 constant folding + dead code; 2 (engine default) + fusions."""


class ValueInfo(NamedTuple):
    """A graph input or output. `shape` is None when the rank is unknown; a dim is an int when static,
    the dim's symbolic name (str) when dynamic and named, None when dynamic and unnamed. `kind` is
    "tensor", "sequence" (run() takes and returns a list of arrays), "optional" or "optional_sequence"
    (None for an empty one); for the last three, dtype and shape describe the element tensor."""

    name: str
    dtype: str
    shape: Optional[Tuple[Dim, ...]]
    kind: str = "tensor"


def _is_path(model: object) -> bool:
    return isinstance(model, (str, os.PathLike))


def _init_args(model: ModelSource, options: Optional[SessionOptions],
               external_data_dir: Optional[Union[str, "os.PathLike[str]"]]) -> tuple:
    """The C session's leading __init__ arguments (model, is_path, threads, level, external_data_dir)."""
    if options is None:
        options = SessionOptions()
    elif not isinstance(options, SessionOptions):
        raise TypeError(f"options must be a oneflow.SessionOptions, not {type(options).__name__}")
    is_path = _is_path(model)
    if is_path and external_data_dir is not None:
        raise ValueError("external_data_dir applies to a model given as bytes; a file's external data "
                         "is read from the file's directory")
    return model, is_path, options.threads, options.optimization_level, external_data_dir


class Session(_oneflow._Session):
    """A model compiled by the engine.

    `model` is a path to an ONNX file or the model's bytes (`external_data_dir` then says where its
    external data files live). `run(feeds, outputs=None)` takes {input name: array} and returns
    {output name: numpy.ndarray}; `run_tensors` returns oneflow.Tensor objects instead. Inputs that are
    C-contiguous, aligned numpy arrays of a supported dtype are read in place; other array-likes are
    copied first. Outputs are the engine's own buffers, not copies. `run` releases the GIL and may be
    called from several threads at once. `planned_peak_bytes()` is the intermediate memory of a run for
    the last input shapes. Use as a context manager or call close(); later calls raise ValueError."""

    inputs: Tuple[ValueInfo, ...]
    outputs: Tuple[ValueInfo, ...]

    def __init__(self, model: ModelSource, options: Optional[SessionOptions] = None, *,
                 external_data_dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        super().__init__(*_init_args(model, options, external_data_dir))
        self._describe()

    def _describe(self) -> None:
        self.inputs = tuple(ValueInfo(*info) for info in self._io_info(False))
        self.outputs = tuple(ValueInfo(*info) for info in self._io_info(True))

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        names = lambda infos: ", ".join(i.name for i in infos)  # noqa: E731
        return (f"<oneflow.{type(self).__name__} ({state}) inputs=[{names(self.inputs)}] "
                f"outputs=[{names(self.outputs)}]>")
