/* The C ABI's distributed training (C99): the MLP trained 5 steps data parallel on 2 in-process
 * devices and tensor parallel (manual SBP annotations) on 2, against the single-device training
 * session through the same ABI: the losses, a weight and an inference output must agree within
 * 1e-5 relative; errors for NULLs, explain before a step and an unknown weight.
 * Usage: dist_train_c_api_test TRAIN_MODELS_DIR */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

#define BATCH 8
#define STEPS 5

static oneflow_code_t code_of(oneflow_status_t st) {
  oneflow_code_t c = oneflow_status_code(st);
  oneflow_status_free(st);
  return c;
}

/* A deterministic batch: inputs in [-1, 1), labels in [0, 10). */
static void make_batch(int step, oneflow_tensor_t** x, oneflow_tensor_t** y) {
  const int64_t xs[2] = {BATCH, 784}, ys[1] = {BATCH};
  expect_ok(oneflow_tensor_create(ONEFLOW_DTYPE_F32, xs, 2, x), "input");
  expect_ok(oneflow_tensor_create(ONEFLOW_DTYPE_I64, ys, 1, y), "labels");
  float* xd = (float*)oneflow_tensor_data(*x);
  int64_t* yd = (int64_t*)oneflow_tensor_data(*y);
  uint32_t s = 12345u + 977u * (uint32_t)step;
  for (int i = 0; i < BATCH * 784; ++i) {
    s = s * 1664525u + 1013904223u;
    xd[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
  }
  for (int i = 0; i < BATCH; ++i) yd[i] = (int64_t)((i * 7 + step * 3) % 10);
}

static double rel(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = fabs((double)a[i] - b[i]);
    if (d > num) num = d;
    if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
  }
  return num / (den > 1e-2 ? den : 1e-2);
}

static void init_training(oneflow_training_options_t* t) {
  oneflow_training_options_init(t);
  t->loss = ONEFLOW_LOSS_SOFTMAX_CROSS_ENTROPY;
  t->logits_output = "logits";
  t->optimizer = ONEFLOW_OPTIMIZER_SGD;
  t->learning_rate = 0.05f;
  t->momentum = 0.9f;
}

/* Trains the distributed trainer with `plan` and compares with the reference figures. */
static void compare(const oneflow_graph_t* graph, const oneflow_plan_options_t* plan, const double* ref_loss,
                    const float* ref_w, const float* ref_out, const char* what) {
  oneflow_training_options_t t;
  init_training(&t);
  oneflow_dist_training_options_t d;
  oneflow_dist_training_options_init(&d);
  oneflow_dist_trainer_t* trainer = NULL;
  if (!expect_ok(oneflow_dist_trainer_create(NULL, graph, &t, plan, &d, &trainer), what)) return;
  char* text = NULL;
  EXPECT(code_of(oneflow_dist_trainer_explain(trainer, 0, &text)) == ONEFLOW_INVALID_ARGUMENT,
         "%s: explain before the first step must fail", what);
  const char* names[2] = {"input", "labels"};
  for (int step = 0; step < STEPS; ++step) {
    oneflow_tensor_t *x, *y;
    make_batch(step, &x, &y);
    const oneflow_tensor_t* in[2] = {x, y};
    double loss = 0;
    int32_t applied = 0;
    if (expect_ok(oneflow_dist_trainer_step(trainer, names, in, 2, &loss, &applied), what)) {
      EXPECT(applied == 1, "%s: step %d not applied", what, step);
      EXPECT(fabs(loss - ref_loss[step]) <= 1e-5 * fabs(ref_loss[step]), "%s: step %d loss %.8f vs %.8f", what, step,
             loss, ref_loss[step]);
    }
    oneflow_tensor_release(x);
    oneflow_tensor_release(y);
  }
  oneflow_tensor_t* w = NULL;
  if (expect_ok(oneflow_dist_trainer_get_parameter(trainer, "fc2.weight", &w), what)) {
    double e = rel((const float*)oneflow_tensor_data(w), ref_w, 1024 * 1024);
    EXPECT(e <= 1e-5, "%s: fc2.weight differs by %.3g", what, e);
    oneflow_tensor_release(w);
  }
  oneflow_tensor_t *x, *y, *out = NULL;
  make_batch(99, &x, &y);
  const oneflow_tensor_t* in[1] = {x};
  if (expect_ok(oneflow_dist_trainer_run(trainer, names, in, 1, NULL, 0, &out, 1), what)) {
    double e = rel((const float*)oneflow_tensor_data(out), ref_out, BATCH * 10);
    EXPECT(e <= 1e-5, "%s: inference differs by %.3g", what, e);
    oneflow_tensor_release(out);
  }
  oneflow_tensor_release(x);
  oneflow_tensor_release(y);
  if (expect_ok(oneflow_dist_trainer_explain(trainer, 1, &text), what)) {
    EXPECT(strstr(text, "\"estimated_step_seconds\"") != NULL, "%s: explain JSON lacks the estimate", what);
    oneflow_string_free(text);
  }
  EXPECT(code_of(oneflow_dist_trainer_get_parameter(trainer, "nope", &w)) == ONEFLOW_NOT_FOUND,
         "%s: an unknown weight must be NOT_FOUND", what);
  oneflow_dist_trainer_release(trainer);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s TRAIN_MODELS_DIR\n", argv[0]);
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/mlp_784_1024_1024_10.onnx", argv[1]);
  oneflow_graph_t* graph = NULL;
  if (!expect_ok(oneflow_graph_load_file(path, &graph), "load")) return 1;

  /* The single-device reference through the training-session ABI. */
  oneflow_training_options_t t;
  init_training(&t);
  oneflow_session_options_t so;
  oneflow_session_options_init(&so);
  so.intra_op_threads = 1;
  oneflow_session_t* s = NULL;
  if (!expect_ok(oneflow_training_session_create(NULL, graph, &so, &t, &s), "training session")) return 1;
  const char* names[2] = {"input", "labels"};
  double ref_loss[STEPS];
  for (int step = 0; step < STEPS; ++step) {
    oneflow_tensor_t *x, *y, *out[2] = {NULL, NULL};
    make_batch(step, &x, &y);
    const oneflow_tensor_t* in[2] = {x, y};
    const char* fetch[1] = {"loss"};
    expect_ok(oneflow_session_run(s, names, in, 2, fetch, 1, out, 2), "reference run");
    ref_loss[step] = *(const float*)oneflow_tensor_data(out[0]);
    oneflow_tensor_release(out[0]);
    expect_ok(oneflow_session_backward(s), "backward");
    expect_ok(oneflow_session_step(s, NULL), "step");
    oneflow_tensor_release(x);
    oneflow_tensor_release(y);
  }
  oneflow_tensor_t* w = NULL;
  expect_ok(oneflow_session_get_parameter(s, "fc2.weight", &w), "reference weight");
  float* ref_w = (float*)malloc(sizeof(float) * 1024 * 1024);
  memcpy(ref_w, oneflow_tensor_data(w), sizeof(float) * 1024 * 1024);
  oneflow_tensor_release(w);
  expect_ok(oneflow_session_set_run_mode(s, ONEFLOW_RUN_EVAL), "eval mode");
  oneflow_tensor_t *x, *y, *out = NULL;
  make_batch(99, &x, &y);
  const oneflow_tensor_t* in[1] = {x};
  expect_ok(oneflow_session_run(s, names, in, 1, NULL, 0, &out, 1), "reference eval");
  float ref_out[BATCH * 10];
  memcpy(ref_out, oneflow_tensor_data(out), sizeof ref_out);
  oneflow_tensor_release(out);
  oneflow_tensor_release(x);
  oneflow_tensor_release(y);
  oneflow_session_release(s);

  oneflow_plan_options_t p;
  oneflow_plan_options_init(&p);
  p.placement = "cpu:0-1";
  compare(graph, &p, ref_loss, ref_w, ref_out, "data parallel");
  const char* tp[] = {"fc1.weight=S(1)", "fc1.bias=S(0)", "fc2.weight=S(0)", "input=B", "labels=B"};
  p.mode = "manual";
  p.sbp_specs = tp;
  p.num_sbp_specs = 5;
  compare(graph, &p, ref_loss, ref_w, ref_out, "tensor parallel");

  /* Bad input. */
  oneflow_dist_trainer_t* trainer = NULL;
  oneflow_plan_options_init(&p);
  p.placement = "cpu:0-1";
  EXPECT(code_of(oneflow_dist_trainer_create(NULL, NULL, &t, &p, NULL, &trainer)) == ONEFLOW_INVALID_ARGUMENT, "NULL graph");
  EXPECT(code_of(oneflow_dist_trainer_create(NULL, graph, NULL, &p, NULL, &trainer)) == ONEFLOW_INVALID_ARGUMENT,
         "NULL training options");
  EXPECT(code_of(oneflow_dist_trainer_create(NULL, graph, &t, NULL, NULL, &trainer)) == ONEFLOW_INVALID_ARGUMENT,
         "NULL plan options");
  oneflow_dist_training_options_t d;
  oneflow_dist_training_options_init(&d);
  d.zero_stage = 5;
  EXPECT(code_of(oneflow_dist_trainer_create(NULL, graph, &t, &p, &d, &trainer)) == ONEFLOW_INVALID_ARGUMENT, "zero_stage 5");
  EXPECT(code_of(oneflow_dist_trainer_step(NULL, names, NULL, 0, NULL, NULL)) == ONEFLOW_INVALID_ARGUMENT,
         "NULL trainer");
  oneflow_dist_trainer_release(NULL);
  free(ref_w);
  oneflow_graph_release(graph);
  return c_test_finish("dist_train_c_api");
}
