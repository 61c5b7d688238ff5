"""TrainingSession: a training session (oneflow_training_session_create) and TrainingOptions, which maps
1:1 to oneflow_training_options_t. The engine does all the work; this layer converts option names and
results (TrainingState, TrainingMemory) and owns nothing but the session."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _oneflow
from ._model_io import PathLike, _format_code
from ._session import ModelSource, Session, SessionOptions, _init_args

# The C enums, by the names the options take.
_ENUMS: Dict[str, Dict[str, int]] = {
    "loss": {"model_output": 0, "mse": 1, "l1": 2, "softmax_cross_entropy": 3},  # oneflow_loss_t
    "optimizer": {"sgd": 0, "adam": 1, "adamw": 2},  # oneflow_optimizer_t
    "lr_schedule": {"constant": 0, "step": 1, "cosine": 2},  # oneflow_lr_schedule_t
    "nonfinite_policy": {"skip": 0, "refuse": 1},  # oneflow_nonfinite_policy_t
}
_RUN_MODES = {"train": 0, "eval": 1}  # oneflow_run_mode_t


@dataclass(frozen=True)
class TrainingOptions:
    """oneflow_training_options_t, field for field (include/oneflow_c.h, docs/training.md). None keeps the
    engine's default (oneflow_training_options_init): softmax cross-entropy appended to `logits_output`
    against the int64 input "labels"; Adam, lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay; constant
    learning rate; no clipping; nothing frozen; NaN/Inf steps skipped. The engine validates every value
    and names the field it refuses (InvalidArgumentError)."""

    # Loss.
    loss: Optional[str] = None
    """"softmax_cross_entropy" (logits [N, C], int64 labels [N]), "mse", "l1" (labels shaped like the
    logits), or "model_output" (the model computes its loss: name it in `loss_output`)."""
    loss_output: Optional[str] = None
    """"model_output" loss: the model output holding a one-element loss."""
    logits_output: Optional[str] = None
    """Appended losses: the model output they read."""
    labels_input: Optional[str] = None
    """Appended losses: the name of the new labels input (engine default "labels")."""
    loss_reduction_sum: Optional[bool] = None
    """Appended losses: True sums over the batch, False (default) averages."""
    # Optimizer.
    optimizer: Optional[str] = None
    """"sgd" (momentum, dampening, nesterov, weight_decay as torch.optim.SGD), "adam" (default; weight
    decay as an L2 term, as torch.optim.Adam) or "adamw" (decoupled weight decay)."""
    learning_rate: Optional[float] = None
    weight_decay: Optional[float] = None
    momentum: Optional[float] = None
    dampening: Optional[float] = None
    nesterov: Optional[bool] = None
    beta1: Optional[float] = None
    beta2: Optional[float] = None
    eps: Optional[float] = None
    # Learning-rate schedule.
    lr_schedule: Optional[str] = None
    """"constant" (default), "step" (gamma ** (s // step_size)) or "cosine" (to min_lr_factor over
    decay_steps), each after an optional linear warm-up."""
    warmup_steps: Optional[int] = None
    warmup_start_factor: Optional[float] = None
    step_size: Optional[int] = None
    gamma: Optional[float] = None
    decay_steps: Optional[int] = None
    min_lr_factor: Optional[float] = None
    max_grad_norm: Optional[float] = None
    """Global gradient-norm clipping (torch.nn.utils.clip_grad_norm_); <= 0 or None disables it."""
    frozen: Sequence[str] = ()
    """Parameters kept fixed: exact names or glob patterns ('*', '?'); each must match a parameter."""
    deterministic: Optional[bool] = None
    """Bit-identical results for the same seed, thread count and inputs; needs SessionOptions.threads."""
    seed: Optional[int] = None
    nonfinite_policy: Optional[str] = None
    """NaN/Inf in the loss or a gradient at step(): "skip" (default: no update, step() returns False) or
    "refuse" (step() raises ExecutionError; gradients kept until zero_gradients())."""
    activation_checkpointing: Optional[bool] = None
    """Recompute forward segments in backward instead of keeping their activations (less memory)."""

    def _c_fields(self) -> Dict[str, Any]:
        """{oneflow_training_options_t field: value}, enums as their C values, None for the default."""
        fields: Dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _ENUMS and value is not None:
                choices = _ENUMS[f.name]
                if value not in choices:
                    raise ValueError(f"TrainingOptions.{f.name} must be one of {sorted(choices)}, not {value!r}")
                value = choices[value]
            fields[f.name] = value
        return fields


class TrainingState(NamedTuple):
    """oneflow_training_state_t."""

    step: int
    """Updates applied."""
    skipped_steps: int
    """Updates skipped by the NaN/Inf policy."""
    learning_rate: float
    """The rate the next step will use."""
    last_loss: float
    """The loss of the last train-mode run (NaN before the first)."""
    last_grad_norm: float
    """The global gradient norm before clipping at the last step (NaN before the first)."""


class TrainingMemory(NamedTuple):
    """oneflow_training_memory_t: a training step's intermediate memory, from the last input shapes."""

    forward_arena_bytes: int
    saved_activation_bytes: int
    backward_arena_bytes: int
    peak_bytes: int


class TrainingSession(Session, _oneflow._TrainingSession):
    """A model compiled for training (oneflow_training_session_create): a Session (run, run_tensors,
    inputs, outputs, close, planned_peak_bytes) plus the training calls.

    One step: `run(feeds)` in train mode (every input, the labels too; returns the model outputs and the
    loss, which is the last output), `backward()`, `step()`. Several run+backward pairs before a step
    accumulate gradients. `set_run_mode("eval")` makes `run` evaluate without keeping anything (labels
    not needed; no loss). Errors are the engine's: backward() without a train-mode run before it, step()
    without backward(), an unknown parameter name or a wrong shape raise InvalidArgumentError or
    NotFoundError; any call after close() raises ValueError."""

    parameter_names: Tuple[str, ...]
    """The trained parameters (float initializers, minus the frozen ones), in the model's order."""

    def __init__(self, model: ModelSource, training_options: Optional[TrainingOptions] = None,
                 options: Optional[SessionOptions] = None, *,
                 external_data_dir: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        if training_options is None:
            training_options = TrainingOptions()
        elif not isinstance(training_options, TrainingOptions):
            raise TypeError(f"training_options must be a oneflow.TrainingOptions, not {type(training_options).__name__}")
        _oneflow._TrainingSession.__init__(self, *_init_args(model, options, external_data_dir),
                                           training_options._c_fields())
        self._describe()
        self.parameter_names = self._parameter_names()

    def set_run_mode(self, mode: str) -> None:  # type: ignore[override]
        """"train" (a new session's mode) or "eval": the mode of the following runs."""
        if mode not in _RUN_MODES:
            raise ValueError(f"mode must be 'train' or 'eval', not {mode!r}")
        super().set_run_mode(_RUN_MODES[mode])

    @property
    def parameters(self) -> Dict[str, np.ndarray]:
        """{name: a copy of the parameter's value} for every trained parameter."""
        return {name: self.get_parameter(name) for name in self.parameter_names}

    @property
    def gradients(self) -> Dict[str, np.ndarray]:
        """{name: a copy of the accumulated gradient} for every trained parameter."""
        return {name: self.get_gradient(name) for name in self.parameter_names}

    @property
    def state(self) -> TrainingState:
        """The step counter, skipped steps, next learning rate, last loss and gradient norm."""
        return TrainingState(*self._training_state())

    @property
    def memory(self) -> TrainingMemory:
        """The memory of one training step (forward arena, kept activations, backward arena, their sum)."""
        return TrainingMemory(*self._training_memory())

    def export_model(self, path: PathLike, *, format: Optional[str] = None, external_data_file: Optional[str] = None,
                     checksums: Optional[bool] = None) -> None:
        """Saves the model as loaded (no loss, no gradients) with the current parameter values, atomically:
        ".ofm" native, ".onnx" ONNX (by the extension unless `format` says); the options are those of
        oneflow.save_model. Serve it with oneflow.Session(path)."""
        self._export_model(path, _format_code(format), external_data_file, checksums)
