"""ctypes bindings for liboneflow.so's training C ABI (include/oneflow_c.h, "Training"), shared by
bench/train_bench.py and tests/train/transformer_train_test.py.

OneflowTrainer wraps a training session: step(feeds) = run (train mode) + backward + step;
gradient(name) / parameter(name) read tensors back as numpy arrays.
"""
import ctypes
import os

import numpy as np

import oneflow_ctypes

_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)


class TrainingOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("loss", ctypes.c_int), ("loss_output", ctypes.c_char_p),
                ("logits_output", ctypes.c_char_p), ("labels_input", ctypes.c_char_p),
                ("loss_reduction_sum", ctypes.c_int32), ("optimizer", ctypes.c_int),
                ("learning_rate", ctypes.c_float), ("weight_decay", ctypes.c_float), ("momentum", ctypes.c_float),
                ("dampening", ctypes.c_float), ("nesterov", ctypes.c_int32), ("beta1", ctypes.c_float),
                ("beta2", ctypes.c_float), ("eps", ctypes.c_float), ("lr_schedule", ctypes.c_int),
                ("warmup_steps", ctypes.c_int64), ("warmup_start_factor", ctypes.c_float),
                ("step_size", ctypes.c_int64), ("gamma", ctypes.c_float), ("decay_steps", ctypes.c_int64),
                ("min_lr_factor", ctypes.c_float), ("max_grad_norm", ctypes.c_float),
                ("frozen", ctypes.POINTER(ctypes.c_char_p)), ("num_frozen", ctypes.c_size_t),
                ("deterministic", ctypes.c_int32), ("seed", ctypes.c_uint64), ("nonfinite_policy", ctypes.c_int),
                ("activation_checkpointing", ctypes.c_int32),
                # Every field through the end of the C struct of ABI 3: oneflow_training_options_init_sized
                # refuses a smaller size.
                ("precision", ctypes.c_int), ("loss_scaling_off", ctypes.c_int32),
                ("loss_scale_initial", ctypes.c_float), ("loss_scale_growth", ctypes.c_float),
                ("loss_scale_backoff", ctypes.c_float), ("loss_scale_growth_interval", ctypes.c_int64),
                ("device_kind", ctypes.c_int32), ("device_index", ctypes.c_int32), ("cuda_graphs", ctypes.c_int32)]


class TrainingMemory(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("forward_arena_bytes", ctypes.c_uint64),
                ("saved_activation_bytes", ctypes.c_uint64), ("backward_arena_bytes", ctypes.c_uint64),
                ("peak_bytes", ctypes.c_uint64)]


LOSS_MSE, LOSS_SCE = 1, 3
OPT_ADAM = 1


def bind_training(lib):
    raw = lib._lib

    def sig(name, restype, *argtypes):
        fn = getattr(raw, name)
        fn.restype = restype
        fn.argtypes = list(argtypes)

    sig("oneflow_training_options_init_sized", ctypes.c_void_p, ctypes.POINTER(TrainingOptions), ctypes.c_size_t)
    sig("oneflow_training_session_create", _P, _P, _P, ctypes.POINTER(oneflow_ctypes._SessionOptions),
        ctypes.POINTER(TrainingOptions), _PP)
    sig("oneflow_session_backward", _P, _P)
    sig("oneflow_session_step", _P, _P, ctypes.POINTER(ctypes.c_int32))
    sig("oneflow_training_memory_init_sized", ctypes.c_void_p, ctypes.POINTER(TrainingMemory), ctypes.c_size_t)
    sig("oneflow_session_get_training_memory", _P, _P, ctypes.POINTER(TrainingMemory))
    sig("oneflow_session_get_gradient", _P, _P, ctypes.c_char_p, _PP)
    sig("oneflow_session_get_parameter", _P, _P, ctypes.c_char_p, _PP)
    sig("oneflow_session_set_parameter", _P, _P, ctypes.c_char_p, _P)


class OneflowTrainer:
    """A training session on an ONNX file; step(feeds) = run (train mode) + backward + Adam step."""

    def __init__(self, lib, path, threads, loss, logits, labels, checkpointing=False, lr=1e-3, device=0,
                 precision=0):
        """device: 0 CPU, 1 CUDA device 0; precision: 0 f32, 1 bf16, 2 f16 (the C enums)."""
        self.lib, raw = lib, lib._lib
        graph = ctypes.c_void_p()
        lib.check(raw.oneflow_graph_load_file(os.fsencode(path), ctypes.byref(graph)))
        so = oneflow_ctypes._SessionOptions()
        raw.oneflow_session_options_init_sized(ctypes.byref(so), ctypes.sizeof(so))
        so.intra_op_threads = threads
        to = TrainingOptions()
        raw.oneflow_training_options_init_sized(ctypes.byref(to), ctypes.sizeof(to))
        to.loss, to.logits_output, to.labels_input = loss, logits.encode(), labels.encode()
        to.optimizer, to.learning_rate = OPT_ADAM, lr
        to.activation_checkpointing = int(checkpointing)
        to.device_kind, to.precision = device, precision
        self.session = ctypes.c_void_p()
        try:
            lib.check(raw.oneflow_training_session_create(None, graph, ctypes.byref(so), ctypes.byref(to),
                                                          ctypes.byref(self.session)))
        finally:
            raw.oneflow_graph_release(graph)
        self._tensors = None

    def _bind(self, feeds):
        # Borrowed tensors over the numpy arrays, created once (a C caller would do the same).
        raw = self.lib._lib
        self._arrays = [np.ascontiguousarray(a) for a in feeds.values()]
        n = len(self._arrays)
        self._names = (ctypes.c_char_p * n)(*[k.encode() for k in feeds])
        self._tensors = (ctypes.c_void_p * n)()
        for i, a in enumerate(self._arrays):
            shape = (ctypes.c_int64 * a.ndim)(*a.shape)
            code = oneflow_ctypes._NP_TO_CODE[a.dtype]
            t = ctypes.c_void_p()
            self.lib.check(raw.oneflow_tensor_create_borrowed(code, shape, a.ndim, a.ctypes.data, a.nbytes, None, None,
                                                              ctypes.byref(t)))
            self._tensors[i] = t

    def step(self, feeds, update=True):
        raw = self.lib._lib
        if self._tensors is None:
            self._bind(feeds)
        outs = (ctypes.c_void_p * 2)()
        fetch = (ctypes.c_char_p * 1)(b"loss")
        self.lib.check(raw.oneflow_session_run(self.session, self._names, self._tensors, len(self._arrays), fetch, 1,
                                               outs, 2))
        loss = np.ctypeslib.as_array(ctypes.cast(raw.oneflow_tensor_data(outs[0]), ctypes.POINTER(ctypes.c_float)),
                                     (1,))[0]
        raw.oneflow_tensor_release(outs[0])
        self.lib.check(raw.oneflow_session_backward(self.session))
        if update:
            self.lib.check(raw.oneflow_session_step(self.session, None))
        return float(loss)

    def _read(self, fn, name):
        raw = self.lib._lib
        out = ctypes.c_void_p()
        self.lib.check(fn(self.session, name.encode(), ctypes.byref(out)))
        try:
            n = raw.oneflow_tensor_byte_size(out) // 4
            ptr = ctypes.cast(raw.oneflow_tensor_data(out), ctypes.POINTER(ctypes.c_float))
            return np.ctypeslib.as_array(ptr, (n,)).copy()
        finally:
            raw.oneflow_tensor_release(out)

    def gradient(self, name):
        """The accumulated gradient of a parameter, flattened."""
        return self._read(self.lib._lib.oneflow_session_get_gradient, name)

    def parameter(self, name):
        return self._read(self.lib._lib.oneflow_session_get_parameter, name)

    def set_parameter(self, name, value):
        raw = self.lib._lib
        a = np.ascontiguousarray(value, dtype=np.float32)
        shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        t = ctypes.c_void_p()
        self.lib.check(raw.oneflow_tensor_create_borrowed(1, shape, a.ndim, a.ctypes.data, a.nbytes, None, None,
                                                          ctypes.byref(t)))
        try:
            self.lib.check(raw.oneflow_session_set_parameter(self.session, name.encode(), t))
        finally:
            raw.oneflow_tensor_release(t)

    def forward_backward(self, feeds):
        """One train-mode run and backward, no step; returns the loss."""
        return self.step(feeds, update=False)

    def memory(self):
        m = TrainingMemory()
        self.lib._lib.oneflow_training_memory_init_sized(ctypes.byref(m), ctypes.sizeof(m))
        self.lib.check(self.lib._lib.oneflow_session_get_training_memory(self.session, ctypes.byref(m)))
        return {k: int(getattr(m, k)) for k, _ in TrainingMemory._fields_[1:]}

    def close(self):
        raw = self.lib._lib
        if self._tensors is not None:
            for t in self._tensors:
                raw.oneflow_tensor_release(t)
            self._tensors = None
        if self.session:
            raw.oneflow_session_release(self.session)
            self.session = None
