/* tensor.c — oneflow.Tensor (one engine tensor handle): zero-copy numpy views, DLPack export
 * (__dlpack__, __dlpack_device__) and DLPack import (_tensor_from_capsule). */
#include <string.h>

#include "dlpack_abi.h"
#include "ofpy.h"

PyObject* ofpy_tensor_wrap(oneflow_tensor_t* handle, int readonly) {
  ofpy_TensorObject* t = PyObject_New(ofpy_TensorObject, &ofpy_TensorType);
  if (t == NULL) {
    OF(oneflow_tensor_release)(handle);
    return NULL;
  }
  t->handle = handle;
  t->readonly = readonly;
  return (PyObject*)t;
}

static void tensor_dealloc(ofpy_TensorObject* self) {
  OF(oneflow_tensor_release)(self->handle);
  PyObject_Free(self);
}

/* The tensor's dims as numpy's (into `dims`, NPY_MAXDIMS long); its rank, or -1 with an error set. */
static int numpy_dims(ofpy_TensorObject* self, npy_intp* dims) {
  const size_t rank = OF(oneflow_tensor_rank)(self->handle);
  if (rank > NPY_MAXDIMS) {
    PyErr_Format(PyExc_ValueError, "rank %zu exceeds numpy's limit of %d dims", rank, NPY_MAXDIMS);
    return -1;
  }
  const int64_t* shape = OF(oneflow_tensor_shape)(self->handle);
  for (size_t i = 0; i < rank; ++i) dims[i] = (npy_intp)shape[i];
  return (int)rank;
}

/* A string tensor as numpy does strings for ONNX (and onnxruntime returns them): an object array of str,
 * decoded from UTF-8; an element that is not UTF-8 comes back as bytes. A copy: the engine's strings
 * are not a buffer numpy could view. */
static PyObject* strings_to_numpy(ofpy_TensorObject* self) {
  npy_intp dims[NPY_MAXDIMS];
  const int rank = numpy_dims(self, dims);
  if (rank < 0) return NULL;
  PyArrayObject* arr = (PyArrayObject*)PyArray_SimpleNew(rank, dims, NPY_OBJECT);
  if (arr == NULL) return NULL;
  PyObject** out = (PyObject**)PyArray_DATA(arr);
  const int64_t n = OF(oneflow_tensor_element_count)(self->handle);
  for (int64_t i = 0; i < n; ++i) {
    const char* data = NULL;
    size_t len = 0;
    if (ofpy_check(OF(oneflow_tensor_string_element)(self->handle, i, &data, &len)) < 0) goto fail;
    PyObject* item = PyUnicode_DecodeUTF8(data, (Py_ssize_t)len, "strict");
    if (item == NULL) {
      PyErr_Clear();
      item = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
      if (item == NULL) goto fail;
    }
    Py_XSETREF(out[i], item);
  }
  return (PyObject*)arr;
fail:
  Py_DECREF(arr);
  return NULL;
}

PyObject* ofpy_tensor_to_numpy(ofpy_TensorObject* self) {
  oneflow_dtype_t dtype = OF(oneflow_tensor_dtype)(self->handle);
  if (dtype == ONEFLOW_DTYPE_STRING) return strings_to_numpy(self);
  int typenum = ofpy_numpy_type(dtype);
  if (typenum < 0) {
    if (dtype >= ONEFLOW_DTYPE_F8E4M3FN) /* the narrow storage types: DLPack has no agreed layout for them either */
      PyErr_Format(PyExc_TypeError, "numpy has no %s dtype: Cast the value to float32 (or int8) in the model to read it",
                   OF(oneflow_dtype_name)(dtype));
    else
      PyErr_Format(PyExc_TypeError, "numpy has no %s dtype: use Session.run_tensors() and DLPack (e.g. torch.from_dlpack)",
                   OF(oneflow_dtype_name)(dtype));
    return NULL;
  }
  npy_intp dims[NPY_MAXDIMS];
  const int rank = numpy_dims(self, dims);
  if (rank < 0) return NULL;
  int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | (self->readonly ? 0 : NPY_ARRAY_WRITEABLE);
  PyObject* arr = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(typenum), rank, dims, NULL,
                                       OF(oneflow_tensor_data)(self->handle), flags, NULL);
  if (arr == NULL) return NULL;
  Py_INCREF(self);
  if (PyArray_SetBaseObject((PyArrayObject*)arr, (PyObject*)self) < 0) { /* steals the reference */
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

static PyObject* tensor_numpy(ofpy_TensorObject* self, PyObject* unused) { return ofpy_tensor_to_numpy(self); }

/* __array__(dtype=None, copy=None): numpy's conversion hook. */
static PyObject* tensor_array(ofpy_TensorObject* self, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"dtype", "copy", NULL};
  PyObject *dtype = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy)) return NULL;
  PyObject* arr = ofpy_tensor_to_numpy(self);
  if (arr == NULL) return NULL;
  int want_copy = copy != Py_None && PyObject_IsTrue(copy);
  if (dtype == Py_None && !want_copy) return arr;
  PyArray_Descr* descr = NULL;
  if (dtype != Py_None && !PyArray_DescrConverter(dtype, &descr)) {
    Py_DECREF(arr);
    return NULL;
  }
  if (copy == Py_False && descr != NULL && !PyArray_EquivTypes(descr, PyArray_DESCR((PyArrayObject*)arr))) {
    Py_DECREF(descr);
    Py_DECREF(arr);
    PyErr_SetString(PyExc_ValueError, "casting to the requested dtype needs a copy, and copy=False forbids it");
    return NULL;
  }
  /* A cast or a requested copy; PyArray_FromArray steals `descr`. */
  PyObject* out = PyArray_FromArray((PyArrayObject*)arr, descr, want_copy ? NPY_ARRAY_ENSURECOPY : 0);
  Py_DECREF(arr);
  return out;
}

static PyObject* tensor_get_shape(ofpy_TensorObject* self, void* closure) {
  size_t rank = OF(oneflow_tensor_rank)(self->handle);
  const int64_t* shape = OF(oneflow_tensor_shape)(self->handle);
  PyObject* tuple = PyTuple_New((Py_ssize_t)rank);
  if (tuple == NULL) return NULL;
  for (size_t i = 0; i < rank; ++i) {
    PyObject* d = PyLong_FromLongLong(shape[i]);
    if (d == NULL) {
      Py_DECREF(tuple);
      return NULL;
    }
    PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, d);
  }
  return tuple;
}

static PyObject* tensor_get_dtype(ofpy_TensorObject* self, void* closure) {
  return PyUnicode_FromString(OF(oneflow_dtype_name)(OF(oneflow_tensor_dtype)(self->handle)));
}
static PyObject* tensor_get_ndim(ofpy_TensorObject* self, void* closure) {
  return PyLong_FromSize_t(OF(oneflow_tensor_rank)(self->handle));
}
static PyObject* tensor_get_size(ofpy_TensorObject* self, void* closure) {
  return PyLong_FromLongLong(OF(oneflow_tensor_element_count)(self->handle));
}
static PyObject* tensor_get_nbytes(ofpy_TensorObject* self, void* closure) {
  return PyLong_FromSize_t(OF(oneflow_tensor_byte_size)(self->handle));
}
static PyObject* tensor_get_readonly(ofpy_TensorObject* self, void* closure) { return PyBool_FromLong(self->readonly); }

static PyObject* tensor_repr(ofpy_TensorObject* self) {
  PyObject* shape = tensor_get_shape(self, NULL);
  if (shape == NULL) return NULL;
  PyObject* r = PyUnicode_FromFormat("oneflow.Tensor(dtype=%s, shape=%R)",
                                     OF(oneflow_dtype_name)(OF(oneflow_tensor_dtype)(self->handle)), shape);
  Py_DECREF(shape);
  return r;
}

/* ---- DLPack export --------------------------------------------------------------------------- */

static int dl_dtype_of(oneflow_dtype_t dtype, ofpy_DLDataType* out) {
  out->lanes = 1;
  out->bits = (uint8_t)(8 * OF(oneflow_dtype_size)(dtype));
  switch (dtype) {
    case ONEFLOW_DTYPE_F16: case ONEFLOW_DTYPE_F32: case ONEFLOW_DTYPE_F64: out->code = OFPY_DL_FLOAT; return 0;
    case ONEFLOW_DTYPE_BF16: out->code = OFPY_DL_BFLOAT; return 0;
    case ONEFLOW_DTYPE_I8: case ONEFLOW_DTYPE_I16: case ONEFLOW_DTYPE_I32: case ONEFLOW_DTYPE_I64:
      out->code = OFPY_DL_INT; return 0;
    case ONEFLOW_DTYPE_U8: case ONEFLOW_DTYPE_U16: case ONEFLOW_DTYPE_U32: case ONEFLOW_DTYPE_U64:
      out->code = OFPY_DL_UINT; return 0;
    case ONEFLOW_DTYPE_BOOL: out->code = OFPY_DL_BOOL; return 0;
    default: return -1;
  }
}

/* One allocation per export: the managed tensor followed by its strides. manager_ctx holds a
 * reference to the exporting Tensor object, which owns the data and the shape array. */
typedef struct {
  ofpy_DLManagedTensorVersioned managed;
  int64_t strides[];
} ExportVersioned;
typedef struct {
  ofpy_DLManagedTensor managed;
  int64_t strides[];
} ExportLegacy;

static void release_export_owner(void* owner) {
  /* Consumers may call the deleter from any thread, with or without the GIL. */
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject*)owner);
  PyGILState_Release(gil);
}
static void delete_versioned(ofpy_DLManagedTensorVersioned* m) {
  release_export_owner(m->manager_ctx);
  PyMem_RawFree(m);
}
static void delete_legacy(ofpy_DLManagedTensor* m) {
  release_export_owner(m->manager_ctx);
  PyMem_RawFree(m);
}

/* A capsule never consumed still owns its managed tensor. */
static void capsule_versioned_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned"))
    delete_versioned((ofpy_DLManagedTensorVersioned*)PyCapsule_GetPointer(capsule, "dltensor_versioned"));
}
static void capsule_legacy_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor"))
    delete_legacy((ofpy_DLManagedTensor*)PyCapsule_GetPointer(capsule, "dltensor"));
}

static void fill_dl_tensor(ofpy_TensorObject* src, ofpy_DLTensor* dl, int64_t* strides, ofpy_DLDataType dtype) {
  size_t rank = OF(oneflow_tensor_rank)(src->handle);
  const int64_t* shape = OF(oneflow_tensor_shape)(src->handle);
  int64_t step = 1;
  for (size_t i = rank; i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  dl->data = OF(oneflow_tensor_data)(src->handle);
  dl->device.device_type = OFPY_DL_CPU;
  dl->device.device_id = 0;
  dl->ndim = (int32_t)rank;
  dl->dtype = dtype;
  dl->shape = (int64_t*)shape;
  dl->strides = rank ? strides : NULL;
  dl->byte_offset = 0;
}

/* A new engine tensor holding a copy of `src` (for __dlpack__(copy=True)). */
static PyObject* tensor_copy(ofpy_TensorObject* src) {
  oneflow_tensor_t* handle = NULL;
  if (ofpy_check(OF(oneflow_tensor_create)(OF(oneflow_tensor_dtype)(src->handle), OF(oneflow_tensor_shape)(src->handle),
                                           OF(oneflow_tensor_rank)(src->handle), &handle)) < 0)
    return NULL;
  size_t n = OF(oneflow_tensor_byte_size)(src->handle);
  if (n) memcpy(OF(oneflow_tensor_data)(handle), OF(oneflow_tensor_data)(src->handle), n);
  return ofpy_tensor_wrap(handle, 0);
}

static int parse_cpu_device(PyObject* dl_device) {
  if (dl_device == Py_None) return 0;
  long type = -1, id = -1;
  if (!PyTuple_Check(dl_device) || !PyArg_ParseTuple(dl_device, "ll", &type, &id)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "dl_device must be a (device_type, device_id) tuple");
    return -1;
  }
  if (type != OFPY_DL_CPU) {
    PyErr_Format(PyExc_BufferError, "oneflow tensors live on the CPU (device type %d); cannot export to device type %ld",
                 OFPY_DL_CPU, type);
    return -1;
  }
  return 0;
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) per the Python array API. */
static PyObject* tensor_dlpack(ofpy_TensorObject* self, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                   &copy))
    return NULL;
  if (stream != Py_None) {
    PyErr_SetString(PyExc_ValueError, "stream must be None for CPU tensors");
    return NULL;
  }
  if (parse_cpu_device(dl_device) < 0) return NULL;
  long major = 0;
  if (max_version != Py_None) {
    long minor = 0;
    if (!PyTuple_Check(max_version) || !PyArg_ParseTuple(max_version, "ll", &major, &minor)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_TypeError, "max_version must be a (major, minor) tuple");
      return NULL;
    }
  }
  int copied = copy != Py_None && PyObject_IsTrue(copy);
  ofpy_TensorObject* src = self;
  if (copied) {
    src = (ofpy_TensorObject*)tensor_copy(self);
    if (src == NULL) return NULL;
  } else {
    Py_INCREF(src);
  }
  ofpy_DLDataType dtype;
  if (dl_dtype_of(OF(oneflow_tensor_dtype)(src->handle), &dtype) < 0) {
    Py_DECREF(src);
    PyErr_SetString(PyExc_BufferError, "this tensor's dtype has no DLPack code");
    return NULL;
  }
  size_t rank = OF(oneflow_tensor_rank)(src->handle);
  if (major >= OFPY_DLPACK_MAJOR) {
    ExportVersioned* e = PyMem_RawMalloc(sizeof(ExportVersioned) + rank * sizeof(int64_t));
    if (e == NULL) {
      Py_DECREF(src);
      return PyErr_NoMemory();
    }
    e->managed.version.major = OFPY_DLPACK_MAJOR;
    e->managed.version.minor = OFPY_DLPACK_MINOR;
    e->managed.manager_ctx = src; /* owns the reference taken above */
    e->managed.deleter = delete_versioned;
    e->managed.flags = (src->readonly ? OFPY_DL_FLAG_READ_ONLY : 0) | (copied ? OFPY_DL_FLAG_IS_COPIED : 0);
    fill_dl_tensor(src, &e->managed.dl_tensor, e->strides, dtype);
    PyObject* cap = PyCapsule_New(&e->managed, "dltensor_versioned", capsule_versioned_destructor);
    if (cap == NULL) delete_versioned(&e->managed);
    return cap;
  }
  if (src->readonly) {
    Py_DECREF(src);
    PyErr_SetString(PyExc_BufferError,
                    "this tensor is read-only, which DLPack before 1.0 cannot signal; pass max_version=(1, 0)");
    return NULL;
  }
  ExportLegacy* e = PyMem_RawMalloc(sizeof(ExportLegacy) + rank * sizeof(int64_t));
  if (e == NULL) {
    Py_DECREF(src);
    return PyErr_NoMemory();
  }
  e->managed.manager_ctx = src;
  e->managed.deleter = delete_legacy;
  fill_dl_tensor(src, &e->managed.dl_tensor, e->strides, dtype);
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", capsule_legacy_destructor);
  if (cap == NULL) delete_legacy(&e->managed);
  return cap;
}

static PyObject* tensor_dlpack_device(ofpy_TensorObject* self, PyObject* unused) {
  return Py_BuildValue("(ii)", OFPY_DL_CPU, 0);
}

/* ---- DLPack import --------------------------------------------------------------------------- */

static oneflow_dtype_t engine_dtype_of_dl(ofpy_DLDataType t) {
  if (t.lanes != 1) return ONEFLOW_DTYPE_UNDEFINED;
  switch (t.code) {
    case OFPY_DL_FLOAT:
      return t.bits == 16 ? ONEFLOW_DTYPE_F16 : t.bits == 32 ? ONEFLOW_DTYPE_F32 : t.bits == 64 ? ONEFLOW_DTYPE_F64
                                                                                                : ONEFLOW_DTYPE_UNDEFINED;
    case OFPY_DL_BFLOAT: return t.bits == 16 ? ONEFLOW_DTYPE_BF16 : ONEFLOW_DTYPE_UNDEFINED;
    case OFPY_DL_INT:
      return t.bits == 8 ? ONEFLOW_DTYPE_I8 : t.bits == 16 ? ONEFLOW_DTYPE_I16 : t.bits == 32 ? ONEFLOW_DTYPE_I32
             : t.bits == 64                                                                 ? ONEFLOW_DTYPE_I64
                                                                                            : ONEFLOW_DTYPE_UNDEFINED;
    case OFPY_DL_UINT:
      return t.bits == 8 ? ONEFLOW_DTYPE_U8 : t.bits == 16 ? ONEFLOW_DTYPE_U16 : t.bits == 32 ? ONEFLOW_DTYPE_U32
             : t.bits == 64                                                                 ? ONEFLOW_DTYPE_U64
                                                                                            : ONEFLOW_DTYPE_UNDEFINED;
    case OFPY_DL_BOOL: return t.bits == 8 ? ONEFLOW_DTYPE_BOOL : ONEFLOW_DTYPE_UNDEFINED;
    default: return ONEFLOW_DTYPE_UNDEFINED;
  }
}

/* Engine tensors are dense row-major: strides must be NULL or compact (dims of extent 1 may have any). */
static int is_compact(const ofpy_DLTensor* dl) {
  if (dl->strides == NULL) return 1;
  int64_t step = 1;
  for (int32_t i = dl->ndim; i-- > 0;) {
    if (dl->shape[i] == 0) return 1;
    if (dl->shape[i] != 1 && dl->strides[i] != step) return 0;
    step *= dl->shape[i];
  }
  return 1;
}

/* Deleters the engine calls when the last reference to an imported buffer goes away. */
static void release_imported_versioned(void* data, void* user_data) {
  PyGILState_STATE gil = PyGILState_Ensure();
  ofpy_DLManagedTensorVersioned* m = user_data;
  if (m->deleter) m->deleter(m);
  PyGILState_Release(gil);
}
static void release_imported_legacy(void* data, void* user_data) {
  PyGILState_STATE gil = PyGILState_Ensure();
  ofpy_DLManagedTensor* m = user_data;
  if (m->deleter) m->deleter(m);
  PyGILState_Release(gil);
}

PyObject* ofpy_tensor_from_capsule(PyObject* module, PyObject* capsule) {
  if (ofpy_require_loaded() < 0) return NULL;
  const ofpy_DLTensor* dl;
  void* managed;
  int versioned, readonly = 0;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    ofpy_DLManagedTensorVersioned* m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    if (m->version.major != OFPY_DLPACK_MAJOR) {
      PyErr_Format(PyExc_BufferError, "DLPack version %u.%u is not supported (this binding reads %d.x)",
                   (unsigned)m->version.major, (unsigned)m->version.minor, OFPY_DLPACK_MAJOR);
      return NULL;
    }
    dl = &m->dl_tensor;
    managed = m;
    versioned = 1;
    readonly = (m->flags & OFPY_DL_FLAG_READ_ONLY) != 0;
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    ofpy_DLManagedTensor* m = PyCapsule_GetPointer(capsule, "dltensor");
    dl = &m->dl_tensor;
    managed = m;
    versioned = 0;
  } else {
    PyErr_SetString(PyExc_TypeError, "expected an unconsumed DLPack capsule (\"dltensor\" or \"dltensor_versioned\")");
    return NULL;
  }
  if (dl->device.device_type != OFPY_DL_CPU) {
    PyErr_Format(PyExc_BufferError, "the tensor is on DLPack device type %d; oneflow tensors live on the CPU (%d)",
                 (int)dl->device.device_type, OFPY_DL_CPU);
    return NULL;
  }
  oneflow_dtype_t dtype = engine_dtype_of_dl(dl->dtype);
  if (dtype == ONEFLOW_DTYPE_UNDEFINED) {
    PyErr_Format(PyExc_TypeError, "DLPack dtype (code %d, %d bits, %d lanes) has no oneflow dtype", (int)dl->dtype.code,
                 (int)dl->dtype.bits, (int)dl->dtype.lanes);
    return NULL;
  }
  if (dl->ndim < 0 || (dl->ndim > 0 && dl->shape == NULL)) {
    PyErr_SetString(PyExc_BufferError, "malformed DLPack tensor (negative ndim or no shape)");
    return NULL;
  }
  if (!is_compact(dl)) {
    PyErr_SetString(PyExc_BufferError,
                    "the tensor is not C-contiguous; oneflow tensors are dense row-major (make it contiguous first)");
    return NULL;
  }
  /* Size of the view: the engine validates the dims; only guard the product against overflow here. */
  size_t bytes = OF(oneflow_dtype_size)(dtype);
  for (int32_t i = 0; i < dl->ndim; ++i) {
    if (dl->shape[i] < 0) break; /* the engine names the bad dim */
    if (__builtin_mul_overflow(bytes, (size_t)dl->shape[i], &bytes)) {
      PyErr_SetString(PyExc_OverflowError, "DLPack tensor size overflows");
      return NULL;
    }
  }
  oneflow_tensor_t* handle = NULL;
  oneflow_status_t st = OF(oneflow_tensor_create_borrowed)(
      dtype, dl->shape, (size_t)dl->ndim, (char*)dl->data + dl->byte_offset, bytes,
      versioned ? release_imported_versioned : release_imported_legacy, managed, &handle);
  if (ofpy_check(st) < 0) return NULL; /* the capsule keeps ownership and frees it */
  /* The engine tensor now owns the managed tensor: mark the capsule consumed. */
  PyCapsule_SetName(capsule, versioned ? "used_dltensor_versioned" : "used_dltensor");
  return ofpy_tensor_wrap(handle, readonly);
}

static PyMethodDef tensor_methods[] = {
    {"numpy", (PyCFunction)tensor_numpy, METH_NOARGS,
     "numpy() -> numpy.ndarray: a view of the tensor's memory (no copy); the array keeps the tensor alive."},
    {"__array__", (PyCFunction)(void (*)(void))tensor_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule (DLPack export)."},
    {"__dlpack_device__", (PyCFunction)tensor_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (1, 0): the CPU."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef tensor_getset[] = {
    {"shape", (getter)tensor_get_shape, NULL, "tuple of dims", NULL},
    {"dtype", (getter)tensor_get_dtype, NULL, "the engine dtype name, e.g. 'float32'", NULL},
    {"ndim", (getter)tensor_get_ndim, NULL, "rank", NULL},
    {"size", (getter)tensor_get_size, NULL, "number of elements", NULL},
    {"nbytes", (getter)tensor_get_nbytes, NULL, "size of the data in bytes", NULL},
    {"readonly", (getter)tensor_get_readonly, NULL, "True when it views memory its producer marked read-only", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject ofpy_TensorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "oneflow.Tensor",
    .tp_basicsize = sizeof(ofpy_TensorObject),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = (reprfunc)tensor_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A dense row-major tensor owned by the engine (from Session.run_tensors or oneflow.from_dlpack).",
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
};
