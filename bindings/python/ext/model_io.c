/* model_io.c — saving models: ofpy_save_graph (oneflow_graph_save with its options) and the module
 * function _save_model, which loads a model and saves it (e.g. ONNX to the native .ofm format). */
#include "ofpy.h"

int ofpy_save_graph(const oneflow_graph_t* graph, PyObject* path, PyObject* format, PyObject* external_data_file,
                    PyObject* checksums) {
  oneflow_save_options_t options;
  OF(oneflow_save_options_init_sized)(&options, sizeof options); /* the defaults (cannot fail: sizeof), then what the caller set */
  if (format != Py_None) {
    long f = PyLong_AsLong(format);
    if (f == -1 && PyErr_Occurred()) return -1;
    options.format = (oneflow_model_format_t)f; /* the engine checks the value */
  }
  if (checksums != Py_None) {
    int c = PyObject_IsTrue(checksums);
    if (c < 0) return -1;
    options.checksums = c;
  }
  PyObject* ext_file = NULL; /* its buffer lives until the call returns */
  if (external_data_file != Py_None) {
    if (!PyUnicode_Check(external_data_file)) {
      PyErr_Format(PyExc_TypeError, "external_data_file must be a str, not %.100s", Py_TYPE(external_data_file)->tp_name);
      return -1;
    }
    ext_file = PyUnicode_AsUTF8String(external_data_file);
    if (ext_file == NULL) return -1;
    options.external_data_file = PyBytes_AS_STRING(ext_file);
  }
  PyObject* path_bytes = NULL;
  if (!PyUnicode_FSConverter(path, &path_bytes)) {
    Py_XDECREF(ext_file);
    return -1;
  }
  oneflow_status_t st;
  Py_BEGIN_ALLOW_THREADS
  st = OF(oneflow_graph_save)(graph, PyBytes_AS_STRING(path_bytes), &options);
  Py_END_ALLOW_THREADS
  Py_DECREF(path_bytes);
  Py_XDECREF(ext_file);
  return ofpy_check(st);
}

/* _save_model(model, is_path, external_data_dir, path, format, external_data_file, checksums) -> None. */
PyObject* ofpy_save_model(PyObject* module, PyObject* args) {
  PyObject *model, *ext_dir, *path, *format, *ext_file, *checksums;
  int is_path;
  if (!PyArg_ParseTuple(args, "OpOOOOO:_save_model", &model, &is_path, &ext_dir, &path, &format, &ext_file, &checksums))
    return NULL;
  if (ofpy_require_loaded() < 0) return NULL;
  oneflow_graph_t* graph = ofpy_load_graph(model, is_path, ext_dir);
  if (graph == NULL) return NULL;
  int rc = ofpy_save_graph(graph, path, format, ext_file, checksums);
  OF(oneflow_graph_release)(graph);
  if (rc < 0) return NULL;
  Py_RETURN_NONE;
}
