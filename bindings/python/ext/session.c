/* session.c — oneflow._oneflow._Session: a compiled model (one oneflow_session_t) and its run(), which
 * converts numpy arrays to borrowed engine tensors, runs with the GIL released and returns the outputs
 * as numpy arrays that own the engine's tensors. Python's oneflow.Session derives from it; the training
 * calls are in training.c (the subtype _TrainingSession). */
#include <string.h>

#include "ofpy.h"

typedef ofpy_SessionObject SessionObject;

static void session_release_handle(SessionObject* self) {
  oneflow_session_t* handle = self->handle;
  self->handle = NULL;
  OF(oneflow_session_release)(handle);
}

/* The Python subclass adds __dict__, weak references and GC; this base holds no Python containers. */
static void session_dealloc(SessionObject* self) {
  if (self->handle) session_release_handle(self); /* a call holds a reference: none can be in flight */
  Py_CLEAR(self->output_names);
  Py_CLEAR(self->nontensor_inputs);
  Py_TYPE(self)->tp_free(self);
}

/* Raises ValueError unless the session is open. */
static int session_require_open(SessionObject* self) {
  if (self->handle && !self->closed) return 0;
  PyErr_SetString(PyExc_ValueError, self->closed ? "the session is closed" : "the session was not initialized");
  return -1;
}

int ofpy_session_enter(SessionObject* self) {
  if (session_require_open(self) < 0) return -1;
  self->active_calls++;
  return 0;
}

void ofpy_session_leave(SessionObject* self) {
  if (--self->active_calls == 0 && self->closed && self->handle) session_release_handle(self);
}

oneflow_graph_t* ofpy_load_graph(PyObject* model, int is_path, PyObject* ext_dir) {
  oneflow_graph_t* graph = NULL;
  oneflow_status_t st;
  if (is_path) {
    PyObject* path = NULL;
    if (!PyUnicode_FSConverter(model, &path)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    st = OF(oneflow_graph_load_file)(PyBytes_AS_STRING(path), &graph);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
  } else {
    PyObject* dir = NULL;
    if (ext_dir != Py_None && !PyUnicode_FSConverter(ext_dir, &dir)) return NULL;
    Py_buffer buf; /* the export keeps a bytearray from being resized while the GIL is released */
    if (PyObject_GetBuffer(model, &buf, PyBUF_SIMPLE) < 0) {
      Py_XDECREF(dir);
      return NULL;
    }
    const char* dir_c = dir ? PyBytes_AS_STRING(dir) : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = OF(oneflow_graph_load_memory)(buf.buf, (size_t)buf.len, dir_c, &graph);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    Py_XDECREF(dir);
  }
  return ofpy_check(st) < 0 ? NULL : graph;
}

/* Loads the model and compiles it (for training when `training` is not NULL), with the GIL released. */
static oneflow_session_t* load_and_compile(PyObject* model, int is_path, PyObject* ext_dir,
                                           const oneflow_session_options_t* options,
                                           const oneflow_training_options_t* training) {
  oneflow_graph_t* graph = ofpy_load_graph(model, is_path, ext_dir);
  if (graph == NULL) return NULL;
  oneflow_session_t* session = NULL;
  oneflow_status_t st;
  Py_BEGIN_ALLOW_THREADS
  st = training ? OF(oneflow_training_session_create)(NULL, graph, options, training, &session)
                : OF(oneflow_session_create)(NULL, graph, options, &session);
  OF(oneflow_graph_release)(graph); /* the session keeps its own copy */
  Py_END_ALLOW_THREADS
  return ofpy_check(st) < 0 ? NULL : session;
}

/* Sets *out from an int option; None leaves the engine's default. */
static int int32_option(PyObject* value, const char* name, int32_t* out) {
  if (value == Py_None) return 0;
  long v = PyLong_AsLong(value);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < INT32_MIN || v > INT32_MAX) {
    PyErr_Format(PyExc_OverflowError, "%s does not fit in int32", name);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

int ofpy_session_init(SessionObject* self, PyObject* model, int is_path, PyObject* threads, PyObject* level,
                      PyObject* ext_dir, const oneflow_training_options_t* training) {
  if (ofpy_require_loaded() < 0) return -1;
  if (self->handle || self->closed || self->initializing) {
    PyErr_SetString(PyExc_RuntimeError, "a session is initialized once");
    return -1;
  }
  oneflow_session_options_t options;
  OF(oneflow_session_options_init_sized)(&options, sizeof options); /* the defaults (cannot fail: sizeof), then what the caller set */
  if (int32_option(threads, "threads", &options.intra_op_threads) < 0 ||
      int32_option(level, "optimization_level", &options.optimization_level) < 0)
    return -1;
  self->initializing = 1;
  oneflow_session_t* session = load_and_compile(model, is_path, ext_dir, &options, training);
  self->initializing = 0;
  if (session == NULL) return -1;

  size_t n_out = OF(oneflow_session_output_count)(session);
  PyObject* names = PyTuple_New((Py_ssize_t)n_out);
  for (size_t i = 0; names && i < n_out; ++i) {
    oneflow_value_info_t info;
    OF(oneflow_value_info_init_sized)(&info, sizeof info); /* cannot fail: sizeof */
    PyObject* name = NULL;
    if (ofpy_check(OF(oneflow_session_get_output_info)(session, i, &info)) == 0) name = PyUnicode_FromString(info.name);
    if (name == NULL) Py_CLEAR(names);
    else PyTuple_SET_ITEM(names, (Py_ssize_t)i, name);
  }
  PyObject* nontensor = names ? PyDict_New() : NULL;
  size_t n_in = OF(oneflow_session_input_count)(session);
  for (size_t i = 0; nontensor && i < n_in; ++i) {
    oneflow_value_info_t info;
    OF(oneflow_value_info_init_sized)(&info, sizeof info); /* cannot fail: sizeof */
    if (ofpy_check(OF(oneflow_session_get_input_info)(session, i, &info)) < 0) {
      Py_CLEAR(nontensor);
      break;
    }
    if (info.kind == ONEFLOW_TYPE_TENSOR) continue;
    PyObject* entry = Py_BuildValue("(ii)", (int)info.kind, (int)info.dtype);
    if (entry == NULL || PyDict_SetItemString(nontensor, info.name, entry) < 0) Py_CLEAR(nontensor);
    Py_XDECREF(entry);
  }
  if (names == NULL || nontensor == NULL) {
    Py_XDECREF(names);
    OF(oneflow_session_release)(session);
    return -1;
  }
  self->handle = session;
  self->output_names = names;
  self->nontensor_inputs = nontensor;
  return 0;
}

/* _Session.__init__(model, is_path, intra_op_threads=None, optimization_level=None, external_data_dir=None):
 * `model` is a path (str/os.PathLike) when `is_path`, else a bytes-like object holding the ONNX model. */
static int session_init(SessionObject* self, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"model", "is_path", "intra_op_threads", "optimization_level", "external_data_dir", NULL};
  PyObject *model, *threads = Py_None, *level = Py_None, *ext_dir = Py_None;
  int is_path;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Op|OOO:_Session", kwlist, &model, &is_path, &threads, &level,
                                   &ext_dir))
    return -1;
  return ofpy_session_init(self, model, is_path, threads, level, ext_dir, NULL);
}

/* One value_info as (name, dtype name, shape, kind) where shape is None for an unknown rank, else a
 * tuple of int (static dim), str (symbolic dim) or None (dynamic, unnamed), and kind names the
 * oneflow_type_kind_t ("tensor", "sequence", "optional", "optional_sequence"). */
static PyObject* info_tuple(const oneflow_value_info_t* info) {
  PyObject* shape;
  if (info->rank < 0) {
    shape = Py_NewRef(Py_None);
  } else {
    shape = PyTuple_New((Py_ssize_t)info->rank);
    for (int64_t i = 0; shape && i < info->rank; ++i) {
      PyObject* d;
      if (info->dims[i] >= 0) d = PyLong_FromLongLong(info->dims[i]);
      else if (info->dim_names && info->dim_names[i]) d = PyUnicode_FromString(info->dim_names[i]);
      else d = Py_NewRef(Py_None);
      if (d == NULL) Py_CLEAR(shape);
      else PyTuple_SET_ITEM(shape, (Py_ssize_t)i, d);
    }
  }
  if (shape == NULL) return NULL;
  static const char* const kinds[] = {"tensor", "sequence", "optional", "optional_sequence"};
  const char* kind = (unsigned)info->kind < 4 ? kinds[info->kind] : "unknown";
  return Py_BuildValue("(ssNs)", info->name, OF(oneflow_dtype_name)(info->dtype), shape, kind);
}

/* _io_info(outputs: bool) -> tuple of (name, dtype, shape, kind). */
static PyObject* session_io_info(SessionObject* self, PyObject* want_outputs) {
  if (session_require_open(self) < 0) return NULL;
  int outputs = PyObject_IsTrue(want_outputs);
  if (outputs < 0) return NULL;
  size_t n = outputs ? OF(oneflow_session_output_count)(self->handle) : OF(oneflow_session_input_count)(self->handle);
  PyObject* result = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; result && i < n; ++i) {
    oneflow_value_info_t info;
    OF(oneflow_value_info_init_sized)(&info, sizeof info); /* cannot fail: sizeof */
    oneflow_status_t st = outputs ? OF(oneflow_session_get_output_info)(self->handle, i, &info)
                                  : OF(oneflow_session_get_input_info)(self->handle, i, &info);
    PyObject* item = ofpy_check(st) < 0 ? NULL : info_tuple(&info);
    if (item == NULL) Py_CLEAR(result);
    else PyTuple_SET_ITEM(result, (Py_ssize_t)i, item);
  }
  return result;
}

/* ---- run ----------------------------------------------------------------------------------------- */

/* Small runs use the stack; larger ones allocate. */
#define OFPY_STACK_IO 8

typedef struct {
  Py_ssize_t n_in, n_names, n_out;
  const char** in_names;
  const oneflow_tensor_t** inputs;
  oneflow_tensor_t** borrowed; /* tensors this call created over numpy memory (NULL for oneflow.Tensor feeds) */
  PyObject** keep;             /* per input: its name and the array/Tensor the tensor reads, kept alive */
  const char** out_names;
  oneflow_tensor_t** outputs;
  void* heap;
} RunFrame;

static int frame_alloc(RunFrame* f, void* stack, size_t stack_bytes) {
  size_t slots = (size_t)(f->n_in * 5 + f->n_names + f->n_out);
  size_t bytes = slots * sizeof(void*);
  void* mem = stack;
  f->heap = NULL;
  if (bytes > stack_bytes) {
    mem = f->heap = PyMem_Malloc(bytes);
    if (mem == NULL) {
      PyErr_NoMemory();
      return -1;
    }
  }
  memset(mem, 0, bytes);
  void** p = mem;
  f->in_names = (const char**)p; p += f->n_in;
  f->inputs = (const oneflow_tensor_t**)p; p += f->n_in;
  f->borrowed = (oneflow_tensor_t**)p; p += f->n_in;
  f->keep = (PyObject**)p; p += 2 * f->n_in;
  f->out_names = (const char**)p; p += f->n_names;
  f->outputs = (oneflow_tensor_t**)p;
  return 0;
}

static void frame_free(RunFrame* f) {
  for (Py_ssize_t i = 0; i < f->n_in; ++i) OF(oneflow_tensor_release)(f->borrowed[i]);
  for (Py_ssize_t i = 0; i < 2 * f->n_in; ++i) Py_XDECREF(f->keep[i]);
  for (Py_ssize_t i = 0; i < f->n_out; ++i) OF(oneflow_tensor_release)(f->outputs[i]);
  PyMem_Free(f->heap);
}

/* A string tensor from a numpy array of str ('U'), bytes ('S') or objects that are each str or bytes
 * ('O', what onnxruntime takes and returns): str elements travel as UTF-8. The engine copies them. */
static int strings_from_array(PyArrayObject* arr, const char* kind, PyObject* name, const oneflow_tensor_t** tensor,
                              oneflow_tensor_t** owned) {
  const npy_intp n = PyArray_SIZE(arr);
  PyObject* items = PyList_New(n); /* keeps each element's object alive while its bytes are read */
  const char** data = PyMem_Calloc((size_t)n + 1, sizeof *data);
  size_t* lengths = PyMem_Calloc((size_t)n + 1, sizeof *lengths);
  int rc = -1;
  if (items == NULL || data == NULL || lengths == NULL) {
    if (items) PyErr_NoMemory();
    goto done;
  }
  const npy_intp stride = PyArray_ITEMSIZE(arr);
  for (npy_intp i = 0; i < n; ++i) {
    PyObject* item = PyArray_GETITEM(arr, PyArray_BYTES(arr) + i * stride);
    if (item == NULL) goto done;
    PyList_SET_ITEM(items, i, item);
    Py_ssize_t len = 0;
    if (PyUnicode_Check(item)) {
      data[i] = PyUnicode_AsUTF8AndSize(item, &len);
      if (data[i] == NULL) goto done;
    } else if (PyBytes_Check(item)) {
      char* bytes = NULL;
      if (PyBytes_AsStringAndSize(item, &bytes, &len) < 0) goto done;
      data[i] = bytes;
    } else {
      PyErr_Format(PyExc_TypeError, "%s '%U': element %zd is %.100s; a string tensor takes str or bytes", kind, name,
                   (Py_ssize_t)i, Py_TYPE(item)->tp_name);
      goto done;
    }
    lengths[i] = (size_t)len;
  }
  if (ofpy_check(OF(oneflow_tensor_create_strings)((const int64_t*)PyArray_SHAPE(arr), (size_t)PyArray_NDIM(arr), data,
                                                   lengths, owned)) < 0)
    goto done;
  *tensor = *owned;
  rc = 0;
done:
  Py_XDECREF(items);
  PyMem_Free(data);
  PyMem_Free(lengths);
  return rc;
}

int ofpy_tensor_from_value(PyObject* value, const char* kind, PyObject* name, PyObject** keep,
                           const oneflow_tensor_t** tensor, oneflow_tensor_t** owned) {
  if (Py_IS_TYPE(value, &ofpy_TensorType)) {
    *keep = Py_NewRef(value);
    *tensor = ((ofpy_TensorObject*)value)->handle;
    return 0;
  }
  PyArrayObject* arr;
  if (PyArray_Check(value) && PyArray_IS_C_CONTIGUOUS((PyArrayObject*)value) &&
      PyArray_ISALIGNED((PyArrayObject*)value) && PyArray_ISNOTSWAPPED((PyArrayObject*)value)) {
    arr = (PyArrayObject*)Py_NewRef(value);
  } else {
    PyArray_Descr* descr = NULL; /* keep the dtype, in native byte order */
    if (PyArray_Check(value)) {
      descr = PyArray_DescrNewByteorder(PyArray_DESCR((PyArrayObject*)value), NPY_NATIVE);
      if (descr == NULL) return -1;
    }
    arr = (PyArrayObject*)PyArray_FromAny(value, descr, 0, 0, NPY_ARRAY_IN_ARRAY, NULL);
    if (arr == NULL) return -1;
  }
  *keep = (PyObject*)arr;
  const char kind_code = PyArray_DESCR(arr)->kind;
  if (kind_code == 'U' || kind_code == 'S' || kind_code == 'O') return strings_from_array(arr, kind, name, tensor, owned);
  oneflow_dtype_t dtype = ofpy_engine_dtype(PyArray_DESCR(arr));
  if (dtype == ONEFLOW_DTYPE_UNDEFINED) {
    PyErr_Format(PyExc_TypeError, "%s '%U': numpy dtype %R has no oneflow counterpart", kind, name,
                 (PyObject*)PyArray_DESCR(arr));
    return -1;
  }
  /* npy_intp and int64_t are both 64-bit on the platforms the engine builds for. */
  Py_BUILD_ASSERT(sizeof(npy_intp) == sizeof(int64_t));
  if (ofpy_check(OF(oneflow_tensor_create_borrowed)(dtype, (const int64_t*)PyArray_SHAPE(arr),
                                                    (size_t)PyArray_NDIM(arr), PyArray_DATA(arr),
                                                    (size_t)PyArray_NBYTES(arr), NULL, NULL, owned)) < 0)
    return -1;
  *tensor = *owned;
  return 0;
}

/* A sequence input from a list or tuple of arrays: each element as ofpy_tensor_from_value makes it; the
 * arrays they read are kept in a list (`*keep`). An empty one takes the model's element dtype. */
static int sequence_from_value(PyObject* value, PyObject* name, oneflow_dtype_t declared, PyObject** keep,
                               const oneflow_tensor_t** tensor, oneflow_tensor_t** owned) {
  PyObject* items = PySequence_Tuple(value); /* private: converting may run code that edits the list */
  if (items == NULL) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(items);
  PyObject* kept = PyList_New(n);
  const oneflow_tensor_t** elements = PyMem_Calloc((size_t)n + 1, sizeof *elements);
  oneflow_tensor_t** made = PyMem_Calloc((size_t)n + 1, sizeof *made);
  int rc = -1;
  if (kept == NULL || elements == NULL || made == NULL) {
    if (kept) PyErr_NoMemory();
    goto done;
  }
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* keep_k = NULL;
    if (ofpy_tensor_from_value(PyTuple_GET_ITEM(items, k), "element of input", name, &keep_k, &elements[k], &made[k]) < 0)
      goto done;
    PyList_SET_ITEM(kept, k, keep_k);
  }
  oneflow_dtype_t dtype = n ? OF(oneflow_tensor_dtype)(elements[0]) : declared;
  if (ofpy_check(OF(oneflow_tensor_create_sequence)(dtype, elements, (size_t)n, owned)) < 0) goto done;
  *tensor = *owned;
  *keep = Py_NewRef(kept);
  rc = 0;
done:
  for (Py_ssize_t k = 0; made && k < n; ++k) OF(oneflow_tensor_release)(made[k]);
  PyMem_Free(made);
  PyMem_Free(elements);
  Py_XDECREF(kept);
  Py_DECREF(items);
  return rc;
}

/* Makes input `i` from `value`: for a sequence the model declares, a list or tuple of arrays; for an
 * optional, None (an empty one) or its value; otherwise ofpy_tensor_from_value. */
static int frame_set_input(SessionObject* self, RunFrame* f, Py_ssize_t i, PyObject* key, PyObject* value) {
  f->keep[2 * i] = Py_NewRef(key);
  f->in_names[i] = PyUnicode_AsUTF8(key);
  if (f->in_names[i] == NULL) return -1;
  PyObject* kind = self->nontensor_inputs ? PyDict_GetItemWithError(self->nontensor_inputs, key) : NULL;
  if (kind == NULL && PyErr_Occurred()) return -1;
  if (kind != NULL) {
    int type_kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(kind, 0));
    oneflow_dtype_t dtype = (oneflow_dtype_t)PyLong_AsLong(PyTuple_GET_ITEM(kind, 1));
    int optional = type_kind == ONEFLOW_TYPE_OPTIONAL || type_kind == ONEFLOW_TYPE_OPTIONAL_SEQUENCE;
    int sequence = type_kind == ONEFLOW_TYPE_SEQUENCE || type_kind == ONEFLOW_TYPE_OPTIONAL_SEQUENCE;
    if (optional && value == Py_None) {
      if (ofpy_check(OF(oneflow_tensor_create_none)(dtype, &f->borrowed[i])) < 0) return -1;
      f->inputs[i] = f->borrowed[i];
      f->keep[2 * i + 1] = Py_NewRef(value);
      return 0;
    }
    if (sequence) {
      if (!PyList_Check(value) && !PyTuple_Check(value) && !Py_IS_TYPE(value, &ofpy_TensorType)) {
        PyErr_Format(PyExc_TypeError, "input '%U' is a sequence: pass a list of arrays, not %.100s", key,
                     Py_TYPE(value)->tp_name);
        return -1;
      }
      if (!Py_IS_TYPE(value, &ofpy_TensorType))
        return sequence_from_value(value, key, dtype, &f->keep[2 * i + 1], &f->inputs[i], &f->borrowed[i]);
    }
  }
  return ofpy_tensor_from_value(value, "input", key, &f->keep[2 * i + 1], &f->inputs[i], &f->borrowed[i]);
}

/* A run's output as Python sees it: a oneflow.Tensor (or numpy array when `as_numpy`); a list of those
 * for a sequence; None for an empty optional. Takes ownership of `handle`. */
static PyObject* output_value(oneflow_tensor_t* handle, int as_numpy) {
  oneflow_value_kind_t kind = OF(oneflow_tensor_kind)(handle);
  if (kind == ONEFLOW_VALUE_NONE) {
    OF(oneflow_tensor_release)(handle);
    return Py_NewRef(Py_None);
  }
  if (kind == ONEFLOW_VALUE_SEQUENCE) {
    size_t n = OF(oneflow_tensor_sequence_length)(handle);
    PyObject* list = PyList_New((Py_ssize_t)n);
    for (size_t k = 0; list && k < n; ++k) {
      oneflow_tensor_t* element = NULL;
      PyObject* item = NULL;
      if (ofpy_check(OF(oneflow_tensor_sequence_element)(handle, k, &element)) == 0) item = output_value(element, as_numpy);
      if (item == NULL) Py_CLEAR(list);
      else PyList_SET_ITEM(list, (Py_ssize_t)k, item);
    }
    OF(oneflow_tensor_release)(handle);
    return list;
  }
  PyObject* tensor = ofpy_tensor_wrap(handle, 0); /* owns the handle now (or released it) */
  if (tensor == NULL || !as_numpy) return tensor;
  PyObject* out = ofpy_tensor_to_numpy((ofpy_TensorObject*)tensor); /* the array's base keeps the tensor */
  Py_DECREF(tensor);
  return out;
}

/* Whether another Python thread exists, in any interpreter: only then can releasing the GIL during a run
 * let anything proceed, and releasing and re-taking it costs ~0.1 us, a noticeable part of a tiny model's
 * run. A thread that appears during the run (only native code can make one then: Python code needs the
 * GIL to start a thread) waits until the run ends. Thread states are only deleted under the GIL, which
 * this thread holds, so walking the lists is safe. */
static int other_python_threads(void) {
  PyThreadState* me = PyThreadState_Get();
  for (PyInterpreterState* interp = PyInterpreterState_Head(); interp; interp = PyInterpreterState_Next(interp))
    for (PyThreadState* t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t))
      if (t != me) return 1;
  return 0;
}

static oneflow_status_t run_engine(oneflow_session_t* handle, const RunFrame* f) {
  return OF(oneflow_session_run)(handle, f->in_names, f->inputs, (size_t)f->n_in, f->n_names ? f->out_names : NULL,
                                 (size_t)f->n_names, f->outputs, (size_t)f->n_out);
}

/* run(feeds, outputs=None) for as_numpy, run_tensors(...) otherwise. */
static PyObject* session_run_impl(SessionObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                                  int as_numpy) {
  PyObject *feeds = NULL, *wanted = Py_None;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs < 1 || nargs + nkw > 2 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "run(feeds, outputs=None) takes a dict of inputs and an optional list of names");
    return NULL;
  }
  feeds = args[0];
  if (nargs == 2) wanted = args[1];
  if (nkw == 1) {
    if (!PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) ||
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "outputs") != 0) {
      PyErr_Format(PyExc_TypeError, "run() got an unexpected keyword argument %R", PyTuple_GET_ITEM(kwnames, 0));
      return NULL;
    }
    wanted = args[nargs];
  }
  if (session_require_open(self) < 0) return NULL;
  if (!PyDict_Check(feeds)) {
    PyErr_Format(PyExc_TypeError, "feeds must be a dict {input name: array}, not %.100s", Py_TYPE(feeds)->tp_name);
    return NULL;
  }
  PyObject* wanted_seq = NULL; /* the requested output names, when a subset is asked for */
  if (wanted != Py_None) {
    if (PyUnicode_Check(wanted)) {
      PyErr_SetString(PyExc_TypeError, "outputs must be a list of output names, not a str");
      return NULL;
    }
    /* A private tuple: converting the inputs may run Python code that mutates the caller's list. */
    wanted_seq = PySequence_Tuple(wanted);
    if (wanted_seq == NULL) return NULL;
  }

  RunFrame f;
  f.n_in = PyDict_GET_SIZE(feeds);
  f.n_names = wanted_seq ? PyTuple_GET_SIZE(wanted_seq) : 0;
  f.n_out = f.n_names ? f.n_names : PyTuple_GET_SIZE(self->output_names); /* empty list: all, as in the C ABI */
  void* stack[OFPY_STACK_IO * 7];
  if (frame_alloc(&f, stack, sizeof stack) < 0) {
    Py_XDECREF(wanted_seq);
    return NULL;
  }
  PyObject* result = NULL;
  PyObject *key, *value;
  Py_ssize_t pos = 0, i = 0;
  while (PyDict_Next(feeds, &pos, &key, &value)) {
    if (i == f.n_in) break; /* grown by Python code an input's conversion ran: caught below */
    if (!PyUnicode_Check(key)) {
      PyErr_Format(PyExc_TypeError, "input names must be str, not %.100s", Py_TYPE(key)->tp_name);
      goto done;
    }
    if (frame_set_input(self, &f, i++, key, value) < 0) goto done;
  }
  if (i != f.n_in || PyDict_GET_SIZE(feeds) != f.n_in) {
    PyErr_SetString(PyExc_RuntimeError, "feeds changed size while its arrays were converted");
    goto done;
  }
  for (Py_ssize_t k = 0; k < f.n_names; ++k) {
    PyObject* name = PyTuple_GET_ITEM(wanted_seq, k);
    if (!PyUnicode_Check(name)) {
      PyErr_Format(PyExc_TypeError, "output names must be str, not %.100s", Py_TYPE(name)->tp_name);
      goto done;
    }
    if ((f.out_names[k] = PyUnicode_AsUTF8(name)) == NULL) goto done;
  }

  oneflow_status_t st;
  if (ofpy_session_enter(self) < 0) goto done; /* converting the inputs may have run code that closed it */
  oneflow_session_t* handle = self->handle;
  if (other_python_threads()) {
    Py_BEGIN_ALLOW_THREADS
    st = run_engine(handle, &f);
    Py_END_ALLOW_THREADS
  } else {
    st = run_engine(handle, &f); /* no thread to hand the GIL to (see other_python_threads) */
  }
  ofpy_session_leave(self);
  if (ofpy_check(st) < 0) goto done;

  /* With no names asked for, a training session in eval mode returns fewer outputs than it declares
   * (not the loss, which is declared last): the returned ones are the leading entries. */
  result = PyDict_New();
  for (Py_ssize_t k = 0; result && k < f.n_out && f.outputs[k]; ++k) {
    PyObject* out = output_value(f.outputs[k], as_numpy);
    f.outputs[k] = NULL; /* owned by `out` (or released) now */
    PyObject* name = f.n_names ? PyTuple_GET_ITEM(wanted_seq, k) : PyTuple_GET_ITEM(self->output_names, k);
    if (out == NULL || PyDict_SetItem(result, name, out) < 0) Py_CLEAR(result);
    Py_XDECREF(out);
  }
done:
  frame_free(&f);
  Py_XDECREF(wanted_seq);
  return result;
}

static PyObject* session_run(SessionObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return session_run_impl(self, args, nargs, kwnames, 1);
}
static PyObject* session_run_tensors(SessionObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return session_run_impl(self, args, nargs, kwnames, 0);
}

/* close(): idempotent. Runs in flight on other threads finish first; the last one releases. */
static PyObject* session_close(SessionObject* self, PyObject* unused) {
  self->closed = 1;
  if (self->handle && self->active_calls == 0) session_release_handle(self);
  Py_RETURN_NONE;
}

static PyObject* session_get_closed(SessionObject* self, void* closure) { return PyBool_FromLong(self->closed); }

/* planned_peak_bytes() -> int: oneflow_session_get_planned_peak_bytes. */
static PyObject* session_planned_peak_bytes(SessionObject* self, PyObject* unused) {
  if (session_require_open(self) < 0) return NULL;
  uint64_t bytes = 0;
  if (ofpy_check(OF(oneflow_session_get_planned_peak_bytes)(self->handle, &bytes)) < 0) return NULL;
  return PyLong_FromUnsignedLongLong(bytes);
}

static PyMethodDef session_methods[] = {
    {"run", (PyCFunction)(void (*)(void))session_run, METH_FASTCALL | METH_KEYWORDS,
     "run(feeds, outputs=None) -> dict[str, numpy.ndarray]"},
    {"run_tensors", (PyCFunction)(void (*)(void))session_run_tensors, METH_FASTCALL | METH_KEYWORDS,
     "run_tensors(feeds, outputs=None) -> dict[str, oneflow.Tensor]"},
    {"close", (PyCFunction)session_close, METH_NOARGS, "close() -> None: releases the engine session."},
    {"planned_peak_bytes", (PyCFunction)session_planned_peak_bytes, METH_NOARGS,
     "planned_peak_bytes() -> int: the intermediate memory of a run (a training step) for the last input shapes."},
    {"_io_info", (PyCFunction)session_io_info, METH_O, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef session_getset[] = {
    {"closed", (getter)session_get_closed, NULL, "True once close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject ofpy_SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "oneflow._oneflow._Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_dealloc = (destructor)session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The engine session under oneflow.Session.",
    .tp_methods = session_methods,
    .tp_getset = session_getset,
    .tp_init = (initproc)session_init,
    .tp_new = PyType_GenericNew,
};
