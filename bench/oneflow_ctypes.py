"""A small ctypes wrapper over liboneflow.so's C ABI (include/oneflow_c.h), used by the bench.

Only what the bench needs: load a graph from a file, create a session with a thread count, run it
on numpy arrays (fed as borrowed tensors, so no input copy) and read the outputs back as numpy
arrays. Every status the library returns is checked and turned into OneflowError with its message.
"""
import ctypes
import os

import numpy as np

# ONNX TensorProto.DataType codes (== oneflow_dtype_t) <-> numpy dtypes.
_NP_TO_CODE = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.uint16): 4,
    np.dtype(np.int16): 5, np.dtype(np.int32): 6, np.dtype(np.int64): 7, np.dtype(np.bool_): 9,
    np.dtype(np.float16): 10, np.dtype(np.float64): 11, np.dtype(np.uint32): 12,
    np.dtype(np.uint64): 13,
}
_CODE_TO_NP = {code: dt for dt, code in _NP_TO_CODE.items()}

_CODE_NAMES = {0: "OK", 1: "INVALID_ARGUMENT", 2: "NOT_FOUND", 3: "INVALID_MODEL", 4: "UNSUPPORTED",
               5: "OUT_OF_MEMORY", 6: "IO", 7: "RUNTIME", 8: "INTERNAL"}


class OneflowError(RuntimeError):
    """A non-OK status from the library; `code_name` is e.g. "UNSUPPORTED"."""

    def __init__(self, code, message):
        self.code = code
        self.code_name = _CODE_NAMES.get(code, str(code))
        self.message = message
        super().__init__(f"{self.code_name}: {message}")


class _SessionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("intra_op_threads", ctypes.c_int32),
                ("optimization_level", ctypes.c_int32)]


class _ValueInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int64), ("dims", ctypes.POINTER(ctypes.c_int64)),
                ("dim_names", ctypes.POINTER(ctypes.c_char_p))]


_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)


class Library:
    """liboneflow.so loaded with typed signatures for the functions the bench uses."""

    def __init__(self, path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} not found (build it: bench/run.sh does, or ninja -C build liboneflow.so)")
        lib = ctypes.CDLL(os.path.abspath(path))
        self._lib = lib

        def sig(name, restype, *argtypes):
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = list(argtypes)

        sig("oneflow_version", ctypes.c_char_p)
        sig("oneflow_status_code", ctypes.c_int, _P)
        sig("oneflow_status_message", ctypes.c_char_p, _P)
        sig("oneflow_status_free", None, _P)
        sig("oneflow_graph_load_file", _P, ctypes.c_char_p, _PP)
        sig("oneflow_graph_release", None, _P)
        sig("oneflow_graph_input_count", ctypes.c_size_t, _P)
        sig("oneflow_graph_output_count", ctypes.c_size_t, _P)
        sig("oneflow_value_info_init_sized", ctypes.c_void_p, ctypes.POINTER(_ValueInfo), ctypes.c_size_t)
        sig("oneflow_graph_get_input_info", _P, _P, ctypes.c_size_t, ctypes.POINTER(_ValueInfo))
        sig("oneflow_graph_get_output_info", _P, _P, ctypes.c_size_t, ctypes.POINTER(_ValueInfo))
        sig("oneflow_session_options_init_sized", ctypes.c_void_p, ctypes.POINTER(_SessionOptions), ctypes.c_size_t)
        sig("oneflow_session_create", _P, _P, _P, ctypes.POINTER(_SessionOptions), _PP)
        sig("oneflow_session_release", None, _P)
        sig("oneflow_session_run", _P, _P, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_P),
            ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.POINTER(_P),
            ctypes.c_size_t)
        sig("oneflow_tensor_create_borrowed", _P, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
            ctypes.c_size_t, _P, ctypes.c_size_t, _P, _P, _PP)
        sig("oneflow_tensor_release", None, _P)
        sig("oneflow_tensor_dtype", ctypes.c_int, _P)
        sig("oneflow_tensor_rank", ctypes.c_size_t, _P)
        sig("oneflow_tensor_shape", ctypes.POINTER(ctypes.c_int64), _P)
        sig("oneflow_tensor_byte_size", ctypes.c_size_t, _P)
        sig("oneflow_tensor_data", _P, _P)

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def version(self):
        return self._lib.oneflow_version().decode()

    def check(self, status):
        """Raises OneflowError for a non-NULL status (and frees it)."""
        if status:
            code = self._lib.oneflow_status_code(status)
            msg = (self._lib.oneflow_status_message(status) or b"").decode(errors="replace")
            self._lib.oneflow_status_free(status)
            raise OneflowError(code, msg)


def _value_infos(lib, graph, count_fn, get_fn):
    names = []
    for i in range(count_fn(graph)):
        info = _ValueInfo()
        lib.oneflow_value_info_init_sized(ctypes.byref(info), ctypes.sizeof(info))
        lib.check(get_fn(graph, i, ctypes.byref(info)))
        names.append(info.name.decode())
    return names


class Session:
    """A compiled model. `run(feeds)` takes {name: np.ndarray} and returns a list of np.ndarrays
    (all graph outputs, in declaration order)."""

    def __init__(self, lib, model_path, threads=0, optimization_level=None):
        self._lib = lib
        self._session = None
        graph = ctypes.c_void_p()
        lib.check(lib.oneflow_graph_load_file(os.fsencode(model_path), ctypes.byref(graph)))
        try:
            self.input_names = _value_infos(lib, graph, lib.oneflow_graph_input_count,
                                            lib.oneflow_graph_get_input_info)
            self.output_names = _value_infos(lib, graph, lib.oneflow_graph_output_count,
                                             lib.oneflow_graph_get_output_info)
            opts = _SessionOptions()
            lib.oneflow_session_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts))
            opts.intra_op_threads = threads
            if optimization_level is not None:
                opts.optimization_level = optimization_level
            session = ctypes.c_void_p()
            lib.check(lib.oneflow_session_create(None, graph, ctypes.byref(opts), ctypes.byref(session)))
            self._session = session
            self._n_out = len(self.output_names)
            self._feed_key = None
            self._feed_tensors = None
            self._run = lib._lib.oneflow_session_run
            self._create_borrowed = lib._lib.oneflow_tensor_create_borrowed
            self._release = lib._lib.oneflow_tensor_release
            raw = lib._lib
            self._t_dtype, self._t_rank = raw.oneflow_tensor_dtype, raw.oneflow_tensor_rank
            self._t_shape, self._t_data = raw.oneflow_tensor_shape, raw.oneflow_tensor_data
            self._outs = (ctypes.c_void_p * max(self._n_out, 1))()  # reused: runs are serialized here
        finally:
            lib.oneflow_graph_release(graph)

    def close(self):
        if getattr(self, "_feed_tensors", None) is not None:
            self._drop_feeds()
        if self._session:
            self._lib.oneflow_session_release(self._session)
            self._session = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, feeds):
        """Runs on {name: array}; returns every graph output as a new numpy array.

        Input tensors borrow the arrays' memory (no copy). As a C caller would, the wrapper keeps the
        borrowed tensors of the last call and reuses them when the same array objects (same shape
        and dtype) are fed again, so a timing loop measures the engine, not tensor creation."""
        key = tuple((n, id(a), a.shape, a.dtype) for n, a in feeds.items())
        if key != self._feed_key:
            self._drop_feeds()
            self._feed_tensors = self._make_feed_tensors(feeds)
            self._feed_key = key
        originals, arrays, c_names, tensors = self._feed_tensors
        n_out = self._n_out
        outs = self._outs
        try:
            self._lib.check(self._run(self._session, c_names, tensors, len(arrays), None, 0, outs, n_out))
            return [self._to_numpy(outs[i]) for i in range(n_out)]
        finally:
            for i, t in enumerate(outs):
                if t:
                    self._release(t)
                    outs[i] = None
            if any(a is not o for a, o in zip(arrays, originals)):
                # A non-contiguous input was copied: the copy would not see later writes to the
                # caller's array, so it is not reused.
                self._drop_feeds()

    def _make_feed_tensors(self, feeds):
        names = list(feeds)
        # Keep references to the fed arrays (and contiguous copies) while the tensors borrow them.
        arrays = [np.ascontiguousarray(feeds[n]) for n in names]
        tensors = (ctypes.c_void_p * max(len(names), 1))()
        entry = (tuple(feeds[n] for n in names), arrays, (ctypes.c_char_p * max(len(names), 1))(*[n.encode() for n in names]), tensors)
        try:
            for i, a in enumerate(arrays):
                code = _NP_TO_CODE.get(a.dtype)
                if code is None:
                    raise TypeError(f"input {names[i]!r}: dtype {a.dtype} not supported by the wrapper")
                shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
                t = ctypes.c_void_p()
                # NULL deleter: `entry` keeps the buffer alive for as long as the tensor exists.
                self._lib.check(self._create_borrowed(code, shape, a.ndim, a.ctypes.data if a.size else None,
                                                      a.nbytes, None, None, ctypes.byref(t)))
                tensors[i] = t
        except BaseException:
            self._release_all(tensors)
            raise
        return entry

    def _release_all(self, handles):
        for t in handles:
            if t:
                self._release(t)

    def _drop_feeds(self):
        if self._feed_tensors is not None:
            self._release_all(self._feed_tensors[3])
        self._feed_tensors = None
        self._feed_key = None

    def _to_numpy(self, t):
        code = self._t_dtype(t)
        dtype = _CODE_TO_NP.get(code)
        if dtype is None:
            raise OneflowError(8, f"output dtype code {code} has no numpy equivalent in the wrapper")
        rank = self._t_rank(t)
        out = np.empty(tuple(self._t_shape(t)[:rank]), dtype=dtype)
        if out.nbytes:
            ctypes.memmove(out.ctypes.data, self._t_data(t), out.nbytes)
        return out
