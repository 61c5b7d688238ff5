"""oneflow.from_dlpack: imports any DLPack producer (numpy arrays, torch tensors, oneflow tensors)."""
from __future__ import annotations

from typing import Any

from . import _oneflow

_CPU = 1  # DLPack kDLCPU


def from_dlpack(x: Any, /) -> _oneflow.Tensor:
    """A oneflow.Tensor sharing `x`'s memory (no copy). `x` must be a C-contiguous CPU tensor with a
    dtype the engine has; a read-only producer (e.g. a read-only numpy array) gives a read-only tensor."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} does not implement the DLPack protocol (__dlpack__)")
    if hasattr(x, "__dlpack_device__"):
        device_type = int(x.__dlpack_device__()[0])
        if device_type != _CPU:
            raise BufferError(f"the tensor is on DLPack device type {device_type}; oneflow tensors live on the CPU")
    try:
        capsule = x.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0 takes no max_version
        capsule = x.__dlpack__()
    return _oneflow._tensor_from_capsule(capsule)
