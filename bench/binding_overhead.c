/* The C side of bench/binding_overhead.py: times oneflow_session_run on a model whose inputs all have
 * static shapes, doing per run what a C caller (and the Python binding) does: create borrowed input
 * tensors over caller memory, run, read each output's data pointer, release everything. A second
 * figure reuses the input tensors across runs (the cheapest possible C caller).
 *   usage: oneflow_binding_bench MODEL.onnx ITERS BLOCKS THREADS
 * Prints one JSON line: median over BLOCKS of the mean ns per run, both ways, in wall and CPU time. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oneflow_c.h"

#define MAX_IO 16

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

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct {
  oneflow_session_t* session;
  size_t n_in, n_out;
  const char* names[MAX_IO];
  oneflow_dtype_t dtypes[MAX_IO];
  int64_t shapes[MAX_IO][8];
  size_t ranks[MAX_IO];
  void* data[MAX_IO];
  size_t bytes[MAX_IO];
} Bench;

/* One run; `reused` non-NULL feeds those tensors instead of creating borrowed ones. */
static int run_once(Bench* b, const oneflow_tensor_t* const* reused, volatile uintptr_t* sink) {
  oneflow_tensor_t* created[MAX_IO] = {NULL};
  const oneflow_tensor_t* inputs[MAX_IO];
  oneflow_tensor_t* outputs[MAX_IO] = {NULL};
  int bad = 0;
  for (size_t i = 0; i < b->n_in && !bad; ++i) {
    if (reused) {
      inputs[i] = reused[i];
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
    if (outputs[i]) *sink ^= (uintptr_t)oneflow_tensor_data(outputs[i]);
    oneflow_tensor_release(outputs[i]);
  }
  for (size_t i = 0; i < b->n_in; ++i) oneflow_tensor_release(created[i]);
  return bad;
}

/* Median over blocks of the mean ns per run, in wall time (out[0]) and in this thread's CPU time
 * (out[1]; with one intra-op thread the engine runs on the calling thread, so this excludes time the
 * process was preempted on a busy machine). */
static int time_runs(Bench* b, const oneflow_tensor_t* const* reused, int iters, int blocks, double out[2]) {
  volatile uintptr_t sink = 0;
  double* means = calloc(2 * (size_t)blocks, sizeof(double));
  if (!means) return 1;
  double* cpu_means = means + blocks;
  for (int i = 0; i < iters / 10 + 1; ++i)
    if (run_once(b, reused, &sink)) return free(means), 1;
  for (int k = 0; k < blocks; ++k) {
    double t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < iters; ++i)
      if (run_once(b, reused, &sink)) return free(means), 1;
    cpu_means[k] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / iters;
    means[k] = (clock_ns(CLOCK_MONOTONIC) - t0) / iters;
  }
  qsort(means, (size_t)blocks, sizeof(double), cmp_double);
  qsort(cpu_means, (size_t)blocks, sizeof(double), cmp_double);
  out[0] = means[blocks / 2];
  out[1] = cpu_means[blocks / 2];
  free(means);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MODEL.onnx ITERS BLOCKS THREADS\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[2]), blocks = atoi(argv[3]);
  if (iters < 1 || blocks < 1) return 2;
  Bench b;
  memset(&b, 0, sizeof b);
  oneflow_graph_t* graph = NULL;
  oneflow_session_options_t opts;
  oneflow_session_options_init(&opts);
  opts.intra_op_threads = atoi(argv[4]);
  if (failed(oneflow_graph_load_file(argv[1], &graph), "load") ||
      failed(oneflow_session_create(NULL, graph, &opts, &b.session), "session")) return 1;
  b.n_in = oneflow_session_input_count(b.session);
  b.n_out = oneflow_session_output_count(b.session);
  if (b.n_in > MAX_IO || b.n_out > MAX_IO) return fprintf(stderr, "too many inputs/outputs\n"), 1;
  oneflow_tensor_t* reused[MAX_IO] = {NULL};
  for (size_t i = 0; i < b.n_in; ++i) {
    oneflow_value_info_t info;
    oneflow_value_info_init(&info);
    if (failed(oneflow_session_get_input_info(b.session, i, &info), "input info")) return 1;
    if (info.rank < 0 || info.rank > 8) return fprintf(stderr, "input %s: unsupported rank\n", info.name), 1;
    b.names[i] = info.name;
    b.dtypes[i] = info.dtype;
    b.ranks[i] = (size_t)info.rank;
    size_t n = oneflow_dtype_size(info.dtype);
    for (int64_t d = 0; d < info.rank; ++d) {
      if (info.dims[d] < 0) return fprintf(stderr, "input %s has a dynamic dim\n", info.name), 1;
      b.shapes[i][d] = info.dims[d];
      n *= (size_t)info.dims[d];
    }
    b.bytes[i] = n;
    b.data[i] = calloc(1, n ? n : 1); /* zeros: the bench times the call path, not the arithmetic */
    if (!b.data[i]) return 1;
    if (failed(oneflow_tensor_create_borrowed(b.dtypes[i], b.shapes[i], b.ranks[i], b.data[i], n, NULL, NULL,
                                              &reused[i]),
               "borrow")) return 1;
  }
  double per_run[2], reuse[2];
  if (time_runs(&b, NULL, iters, blocks, per_run) ||
      time_runs(&b, (const oneflow_tensor_t* const*)reused, iters, blocks, reuse)) return 1;
  printf("{\"wall\": {\"c\": %.1f, \"c_reused\": %.1f}, \"cpu\": {\"c\": %.1f, \"c_reused\": %.1f}}\n",
         per_run[0], reuse[0], per_run[1], reuse[1]);
  for (size_t i = 0; i < b.n_in; ++i) {
    oneflow_tensor_release(reused[i]);
    free(b.data[i]);
  }
  oneflow_session_release(b.session);
  oneflow_graph_release(graph);
  return 0;
}
