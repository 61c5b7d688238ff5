/* module.c — the `oneflow._oneflow` extension module: loads liboneflow.so (`_load`), resolves the C ABI
 * function table, defines the exception class of every status code, maps dtypes to numpy and registers
 * the types (Tensor, _Session, _TrainingSession) and module functions. */
#define OFPY_MODULE_MAIN
#include "ofpy.h"

#include <dlfcn.h>

ofpy_Api ofpy_api;
static int g_loaded = 0;

/* Exception classes, indexed by oneflow_code_t; [0] is the base class OneflowError. */
#define OFPY_NUM_CODES 9
static PyObject* g_errors[OFPY_NUM_CODES];
static const char* const kErrorNames[OFPY_NUM_CODES] = {
    "OneflowError",    "InvalidArgumentError", "NotFoundError", "InvalidModelError", "UnsupportedError",
    "OutOfMemoryError", "IoError",             "ExecutionError", "InternalError"};
static const char* const kErrorDocs[OFPY_NUM_CODES] = {
    "Base class of every error the engine reports; `code` is the oneflow_code_t, `code_name` its name.",
    "A value passed in is wrong: a shape, dtype or name (ONEFLOW_INVALID_ARGUMENT).",
    "A named input, output or file does not exist (ONEFLOW_NOT_FOUND).",
    "A model file or graph is malformed (ONEFLOW_INVALID_MODEL).",
    "An op, opset, dtype or attribute value is not implemented (ONEFLOW_UNSUPPORTED).",
    "The engine ran out of memory (ONEFLOW_OUT_OF_MEMORY).",
    "A file could not be read or written (ONEFLOW_IO).",
    "A kernel failed on the data, e.g. an index out of range (ONEFLOW_RUNTIME).",
    "A bug in the engine; please report it with the message (ONEFLOW_INTERNAL)."};

int ofpy_require_loaded(void) {
  if (g_loaded) return 0;
  PyErr_SetString(PyExc_RuntimeError, "liboneflow is not loaded: import the `oneflow` package, not `oneflow._oneflow`");
  return -1;
}

int ofpy_check(oneflow_status_t status) {
  if (status == NULL) return 0;
  oneflow_code_t code = OF(oneflow_status_code)(status);
  PyObject* cls = (code > 0 && code < OFPY_NUM_CODES) ? g_errors[code] : g_errors[0];
  PyObject* msg = PyUnicode_DecodeUTF8(OF(oneflow_status_message)(status),
                                       (Py_ssize_t)strlen(OF(oneflow_status_message)(status)), "replace");
  OF(oneflow_status_free)(status);
  if (msg == NULL) return -1;
  PyObject* exc = PyObject_CallOneArg(cls, msg);
  if (exc != NULL && cls == g_errors[0]) {
    /* A code this binding does not know (a newer library): keep it on the instance. */
    PyObject* c = PyLong_FromLong((long)code);
    if (c == NULL || PyObject_SetAttrString(exc, "code", c) < 0) Py_CLEAR(exc);
    Py_XDECREF(c);
  }
  Py_DECREF(msg);
  if (exc == NULL) return -1;
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
  return -1;
}

int ofpy_numpy_type(oneflow_dtype_t dtype) {
  switch (dtype) {
    case ONEFLOW_DTYPE_F32: return NPY_FLOAT32;
    case ONEFLOW_DTYPE_F64: return NPY_FLOAT64;
    case ONEFLOW_DTYPE_F16: return NPY_FLOAT16;
    case ONEFLOW_DTYPE_I8: return NPY_INT8;
    case ONEFLOW_DTYPE_I16: return NPY_INT16;
    case ONEFLOW_DTYPE_I32: return NPY_INT32;
    case ONEFLOW_DTYPE_I64: return NPY_INT64;
    case ONEFLOW_DTYPE_U8: return NPY_UINT8;
    case ONEFLOW_DTYPE_U16: return NPY_UINT16;
    case ONEFLOW_DTYPE_U32: return NPY_UINT32;
    case ONEFLOW_DTYPE_U64: return NPY_UINT64;
    case ONEFLOW_DTYPE_BOOL: return NPY_BOOL;
    default: return -1; /* bfloat16, undefined */
  }
}

oneflow_dtype_t ofpy_engine_dtype(PyArray_Descr* descr) {
  /* By kind and size, not type number: C long and long long are distinct numpy types of one size. */
  int size = (int)PyDataType_ELSIZE(descr);
  switch (descr->kind) {
    case 'b': return size == 1 ? ONEFLOW_DTYPE_BOOL : ONEFLOW_DTYPE_UNDEFINED;
    case 'f':
      return size == 2 ? ONEFLOW_DTYPE_F16 : size == 4 ? ONEFLOW_DTYPE_F32 : size == 8 ? ONEFLOW_DTYPE_F64
                                                                                       : ONEFLOW_DTYPE_UNDEFINED;
    case 'i':
      return size == 1 ? ONEFLOW_DTYPE_I8 : size == 2 ? ONEFLOW_DTYPE_I16 : size == 4 ? ONEFLOW_DTYPE_I32
             : size == 8                                                             ? ONEFLOW_DTYPE_I64
                                                                                     : ONEFLOW_DTYPE_UNDEFINED;
    case 'u':
      return size == 1 ? ONEFLOW_DTYPE_U8 : size == 2 ? ONEFLOW_DTYPE_U16 : size == 4 ? ONEFLOW_DTYPE_U32
             : size == 8                                                             ? ONEFLOW_DTYPE_U64
                                                                                     : ONEFLOW_DTYPE_UNDEFINED;
    default: return ONEFLOW_DTYPE_UNDEFINED;
  }
}

/* _load(path): dlopen()s liboneflow.so and resolves every function the binding calls. Idempotent. */
static PyObject* module_load(PyObject* module, PyObject* arg) {
  if (g_loaded) Py_RETURN_NONE;
  PyObject* path_bytes = NULL;
  if (!PyUnicode_FSConverter(arg, &path_bytes)) return NULL;
  void* lib = dlopen(PyBytes_AS_STRING(path_bytes), RTLD_NOW | RTLD_LOCAL);
  Py_DECREF(path_bytes);
  if (lib == NULL) {
    PyErr_Format(PyExc_ImportError, "cannot load liboneflow: %s", dlerror());
    return NULL;
  }
  ofpy_Api api;
#define OFPY_RESOLVE(name)                                                                          \
  *(void**)(&api.name) = dlsym(lib, #name);                                                        \
  if (api.name == NULL) {                                                                          \
    dlclose(lib);                                                                                  \
    PyErr_Format(PyExc_ImportError, "%R lacks %s: it is older than this binding (C ABI %d)", arg, \
                 #name, ONEFLOW_API_VERSION);                                                      \
    return NULL;                                                                                   \
  }
  OFPY_API_FUNCTIONS(OFPY_RESOLVE)
#undef OFPY_RESOLVE
  if (api.oneflow_api_version() < ONEFLOW_API_VERSION) {
    PyErr_Format(PyExc_ImportError, "%R implements C ABI version %u; this binding needs %d or later", arg,
                 (unsigned)api.oneflow_api_version(), ONEFLOW_API_VERSION);
    dlclose(lib);
    return NULL;
  }
  ofpy_api = api;
  g_loaded = 1; /* the library stays loaded for the life of the process */
  for (int code = 0; code < OFPY_NUM_CODES; ++code) {
    PyObject* name = PyUnicode_FromString(code ? OF(oneflow_code_name)((oneflow_code_t)code) : "UNKNOWN");
    if (name == NULL || PyObject_SetAttrString(g_errors[code], "code_name", name) < 0) {
      Py_XDECREF(name);
      return NULL;
    }
    Py_DECREF(name);
  }
  Py_RETURN_NONE;
}

static PyObject* module_version(PyObject* module, PyObject* unused) {
  if (ofpy_require_loaded() < 0) return NULL;
  return PyUnicode_FromString(OF(oneflow_version)());
}

static PyObject* module_api_version(PyObject* module, PyObject* unused) {
  if (ofpy_require_loaded() < 0) return NULL;
  return PyLong_FromUnsignedLong(OF(oneflow_api_version)());
}

static PyMethodDef module_methods[] = {
    {"_load", module_load, METH_O, "_load(path) -> None: loads liboneflow.so from `path` (once per process)."},
    {"version", module_version, METH_NOARGS, "version() -> str: the loaded library's version."},
    {"api_version", module_api_version, METH_NOARGS, "api_version() -> int: the loaded library's C ABI version."},
    {"_tensor_from_capsule", ofpy_tensor_from_capsule, METH_O,
     "_tensor_from_capsule(capsule) -> Tensor: imports a DLPack capsule without copying."},
    {"_save_model", ofpy_save_model, METH_VARARGS,
     "_save_model(model, is_path, external_data_dir, path, format, external_data_file, checksums) -> None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "oneflow._oneflow",
                                        "The C extension under the `oneflow` package (use the package).", -1,
                                        module_methods};

static int add_errors(PyObject* m) {
  for (int code = 0; code < OFPY_NUM_CODES; ++code) {
    char qualified[64];
    snprintf(qualified, sizeof qualified, "oneflow.%s", kErrorNames[code]);
    PyObject* dict = Py_BuildValue("{s:i}", "code", code);
    if (dict == NULL) return -1;
    g_errors[code] = PyErr_NewExceptionWithDoc(qualified, kErrorDocs[code], code ? g_errors[0] : NULL, dict);
    Py_DECREF(dict);
    if (g_errors[code] == NULL) return -1;
    Py_INCREF(g_errors[code]);
    if (PyModule_AddObject(m, kErrorNames[code], g_errors[code]) < 0) {
      Py_DECREF(g_errors[code]);
      return -1;
    }
  }
  return 0;
}

PyMODINIT_FUNC PyInit__oneflow(void) {
  import_array();
  if (PyType_Ready(&ofpy_TensorType) < 0 || PyType_Ready(&ofpy_SessionType) < 0 ||
      PyType_Ready(&ofpy_TrainingSessionType) < 0 || PyType_Ready(&ofpy_ServerType) < 0)
    return NULL;
  PyObject* m = PyModule_Create(&module_def);
  if (m == NULL) return NULL;
  if (add_errors(m) < 0 || PyModule_AddIntConstant(m, "HEADER_API_VERSION", ONEFLOW_API_VERSION) < 0) goto fail;
  Py_INCREF(&ofpy_TensorType);
  if (PyModule_AddObject(m, "Tensor", (PyObject*)&ofpy_TensorType) < 0) {
    Py_DECREF(&ofpy_TensorType);
    goto fail;
  }
  Py_INCREF(&ofpy_SessionType);
  if (PyModule_AddObject(m, "_Session", (PyObject*)&ofpy_SessionType) < 0) {
    Py_DECREF(&ofpy_SessionType);
    goto fail;
  }
  Py_INCREF(&ofpy_TrainingSessionType);
  if (PyModule_AddObject(m, "_TrainingSession", (PyObject*)&ofpy_TrainingSessionType) < 0) {
    Py_DECREF(&ofpy_TrainingSessionType);
    goto fail;
  }
  Py_INCREF(&ofpy_ServerType);
  if (PyModule_AddObject(m, "_Server", (PyObject*)&ofpy_ServerType) < 0) {
    Py_DECREF(&ofpy_ServerType);
    goto fail;
  }
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
