/* server.c — oneflow._oneflow._Server: the embedded inference server (oneflow_server_*). Every call
 * that waits (start loads models; stop drains) releases the GIL. */
#include "ofpy.h"

typedef struct {
  PyObject_HEAD
  oneflow_server_t* handle; /* NULL before __init__ and once closed */
} ServerObject;

/* Stops the server without a drain (if running) and frees it; idempotent. */
static void server_release(ServerObject* self) {
  if (self->handle) {
    oneflow_server_t* handle = self->handle;
    self->handle = NULL;
    Py_BEGIN_ALLOW_THREADS
    OF(oneflow_server_release)(handle);
    Py_END_ALLOW_THREADS
  }
}

static void server_dealloc(ServerObject* self) {
  server_release(self);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/* _Server(repository, host, http_port, grpc_port, metrics_port, threads, http_threads,
 *         max_request_bytes, idle_timeout_seconds, access_log) */
static int server_init(ServerObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"repository", "host", "http_port", "grpc_port", "metrics_port", "threads",
                             "http_threads", "max_request_bytes", "idle_timeout_seconds", "access_log", NULL};
  PyObject* repository;
  const char* host;
  int http_port, grpc_port, metrics_port, threads, http_threads, idle_timeout, access_log;
  unsigned long long max_request_bytes;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&siiiiiKip:_Server", keywords, PyUnicode_FSConverter, &repository,
                                   &host, &http_port, &grpc_port, &metrics_port, &threads, &http_threads,
                                   &max_request_bytes, &idle_timeout, &access_log))
    return -1;
  if (ofpy_require_loaded() < 0) {
    Py_DECREF(repository);
    return -1;
  }
  if (self->handle) {
    PyErr_SetString(PyExc_RuntimeError, "_Server is already initialized");
    Py_DECREF(repository);
    return -1;
  }
  oneflow_server_options_t options;
  int rc = ofpy_check(OF(oneflow_server_options_init_sized)(&options, sizeof options));
  if (rc == 0) {
    options.model_repository = PyBytes_AS_STRING(repository);
    options.host = host;
    options.http_port = http_port;
    options.grpc_port = grpc_port;
    options.metrics_port = metrics_port;
    options.threads = threads;
    options.http_threads = http_threads;
    options.max_request_bytes = max_request_bytes;
    options.idle_timeout_seconds = idle_timeout;
    options.access_log = access_log;
    rc = ofpy_check(OF(oneflow_server_create)(&options, &self->handle));
  }
  Py_DECREF(repository);
  return rc;
}

static int server_require_open(ServerObject* self) {
  if (self->handle) return 0;
  PyErr_SetString(PyExc_ValueError, "the server is closed");
  return -1;
}

static PyObject* server_start(ServerObject* self, PyObject* unused) {
  if (server_require_open(self) < 0) return NULL;
  oneflow_status_t st;
  Py_BEGIN_ALLOW_THREADS
  st = OF(oneflow_server_start)(self->handle);
  Py_END_ALLOW_THREADS
  if (ofpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* server_stop(ServerObject* self, PyObject* arg) {
  if (server_require_open(self) < 0) return NULL;
  long long drain_ms = PyLong_AsLongLong(arg);
  if (drain_ms == -1 && PyErr_Occurred()) return NULL;
  oneflow_status_t st;
  Py_BEGIN_ALLOW_THREADS
  st = OF(oneflow_server_stop)(self->handle, (int64_t)drain_ms);
  Py_END_ALLOW_THREADS
  if (ofpy_check(st) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject* server_port(ServerObject* self, PyObject* arg) {
  if (server_require_open(self) < 0) return NULL;
  long which = PyLong_AsLong(arg);
  if (which == -1 && PyErr_Occurred()) return NULL;
  int32_t port = -1;
  if (ofpy_check(OF(oneflow_server_port)(self->handle, (int32_t)which, &port)) < 0) return NULL;
  return PyLong_FromLong(port);
}

static PyObject* server_ready(ServerObject* self, PyObject* unused) {
  if (server_require_open(self) < 0) return NULL;
  int32_t ready = 0;
  if (ofpy_check(OF(oneflow_server_ready)(self->handle, &ready)) < 0) return NULL;
  return PyBool_FromLong(ready);
}

static PyObject* server_close(ServerObject* self, PyObject* unused) {
  server_release(self);
  Py_RETURN_NONE;
}

static PyMethodDef server_methods[] = {
    {"start", (PyCFunction)server_start, METH_NOARGS, "start() -> None: loads the repository, opens the ports."},
    {"stop", (PyCFunction)server_stop, METH_O, "stop(drain_timeout_ms) -> None: drains and closes."},
    {"port", (PyCFunction)server_port, METH_O, "port(which) -> int: 0 HTTP, 1 gRPC, 2 metrics; -1 when off."},
    {"ready", (PyCFunction)server_ready, METH_NOARGS, "ready() -> bool"},
    {"close", (PyCFunction)server_close, METH_NOARGS, "close() -> None: stops without a drain and frees."},
    {NULL, NULL, 0, NULL}};

PyTypeObject ofpy_ServerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "oneflow._oneflow._Server",
    .tp_basicsize = sizeof(ServerObject),
    .tp_dealloc = (destructor)server_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The embedded inference server (use oneflow.serve).",
    .tp_methods = server_methods,
    .tp_init = (initproc)server_init,
    .tp_new = PyType_GenericNew,
};
