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
  X(oneflow_tensor_create_sequence) X(oneflow_tensor_create_none) X(oneflow_tensor_kind)           \
  X(oneflow_tensor_sequence_length) X(oneflow_tensor_sequence_element)                             \
  X(oneflow_tensor_create_strings) X(oneflow_tensor_string_element)                                \
  X(oneflow_graph_load_file) X(oneflow_graph_load_memory) X(oneflow_graph_release)               \
  X(oneflow_value_info_init_sized) X(oneflow_session_options_init_sized) X(oneflow_session_create)           \
  X(oneflow_session_release) X(oneflow_session_run) X(oneflow_session_input_count)               \
  X(oneflow_session_output_count) X(oneflow_session_get_input_info)                              \
  X(oneflow_session_get_output_info) X(oneflow_session_get_planned_peak_bytes)                  \
  X(oneflow_save_options_init_sized) X(oneflow_graph_save)                                             \
  X(oneflow_training_options_init_sized) X(oneflow_training_session_create)                            \
  X(oneflow_session_set_run_mode) X(oneflow_session_backward) X(oneflow_session_step)            \
  X(oneflow_session_zero_gradients) X(oneflow_session_parameter_count)                           \
  X(oneflow_session_parameter_name) X(oneflow_session_get_parameter)                             \
  X(oneflow_session_get_gradient) X(oneflow_session_set_parameter) X(oneflow_training_state_init_sized) \
  X(oneflow_session_get_training_state) X(oneflow_training_memory_init_sized)                          \
  X(oneflow_session_get_training_memory) X(oneflow_session_save_checkpoint)                      \
  X(oneflow_session_load_checkpoint) X(oneflow_session_export_model)                             \
  X(oneflow_server_options_init_sized) X(oneflow_server_create) X(oneflow_server_start)                \
  X(oneflow_server_port) X(oneflow_server_ready) X(oneflow_server_stop) X(oneflow_server_release)

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
extern PyTypeObject ofpy_TrainingSessionType;
extern PyTypeObject ofpy_ServerType;

/* oneflow._oneflow._Session (session.c) and its subtype _TrainingSession (training.c), which adds
 * the training calls and no fields. */
typedef struct {
  PyObject_HEAD
  oneflow_session_t* handle; /* NULL before __init__ and once released */
  Py_ssize_t active_calls;   /* engine calls in flight (GIL released); close() defers the release to the last */
  int closed;
  int initializing;       /* __init__ is loading the model (GIL released) */
  PyObject* output_names; /* tuple of str: the keys when every output is returned */
  /* {input name: (oneflow_type_kind_t, element dtype)} for the inputs that are sequences or optionals,
   * whose Python values (lists, None) run() converts by what the model declares */
  PyObject* nontensor_inputs;
} ofpy_SessionObject;

/* The shared __init__ of both types: loads `model` (a path when `is_path`, else bytes-like), creates an
 * inference session (`training` NULL) or a training session, with the GIL released. */
int ofpy_session_init(ofpy_SessionObject* self, PyObject* model, int is_path, PyObject* threads, PyObject* level,
                      PyObject* ext_dir, const oneflow_training_options_t* training);
/* Brackets an engine call that may release the GIL: ofpy_session_enter raises ValueError unless the
 * session is open, else counts the call in flight; ofpy_session_leave uncounts it and performs a close()
 * that came meanwhile. */
int ofpy_session_enter(ofpy_SessionObject* self);
void ofpy_session_leave(ofpy_SessionObject* self);

/* Loads a model (a path when `is_path`, else bytes-like with external data under `ext_dir` or None)
 * with the GIL released. Returns NULL with an exception set on failure. */
oneflow_graph_t* ofpy_load_graph(PyObject* model, int is_path, PyObject* ext_dir);
/* Saves `graph` to `path` (str/os.PathLike) with the GIL released; `format` (int oneflow_model_format_t),
 * `external_data_file` (str) and `checksums` (bool) are None for the engine's default. 0 or -1. */
int ofpy_save_graph(const oneflow_graph_t* graph, PyObject* path, PyObject* format, PyObject* external_data_file,
                    PyObject* checksums);
/* oneflow._oneflow._save_model(model, is_path, external_data_dir, path, format, external_data_file,
 * checksums): loads a model and saves it (module function). */
PyObject* ofpy_save_model(PyObject* module, PyObject* args);

/* An engine tensor for `value`: a oneflow.Tensor's own handle, or a borrowed tensor over a C-contiguous,
 * aligned, native-byte-order numpy array (the value itself when it already is one, else a copy).
 * *keep receives the object whose memory the tensor reads (keep it alive while the tensor is used);
 * *owned receives the borrowed tensor this call created (release it), NULL for a oneflow.Tensor.
 * `kind` and `name` (a str) name the value in errors ("input 'x'"). 0 or -1. */
int ofpy_tensor_from_value(PyObject* value, const char* kind, PyObject* name, PyObject** keep,
                           const oneflow_tensor_t** tensor, oneflow_tensor_t** owned);

/* A new Tensor object taking ownership of `handle` (released on failure). */
PyObject* ofpy_tensor_wrap(oneflow_tensor_t* handle, int readonly);
/* A numpy array viewing the tensor's memory; the array's base keeps the Tensor object alive. */
PyObject* ofpy_tensor_to_numpy(ofpy_TensorObject* tensor);
/* oneflow._oneflow._tensor_from_capsule(capsule): imports a DLPack capsule (module function). */
PyObject* ofpy_tensor_from_capsule(PyObject* module, PyObject* capsule);

#endif /* ONEFLOW_PY_OFPY_H_ */
