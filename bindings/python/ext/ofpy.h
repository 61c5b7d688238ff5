/* ofpy.h — shared declarations of the `oneflow._oneflow` extension module: the C ABI function table
 * (liboneflow.so is dlopen'ed at import, so the library's location is chosen at run time), status to
 * exception conversion, dtype mapping and the Tensor type. */
#ifndef ONEFLOW_PY_OFPY_H_
#define ONEFLOW_PY_OFPY_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ofpy_ARRAY_API
#ifndef OFPY_MODULE_MAIN
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "oneflow_c.h"

/* Every C ABI function the binding calls. `ofpy_api.<name>` has the header's exact prototype. */
#define OFPY_API_FUNCTIONS(X)                                                                    \
  X(oneflow_version) X(oneflow_api_version) X(oneflow_status_code) X(oneflow_status_message)     \
  X(oneflow_status_free) X(oneflow_code_name) X(oneflow_dtype_size) X(oneflow_dtype_name)        \
  X(oneflow_tensor_create) X(oneflow_tensor_create_borrowed) X(oneflow_tensor_release)           \
  X(oneflow_tensor_dtype) X(oneflow_tensor_rank) X(oneflow_tensor_shape)                         \
  X(oneflow_tensor_element_count) X(oneflow_tensor_byte_size) X(oneflow_tensor_data)             \
  X(oneflow_graph_load_file) X(oneflow_graph_load_memory) X(oneflow_graph_release)               \
  X(oneflow_value_info_init) X(oneflow_session_options_init) X(oneflow_session_create)           \
  X(oneflow_session_release) X(oneflow_session_run) X(oneflow_session_input_count)               \
  X(oneflow_session_output_count) X(oneflow_session_get_input_info)                              \
  X(oneflow_session_get_output_info)

#define OFPY_DECLARE_FN(name) __typeof__(&name) name;
typedef struct {
  OFPY_API_FUNCTIONS(OFPY_DECLARE_FN)
} ofpy_Api;
#undef OFPY_DECLARE_FN

extern ofpy_Api ofpy_api;
#define OF(name) (ofpy_api.name)

/* Raises "the library is not loaded" and returns -1 unless `_load` has succeeded. */
int ofpy_require_loaded(void);

/* 0 for a NULL status; otherwise raises the exception class of the status' code with its message,
 * frees the status and returns -1. */
int ofpy_check(oneflow_status_t status);

/* The numpy type number for an engine dtype; -1 when numpy has none (bfloat16). */
int ofpy_numpy_type(oneflow_dtype_t dtype);
/* The engine dtype of a numpy dtype; ONEFLOW_DTYPE_UNDEFINED when the engine has none. */
oneflow_dtype_t ofpy_engine_dtype(PyArray_Descr* descr);

/* oneflow.Tensor: owns one engine tensor handle. `readonly` is set for tensors that view memory the
 * producer marked read-only (a read-only numpy array imported through DLPack). */
typedef struct {
  PyObject_HEAD
  oneflow_tensor_t* handle;
  int readonly;
} ofpy_TensorObject;

extern PyTypeObject ofpy_TensorType;
extern PyTypeObject ofpy_SessionType;

/* A new Tensor object taking ownership of `handle` (released on failure). */
PyObject* ofpy_tensor_wrap(oneflow_tensor_t* handle, int readonly);
/* A numpy array viewing the tensor's memory; the array's base keeps the Tensor object alive. */
PyObject* ofpy_tensor_to_numpy(ofpy_TensorObject* tensor);
/* oneflow._oneflow._tensor_from_capsule(capsule): imports a DLPack capsule (module function). */
PyObject* ofpy_tensor_from_capsule(PyObject* module, PyObject* capsule);

#endif /* ONEFLOW_PY_OFPY_H_ */
