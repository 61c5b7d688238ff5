/* Mixed-precision training through the C ABI (tests/train/make_train_fixture.py's mlp.onnx):
 * BF16 training tracks F32 training from the same start, parameters stay f32, F16 loss scaling
 * backs off on overflow (oneflow_session_get_loss_scale), bad precision values are refused, and a
 * struct smaller than ABI 3's (which has the precision fields) is refused rather than half read.
 *   mixed_precision_c_api_test FIXTURE_DIR */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

static const char* g_fix;
static float g_x[20];
static int64_t g_y[5];

static void read_file(const char* name, void* dst, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", g_fix, name);
  FILE* f = fopen(path, "rb");
  if (!f || fread(dst, 1, bytes, f) != bytes) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
}

static void options(oneflow_training_options_t* to, oneflow_precision_t precision) {
  oneflow_training_options_init(to);
  to->logits_output = "logits";
  to->optimizer = ONEFLOW_OPTIMIZER_SGD;
  to->learning_rate = 0.5f;
  to->precision = precision;
}

static oneflow_status_t make_session(const oneflow_training_options_t* to, oneflow_session_t** out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/mlp.onnx", g_fix);
  oneflow_graph_t* g = NULL;
  oneflow_status_t st = oneflow_graph_load_file(path, &g);
  if (st) return st;
  oneflow_session_options_t so;
  oneflow_session_options_init(&so);
  so.intra_op_threads = 2;
  st = oneflow_training_session_create(NULL, g, &so, to, out);
  oneflow_graph_release(g);
  return st;
}

/* run + backward + step on the whole fixture batch. */
static oneflow_status_t train_step(oneflow_session_t* s, float* out_loss, int32_t* out_applied) {
  int64_t xs[2] = {5, 4}, ys[1] = {5};
  oneflow_tensor_t *tx = NULL, *ty = NULL, *loss = NULL;
  oneflow_status_t st = oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, xs, 2, g_x, sizeof g_x, NULL, NULL, &tx);
  if (!st) st = oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_I64, ys, 1, g_y, sizeof g_y, NULL, NULL, &ty);
  const char* names[2] = {"x", "labels"};
  const oneflow_tensor_t* ins[2] = {tx, ty};
  const char* fetch[1] = {"loss"};
  if (!st) st = oneflow_session_run(s, names, ins, 2, fetch, 1, &loss, 1);
  if (!st) *out_loss = *(const float*)oneflow_tensor_data(loss);
  if (!st) st = oneflow_session_backward(s);
  if (!st) st = oneflow_session_step(s, out_applied);
  oneflow_tensor_release(loss);
  oneflow_tensor_release(tx);
  oneflow_tensor_release(ty);
  return st;
}

/* 30 SGD steps in F32 and BF16 from the same weights: every loss within 0.02 + 5% of the F32 one
 * (bf16 keeps 8 significant bits), both lower at the end, parameters f32. */
static void test_bf16_tracks_f32(void) {
  oneflow_training_options_t to32, to16;
  options(&to32, ONEFLOW_PRECISION_F32);
  options(&to16, ONEFLOW_PRECISION_BF16);
  oneflow_session_t *s32 = NULL, *s16 = NULL;
  OK(make_session(&to32, &s32));
  OK(make_session(&to16, &s16));
  float first = 0, l32 = 0, l16 = 0;
  int differs = 0;
  for (int k = 0; k < 30; ++k) {
    int32_t a32 = 0, a16 = 0;
    OK(train_step(s32, &l32, &a32));
    OK(train_step(s16, &l16, &a16));
    if (k == 0) first = l32;
    differs |= l32 != l16;
    EXPECT(a32 == 1 && a16 == 1, "step %d not applied", k);
    EXPECT(fabsf(l32 - l16) <= 0.02f + 0.05f * l32, "step %d: bf16 loss %g, f32 loss %g", k, l16, l32);
  }
  EXPECT(differs, "bf16 losses are bit-identical to f32: mixed precision did not take effect");
  EXPECT(l16 < 0.7f * first, "bf16 training did not learn: %g -> %g", first, l16);
  float scale = 0;
  OK(oneflow_session_get_loss_scale(s16, &scale));
  EXPECT(scale == 1.0f, "bf16 scales its loss by %g", scale);
  oneflow_tensor_t* w = NULL;
  OK(oneflow_session_get_parameter(s16, "fc1.weight", &w));
  EXPECT(oneflow_tensor_dtype(w) == ONEFLOW_DTYPE_F32, "the master weight is not f32");
  oneflow_tensor_release(w);
  oneflow_session_release(s32);
  oneflow_session_release(s16);
}

/* F16 from a scale of 2^40: the first step overflows, is skipped, and halves the scale. */
static void test_f16_loss_scale(void) {
  oneflow_training_options_t to;
  options(&to, ONEFLOW_PRECISION_F16);
  to.loss_scale_initial = 1099511627776.0f; /* 2^40 */
  oneflow_session_t* s = NULL;
  OK(make_session(&to, &s));
  float scale = 0, loss = 0;
  int32_t applied = -1;
  OK(oneflow_session_get_loss_scale(s, &scale));
  EXPECT(scale == 1099511627776.0f, "initial scale %g", scale);
  OK(train_step(s, &loss, &applied));
  EXPECT(applied == 0, "an overflowing f16 step was applied");
  OK(oneflow_session_get_loss_scale(s, &scale));
  EXPECT(scale == 549755813888.0f, "scale after one overflow %g, expected 2^39", scale);
  oneflow_training_state_t state;
  oneflow_training_state_init(&state);
  OK(oneflow_session_get_training_state(s, &state));
  EXPECT(state.skipped_steps == 1 && state.step == 0, "skipped %lld step %lld", (long long)state.skipped_steps,
         (long long)state.step);
  oneflow_session_release(s);
  /* Loss scaling off: the scale stays 1. */
  options(&to, ONEFLOW_PRECISION_F16);
  to.loss_scaling_off = 1;
  OK(make_session(&to, &s));
  OK(oneflow_session_get_loss_scale(s, &scale));
  EXPECT(scale == 1.0f, "scale %g with loss scaling off", scale);
  oneflow_session_release(s);
}

static void test_bad_input(void) {
  oneflow_training_options_t to;
  options(&to, (oneflow_precision_t)7);
  oneflow_session_t* s = NULL;
  oneflow_status_t st = make_session(&to, &s);
  EXPECT(st && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT && strstr(oneflow_status_message(st), "precision"),
         "precision 7: %s", st ? oneflow_status_message(st) : "accepted");
  oneflow_status_free(st);
  options(&to, ONEFLOW_PRECISION_F16);
  to.loss_scale_backoff = 2.0f;
  st = make_session(&to, &s);
  EXPECT(st && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT && strstr(oneflow_status_message(st), "backoff"),
         "backoff 2: %s", st ? oneflow_status_message(st) : "accepted");
  oneflow_status_free(st);
  /* A struct that ends before the precision fields: older than ABI 3, whose structs every caller
   * has (docs/abi.md), so it is refused by name, not read as F32. */
  options(&to, ONEFLOW_PRECISION_F16);
  to.struct_size = offsetof(oneflow_training_options_t, precision);
  st = make_session(&to, &s);
  EXPECT(st && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT && strstr(oneflow_status_message(st), "struct_size"),
         "a struct_size below ABI 3: %s", st ? oneflow_status_message(st) : "accepted");
  oneflow_status_free(st);
  float dummy = 0;
  st = oneflow_session_get_loss_scale(NULL, &dummy);
  EXPECT(st && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "NULL session accepted");
  oneflow_status_free(st);
}

/* training_options.device_kind / device_index / cuda_graphs: bad values are refused naming the field;
 * CUDA without a device (or a CUDA build) is ONEFLOW_UNSUPPORTED saying so; with a device, 10 SGD
 * steps on CUDA give the CPU's losses (1e-4 relative: f32 on both, another summation order). */
static void test_device_options(void) {
  oneflow_training_options_t to;
  oneflow_session_t* s = NULL;
  options(&to, ONEFLOW_PRECISION_F32);
  to.device_kind = 5;
  oneflow_status_t st = make_session(&to, &s);
  EXPECT(st && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT && strstr(oneflow_status_message(st), "device_kind"),
         "device_kind 5: %s", st ? oneflow_status_message(st) : "accepted");
  oneflow_status_free(st);
  options(&to, ONEFLOW_PRECISION_F32);
  to.device_kind = ONEFLOW_DEVICE_CUDA;
  to.cuda_graphs = 9;
  st = make_session(&to, &s);
  EXPECT(st && oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT && strstr(oneflow_status_message(st), "cuda_graphs"),
         "cuda_graphs 9: %s", st ? oneflow_status_message(st) : "accepted");
  oneflow_status_free(st);

  int32_t count = 0;
  char why[256];
  OK(oneflow_cuda_device_count(&count, why, sizeof why));
  options(&to, ONEFLOW_PRECISION_F32);
  to.device_kind = ONEFLOW_DEVICE_CUDA;
  st = make_session(&to, &s);
  if (count == 0) {
    EXPECT(st && oneflow_status_code(st) == ONEFLOW_UNSUPPORTED &&
               (strstr(oneflow_status_message(st), "no CUDA device: ") ||
                strstr(oneflow_status_message(st), "built without CUDA")),
           "CUDA training without a device: %s", st ? oneflow_status_message(st) : "accepted");
    oneflow_status_free(st);
    printf("device options: no CUDA device (%s); the CUDA training run is skipped\n", why);
    return;
  }
  OK(st);
  oneflow_session_t* cpu = NULL;
  options(&to, ONEFLOW_PRECISION_F32);
  OK(make_session(&to, &cpu));
  for (int i = 0; i < 10; ++i) {
    float l_gpu = 0, l_cpu = 0;
    int32_t a_gpu = 0, a_cpu = 0;
    OK(train_step(s, &l_gpu, &a_gpu));
    OK(train_step(cpu, &l_cpu, &a_cpu));
    EXPECT(a_gpu == 1 && fabsf(l_gpu - l_cpu) <= 1e-4f * fabsf(l_cpu), "step %d: CUDA loss %g, CPU loss %g", i, l_gpu,
           l_cpu);
  }
  oneflow_session_release(cpu);
  oneflow_session_release(s);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  g_fix = argv[1];
  read_file("x.f32", g_x, sizeof g_x);
  read_file("y.i64", g_y, sizeof g_y);
  test_bf16_tracks_f32();
  test_f16_loss_scale();
  test_bad_input();
  test_device_options();
  return c_test_finish("mixed_precision_c_api");
}
