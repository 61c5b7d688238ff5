/* training.c — oneflow._oneflow._TrainingSession, the subtype of _Session whose engine session is a
 * training session (oneflow_training_session_create): the training options struct filled from a dict,
 * run mode, backward, step, gradients, parameters, training state and memory, checkpoints and export.
 * Each call is one C ABI call plus conversions; heavy ones release the GIL and are counted as calls in
 * flight, so close() from another thread waits for them (ofpy_session_enter/leave). */
#include <stddef.h>
#include <string.h>

#include "ofpy.h"

typedef ofpy_SessionObject SessionObject;

/* ---- oneflow_training_options_t from {field name: value} ------------------------------------ */

typedef enum { FIELD_F32, FIELD_I32, FIELD_I64, FIELD_U64, FIELD_ENUM, FIELD_STR } FieldKind;

#define OFPY_FIELD(name, kind) {#name, offsetof(oneflow_training_options_t, name), kind}
static const struct {
  const char* name;
  size_t offset;
  FieldKind kind;
} kFields[] = {
    OFPY_FIELD(loss, FIELD_ENUM),           OFPY_FIELD(loss_output, FIELD_STR),
    OFPY_FIELD(logits_output, FIELD_STR),   OFPY_FIELD(labels_input, FIELD_STR),
    OFPY_FIELD(loss_reduction_sum, FIELD_I32), OFPY_FIELD(optimizer, FIELD_ENUM),
    OFPY_FIELD(learning_rate, FIELD_F32),   OFPY_FIELD(weight_decay, FIELD_F32),
    OFPY_FIELD(momentum, FIELD_F32),        OFPY_FIELD(dampening, FIELD_F32),
    OFPY_FIELD(nesterov, FIELD_I32),        OFPY_FIELD(beta1, FIELD_F32),
    OFPY_FIELD(beta2, FIELD_F32),           OFPY_FIELD(eps, FIELD_F32),
    OFPY_FIELD(lr_schedule, FIELD_ENUM),    OFPY_FIELD(warmup_steps, FIELD_I64),
    OFPY_FIELD(warmup_start_factor, FIELD_F32), OFPY_FIELD(step_size, FIELD_I64),
    OFPY_FIELD(gamma, FIELD_F32),           OFPY_FIELD(decay_steps, FIELD_I64),
    OFPY_FIELD(min_lr_factor, FIELD_F32),   OFPY_FIELD(max_grad_norm, FIELD_F32),
    OFPY_FIELD(deterministic, FIELD_I32),   OFPY_FIELD(seed, FIELD_U64),
    OFPY_FIELD(nonfinite_policy, FIELD_ENUM), OFPY_FIELD(activation_checkpointing, FIELD_I32),
};
#undef OFPY_FIELD

/* The option enums are stored as int: their values are small and non-negative. */
_Static_assert(sizeof(oneflow_loss_t) == sizeof(int) && sizeof(oneflow_optimizer_t) == sizeof(int) &&
                   sizeof(oneflow_lr_schedule_t) == sizeof(int) && sizeof(oneflow_nonfinite_policy_t) == sizeof(int),
               "option enums are int-sized");

/* Sets one field from a Python value (the engine validates the value itself). */
static int set_field(oneflow_training_options_t* o, size_t k, PyObject* value) {
  char* at = (char*)o + kFields[k].offset;
  switch (kFields[k].kind) {
    case FIELD_F32: {
      double v = PyFloat_AsDouble(value);
      if (v == -1.0 && PyErr_Occurred()) return -1;
      float f = (float)v;
      memcpy(at, &f, sizeof f);
      return 0;
    }
    case FIELD_I32:
    case FIELD_ENUM: {
      long v = PyLong_AsLong(value);
      if (v == -1 && PyErr_Occurred()) return -1;
      if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "training option %s does not fit in int32", kFields[k].name);
        return -1;
      }
      int32_t i32 = (int32_t)v;
      int e = (int)v;
      if (kFields[k].kind == FIELD_I32) memcpy(at, &i32, sizeof i32);
      else memcpy(at, &e, sizeof e);
      return 0;
    }
    case FIELD_I64: {
      long long v = PyLong_AsLongLong(value);
      if (v == -1 && PyErr_Occurred()) return -1;
      int64_t i64 = (int64_t)v;
      memcpy(at, &i64, sizeof i64);
      return 0;
    }
    case FIELD_U64: {
      unsigned long long v = PyLong_AsUnsignedLongLong(value);
      if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
      uint64_t u64 = (uint64_t)v;
      memcpy(at, &u64, sizeof u64);
      return 0;
    }
    case FIELD_STR: {
      if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "training option %s must be a str, not %.100s", kFields[k].name,
                     Py_TYPE(value)->tp_name);
        return -1;
      }
      const char* s = PyUnicode_AsUTF8(value); /* lives as long as the str, which the dict holds */
      if (s == NULL) return -1;
      memcpy(at, &s, sizeof s);
      return 0;
    }
  }
  return 0;
}

/* Fills `o` (already initialized with the engine's defaults) from `fields`: keys are the struct's
 * field names, None keeps the default; "frozen" is a sequence of str, whose UTF-8 pointers go into
 * *frozen_names (PyMem, freed by the caller) and whose tuple into *frozen_keep. */
static int fill_training_options(oneflow_training_options_t* o, PyObject* fields, const char*** frozen_names,
                                 PyObject** frozen_keep) {
  if (!PyDict_Check(fields)) {
    PyErr_SetString(PyExc_TypeError, "training options must be a dict");
    return -1;
  }
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(fields, &pos, &key, &value)) {
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    if (name == NULL) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "training option names must be str");
      return -1;
    }
    if (value == Py_None) continue;
    if (strcmp(name, "frozen") == 0) {
      if (PyUnicode_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "frozen must be a sequence of parameter names or patterns, not a str");
        return -1;
      }
      PyObject* seq = PySequence_Tuple(value);
      if (seq == NULL) return -1;
      *frozen_keep = seq;
      Py_ssize_t n = PyTuple_GET_SIZE(seq);
      *frozen_names = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char*));
      if (*frozen_names == NULL) {
        PyErr_NoMemory();
        return -1;
      }
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = PyTuple_GET_ITEM(seq, i);
        if (!PyUnicode_Check(item)) {
          PyErr_Format(PyExc_TypeError, "frozen[%zd] must be a str, not %.100s", i, Py_TYPE(item)->tp_name);
          return -1;
        }
        if (((*frozen_names)[i] = PyUnicode_AsUTF8(item)) == NULL) return -1;
      }
      o->frozen = *frozen_names;
      o->num_frozen = (size_t)n;
      continue;
    }
    size_t k = 0, n_fields = sizeof kFields / sizeof kFields[0];
    while (k < n_fields && strcmp(kFields[k].name, name) != 0) ++k;
    if (k == n_fields) {
      PyErr_Format(PyExc_TypeError, "unknown training option %R", key);
      return -1;
    }
    if (set_field(o, k, value) < 0) return -1;
  }
  return 0;
}

/* _TrainingSession.__init__(model, is_path, intra_op_threads, optimization_level, external_data_dir,
 * training): `training` is {oneflow_training_options_t field name: value or None}. */
static int training_init(SessionObject* self, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"model",    "is_path", "intra_op_threads", "optimization_level", "external_data_dir",
                           "training", NULL};
  PyObject *model, *threads, *level, *ext_dir, *fields;
  int is_path;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OpOOOO!:_TrainingSession", kwlist, &model, &is_path, &threads,
                                   &level, &ext_dir, &PyDict_Type, &fields))
    return -1;
  if (ofpy_require_loaded() < 0) return -1;
  oneflow_training_options_t options;
  OF(oneflow_training_options_init_sized)(&options, sizeof options); /* cannot fail: sizeof */
  const char** frozen = NULL;
  PyObject* frozen_keep = NULL;
  Py_INCREF(fields); /* the option strings point into it */
  int rc = fill_training_options(&options, fields, &frozen, &frozen_keep);
  if (rc == 0) rc = ofpy_session_init(self, model, is_path, threads, level, ext_dir, &options);
  PyMem_Free((void*)frozen);
  Py_XDECREF(frozen_keep);
  Py_DECREF(fields);
  return rc;
}

/* ---- calls ------------------------------------------------------------------------------------ */

/* An engine call on the session handle; `ctx` carries its other arguments. */
typedef oneflow_status_t (*SessionCall)(oneflow_session_t* handle, void* ctx);

/* Runs `fn` with the GIL released, as a call in flight. 0, or -1 with the exception set. */
static int released_call(SessionObject* self, SessionCall fn, void* ctx) {
  if (ofpy_session_enter(self) < 0) return -1;
  oneflow_session_t* handle = self->handle;
  oneflow_status_t st;
  Py_BEGIN_ALLOW_THREADS
  st = fn(handle, ctx);
  Py_END_ALLOW_THREADS
  ofpy_session_leave(self);
  return ofpy_check(st);
}

/* The UTF-8 of a str argument, or NULL with TypeError naming `what`. */
static const char* str_arg(PyObject* value, const char* what) {
  if (!PyUnicode_Check(value)) {
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(value)->tp_name);
    return NULL;
  }
  return PyUnicode_AsUTF8(value);
}

static oneflow_status_t call_backward(oneflow_session_t* h, void* ctx) { return OF(oneflow_session_backward)(h); }
static oneflow_status_t call_step(oneflow_session_t* h, void* ctx) { return OF(oneflow_session_step)(h, ctx); }
static oneflow_status_t call_zero(oneflow_session_t* h, void* ctx) { return OF(oneflow_session_zero_gradients)(h); }
static oneflow_status_t call_save_ckpt(oneflow_session_t* h, void* ctx) {
  return OF(oneflow_session_save_checkpoint)(h, ctx);
}
static oneflow_status_t call_load_ckpt(oneflow_session_t* h, void* ctx) {
  return OF(oneflow_session_load_checkpoint)(h, ctx);
}
static oneflow_status_t call_export(oneflow_session_t* h, void* ctx) {
  return OF(oneflow_session_export_model)(h, ctx);
}

/* set_run_mode(mode: int): oneflow_run_mode_t (0 train, 1 eval). */
static PyObject* training_set_run_mode(SessionObject* self, PyObject* mode) {
  long m = PyLong_AsLong(mode);
  if (m == -1 && PyErr_Occurred()) return NULL;
  if (ofpy_session_enter(self) < 0) return NULL;
  oneflow_status_t st = OF(oneflow_session_set_run_mode)(self->handle, (oneflow_run_mode_t)(int)m);
  ofpy_session_leave(self);
  if (ofpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* training_backward(SessionObject* self, PyObject* unused) {
  if (released_call(self, call_backward, NULL) < 0) return NULL;
  Py_RETURN_NONE;
}

/* step() -> bool: whether the update was applied (False: skipped by the NaN/Inf policy). */
static PyObject* training_step(SessionObject* self, PyObject* unused) {
  int32_t applied = 0;
  if (released_call(self, call_step, &applied) < 0) return NULL;
  return PyBool_FromLong(applied);
}

static PyObject* training_zero_gradients(SessionObject* self, PyObject* unused) {
  if (released_call(self, call_zero, NULL) < 0) return NULL;
  Py_RETURN_NONE;
}

/* _parameter_names() -> tuple of str, in the model's initializer order. */
static PyObject* training_parameter_names(SessionObject* self, PyObject* unused) {
  if (ofpy_session_enter(self) < 0) return NULL;
  size_t n = OF(oneflow_session_parameter_count)(self->handle);
  PyObject* names = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; names && i < n; ++i) {
    const char* name = OF(oneflow_session_parameter_name)(self->handle, i);
    PyObject* s = name ? PyUnicode_FromString(name) : NULL;
    if (s == NULL) {
      if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "the engine has no name for parameter %zu", i);
      Py_CLEAR(names);
    } else {
      PyTuple_SET_ITEM(names, (Py_ssize_t)i, s);
    }
  }
  ofpy_session_leave(self);
  return names;
}

/* get_parameter(name) / get_gradient(name) -> numpy.ndarray: the engine's copy, viewed (no second copy). */
static PyObject* get_tensor(SessionObject* self, PyObject* name, int gradient) {
  const char* n = str_arg(name, "the parameter name");
  if (n == NULL || ofpy_session_enter(self) < 0) return NULL;
  oneflow_tensor_t* t = NULL;
  oneflow_status_t st = gradient ? OF(oneflow_session_get_gradient)(self->handle, n, &t)
                                 : OF(oneflow_session_get_parameter)(self->handle, n, &t);
  ofpy_session_leave(self);
  if (ofpy_check(st) < 0) return NULL;
  PyObject* tensor = ofpy_tensor_wrap(t, 0);
  if (tensor == NULL) return NULL;
  PyObject* arr = ofpy_tensor_to_numpy((ofpy_TensorObject*)tensor);
  Py_DECREF(tensor);
  return arr;
}
static PyObject* training_get_parameter(SessionObject* self, PyObject* name) { return get_tensor(self, name, 0); }
static PyObject* training_get_gradient(SessionObject* self, PyObject* name) { return get_tensor(self, name, 1); }

/* set_parameter(name, value): the engine copies `value` (an array-like or oneflow.Tensor; dtype and shape
 * are checked by the engine). */
static PyObject* training_set_parameter(SessionObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "set_parameter(name, value) takes 2 arguments");
    return NULL;
  }
  const char* n = str_arg(args[0], "the parameter name");
  if (n == NULL) return NULL;
  PyObject* keep = NULL;
  const oneflow_tensor_t* tensor = NULL;
  oneflow_tensor_t* owned = NULL;
  PyObject* result = NULL;
  if (ofpy_tensor_from_value(args[1], "parameter", args[0], &keep, &tensor, &owned) == 0 &&
      ofpy_session_enter(self) == 0) {
    oneflow_status_t st = OF(oneflow_session_set_parameter)(self->handle, n, tensor);
    ofpy_session_leave(self);
    if (ofpy_check(st) == 0) result = Py_NewRef(Py_None);
  }
  OF(oneflow_tensor_release)(owned);
  Py_XDECREF(keep);
  return result;
}

/* _training_state() -> (step, skipped_steps, learning_rate, last_loss, last_grad_norm). */
static PyObject* training_state(SessionObject* self, PyObject* unused) {
  if (ofpy_session_enter(self) < 0) return NULL;
  oneflow_training_state_t s;
  OF(oneflow_training_state_init_sized)(&s, sizeof s); /* cannot fail: sizeof */
  oneflow_status_t st = OF(oneflow_session_get_training_state)(self->handle, &s);
  ofpy_session_leave(self);
  if (ofpy_check(st) < 0) return NULL;
  return Py_BuildValue("(LLddd)", (long long)s.step, (long long)s.skipped_steps, (double)s.learning_rate,
                       s.last_loss, s.last_grad_norm);
}

/* _training_memory() -> (forward_arena_bytes, saved_activation_bytes, backward_arena_bytes, peak_bytes). */
static PyObject* training_memory(SessionObject* self, PyObject* unused) {
  if (ofpy_session_enter(self) < 0) return NULL;
  oneflow_training_memory_t m;
  OF(oneflow_training_memory_init_sized)(&m, sizeof m); /* cannot fail: sizeof */
  oneflow_status_t st = OF(oneflow_session_get_training_memory)(self->handle, &m);
  ofpy_session_leave(self);
  if (ofpy_check(st) < 0) return NULL;
  return Py_BuildValue("(KKKK)", (unsigned long long)m.forward_arena_bytes, (unsigned long long)m.saved_activation_bytes,
                       (unsigned long long)m.backward_arena_bytes, (unsigned long long)m.peak_bytes);
}

/* save_checkpoint(path) / load_checkpoint(path). */
static PyObject* checkpoint(SessionObject* self, PyObject* path, SessionCall fn) {
  PyObject* path_bytes = NULL;
  if (!PyUnicode_FSConverter(path, &path_bytes)) return NULL;
  int rc = released_call(self, fn, PyBytes_AS_STRING(path_bytes));
  Py_DECREF(path_bytes);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}
static PyObject* training_save_checkpoint(SessionObject* self, PyObject* path) {
  return checkpoint(self, path, call_save_ckpt);
}
static PyObject* training_load_checkpoint(SessionObject* self, PyObject* path) {
  return checkpoint(self, path, call_load_ckpt);
}

/* _export_model(path, format, external_data_file, checksums): oneflow_session_export_model, then
 * oneflow_graph_save of the exported graph (see ofpy_save_graph for the options). */
static PyObject* training_export_model(SessionObject* self, PyObject* args) {
  PyObject *path, *format, *ext_file, *checksums;
  if (!PyArg_ParseTuple(args, "OOOO:_export_model", &path, &format, &ext_file, &checksums)) return NULL;
  oneflow_graph_t* graph = NULL;
  if (released_call(self, call_export, &graph) < 0) return NULL;
  int rc = ofpy_save_graph(graph, path, format, ext_file, checksums);
  OF(oneflow_graph_release)(graph);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef training_methods[] = {
    {"set_run_mode", (PyCFunction)training_set_run_mode, METH_O, "set_run_mode(mode: int): oneflow_run_mode_t"},
    {"backward", (PyCFunction)training_backward, METH_NOARGS,
     "backward() -> None: adds the gradients of the last train-mode run to the accumulated ones."},
    {"step", (PyCFunction)training_step, METH_NOARGS,
     "step() -> bool: optimizer update, gradients zeroed; False when the NaN/Inf policy skipped it."},
    {"zero_gradients", (PyCFunction)training_zero_gradients, METH_NOARGS,
     "zero_gradients() -> None: drops the accumulated gradients."},
    {"_parameter_names", (PyCFunction)training_parameter_names, METH_NOARGS, NULL},
    {"get_parameter", (PyCFunction)training_get_parameter, METH_O,
     "get_parameter(name) -> numpy.ndarray: a copy of the parameter's current value."},
    {"get_gradient", (PyCFunction)training_get_gradient, METH_O,
     "get_gradient(name) -> numpy.ndarray: a copy of the accumulated gradient (zeros when none)."},
    {"set_parameter", (PyCFunction)(void (*)(void))training_set_parameter, METH_FASTCALL,
     "set_parameter(name, value) -> None: overwrites the parameter with a copy of `value` (same dtype and shape)."},
    {"_training_state", (PyCFunction)training_state, METH_NOARGS, NULL},
    {"_training_memory", (PyCFunction)training_memory, METH_NOARGS, NULL},
    {"save_checkpoint", (PyCFunction)training_save_checkpoint, METH_O,
     "save_checkpoint(path) -> None: parameters, optimizer state, gradients and step counter, written atomically."},
    {"load_checkpoint", (PyCFunction)training_load_checkpoint, METH_O,
     "load_checkpoint(path) -> None: restores a checkpoint of the same model and optimizer (all or nothing)."},
    {"_export_model", (PyCFunction)training_export_model, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

PyTypeObject ofpy_TrainingSessionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "oneflow._oneflow._TrainingSession",
    .tp_basicsize = sizeof(SessionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The engine training session under oneflow.TrainingSession.",
    .tp_methods = training_methods,
    .tp_init = (initproc)training_init,
    .tp_base = &ofpy_SessionType,
};
