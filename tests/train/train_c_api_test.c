/* Training through the C ABI: gradients against numpy's (make_train_fixture.py), accumulation, an
 * SGD step by hand, eval mode, batch-shape changes, activation checkpointing, NaN/Inf policies,
 * checkpoints (round trip, another model, truncated file), export, bad input.
 *   train_c_api_test FIXTURE_DIR WORK_DIR */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

static const char* g_fix;
static const char* g_work;

/* Expects `call` to fail with `code` and its message to contain `needle`. */
static void expect_error(oneflow_status_t st, oneflow_code_t code, const char* needle, const char* what) {
  EXPECT(st != NULL, "%s: succeeded, expected %s", what, oneflow_code_name(code));
  if (!st) return;
  EXPECT(oneflow_status_code(st) == code, "%s: code %s, expected %s (%s)", what,
         oneflow_code_name(oneflow_status_code(st)), oneflow_code_name(code), oneflow_status_message(st));
  EXPECT(strstr(oneflow_status_message(st), needle) != NULL, "%s: message '%s' lacks '%s'", what,
         oneflow_status_message(st), needle);
  oneflow_status_free(st);
}

static void* read_file(const char* name, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_fix, name);
  FILE* f = fopen(path, "rb");
  void* p = malloc(bytes);
  if (!f || !p || fread(p, 1, bytes, f) != bytes) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  return p;
}

static oneflow_graph_t* load(const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_fix, name);
  oneflow_graph_t* g = NULL;
  oneflow_status_t st = oneflow_graph_load_file(path, &g);
  if (st) {
    fprintf(stderr, "cannot load %s: %s\n", path, oneflow_status_message(st));
    exit(1);
  }
  return g;
}

static const char* kParams[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
static const size_t kParamSize[4] = {32, 8, 24, 3};

static float g_x[20];
static int64_t g_y[5];

/* A training session on mlp.onnx with an appended cross entropy; SGD lr 0.1 unless `opts` given. */
static oneflow_status_t make_session(const char* model, const oneflow_training_options_t* opts, oneflow_session_t** out) {
  oneflow_graph_t* g = load(model);
  oneflow_training_options_t to;
  oneflow_training_options_init(&to);
  to.logits_output = "logits";
  to.optimizer = ONEFLOW_OPTIMIZER_SGD;
  to.learning_rate = 0.1f;
  oneflow_session_options_t so;
  oneflow_session_options_init(&so);
  so.intra_op_threads = 2;
  oneflow_status_t st = oneflow_training_session_create(NULL, g, &so, opts ? opts : &to, out);
  oneflow_graph_release(g);
  return st;
}

/* One train-mode run on the first `rows` samples (x may hold NaN when `poison`). */
static oneflow_status_t run_batch(oneflow_session_t* s, int64_t rows, int poison, float* out_loss) {
  float x[20];
  memcpy(x, g_x, sizeof x);
  if (poison) x[1] = NAN;
  int64_t xs[2] = {rows, 4}, ys[1] = {rows};
  oneflow_tensor_t *tx = NULL, *ty = NULL;
  oneflow_status_t st = oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, xs, 2, x, sizeof x, NULL, NULL, &tx);
  if (!st) st = oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_I64, ys, 1, g_y, sizeof g_y, NULL, NULL, &ty);
  const char* names[2] = {"x", "labels"};
  const oneflow_tensor_t* ins[2] = {tx, ty};
  const char* fetch[1] = {"loss"};
  oneflow_tensor_t* loss = NULL;
  if (!st) st = oneflow_session_run(s, names, ins, 2, fetch, 1, &loss, 1);
  if (!st && out_loss) *out_loss = *(const float*)oneflow_tensor_data(loss);
  oneflow_tensor_release(loss);
  oneflow_tensor_release(tx);
  oneflow_tensor_release(ty);
  return st;
}

static double max_rel_err(const float* got, const float* want, size_t n, double scale) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double e = fabs((double)got[i] - (double)want[i]) / (1e-6 + fabs((double)want[i]) * scale + 1e-5);
    if (!(e <= worst)) worst = e; /* NaN counts as worst */
  }
  return worst;
}

/* Compares the session's gradients with grad<prefix>_<name>.f32 times `factor`. */
static void check_grads(oneflow_session_t* s, const char* prefix, float factor, const char* what) {
  for (int p = 0; p < 4; ++p) {
    char file[256];
    snprintf(file, sizeof file, "%s_%s.f32", prefix, kParams[p]);
    float* want = read_file(file, kParamSize[p] * 4);
    for (size_t i = 0; i < kParamSize[p]; ++i) want[i] *= factor;
    oneflow_tensor_t* g = NULL;
    oneflow_status_t st = oneflow_session_get_gradient(s, kParams[p], &g);
    EXPECT(st == NULL, "%s: get_gradient(%s): %s", what, kParams[p], oneflow_status_message(st));
    if (!st) {
      EXPECT((size_t)oneflow_tensor_element_count(g) == kParamSize[p], "%s: %s has %lld elements", what, kParams[p],
             (long long)oneflow_tensor_element_count(g));
      double err = max_rel_err(oneflow_tensor_data(g), want, kParamSize[p], 1e-4);
      EXPECT(err <= 1.0, "%s: gradient of %s differs from numpy's (scaled error %g)", what, kParams[p], err);
    }
    oneflow_status_free(st);
    oneflow_tensor_release(g);
    free(want);
  }
}

static void test_gradients_accumulation_and_sgd(void) {
  oneflow_session_t* s = NULL;
  OK(make_session("mlp.onnx", NULL, &s));
  EXPECT(oneflow_session_parameter_count(s) == 4, "%zu parameters", oneflow_session_parameter_count(s));
  for (int p = 0; p < 4; ++p)
    EXPECT(oneflow_session_parameter_name(s, (size_t)p) && !strcmp(oneflow_session_parameter_name(s, (size_t)p), kParams[p]),
           "parameter %d is %s", p, oneflow_session_parameter_name(s, (size_t)p));
  EXPECT(oneflow_session_parameter_name(s, 4) == NULL, "index past the end gives a name");
  expect_error(oneflow_session_backward(s), ONEFLOW_INVALID_ARGUMENT, "train-mode run", "backward before run");
  expect_error(oneflow_session_step(s, NULL), ONEFLOW_INVALID_ARGUMENT, "backward", "step without gradients");

  {
    int64_t xs[2] = {5, 4};
    oneflow_tensor_t* tx = NULL;
    OK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, xs, 2, g_x, sizeof g_x, NULL, NULL, &tx));
    const char* n1[1] = {"x"};
    const oneflow_tensor_t* i1[1] = {tx};
    oneflow_tensor_t* o1[2] = {NULL, NULL};
    expect_error(oneflow_session_run(s, n1, i1, 1, NULL, 0, o1, 2), ONEFLOW_INVALID_ARGUMENT, "labels",
                 "train-mode run without labels");
    oneflow_tensor_release(tx);
  }
  float loss = 0, *want_loss = read_file("loss.f32", 4);
  OK(run_batch(s, 5, 0, &loss));
  EXPECT(fabsf(loss - *want_loss) <= 1e-5f * fabsf(*want_loss) + 1e-6f, "loss %g, numpy %g", loss, *want_loss);
  free(want_loss);
  OK(oneflow_session_backward(s));
  expect_error(oneflow_session_backward(s), ONEFLOW_INVALID_ARGUMENT, "train-mode run", "second backward after one run");
  check_grads(s, "grad", 1.0f, "one backward");
  OK(run_batch(s, 5, 0, NULL));
  OK(oneflow_session_backward(s));
  check_grads(s, "grad", 2.0f, "two accumulated backwards");

  int32_t applied = -1;
  OK(oneflow_session_step(s, &applied));
  EXPECT(applied == 1, "step applied = %d", applied);
  oneflow_training_state_t state;
  oneflow_training_state_init(&state);
  OK(oneflow_session_get_training_state(s, &state));
  EXPECT(state.step == 1 && state.skipped_steps == 0, "step %lld skipped %lld", (long long)state.step,
         (long long)state.skipped_steps);
  for (int p = 0; p < 4; ++p) {
    char file[256];
    snprintf(file, sizeof file, "init_%s.f32", kParams[p]);
    float* init = read_file(file, kParamSize[p] * 4);
    snprintf(file, sizeof file, "grad_%s.f32", kParams[p]);
    float* grad = read_file(file, kParamSize[p] * 4);
    for (size_t i = 0; i < kParamSize[p]; ++i) init[i] -= 0.1f * 2.0f * grad[i]; /* SGD on the summed gradient */
    oneflow_tensor_t* v = NULL;
    OK(oneflow_session_get_parameter(s, kParams[p], &v));
    EXPECT(max_rel_err(oneflow_tensor_data(v), init, kParamSize[p], 1e-4) <= 1.0, "SGD update of %s", kParams[p]);
    oneflow_tensor_release(v);
    free(init);
    free(grad);
  }
  /* Gradients were zeroed by the step. */
  oneflow_tensor_t* g = NULL;
  OK(oneflow_session_get_gradient(s, "fc1.weight", &g));
  float sum = 0;
  for (int i = 0; i < 32; ++i) sum += fabsf(((const float*)oneflow_tensor_data(g))[i]);
  EXPECT(sum == 0.0f, "gradients after step sum to %g", sum);
  oneflow_tensor_release(g);
  expect_error(oneflow_session_get_parameter(s, "nope", &g), ONEFLOW_NOT_FOUND, "nope", "unknown parameter");

  /* A batch of another size is re-planned; its gradients are the 3-row reference's (at the
   * updated parameters they differ, so use a fresh session). */
  oneflow_session_release(s);
  OK(make_session("mlp.onnx", NULL, &s));
  OK(run_batch(s, 5, 0, NULL));
  OK(oneflow_session_backward(s));
  OK(oneflow_session_zero_gradients(s));
  OK(run_batch(s, 3, 0, NULL));
  OK(oneflow_session_backward(s));
  check_grads(s, "grad3", 1.0f, "3-row batch after a 5-row batch");
  uint64_t peak = 0;
  OK(oneflow_session_get_planned_peak_bytes(s, &peak));
  EXPECT(peak > 0, "peak bytes %llu", (unsigned long long)peak);

  /* Eval mode needs no labels and returns the logits only. */
  OK(oneflow_session_set_run_mode(s, ONEFLOW_RUN_EVAL));
  int64_t xs[2] = {5, 4};
  oneflow_tensor_t* tx = NULL;
  OK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, xs, 2, g_x, sizeof g_x, NULL, NULL, &tx));
  const char* names[1] = {"x"};
  const oneflow_tensor_t* ins[1] = {tx};
  oneflow_tensor_t* outs[2] = {NULL, NULL};
  OK(oneflow_session_run(s, names, ins, 1, NULL, 0, outs, 2));
  EXPECT(outs[0] && oneflow_tensor_element_count(outs[0]) == 15 && outs[1] == NULL, "eval outputs");
  oneflow_tensor_release(outs[0]);
  const char* loss_name[1] = {"loss"};
  expect_error(oneflow_session_run(s, names, ins, 1, loss_name, 1, outs, 2), ONEFLOW_INVALID_ARGUMENT, "eval mode",
               "loss in eval mode");

  /* Export: an inference session on the exported graph computes the same logits. */
  oneflow_graph_t* exported = NULL;
  OK(oneflow_session_export_model(s, &exported));
  oneflow_session_t* inf = NULL;
  OK(oneflow_session_create(NULL, exported, NULL, &inf));
  oneflow_tensor_t* a = NULL;
  oneflow_tensor_t* b = NULL;
  OK(oneflow_session_run(s, names, ins, 1, NULL, 0, &a, 1));
  OK(oneflow_session_run(inf, names, ins, 1, NULL, 0, &b, 1));
  EXPECT(max_rel_err(oneflow_tensor_data(b), oneflow_tensor_data(a), 15, 1e-5) <= 1.0, "exported model output differs");
  expect_error(oneflow_session_backward(inf), ONEFLOW_INVALID_ARGUMENT, "no loss", "backward on an inference session");
  oneflow_tensor_release(a);
  oneflow_tensor_release(b);
  oneflow_session_release(inf);
  oneflow_graph_release(exported);
  oneflow_tensor_release(tx);
  oneflow_session_release(s);
}

static void test_checkpointing_same_gradients(void) {
  oneflow_training_options_t to;
  oneflow_training_options_init(&to);
  to.logits_output = "logits";
  to.activation_checkpointing = 1;
  oneflow_session_t* s = NULL;
  OK(make_session("mlp.onnx", &to, &s));
  OK(run_batch(s, 5, 0, NULL));
  OK(oneflow_session_backward(s));
  check_grads(s, "grad", 1.0f, "activation checkpointing");
  oneflow_session_release(s);
}

static void test_model_loss_and_freezing(void) {
  oneflow_graph_t* g = load("mse.onnx");
  oneflow_training_options_t to;
  oneflow_training_options_init(&to);
  to.loss = ONEFLOW_LOSS_MODEL_OUTPUT;
  to.loss_output = "nope";
  oneflow_session_t* s = NULL;
  expect_error(oneflow_training_session_create(NULL, g, NULL, &to, &s), ONEFLOW_INVALID_ARGUMENT, "nope",
               "unknown loss output");
  to.loss_output = "loss";
  const char* frozen_bad[1] = {"q*"};
  to.frozen = frozen_bad;
  to.num_frozen = 1;
  expect_error(oneflow_training_session_create(NULL, g, NULL, &to, &s), ONEFLOW_INVALID_ARGUMENT, "q*",
               "frozen pattern matching nothing");
  const char* frozen[1] = {"b"};
  to.frozen = frozen;
  OK(oneflow_training_session_create(NULL, g, NULL, &to, &s));
  EXPECT(oneflow_session_parameter_count(s) == 1, "frozen b: %zu parameters", oneflow_session_parameter_count(s));
  oneflow_session_release(s);
  to.num_frozen = 0;
  OK(oneflow_training_session_create(NULL, g, NULL, &to, &s));
  oneflow_graph_release(g);
  float* t = read_file("t.f32", 60);
  int64_t xs[2] = {5, 4}, ts[2] = {5, 3};
  oneflow_tensor_t *tx = NULL, *tt = NULL, *loss = NULL;
  OK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, xs, 2, g_x, sizeof g_x, NULL, NULL, &tx));
  OK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, ts, 2, t, 60, NULL, NULL, &tt));
  const char* names[2] = {"x", "t"};
  const oneflow_tensor_t* ins[2] = {tx, tt};
  const char* fetch[1] = {"loss"};
  OK(oneflow_session_run(s, names, ins, 2, fetch, 1, &loss, 1));
  float* want = read_file("mse_loss.f32", 4);
  EXPECT(max_rel_err(oneflow_tensor_data(loss), want, 1, 1e-5) <= 1.0, "in-model MSE loss");
  OK(oneflow_session_backward(s));
  const char* pn[2] = {"w", "b"};
  const size_t sz[2] = {12, 3};
  for (int p = 0; p < 2; ++p) {
    char file[64];
    snprintf(file, sizeof file, "mse_grad_%s.f32", pn[p]);
    float* wg = read_file(file, sz[p] * 4);
    oneflow_tensor_t* gr = NULL;
    OK(oneflow_session_get_gradient(s, pn[p], &gr));
    EXPECT(max_rel_err(oneflow_tensor_data(gr), wg, sz[p], 1e-4) <= 1.0, "in-model loss gradient of %s", pn[p]);
    oneflow_tensor_release(gr);
    free(wg);
  }
  free(want);
  free(t);
  oneflow_tensor_release(loss);
  oneflow_tensor_release(tx);
  oneflow_tensor_release(tt);
  oneflow_session_release(s);
}

static int params_equal(oneflow_session_t* a, oneflow_session_t* b) {
  int equal = 1;
  for (int p = 0; p < 4; ++p) {
    oneflow_tensor_t *x = NULL, *y = NULL;
    oneflow_status_t s1 = oneflow_session_get_parameter(a, kParams[p], &x);
    oneflow_status_t s2 = oneflow_session_get_parameter(b, kParams[p], &y);
    equal &= !s1 && !s2 && !memcmp(oneflow_tensor_data(x), oneflow_tensor_data(y), kParamSize[p] * 4);
    oneflow_status_free(s1);
    oneflow_status_free(s2);
    oneflow_tensor_release(x);
    oneflow_tensor_release(y);
  }
  return equal;
}

static void test_nonfinite_policies(void) {
  oneflow_session_t *s = NULL, *ref = NULL;
  OK(make_session("mlp.onnx", NULL, &s));
  OK(make_session("mlp.onnx", NULL, &ref));
  OK(run_batch(s, 5, 1, NULL));
  OK(oneflow_session_backward(s));
  int32_t applied = -1;
  OK(oneflow_session_step(s, &applied));
  oneflow_training_state_t st;
  oneflow_training_state_init(&st);
  OK(oneflow_session_get_training_state(s, &st));
  EXPECT(applied == 0 && st.step == 0 && st.skipped_steps == 1, "skip: applied %d step %lld skipped %lld", applied,
         (long long)st.step, (long long)st.skipped_steps);
  EXPECT(params_equal(s, ref), "a skipped step changed parameters");
  oneflow_session_release(s);

  oneflow_training_options_t to;
  oneflow_training_options_init(&to);
  to.logits_output = "logits";
  to.nonfinite_policy = ONEFLOW_NONFINITE_REFUSE;
  OK(make_session("mlp.onnx", &to, &s));
  oneflow_session_release(ref);
  OK(make_session("mlp.onnx", &to, &ref));
  OK(run_batch(s, 5, 1, NULL));
  OK(oneflow_session_backward(s));
  expect_error(oneflow_session_step(s, NULL), ONEFLOW_RUNTIME, "refused", "refuse policy");
  EXPECT(params_equal(s, ref), "a refused step changed parameters");
  OK(oneflow_session_zero_gradients(s));
  OK(run_batch(s, 5, 0, NULL));
  OK(oneflow_session_backward(s));
  OK(oneflow_session_step(s, &applied));
  EXPECT(applied == 1, "step after zeroing a refused gradient: applied %d", applied);
  oneflow_session_release(s);
  oneflow_session_release(ref);
}

static void test_checkpoints_and_determinism(void) {
  oneflow_training_options_t to;
  oneflow_training_options_init(&to);
  to.logits_output = "logits";
  to.optimizer = ONEFLOW_OPTIMIZER_ADAM;
  to.learning_rate = 0.01f;
  to.deterministic = 1;
  to.seed = 5;
  oneflow_session_t *a = NULL, *b = NULL, *c = NULL;
  OK(make_session("mlp.onnx", &to, &a));
  OK(make_session("mlp.onnx", &to, &b));
  char ckpt[4096], bad[4096];
  snprintf(ckpt, sizeof ckpt, "%s/mid.ckpt", g_work);
  snprintf(bad, sizeof bad, "%s/truncated.ckpt", g_work);
  for (int i = 0; i < 6; ++i) {
    OK(run_batch(a, 5, 0, NULL));
    OK(oneflow_session_backward(a));
    OK(oneflow_session_step(a, NULL));
    if (i == 2) OK(oneflow_session_save_checkpoint(a, ckpt));
  }
  /* b: 3 steps, then restore a's step-3 checkpoint over them (it must overwrite, not mix) and
   * finish; c: load into a fresh session. All must equal a bit for bit. */
  OK(make_session("mlp.onnx", &to, &c));
  for (int i = 0; i < 2; ++i) {
    OK(run_batch(b, 3, 0, NULL));
    OK(oneflow_session_backward(b));
    OK(oneflow_session_step(b, NULL));
  }
  OK(oneflow_session_load_checkpoint(b, ckpt));
  OK(oneflow_session_load_checkpoint(c, ckpt));
  oneflow_training_state_t st;
  oneflow_training_state_init(&st);
  OK(oneflow_session_get_training_state(c, &st));
  EXPECT(st.step == 3, "restored step %lld", (long long)st.step);
  for (int i = 3; i < 6; ++i) {
    OK(run_batch(b, 5, 0, NULL));
    OK(oneflow_session_backward(b));
    OK(oneflow_session_step(b, NULL));
    OK(run_batch(c, 5, 0, NULL));
    OK(oneflow_session_backward(c));
    OK(oneflow_session_step(c, NULL));
  }
  EXPECT(params_equal(a, b), "resumed (over trained state) parameters differ from the uninterrupted run");
  EXPECT(params_equal(a, c), "resumed (fresh session) parameters differ from the uninterrupted run");

  /* A checkpoint of another model lists the mismatches and changes nothing. */
  oneflow_session_t* other = NULL;
  OK(make_session("other.onnx", &to, &other));
  oneflow_session_t* other_ref = NULL;
  OK(make_session("other.onnx", &to, &other_ref));
  expect_error(oneflow_session_load_checkpoint(other, ckpt), ONEFLOW_INVALID_ARGUMENT, "fc1.weight", "other model");
  oneflow_status_t st2 = oneflow_session_load_checkpoint(other, ckpt);
  EXPECT(st2 && strstr(oneflow_status_message(st2), "[4,8]") && strstr(oneflow_status_message(st2), "[4,6]"),
         "mismatch message lacks both shapes: %s", oneflow_status_message(st2));
  oneflow_status_free(st2);
  /* other vs other_ref: both untouched (compare a parameter whose name exists in both). */
  oneflow_tensor_t *p1 = NULL, *p2 = NULL;
  OK(oneflow_session_get_parameter(other, "fc2.bias", &p1));
  OK(oneflow_session_get_parameter(other_ref, "fc2.bias", &p2));
  EXPECT(!memcmp(oneflow_tensor_data(p1), oneflow_tensor_data(p2), 12), "a refused load changed a parameter");
  oneflow_tensor_release(p1);
  oneflow_tensor_release(p2);

  /* A different optimizer's checkpoint is refused too. */
  oneflow_session_t* sgd = NULL;
  OK(make_session("mlp.onnx", NULL, &sgd));
  expect_error(oneflow_session_load_checkpoint(sgd, ckpt), ONEFLOW_INVALID_ARGUMENT, "adam", "other optimizer");

  /* A truncated checkpoint fails cleanly and changes nothing. */
  FILE* in = fopen(ckpt, "rb");
  FILE* out = fopen(bad, "wb");
  if (in && out) {
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, n / 2, out);
  }
  if (in) fclose(in);
  if (out) fclose(out);
  oneflow_session_t* fresh = NULL;
  OK(make_session("mlp.onnx", &to, &fresh));
  oneflow_session_t* fresh_ref = NULL;
  OK(make_session("mlp.onnx", &to, &fresh_ref));
  oneflow_status_t tr = oneflow_session_load_checkpoint(fresh, bad);
  EXPECT(tr != NULL, "a truncated checkpoint loaded");
  oneflow_status_free(tr);
  EXPECT(params_equal(fresh, fresh_ref), "a failed load changed parameters");
  oneflow_session_release(fresh);
  oneflow_session_release(fresh_ref);
  oneflow_session_release(sgd);
  oneflow_session_release(other);
  oneflow_session_release(other_ref);
  oneflow_session_release(a);
  oneflow_session_release(b);
  oneflow_session_release(c);

  /* Deterministic mode needs an explicit thread count. */
  oneflow_graph_t* g = load("mlp.onnx");
  oneflow_session_t* s = NULL;
  expect_error(oneflow_training_session_create(NULL, g, NULL, &to, &s), ONEFLOW_INVALID_ARGUMENT, "intra_op_threads",
               "deterministic without threads");
  expect_error(oneflow_training_session_create(NULL, g, NULL, NULL, &s), ONEFLOW_INVALID_ARGUMENT, "NULL",
               "NULL options");
  oneflow_graph_release(g);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FIXTURE_DIR WORK_DIR\n", argv[0]);
    return 2;
  }
  g_fix = argv[1];
  g_work = argv[2];
  float* x = read_file("x.f32", sizeof g_x);
  int64_t* y = read_file("y.i64", sizeof g_y);
  memcpy(g_x, x, sizeof g_x);
  memcpy(g_y, y, sizeof g_y);
  free(x);
  free(y);
  test_gradients_accumulation_and_sgd();
  test_checkpointing_same_gradients();
  test_model_loss_and_freezing();
  test_nonfinite_policies();
  test_checkpoints_and_determinism();
  return c_test_finish("train_c_api");
}
