"""Saving models: oneflow.save_model (load a model, save it in another format: ONNX <-> native .ofm) and
the save options shared with TrainingSession.export_model. Both are one oneflow_graph_save call."""
from __future__ import annotations

import os
from typing import Optional, Union

from . import _oneflow
from ._session import ModelSource, _is_path

PathLike = Union[str, "os.PathLike[str]"]

# oneflow_model_format_t
_FORMATS = {"auto": 0, "onnx": 1, "native": 2}


def _format_code(format: Optional[str]) -> Optional[int]:
    if format is None:
        return None
    try:
        return _FORMATS[format]
    except (KeyError, TypeError):
        raise ValueError(f"format must be one of {sorted(_FORMATS)}, not {format!r}") from None


def save_model(model: ModelSource, path: PathLike, *, format: Optional[str] = None,
               external_data_file: Optional[str] = None, checksums: Optional[bool] = None,
               external_data_dir: Optional[PathLike] = None) -> None:
    """Loads `model` (a path, or bytes with `external_data_dir`) and saves it to `path`, atomically.

    The keyword arguments are oneflow_save_options_t's fields; None keeps the engine's default:
    `format` "auto" (by the extension: ".ofm" native, ".onnx" ONNX), "onnx" or "native";
    `external_data_file` (native only) a plain file name next to `path` that receives the weights;
    `checksums` (native only, default True) stores per-tensor checksums."""
    is_path = _is_path(model)
    if is_path and external_data_dir is not None:
        raise ValueError("external_data_dir applies to a model given as bytes")
    _oneflow._save_model(model, is_path, external_data_dir, path, _format_code(format), external_data_file,
                         checksums)
