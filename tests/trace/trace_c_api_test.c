/* The C ABI's tracing (C99): oneflow_trace_start/stop errors (NULL and empty paths, an unwritable
 * directory, a directory as the file, start twice, stop without start), then a trace of two
 * training steps of the MLP (single device) and one data-parallel step on 2 in-process devices:
 * the file must exist, replace the previous one, and hold the training phases, node slices and
 * collectives. tests/trace/trace_test.py checks the same file as Chrome-trace JSON.
 * Usage: trace_c_api_test TRAIN_MODELS_DIR OUT.json */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

#define BATCH 8

/* The status's code; its message must mention `needle` (NULL: any message). */
static oneflow_code_t code_mentioning(oneflow_status_t st, const char* needle, const char* what) {
  if (st == NULL) return ONEFLOW_OK;
  const oneflow_code_t c = oneflow_status_code(st);
  const char* msg = oneflow_status_message(st);
  EXPECT(msg != NULL && msg[0] != '\0', "%s: the error has no message", what);
  if (needle != NULL) EXPECT(msg != NULL && strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
  oneflow_status_free(st);
  return c;
}

static void make_batch(int step, oneflow_tensor_t** x, oneflow_tensor_t** y) {
  const int64_t xs[2] = {BATCH, 784}, ys[1] = {BATCH};
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, xs, 2, x));
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_I64, ys, 1, y));
  float* xd = (float*)oneflow_tensor_data(*x);
  int64_t* yd = (int64_t*)oneflow_tensor_data(*y);
  for (int i = 0; i < BATCH * 784; ++i) xd[i] = (float)((i * 37 + step) % 101) / 50.0f - 1.0f;
  for (int i = 0; i < BATCH; ++i) yd[i] = (int64_t)((i * 7 + step * 3) % 10);
}

static void init_training(oneflow_training_options_t* t) {
  oneflow_training_options_init(t);
  t->loss = ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY;
  t->logits_output = "logits";
  t->optimizer = ONEFLOW_OPTIMIZER_SGD;
  t->learning_rate = 0.05f;
}

static void train_single(const oneflow_graph_t* graph) {
  oneflow_training_options_t t;
  init_training(&t);
  oneflow_session_options_t so;
  oneflow_session_options_init(&so);
  so.intra_op_threads = 1;
  oneflow_session_t* s = NULL;
  OK(oneflow_training_session_create(NULL, graph, &so, &t, &s));
  const char* names[2] = {"input", "labels"};
  for (int step = 0; step < 2; ++step) {
    oneflow_tensor_t *x, *y, *out[1] = {NULL};
    make_batch(step, &x, &y);
    const oneflow_tensor_t* in[2] = {x, y};
    const char* fetch[1] = {"loss"};
    expect_ok(oneflow_session_run(s, names, in, 2, fetch, 1, out, 1), "train run");
    oneflow_tensor_release(out[0]);
    expect_ok(oneflow_session_backward(s), "backward");
    expect_ok(oneflow_session_step(s, NULL), "step");
    oneflow_tensor_release(x);
    oneflow_tensor_release(y);
  }
  oneflow_session_release(s);
}

static void train_data_parallel(const oneflow_graph_t* graph) {
  oneflow_training_options_t t;
  init_training(&t);
  oneflow_plan_options_t p;
  oneflow_plan_options_init(&p);
  p.placement = "cpu:0-1";
  oneflow_dist_trainer_t* trainer = NULL;
  OK(oneflow_dist_trainer_create(NULL, graph, &t, &p, NULL, &trainer));
  oneflow_tensor_t *x, *y;
  make_batch(0, &x, &y);
  const char* names[2] = {"input", "labels"};
  const oneflow_tensor_t* in[2] = {x, y};
  double loss = 0;
  expect_ok(oneflow_dist_trainer_step(trainer, names, in, 2, &loss, NULL), "data-parallel step");
  oneflow_tensor_release(x);
  oneflow_tensor_release(y);
  oneflow_dist_trainer_release(trainer);
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* s = (char*)malloc((size_t)n + 1);
  const size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s TRAIN_MODELS_DIR OUT.json\n", argv[0]);
    return 2;
  }
  const char* out = argv[2];
  char model[4096], dir_as_file[4096];
  snprintf(model, sizeof model, "%s/mlp_784_1024_1024_10.onnx", argv[1]);
  snprintf(dir_as_file, sizeof dir_as_file, "%s", argv[1]);

  /* Bad calls: clear statuses, and nothing is recording afterwards. */
  EXPECT(code_mentioning(oneflow_trace_stop(), "no trace", "stop before start") == ONEFLOW_INVALID_ARGUMENT,
         "stop without a trace must be INVALID_ARGUMENT");
  EXPECT(code_mentioning(oneflow_trace_start(NULL), "NULL", "NULL path") == ONEFLOW_INVALID_ARGUMENT,
         "a NULL path must be INVALID_ARGUMENT");
  EXPECT(code_mentioning(oneflow_trace_start(""), "empty", "empty path") == ONEFLOW_INVALID_ARGUMENT,
         "an empty path must be INVALID_ARGUMENT");
  EXPECT(code_mentioning(oneflow_trace_start("/nonexistent-oneflow-dir/sub/trace.json"), "/nonexistent-oneflow-dir",
                         "unwritable directory") == ONEFLOW_IO,
         "a path in a missing directory must be IO");
  EXPECT(code_mentioning(oneflow_trace_start(dir_as_file), "directory", "a directory") == ONEFLOW_IO,
         "a directory as the file must be IO");
  EXPECT(code_mentioning(oneflow_trace_stop(), NULL, "stop after failed starts") == ONEFLOW_INVALID_ARGUMENT,
         "failed starts must leave no trace recording");

  /* An old file at the path is replaced by the trace. */
  FILE* old = fopen(out, "wb");
  REQUIRE(old != NULL, "cannot create %s", out);
  fputs("not a trace", old);
  fclose(old);

  oneflow_graph_t* graph = NULL;
  REQUIRE_OK(oneflow_graph_load_file(model, &graph));
  REQUIRE_OK(oneflow_trace_start(out));
  EXPECT(code_mentioning(oneflow_trace_start(out), "already", "start twice") == ONEFLOW_INVALID_ARGUMENT,
         "a second start must be INVALID_ARGUMENT");
  train_single(graph);
  train_data_parallel(graph);
  expect_ok(oneflow_trace_stop(), "stop");
  EXPECT(code_mentioning(oneflow_trace_stop(), "no trace", "stop twice") == ONEFLOW_INVALID_ARGUMENT,
         "a second stop must be INVALID_ARGUMENT");
  oneflow_graph_release(graph);

  char* text = read_file(out);
  REQUIRE(text != NULL, "the trace %s was not written", out);
  EXPECT(strncmp(text, "{", 1) == 0 && strstr(text, "\"traceEvents\"") != NULL, "%s is no trace JSON object", out);
  const char* needles[] = {"\"name\":\"forward\"", "\"name\":\"backward\"", "\"name\":\"step\"",
                           "\"name\":\"train step\"", "\"name\":\"reduce gradients\"", "\"cat\":\"comm\"",
                           "\"name\":\"all-reduce\"", "\"cat\":\"node\"", "\"name\":\"rank 1\""};
  for (size_t i = 0; i < sizeof needles / sizeof needles[0]; ++i)
    EXPECT(strstr(text, needles[i]) != NULL, "the trace lacks %s", needles[i]);
  free(text);

  /* A second trace after a stop starts afresh. */
  char second[4200];
  snprintf(second, sizeof second, "%s.second.json", out);
  REQUIRE_OK(oneflow_trace_start(second));
  expect_ok(oneflow_trace_stop(), "stop of an empty trace");
  text = read_file(second);
  EXPECT(text != NULL && strstr(text, "\"cat\":\"node\"") == NULL, "the second trace holds slices of the first");
  free(text);
  remove(second);
  return c_test_finish("trace_c_api");
}
