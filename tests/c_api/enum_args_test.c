/* Out-of-range values in every enum-typed parameter and struct field of the C ABI (include/oneflow_c.h):
 * C lets a caller pass any int where an oneflow_*_t enum is expected, and the library must answer
 * ONEFLOW_INVALID_ARGUMENT naming the parameter or field and the value, never read it as a C++
 * enum (undefined for values outside the enum's range; -fsanitize=enum in ASan/UBSan builds).
 * Queries that cannot fail (oneflow_dtype_size/_name, oneflow_code_name) answer 0, "undefined" and
 * "UNKNOWN". Usage: c_api_enum_args_test FIXTURE_DIR (written by make_c_api_fixture.py). C99.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

static const char* g_dir = ".";

/* Values outside every small oneflow_*_t enum (loss, optimizer, lr_schedule, nonfinite_policy,
 * precision, run mode, device kind, cuda_graphs): past the end, negative, far past the end. */
static const int32_t kBad[] = {7, -1, 42};
#define NUM_BAD (sizeof kBad / sizeof kBad[0])
/* Not oneflow_dtype_t values (7 is I64): far past the end, negative, the gap at 14 (ONNX's
 * complex64), just past I2 (26, the last narrow type). 8 is ONEFLOW_DTYPE_STRING since ABI 6
 * (c_api_test.c's test_string_tensors). */
static const int32_t kBadDType[] = {42, -1, 14, 27};
#define NUM_BAD_DTYPE (sizeof kBadDType / sizeof kBadDType[0])
/* Not oneflow_code_t values (7 is RUNTIME): far past the end, negative, just past INTERNAL (8). */
static const int32_t kBadCode[] = {42, -1, 9};
#define NUM_BAD_CODE (sizeof kBadCode / sizeof kBadCode[0])

/* Expects `st` to be ONEFLOW_INVALID_ARGUMENT whose message names `field` and `value`; frees it. */
static void expect_invalid(oneflow_status_t st, const char* field, int32_t value, const char* what) {
  char num[32];
  snprintf(num, sizeof num, "%d", (int)value);
  EXPECT(st != NULL, "%s = %d: accepted, expected INVALID_ARGUMENT", what, (int)value);
  if (!st) return;
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "%s = %d: %s (%s), expected INVALID_ARGUMENT", what,
         (int)value, oneflow_code_name(oneflow_status_code(st)), oneflow_status_message(st));
  EXPECT(strstr(oneflow_status_message(st), field) != NULL && strstr(oneflow_status_message(st), num) != NULL,
         "%s = %d: message '%s' does not name '%s' and %s", what, (int)value, oneflow_status_message(st), field, num);
  oneflow_status_free(st);
}

static oneflow_graph_t* load(const char* name) {
  char path[4096];
  oneflow_graph_t* g = NULL;
  oneflow_status_t st;
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  st = oneflow_graph_load_file(path, &g);
  if (st) {
    fprintf(stderr, "cannot load %s: %s\n", path, oneflow_status_message(st));
    exit(1);
  }
  return g;
}

/* Queries that never fail: an unknown value gets the documented neutral answer. */
static void test_queries(void) {
  size_t i;
  for (i = 0; i < NUM_BAD_DTYPE; ++i) {
    const int32_t v = kBadDType[i];
    EXPECT(oneflow_dtype_size((oneflow_dtype_t)v) == 0, "oneflow_dtype_size(%d)", (int)v);
    EXPECT(strcmp(oneflow_dtype_name((oneflow_dtype_t)v), "undefined") == 0, "oneflow_dtype_name(%d) = %s", (int)v,
           oneflow_dtype_name((oneflow_dtype_t)v));
  }
  for (i = 0; i < NUM_BAD_CODE; ++i) {
    const int32_t v = kBadCode[i];
    EXPECT(strcmp(oneflow_code_name((oneflow_code_t)v), "UNKNOWN") == 0, "oneflow_code_name(%d) = %s", (int)v,
           oneflow_code_name((oneflow_code_t)v));
  }
  /* UNDEFINED (0) is a value of the enum but no stored dtype; the neighbours of the bad ones work. */
  EXPECT(oneflow_dtype_size(ONEFLOW_DTYPE_UNDEFINED) == 0, "oneflow_dtype_size(UNDEFINED)");
  EXPECT(oneflow_dtype_size(ONEFLOW_DTYPE_I64) == 8 && oneflow_dtype_size(ONEFLOW_DTYPE_BF16) == 2,
         "oneflow_dtype_size(I64 / BF16)");
  /* The narrow storage types: one byte per element, sub-byte ones included (ABI 4). */
  EXPECT(oneflow_dtype_size(ONEFLOW_DTYPE_F8E4M3FN) == 1 && oneflow_dtype_size(ONEFLOW_DTYPE_I4) == 1 &&
             oneflow_dtype_size(ONEFLOW_DTYPE_I2) == 1,
         "oneflow_dtype_size(F8E4M3FN / I4 / I2)");
  EXPECT(strcmp(oneflow_dtype_name(ONEFLOW_DTYPE_F4E2M1), "float4e2m1") == 0, "oneflow_dtype_name(F4E2M1) = %s",
         oneflow_dtype_name(ONEFLOW_DTYPE_F4E2M1));
  EXPECT(strcmp(oneflow_code_name(ONEFLOW_INTERNAL), "INTERNAL") == 0, "oneflow_code_name(INTERNAL)");
}

/* dtype and device kind parameters of the tensor constructors. */
static void test_tensor_arguments(void) {
  int64_t shape[2] = {2, 3};
  float data[6] = {0};
  oneflow_tensor_t* t = NULL;
  size_t i;
  for (i = 0; i < NUM_BAD_DTYPE; ++i) {
    const int32_t v = kBadDType[i];
    expect_invalid(oneflow_tensor_create((oneflow_dtype_t)v, shape, 2, &t), "dtype", v, "oneflow_tensor_create dtype");
    expect_invalid(oneflow_tensor_create_borrowed((oneflow_dtype_t)v, shape, 2, data, sizeof data, NULL, NULL, &t),
                   "dtype", v, "oneflow_tensor_create_borrowed dtype");
    /* The CPU path forwards to oneflow_tensor_create_borrowed, the CUDA path checks itself (before
     * looking for a device, so this is the same with or without CUDA). */
    expect_invalid(oneflow_tensor_create_device_borrowed((oneflow_dtype_t)v, shape, 2, ONEFLOW_DEVICE_CPU, 0, data,
                                                         sizeof data, NULL, NULL, &t),
                   "dtype", v, "oneflow_tensor_create_device_borrowed dtype (CPU)");
    expect_invalid(oneflow_tensor_create_device_borrowed((oneflow_dtype_t)v, shape, 2, ONEFLOW_DEVICE_CUDA, 0, data,
                                                         sizeof data, NULL, NULL, &t),
                   "dtype", v, "oneflow_tensor_create_device_borrowed dtype (CUDA)");
  }
  for (i = 0; i < NUM_BAD; ++i) {
    const int32_t v = kBad[i];
    expect_invalid(oneflow_tensor_create_device_borrowed(ONEFLOW_DTYPE_F32, shape, 2, (oneflow_device_kind_t)v, 0,
                                                         data, sizeof data, NULL, NULL, &t),
                   "device", v, "oneflow_tensor_create_device_borrowed device");
  }
  EXPECT(t == NULL, "a tensor was created from a bad argument");
  /* The neighbouring valid values still work. */
  OK(oneflow_tensor_create_device_borrowed(ONEFLOW_DTYPE_F32, shape, 2, ONEFLOW_DEVICE_CPU, 0, data, sizeof data, NULL,
                                           NULL, &t));
  EXPECT(oneflow_tensor_dtype(t) == ONEFLOW_DTYPE_F32, "dtype of a CPU device-borrowed tensor");
  oneflow_tensor_release(t);
}

/* The device kind parameter of the session constructors and the device options' cuda_graphs. */
static void test_session_arguments(void) {
  oneflow_graph_t* g = load("const_model.onnx");
  oneflow_session_t* s = NULL;
  oneflow_device_session_options_t dopts;
  int32_t devices = 0;
  oneflow_status_t st;
  size_t i;
  OK(oneflow_cuda_device_count(&devices, NULL, 0));
  for (i = 0; i < NUM_BAD; ++i) {
    const int32_t v = kBad[i];
    expect_invalid(oneflow_session_create_on_device(NULL, g, NULL, (oneflow_device_kind_t)v, 0, &s), "device", v,
                   "oneflow_session_create_on_device device");
    expect_invalid(oneflow_session_create_on_device_ex(NULL, g, NULL, (oneflow_device_kind_t)v, 0, NULL, &s), "device",
                   v, "oneflow_session_create_on_device_ex device");
    /* cuda_graphs is read once a CUDA device is there; without one the call is UNSUPPORTED first. */
    oneflow_device_session_options_init(&dopts);
    dopts.cuda_graphs = (oneflow_cuda_graph_mode_t)v;
    st = oneflow_session_create_on_device_ex(NULL, g, NULL, ONEFLOW_DEVICE_CUDA, 0, &dopts, &s);
    if (devices > 0) {
      expect_invalid(st, "cuda_graphs", v, "device_options.cuda_graphs");
    } else {
      EXPECT(st != NULL && oneflow_status_code(st) == ONEFLOW_UNSUPPORTED, "cuda_graphs = %d without CUDA: %s",
             (int)v, st ? oneflow_status_message(st) : "accepted");
      oneflow_status_free(st);
    }
  }
  EXPECT(s == NULL, "a session was created from a bad argument");
  OK(oneflow_session_create_on_device(NULL, g, NULL, ONEFLOW_DEVICE_CPU, 0, &s));
  oneflow_session_release(s);
  oneflow_graph_release(g);
}

/* A training session on const_model.onnx (y = Relu(x + W)) with an appended MSE loss on y. */
static void base_options(oneflow_training_options_t* to) {
  oneflow_training_options_init(to);
  to->loss = ONEFLOW_LOSS_MSE;
  to->logits_output = "y";
}

/* Every enum-typed field of oneflow_training_options_t (loss, optimizer, lr_schedule,
 * nonfinite_policy, precision) and the int32_t fields holding enum values (device_kind,
 * cuda_graphs), and oneflow_session_set_run_mode's mode. */
static void test_training_arguments(void) {
  oneflow_graph_t* g = load("const_model.onnx");
  oneflow_training_options_t to;
  oneflow_session_t* s = NULL;
  size_t i;
  for (i = 0; i < NUM_BAD; ++i) {
    const int32_t v = kBad[i];
    base_options(&to);
    to.loss = (oneflow_loss_t)v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.loss", v, "loss");
    base_options(&to);
    to.optimizer = (oneflow_optimizer_t)v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.optimizer", v,
                   "optimizer");
    base_options(&to);
    to.lr_schedule = (oneflow_lr_schedule_t)v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.lr_schedule", v,
                   "lr_schedule");
    base_options(&to);
    to.nonfinite_policy = (oneflow_nonfinite_policy_t)v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.nonfinite_policy", v,
                   "nonfinite_policy");
    base_options(&to);
    to.precision = (oneflow_precision_t)v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.precision", v,
                   "precision");
    base_options(&to);
    to.device_kind = v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.device_kind", v,
                   "device_kind");
    base_options(&to);
    to.cuda_graphs = v;
    expect_invalid(oneflow_training_session_create(NULL, g, NULL, &to, &s), "training_options.cuda_graphs", v,
                   "cuda_graphs");
  }
  EXPECT(s == NULL, "a training session was created from a bad option");
  /* The same options with valid values train; the run mode is checked on that session. */
  base_options(&to);
  OK(oneflow_training_session_create(NULL, g, NULL, &to, &s));
  for (i = 0; i < NUM_BAD; ++i)
    expect_invalid(oneflow_session_set_run_mode(s, (oneflow_run_mode_t)kBad[i]), "mode", kBad[i],
                   "oneflow_session_set_run_mode mode");
  OK(oneflow_session_set_run_mode(s, ONEFLOW_RUN_EVAL));
  OK(oneflow_session_set_run_mode(s, ONEFLOW_RUN_TRAIN));
  oneflow_session_release(s);
  oneflow_graph_release(g);
}

/* oneflow_save_options_t.format: refused before anything is written. */
static void test_save_arguments(void) {
  oneflow_graph_t* g = load("const_model.onnx");
  oneflow_save_options_t opts;
  char path[4096];
  FILE* f;
  size_t i;
  snprintf(path, sizeof path, "%s/enum_args_saved.onnx", g_dir);
  remove(path);
  for (i = 0; i < NUM_BAD; ++i) {
    oneflow_save_options_init(&opts);
    memcpy(&opts.format, &kBad[i], sizeof kBad[i]);
    expect_invalid(oneflow_graph_save(g, path, &opts), "format", kBad[i], "oneflow_save_options_t.format");
  }
  f = fopen(path, "rb");
  EXPECT(f == NULL, "a refused save wrote %s", path);
  if (f) fclose(f);
  oneflow_graph_release(g);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  test_queries();
  test_tensor_arguments();
  test_session_arguments();
  test_training_arguments();
  test_save_arguments();
  return c_test_finish("c_api_enum_args");
}
