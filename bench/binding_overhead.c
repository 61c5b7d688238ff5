/* The C side of bench/binding_overhead.py, loaded into the same process as the Python side so both are
 * timed in alternating blocks under the same conditions. It times oneflow_session_run on a model whose
 * inputs all have static shapes, doing per run what a C caller (and the Python binding) does: create
 * borrowed input tensors over caller memory, run, read each output's data pointer, release everything.
 * With `reuse` set the input tensors are created once (the cheapest possible C caller). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oneflow_c.h"

#define MAX_IO 16

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  oneflow_graph_t* graph;
  oneflow_session_t* session;
  size_t n_in, n_out;
  const char* names[MAX_IO];
  oneflow_dtype_t dtypes[MAX_IO];
  int64_t shapes[MAX_IO][8];
  size_t ranks[MAX_IO];
  void* data[MAX_IO];
  size_t bytes[MAX_IO];
  oneflow_tensor_t* reused[MAX_IO];
  volatile uintptr_t sink;
} Bench;

static int failed(oneflow_status_t st, const char* what) {
  if (!st) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, oneflow_code_name(oneflow_status_code(st)), oneflow_status_message(st));
  oneflow_status_free(st);
  return 1;
}

static double clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

EXPORT void ofb_close(Bench* b) {
  if (!b) return;
  for (size_t i = 0; i < b->n_in; ++i) {
    oneflow_tensor_release(b->reused[i]);
    free(b->data[i]);
  }
  oneflow_session_release(b->session);
  oneflow_graph_release(b->graph);
  free(b);
}

/* Loads MODEL, compiles it with `threads` intra-op threads and allocates zero-filled inputs (the bench
 * times the call path, not the arithmetic). NULL on failure (the reason goes to stderr). */
EXPORT Bench* ofb_open(const char* model, int threads) {
  Bench* b = calloc(1, sizeof(Bench));
  if (!b) return NULL;
  oneflow_session_options_t opts;
  oneflow_session_options_init(&opts);
  opts.intra_op_threads = threads;
  if (failed(oneflow_graph_load_file(model, &b->graph), "load") ||
      failed(oneflow_session_create(NULL, b->graph, &opts, &b->session), "session"))
    return ofb_close(b), NULL;
  b->n_in = oneflow_session_input_count(b->session);
  b->n_out = oneflow_session_output_count(b->session);
  if (b->n_in > MAX_IO || b->n_out > MAX_IO) return fprintf(stderr, "too many inputs/outputs\n"), ofb_close(b), NULL;
  for (size_t i = 0; i < b->n_in; ++i) {
    oneflow_value_info_t info;
    oneflow_value_info_init(&info);
    if (failed(oneflow_session_get_input_info(b->session, i, &info), "input info")) return ofb_close(b), NULL;
    if (info.rank < 0 || info.rank > 8) return fprintf(stderr, "input %s: unsupported rank\n", info.name), ofb_close(b), NULL;
    b->names[i] = info.name;
    b->dtypes[i] = info.dtype;
    b->ranks[i] = (size_t)info.rank;
    size_t n = oneflow_dtype_size(info.dtype);
    for (int64_t d = 0; d < info.rank; ++d) {
      if (info.dims[d] < 0) return fprintf(stderr, "input %s has a dynamic dim\n", info.name), ofb_close(b), NULL;
      b->shapes[i][d] = info.dims[d];
      n *= (size_t)info.dims[d];
    }
    b->bytes[i] = n;
    b->data[i] = calloc(1, n ? n : 1);
    if (!b->data[i] || failed(oneflow_tensor_create_borrowed(b->dtypes[i], b->shapes[i], b->ranks[i], b->data[i], n,
                                                             NULL, NULL, &b->reused[i]),
                              "borrow"))
      return ofb_close(b), NULL;
  }
  return b;
}

static int run_once(Bench* b, int reuse) {
  oneflow_tensor_t* created[MAX_IO] = {NULL};
  const oneflow_tensor_t* inputs[MAX_IO];
  oneflow_tensor_t* outputs[MAX_IO] = {NULL};
  int bad = 0;
  for (size_t i = 0; i < b->n_in && !bad; ++i) {
    if (reuse) {
      inputs[i] = b->reused[i];
    } else {
      bad = failed(oneflow_tensor_create_borrowed(b->dtypes[i], b->shapes[i], b->ranks[i], b->data[i], b->bytes[i],
                                                  NULL, NULL, &created[i]),
                   "oneflow_tensor_create_borrowed");
      inputs[i] = created[i];
    }
  }
  if (!bad) bad = failed(oneflow_session_run(b->session, b->names, inputs, b->n_in, NULL, 0, outputs, b->n_out),
                         "oneflow_session_run");
  for (size_t i = 0; i < b->n_out; ++i) {
    if (outputs[i]) b->sink ^= (uintptr_t)oneflow_tensor_data(outputs[i]);
    oneflow_tensor_release(outputs[i]);
  }
  for (size_t i = 0; i < b->n_in; ++i) oneflow_tensor_release(created[i]);
  return bad;
}

/* Runs `iters` times; stores the mean ns per run in wall time (out[0]) and in this thread's CPU time
 * (out[1]). Returns nonzero when a run failed. */
EXPORT int ofb_time(Bench* b, int iters, int reuse, double* out) {
  double t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < iters; ++i)
    if (run_once(b, reuse)) return 1;
  out[1] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / iters;
  out[0] = (clock_ns(CLOCK_MONOTONIC) - t0) / iters;
  return 0;
}
