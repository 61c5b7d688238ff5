/* End-to-end test of liboneflow.so through its C ABI only (C99). Usage: c_api_test FIXTURE_DIR, where
 * FIXTURE_DIR was written by make_c_api_fixture.py (models plus numpy reference outputs). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

static const char* g_dir = ".";

/* Asserts that `st` is an error with `code` whose message contains `needle`; frees it. */
static void expect_error_at(oneflow_status_t st, oneflow_code_t code, const char* needle, const char* what, int line) {
  if (!st) {
    fprintf(stderr, "line %d: %s: expected %s, got success\n", line, what, oneflow_code_name(code));
    ++g_fail;
    return;
  }
  if (oneflow_status_code(st) != code || !strstr(oneflow_status_message(st), needle)) {
    fprintf(stderr, "line %d: %s: expected %s mentioning '%s', got %s: %s\n", line, what, oneflow_code_name(code), needle,
            oneflow_code_name(oneflow_status_code(st)), oneflow_status_message(st));
    ++g_fail;
  }
  oneflow_status_free(st);
}
#define EXPECT_ERROR(expr, code, needle) expect_error_at((expr), (code), (needle), #expr, __LINE__)

static char* path_in(const char* name) {
  size_t n = strlen(g_dir) + strlen(name) + 2;
  char* p = (char*)malloc(n);
  snprintf(p, n, "%s/%s", g_dir, name);
  return p;
}

/* Reads a whole file; exits when it is missing (the fixture is broken). */
static unsigned char* read_file(const char* name, size_t* out_size) {
  char* path = path_in(name);
  FILE* f = fopen(path, "rb");
  unsigned char* buf;
  long n;
  if (!f) {
    fprintf(stderr, "cannot open fixture file %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (unsigned char*)malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) exit(1);
  fclose(f);
  free(path);
  *out_size = (size_t)n;
  return buf;
}

static void write_file(const char* name, const void* data, size_t size) {
  char* path = path_in(name);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fclose(f);
  free(path);
}

/* A float32 tensor filled from a fixture .f32 file. */
static oneflow_tensor_t* load_f32(const char* name, int64_t rows, int64_t cols) {
  size_t size = 0;
  unsigned char* data = read_file(name, &size);
  int64_t shape[2];
  oneflow_tensor_t* t = NULL;
  shape[0] = rows;
  shape[1] = cols;
  if (size != (size_t)(rows * cols) * sizeof(float)) {
    fprintf(stderr, "fixture %s has %zu bytes\n", name, size);
    exit(1);
  }
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, shape, 2, &t));
  memcpy(oneflow_tensor_data(t), data, size);
  free(data);
  return t;
}

/* True when tensor `t` is float32[rows, cols] and matches the reference file within 1e-6. */
static int matches(const oneflow_tensor_t* t, const char* ref_name, int64_t rows, int64_t cols) {
  size_t size = 0, i;
  unsigned char* ref = read_file(ref_name, &size);
  const float* got = (const float*)oneflow_tensor_data(t);
  const float* want = (const float*)(const void*)ref;
  int ok = oneflow_tensor_dtype(t) == ONEFLOW_DTYPE_F32 && oneflow_tensor_rank(t) == 2 &&
           oneflow_tensor_shape(t)[0] == rows && oneflow_tensor_shape(t)[1] == cols &&
           oneflow_tensor_byte_size(t) == size && oneflow_tensor_element_count(t) == rows * cols;
  for (i = 0; ok && i < size / sizeof(float); ++i)
    if (fabsf(got[i] - want[i]) > 1e-6f * (1.0f + fabsf(want[i]))) {
      fprintf(stderr, "%s[%zu]: got %g, want %g\n", ref_name, i, (double)got[i], (double)want[i]);
      ok = 0;
    }
  free(ref);
  return ok;
}

static oneflow_graph_t* load_graph(const char* name) {
  oneflow_graph_t* g = NULL;
  char* path = path_in(name);
  REQUIRE_OK(oneflow_graph_load_file(path, &g));
  free(path);
  return g;
}

static oneflow_session_t* make_session_at_level(const char* name, int32_t level) {
  oneflow_graph_t* g = load_graph(name);
  oneflow_session_t* s = NULL;
  oneflow_session_options_t opts;
  oneflow_session_options_init(&opts);
  if (level >= 0) opts.optimization_level = level;
  REQUIRE_OK(oneflow_session_create(NULL, g, &opts, &s));
  oneflow_graph_release(g); /* the session keeps its own copy */
  return s;
}

static oneflow_session_t* make_session(const char* name) { return make_session_at_level(name, -1); }

/* Runs the main model on batch `batch` fixtures and checks both outputs. Returns 1 on success. */
static int run_main(oneflow_session_t* s, int batch) {
  char xn[16], bn[16], yn[16], zn[16];
  const char* names[2] = {"x", "b"};
  const oneflow_tensor_t* in[2];
  oneflow_tensor_t* out[2] = {NULL, NULL};
  oneflow_tensor_t *x, *b;
  oneflow_status_t st;
  int ok;
  snprintf(xn, sizeof xn, "x%d.f32", batch);
  snprintf(bn, sizeof bn, "b%d.f32", batch);
  snprintf(yn, sizeof yn, "y%d.f32", batch);
  snprintf(zn, sizeof zn, "z%d.f32", batch);
  x = load_f32(xn, batch, 4);
  b = load_f32(bn, batch, 4);
  in[0] = x;
  in[1] = b;
  st = oneflow_session_run(s, names, in, 2, NULL, 0, out, 2);
  if (st) {
    fprintf(stderr, "run failed: %s\n", oneflow_status_message(st));
    oneflow_status_free(st);
    ok = 0;
  } else {
    ok = matches(out[0], yn, batch, 4) && matches(out[1], zn, batch, 4);
  }
  oneflow_tensor_release(out[0]);
  oneflow_tensor_release(out[1]);
  oneflow_tensor_release(x);
  oneflow_tensor_release(b);
  return ok;
}

static void test_versions(void) {
  EXPECT_TRUE(oneflow_api_version() >= ONEFLOW_API_VERSION);
  EXPECT_TRUE(strlen(oneflow_version()) > 0);
  EXPECT_TRUE(strcmp(oneflow_code_name(ONEFLOW_UNSUPPORTED), "UNSUPPORTED") == 0);
  EXPECT_TRUE(oneflow_dtype_size(ONEFLOW_DTYPE_F32) == 4 && oneflow_dtype_size(ONEFLOW_DTYPE_BF16) == 2);
  EXPECT_TRUE(oneflow_dtype_size((oneflow_dtype_t)99) == 0);
  EXPECT_TRUE(strcmp(oneflow_dtype_name(ONEFLOW_DTYPE_F32), "float32") == 0);
}

static void test_io_info(void) {
  oneflow_graph_t* g = load_graph("model.onnx");
  oneflow_session_t* s = NULL;
  oneflow_value_info_t info;
  EXPECT_TRUE(oneflow_graph_input_count(g) == 2);
  EXPECT_TRUE(oneflow_graph_output_count(g) == 2);
  oneflow_value_info_init(&info);
  REQUIRE_OK(oneflow_graph_get_input_info(g, 0, &info));
  EXPECT_TRUE(strcmp(info.name, "x") == 0);
  EXPECT_TRUE(info.dtype == ONEFLOW_DTYPE_F32);
  EXPECT_TRUE(info.rank == 2);
  EXPECT_TRUE(info.dims[0] == -1 && info.dims[1] == 4);
  EXPECT_TRUE(info.dim_names[0] != NULL && strcmp(info.dim_names[0], "batch") == 0);
  EXPECT_TRUE(info.dim_names[1] == NULL);
  REQUIRE_OK(oneflow_graph_get_input_info(g, 1, &info));
  EXPECT_TRUE(strcmp(info.name, "b") == 0);
  REQUIRE_OK(oneflow_graph_get_output_info(g, 1, &info));
  EXPECT_TRUE(strcmp(info.name, "z:0/out") == 0);
  EXPECT_TRUE(info.dtype == ONEFLOW_DTYPE_F32 && info.rank == 2 && info.dims[1] == 4);
  EXPECT_ERROR(oneflow_graph_get_input_info(g, 2, &info), ONEFLOW_INVALID_ARGUMENT, "out of range");
  EXPECT_ERROR(oneflow_graph_get_output_info(g, 7, &info), ONEFLOW_INVALID_ARGUMENT, "out of range");
  info.struct_size = 0;
  EXPECT_ERROR(oneflow_graph_get_input_info(g, 0, &info), ONEFLOW_INVALID_ARGUMENT, "struct_size");

  REQUIRE_OK(oneflow_session_create(NULL, g, NULL, &s));
  oneflow_graph_release(g);
  EXPECT_TRUE(oneflow_session_input_count(s) == 2 && oneflow_session_output_count(s) == 2);
  oneflow_value_info_init(&info);
  REQUIRE_OK(oneflow_session_get_input_info(s, 1, &info));
  EXPECT_TRUE(strcmp(info.name, "b") == 0 && info.rank == 2 && strcmp(info.dim_names[0], "batch") == 0);
  REQUIRE_OK(oneflow_session_get_output_info(s, 0, &info));
  EXPECT_TRUE(strcmp(info.name, "y") == 0);
  EXPECT_ERROR(oneflow_session_get_output_info(s, 2, &info), ONEFLOW_INVALID_ARGUMENT, "out of range");
  oneflow_session_release(s);
}

static void test_run(void) {
  oneflow_session_t* s = make_session("model.onnx");
  uint64_t peak = 0;
  EXPECT_TRUE(run_main(s, 3));
  EXPECT_TRUE(run_main(s, 3)); /* twice: cached plan */
  EXPECT_TRUE(run_main(s, 5)); /* another batch size */
  REQUIRE_OK(oneflow_session_get_planned_peak_bytes(s, &peak));
  /* At the default level y = Relu(x + b) + x is one FusedElementwise writing the output: nothing
     lives in the arena. Without fusions the intermediates x + b and its Relu do. */
  EXPECT_TRUE(peak == 0);
  {
    oneflow_session_t* plain = make_session_at_level("model.onnx", 1);
    EXPECT_TRUE(run_main(plain, 5));
    REQUIRE_OK(oneflow_session_get_planned_peak_bytes(plain, &peak));
    EXPECT_TRUE(peak > 0);
    oneflow_session_release(plain);
  }

  { /* selecting and reordering outputs */
    const char* in_names[2] = {"x", "b"};
    const char* out_names[2] = {"z:0/out", "y"};
    const char* bad_out[1] = {"nope"};
    oneflow_tensor_t* x = load_f32("x3.f32", 3, 4);
    oneflow_tensor_t* b = load_f32("b3.f32", 3, 4);
    const oneflow_tensor_t* in[2];
    oneflow_tensor_t* out[2] = {NULL, NULL};
    in[0] = x;
    in[1] = b;
    REQUIRE_OK(oneflow_session_run(s, in_names, in, 2, out_names, 2, out, 2));
    EXPECT_TRUE(matches(out[0], "z3.f32", 3, 4) && matches(out[1], "y3.f32", 3, 4));
    oneflow_tensor_release(out[0]);
    oneflow_tensor_release(out[1]);
    out[0] = out[1] = NULL;
    REQUIRE_OK(oneflow_session_run(s, in_names, in, 2, out_names + 1, 1, out, 1));
    EXPECT_TRUE(matches(out[0], "y3.f32", 3, 4) && out[1] == NULL);
    oneflow_tensor_release(out[0]);
    EXPECT_ERROR(oneflow_session_run(s, in_names, in, 2, bad_out, 1, out, 1), ONEFLOW_NOT_FOUND, "nope");
    EXPECT_ERROR(oneflow_session_run(s, in_names, in, 2, NULL, 0, out, 1), ONEFLOW_INVALID_ARGUMENT, "room for");
    oneflow_tensor_release(x);
    oneflow_tensor_release(b);
  }
  oneflow_session_release(s);
}

static void test_constant_and_external_models(void) {
  const char* names[1] = {"x"};
  const char* models[2] = {"const_model.onnx", "ext/model.onnx"};
  int i;
  for (i = 0; i < 2; ++i) {
    oneflow_session_t* s = make_session(models[i]);
    oneflow_tensor_t* x = load_f32("xc.f32", 2, 3);
    const oneflow_tensor_t* in[1];
    oneflow_tensor_t* out[1] = {NULL};
    in[0] = x;
    REQUIRE_OK(oneflow_session_run(s, names, in, 1, NULL, 0, out, 1));
    EXPECT_TRUE(matches(out[0], "yc.f32", 2, 3));
    oneflow_tensor_release(out[0]);
    oneflow_tensor_release(x);
    oneflow_session_release(s);
  }
  { /* a model with external data loaded from memory needs a directory */
    size_t size = 0;
    unsigned char* bytes = read_file("ext/model.onnx", &size);
    oneflow_graph_t* g = NULL;
    char* dir = path_in("ext");
    EXPECT_ERROR(oneflow_graph_load_memory(bytes, size, NULL, &g), ONEFLOW_INVALID_ARGUMENT, "external data");
    REQUIRE_OK(oneflow_graph_load_memory(bytes, size, dir, &g));
    oneflow_graph_release(g);
    free(dir);
    free(bytes);
  }
}

/* ---- concurrency ---- */

typedef struct {
  oneflow_session_t* session;
  int ok;
} thread_arg_t;

static void* thread_main(void* p) {
  thread_arg_t* arg = (thread_arg_t*)p;
  int i;
  arg->ok = 1;
  for (i = 0; i < 25; ++i)
    if (!run_main(arg->session, i % 2 ? 3 : 5)) arg->ok = 0;
  return NULL;
}

static void test_concurrent_runs(void) {
  oneflow_session_t* s = make_session("model.onnx");
  pthread_t threads[2];
  thread_arg_t args[2];
  int i;
  for (i = 0; i < 2; ++i) {
    args[i].session = s;
    args[i].ok = 0;
    EXPECT_TRUE(pthread_create(&threads[i], NULL, thread_main, &args[i]) == 0);
  }
  for (i = 0; i < 2; ++i) {
    pthread_join(threads[i], NULL);
    EXPECT_TRUE(args[i].ok);
  }
  oneflow_session_release(s);
}

/* An environment with a shared thread pool: two sessions created with it (intra_op_threads left
 * at 0) run on its threads, each from its own thread at once, and both stay right. The env may be
 * released before its sessions. Bad options are refused by name. */
static void test_shared_env_pool(void) {
  oneflow_env_options_t eo;
  oneflow_env_t* env = NULL;
  oneflow_graph_t* g = load_graph("model.onnx");
  oneflow_session_t* s[2] = {NULL, NULL};
  pthread_t threads[2];
  thread_arg_t args[2];
  int i;

  oneflow_env_options_init(&eo);
  EXPECT_TRUE(eo.shared_thread_pool == 0 && eo.intra_op_threads == 0);
  eo.shared_thread_pool = 1;
  eo.intra_op_threads = -1;
  EXPECT_ERROR(oneflow_env_create_with_options(&eo, &env), ONEFLOW_INVALID_ARGUMENT, "intra_op_threads");
  eo.intra_op_threads = 2;
  eo.shared_thread_pool = 7;
  EXPECT_ERROR(oneflow_env_create_with_options(&eo, &env), ONEFLOW_INVALID_ARGUMENT, "shared_thread_pool");
  eo.shared_thread_pool = 1;
  REQUIRE_OK(oneflow_env_create_with_options(&eo, &env));
  for (i = 0; i < 2; ++i) REQUIRE_OK(oneflow_session_create(env, g, NULL, &s[i]));
  oneflow_env_release(env); /* the sessions keep the pool */
  oneflow_graph_release(g);
  for (i = 0; i < 2; ++i) {
    args[i].session = s[i];
    args[i].ok = 0;
    EXPECT_TRUE(pthread_create(&threads[i], NULL, thread_main, &args[i]) == 0);
  }
  for (i = 0; i < 2; ++i) {
    pthread_join(threads[i], NULL);
    EXPECT_TRUE(args[i].ok);
    oneflow_session_release(s[i]);
  }
}

/* ---- borrowed tensors ---- */

typedef struct {
  int calls;
  void* data;
} deleter_record_t;

static void record_deleter(void* data, void* user_data) {
  deleter_record_t* r = (deleter_record_t*)user_data;
  r->calls++;
  r->data = data;
}

static void test_borrowed_inputs(void) {
  oneflow_session_t* s = make_session("model.onnx");
  size_t xs = 0, bs = 0;
  unsigned char* xbuf = read_file("x3.f32", &xs);
  unsigned char* bbuf = read_file("b3.f32", &bs);
  int64_t shape[2] = {3, 4};
  deleter_record_t rec = {0, NULL};
  oneflow_tensor_t *x = NULL, *b = NULL;
  const char* names[2] = {"x", "b"};
  const oneflow_tensor_t* in[2];
  oneflow_tensor_t* out[2] = {NULL, NULL};

  REQUIRE_OK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, xbuf, xs, record_deleter, &rec, &x));
  REQUIRE_OK(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, bbuf, bs, NULL, NULL, &b));
  EXPECT_TRUE(oneflow_tensor_data(x) == (void*)xbuf); /* a view, not a copy */
  EXPECT_ERROR(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, xbuf, xs - 1, NULL, NULL, &x),
               ONEFLOW_INVALID_ARGUMENT, "too small");
  in[0] = x;
  in[1] = b;
  REQUIRE_OK(oneflow_session_run(s, names, in, 2, NULL, 0, out, 2));
  EXPECT_TRUE(matches(out[0], "y3.f32", 3, 4) && matches(out[1], "z3.f32", 3, 4));
  EXPECT_TRUE(rec.calls == 0);
  oneflow_tensor_release(x);
  EXPECT_TRUE(rec.calls == 1 && rec.data == (void*)xbuf); /* exactly once, with the buffer */
  oneflow_tensor_release(b);
  oneflow_tensor_release(out[0]);
  oneflow_tensor_release(out[1]);
  oneflow_session_release(s);
  EXPECT_TRUE(rec.calls == 1);
  free(xbuf);
  free(bbuf);
}

/* ---- errors ---- */

static void test_null_pointers(void) {
  oneflow_session_t* s = make_session("model.onnx");
  oneflow_graph_t* g = load_graph("model.onnx");
  oneflow_env_t* env = NULL;
  oneflow_tensor_t* t = NULL;
  oneflow_graph_t* g2 = NULL;
  oneflow_session_t* s2 = NULL;
  oneflow_value_info_t info;
  int64_t shape[2] = {3, 4};
  uint64_t peak = 0;
  const char* names[2] = {"x", "b"};
  const char* null_names[2] = {NULL, NULL};
  const oneflow_tensor_t* null_inputs[2] = {NULL, NULL};
  oneflow_tensor_t* out[2] = {NULL, NULL};
  char byte = 0;

  EXPECT_TRUE(oneflow_status_code(NULL) == ONEFLOW_OK);
  EXPECT_TRUE(strcmp(oneflow_status_message(NULL), "") == 0);
  oneflow_status_free(NULL);
  EXPECT_ERROR(oneflow_value_info_init_sized(NULL, sizeof info), ONEFLOW_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(oneflow_session_options_init_sized(NULL, sizeof(oneflow_session_options_t)), ONEFLOW_INVALID_ARGUMENT,
               "NULL");
  oneflow_env_release(NULL);
  oneflow_tensor_release(NULL);
  oneflow_graph_release(NULL);
  oneflow_session_release(NULL);

  EXPECT_ERROR(oneflow_env_create(NULL), ONEFLOW_INVALID_ARGUMENT, "out_env");
  REQUIRE_OK(oneflow_env_create(&env));
  oneflow_env_release(env);

  EXPECT_ERROR(oneflow_tensor_create(ONEFLOW_DTYPE_F32, shape, 2, NULL), ONEFLOW_INVALID_ARGUMENT, "out_tensor");
  EXPECT_ERROR(oneflow_tensor_create(ONEFLOW_DTYPE_F32, NULL, 2, &t), ONEFLOW_INVALID_ARGUMENT, "shape is NULL");
  EXPECT_ERROR(oneflow_tensor_create((oneflow_dtype_t)42, shape, 2, &t), ONEFLOW_INVALID_ARGUMENT, "dtype");
  EXPECT_ERROR(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, NULL, 48, NULL, NULL, &t),
               ONEFLOW_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERROR(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, NULL, 2, &byte, 48, NULL, NULL, &t),
               ONEFLOW_INVALID_ARGUMENT, "shape is NULL");
  EXPECT_ERROR(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, &byte, 48, NULL, NULL, NULL),
               ONEFLOW_INVALID_ARGUMENT, "out_tensor");
  EXPECT_TRUE(t == NULL); /* outputs untouched on failure */
  EXPECT_TRUE(oneflow_tensor_dtype(NULL) == ONEFLOW_DTYPE_UNDEFINED);
  EXPECT_TRUE(oneflow_tensor_rank(NULL) == 0 && oneflow_tensor_shape(NULL) == NULL);
  EXPECT_TRUE(oneflow_tensor_element_count(NULL) == 0 && oneflow_tensor_byte_size(NULL) == 0);
  EXPECT_TRUE(oneflow_tensor_data(NULL) == NULL);

  EXPECT_ERROR(oneflow_graph_load_file(NULL, &g2), ONEFLOW_INVALID_ARGUMENT, "path is NULL");
  EXPECT_ERROR(oneflow_graph_load_file("model.onnx", NULL), ONEFLOW_INVALID_ARGUMENT, "out_graph is NULL");
  EXPECT_ERROR(oneflow_graph_load_memory(NULL, 10, NULL, &g2), ONEFLOW_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERROR(oneflow_graph_load_memory(&byte, 1, NULL, NULL), ONEFLOW_INVALID_ARGUMENT, "out_graph is NULL");
  EXPECT_TRUE(g2 == NULL);
  EXPECT_TRUE(oneflow_graph_input_count(NULL) == 0 && oneflow_graph_output_count(NULL) == 0);
  oneflow_value_info_init(&info);
  EXPECT_ERROR(oneflow_graph_get_input_info(NULL, 0, &info), ONEFLOW_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(oneflow_graph_get_output_info(NULL, 0, &info), ONEFLOW_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(oneflow_graph_get_input_info(g, 0, NULL), ONEFLOW_INVALID_ARGUMENT, "out_info");
  EXPECT_ERROR(oneflow_graph_get_output_info(g, 0, NULL), ONEFLOW_INVALID_ARGUMENT, "out_info");

  EXPECT_ERROR(oneflow_session_create(NULL, NULL, NULL, &s2), ONEFLOW_INVALID_ARGUMENT, "graph is NULL");
  EXPECT_ERROR(oneflow_session_create(NULL, g, NULL, NULL), ONEFLOW_INVALID_ARGUMENT, "out_session is NULL");
  EXPECT_TRUE(s2 == NULL);
  EXPECT_TRUE(oneflow_session_input_count(NULL) == 0 && oneflow_session_output_count(NULL) == 0);
  EXPECT_ERROR(oneflow_session_get_input_info(NULL, 0, &info), ONEFLOW_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(oneflow_session_get_output_info(NULL, 0, &info), ONEFLOW_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(oneflow_session_get_input_info(s, 0, NULL), ONEFLOW_INVALID_ARGUMENT, "out_info");
  EXPECT_ERROR(oneflow_session_get_output_info(s, 0, NULL), ONEFLOW_INVALID_ARGUMENT, "out_info");
  EXPECT_ERROR(oneflow_session_get_planned_peak_bytes(NULL, &peak), ONEFLOW_INVALID_ARGUMENT, "session is NULL");
  EXPECT_ERROR(oneflow_session_get_planned_peak_bytes(s, NULL), ONEFLOW_INVALID_ARGUMENT, "out_bytes is NULL");

  EXPECT_ERROR(oneflow_session_run(NULL, names, null_inputs, 0, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "session is NULL");
  EXPECT_ERROR(oneflow_session_run(s, NULL, null_inputs, 2, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "input_names or inputs is NULL");
  EXPECT_ERROR(oneflow_session_run(s, names, NULL, 2, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "input_names or inputs is NULL");
  EXPECT_ERROR(oneflow_session_run(s, names, null_inputs, 2, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "inputs[0]");
  EXPECT_ERROR(oneflow_session_run(s, null_names, null_inputs, 2, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "input_names[0] is NULL");
  EXPECT_ERROR(oneflow_session_run(s, names, null_inputs, 0, NULL, 1, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "output_names is NULL");
  EXPECT_ERROR(oneflow_session_run(s, names, null_inputs, 0, null_names, 1, out, 2), ONEFLOW_INVALID_ARGUMENT,
               "output_names[0] is NULL");
  EXPECT_ERROR(oneflow_session_run(s, names, null_inputs, 0, NULL, 0, NULL, 2), ONEFLOW_INVALID_ARGUMENT,
               "out_outputs is NULL");
  EXPECT_TRUE(out[0] == NULL && out[1] == NULL);
  oneflow_graph_release(g);
  oneflow_session_release(s);
}

/* Runs the main model with x replaced by a tensor of the given dtype/shape. */
static oneflow_status_t run_with_x(oneflow_session_t* s, oneflow_dtype_t dtype, const int64_t* shape, size_t rank) {
  const char* names[2] = {"x", "b"};
  oneflow_tensor_t* x = NULL;
  oneflow_tensor_t* b = load_f32("b3.f32", 3, 4);
  const oneflow_tensor_t* in[2];
  oneflow_tensor_t* out[2] = {NULL, NULL};
  oneflow_status_t st;
  REQUIRE_OK(oneflow_tensor_create(dtype, shape, rank, &x));
  in[0] = x;
  in[1] = b;
  st = oneflow_session_run(s, names, in, 2, NULL, 0, out, 2);
  oneflow_tensor_release(out[0]);
  oneflow_tensor_release(out[1]);
  oneflow_tensor_release(x);
  oneflow_tensor_release(b);
  return st;
}

static void test_bad_inputs(void) {
  oneflow_session_t* s = make_session("model.onnx");
  int64_t good[2] = {3, 4}, wrong_dim[2] = {3, 5}, wrong_rank[3] = {3, 4, 1}, other_batch[2] = {2, 4};
  oneflow_tensor_t* x = load_f32("x3.f32", 3, 4);
  const oneflow_tensor_t* in[2];
  oneflow_tensor_t* out[2] = {NULL, NULL};
  const char* wrong_name[2] = {"x", "nope"};
  const char* twice[2] = {"x", "x"};
  const char* only_x[1] = {"x"};

  REQUIRE_OK(run_with_x(s, ONEFLOW_DTYPE_F32, good, 2));
  EXPECT_ERROR(run_with_x(s, ONEFLOW_DTYPE_F64, good, 2), ONEFLOW_INVALID_ARGUMENT, "dtype float64");
  EXPECT_ERROR(run_with_x(s, ONEFLOW_DTYPE_F32, wrong_rank, 3), ONEFLOW_INVALID_ARGUMENT, "rank 3");
  EXPECT_ERROR(run_with_x(s, ONEFLOW_DTYPE_F32, wrong_dim, 2), ONEFLOW_INVALID_ARGUMENT, "dim 1");
  EXPECT_ERROR(run_with_x(s, ONEFLOW_DTYPE_F32, other_batch, 2), ONEFLOW_INVALID_ARGUMENT, "batch");
  in[0] = x;
  in[1] = x;
  EXPECT_ERROR(oneflow_session_run(s, wrong_name, in, 2, NULL, 0, out, 2), ONEFLOW_NOT_FOUND, "'nope'");
  EXPECT_ERROR(oneflow_session_run(s, twice, in, 2, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT, "twice");
  EXPECT_ERROR(oneflow_session_run(s, only_x, in, 1, NULL, 0, out, 2), ONEFLOW_INVALID_ARGUMENT, "'b' is missing");
  EXPECT_TRUE(out[0] == NULL && out[1] == NULL);
  oneflow_tensor_release(x);
  oneflow_session_release(s);
}

static oneflow_status_t load_path(const char* name) {
  oneflow_graph_t* g = NULL;
  char* path = path_in(name);
  oneflow_status_t st = oneflow_graph_load_file(path, &g);
  free(path);
  oneflow_graph_release(g);
  return st;
}

static oneflow_status_t load_and_create(const char* name) {
  oneflow_graph_t* g = NULL;
  oneflow_session_t* s = NULL;
  char* path = path_in(name);
  oneflow_status_t st = oneflow_graph_load_file(path, &g);
  free(path);
  if (!st) st = oneflow_session_create(NULL, g, NULL, &s);
  oneflow_session_release(s);
  oneflow_graph_release(g);
  return st;
}

/* ABI 3: struct sizes come from the caller (the *_init macros pass sizeof). The library writes no
 * byte past the caller's struct, refuses one smaller than ABI 3's, and refuses a field it does not
 * know that a program built against a newer header has set (rather than ignore the setting). */
static void test_struct_sizes(void) {
  enum { kExtra = 32, kGuard = 16 };
  unsigned char bytes[sizeof(oneflow_session_options_t) + kExtra + kGuard];
  oneflow_session_options_t* newer = (oneflow_session_options_t*)(void*)bytes;
  oneflow_graph_t* g = load_graph("model.onnx");
  oneflow_session_t* s = NULL;
  size_t i;
  int untouched = 1, zeroed = 1;

  memset(bytes, 0xAB, sizeof bytes);
  EXPECT_ERROR(oneflow_session_options_init_sized(newer, sizeof(size_t)), ONEFLOW_INVALID_ARGUMENT, "smaller than");
  for (i = 0; i < sizeof bytes; ++i) untouched &= bytes[i] == 0xAB;
  EXPECT_TRUE(untouched); /* a refused init writes nothing */

  /* A program built against a later header, whose struct has kExtra more bytes. */
  REQUIRE_OK(oneflow_session_options_init_sized(newer, sizeof(oneflow_session_options_t) + kExtra));
  EXPECT_TRUE(newer->struct_size == sizeof(oneflow_session_options_t) + kExtra);
  EXPECT_TRUE(newer->optimization_level == 2 && newer->intra_op_threads == 0);
  for (i = sizeof(oneflow_session_options_t); i < sizeof(oneflow_session_options_t) + kExtra; ++i) zeroed &= bytes[i] == 0;
  EXPECT_TRUE(zeroed); /* the fields this library does not know: zero, their default */
  for (i = sizeof(oneflow_session_options_t) + kExtra; i < sizeof bytes; ++i) untouched &= bytes[i] == 0xAB;
  EXPECT_TRUE(untouched); /* and not one byte past the caller's struct */
  REQUIRE_OK(oneflow_session_create(NULL, g, newer, &s)); /* unknown fields left at zero: fine */
  oneflow_session_release(s);
  s = NULL;
  bytes[sizeof(oneflow_session_options_t) + 4] = 1; /* a field this library does not have, set */
  EXPECT_ERROR(oneflow_session_create(NULL, g, newer, &s), ONEFLOW_UNSUPPORTED, "newer oneflow_c.h");
  EXPECT_TRUE(s == NULL);

  /* An older or hand-made struct: too small to hold ABI 3's fields. */
  {
    oneflow_session_options_t o;
    oneflow_session_options_init(&o);
    o.struct_size = sizeof(size_t);
    EXPECT_ERROR(oneflow_session_create(NULL, g, &o, &s), ONEFLOW_INVALID_ARGUMENT, "struct_size");
  }
  {
    oneflow_value_info_t info;
    oneflow_value_info_init(&info);
    EXPECT_TRUE(info.struct_size == sizeof info);
    info.struct_size = 4;
    EXPECT_ERROR(oneflow_graph_get_input_info(g, 0, &info), ONEFLOW_INVALID_ARGUMENT, "struct_size");
  }
  oneflow_graph_release(g);
}

static void test_bad_models(void) {
  size_t size = 0, k;
  unsigned char* bytes = read_file("model.onnx", &size);
  unsigned char garbage[1024];
  uint32_t lcg = 12345;
  oneflow_graph_t* g = NULL;

  EXPECT_ERROR(load_path("empty.onnx"), ONEFLOW_INVALID_MODEL, "empty");
  EXPECT_ERROR(load_path("does/not/exist.onnx"), ONEFLOW_NOT_FOUND, "exist.onnx");
  EXPECT_ERROR(oneflow_graph_load_memory(bytes, 0, NULL, &g), ONEFLOW_INVALID_MODEL, "empty");

  /* Every 1/8 of the model: a cut protobuf must be refused, as a file and from memory. */
  for (k = 1; k < 8; ++k) {
    size_t cut = size * k / 8;
    oneflow_status_t st;
    write_file("truncated.onnx", bytes, cut);
    st = load_path("truncated.onnx");
    if (!st || oneflow_status_code(st) != ONEFLOW_INVALID_MODEL || !strstr(oneflow_status_message(st), "ONNX model")) {
      fprintf(stderr, "truncated at %zu/%zu: got %s: %s\n", cut, size, oneflow_code_name(oneflow_status_code(st)),
              oneflow_status_message(st));
      ++g_fail;
    }
    oneflow_status_free(st);
    EXPECT_ERROR(oneflow_graph_load_memory(bytes, cut, NULL, &g), ONEFLOW_INVALID_MODEL, "ONNX model");
  }
  for (k = 0; k < sizeof garbage; ++k) {
    lcg = lcg * 1103515245u + 12345u;
    garbage[k] = (unsigned char)(lcg >> 16);
  }
  write_file("garbage.onnx", garbage, sizeof garbage);
  EXPECT_ERROR(load_path("garbage.onnx"), ONEFLOW_INVALID_MODEL, "not a valid ONNX model");
  EXPECT_ERROR(oneflow_graph_load_memory("not an onnx model", 17, NULL, &g), ONEFLOW_INVALID_MODEL,
               "not a valid ONNX model");
  EXPECT_TRUE(g == NULL);

  EXPECT_ERROR(load_path("escape/model.onnx"), ONEFLOW_INVALID_MODEL, "escapes the model's directory");
  EXPECT_ERROR(load_path("missing_ext.onnx"), ONEFLOW_NOT_FOUND, "nonexistent_weights.bin");

  EXPECT_ERROR(load_and_create("unknown_op.onnx"), ONEFLOW_UNSUPPORTED, "FrobnicateOp");
  EXPECT_ERROR(load_and_create("unknown_op.onnx"), ONEFLOW_UNSUPPORTED, "com.example");
  EXPECT_ERROR(load_and_create("unknown_op.onnx"), ONEFLOW_UNSUPPORTED, "opset 3");
  EXPECT_ERROR(load_and_create("unknown_onnx_op.onnx"), ONEFLOW_UNSUPPORTED, "NotARealOp");
  EXPECT_ERROR(load_and_create("unknown_onnx_op.onnx"), ONEFLOW_UNSUPPORTED, "ai.onnx");
  EXPECT_ERROR(load_and_create("unknown_onnx_op.onnx"), ONEFLOW_UNSUPPORTED, "opset 17");
  EXPECT_ERROR(load_and_create("opset29.onnx"), ONEFLOW_UNSUPPORTED, "opset 29");
  EXPECT_ERROR(load_and_create("opset6_prelu.onnx"), ONEFLOW_UNSUPPORTED, "PRelu changed meaning at opset 7");
  EXPECT_TRUE(load_and_create("opset6.onnx") == NULL);   /* opsets 1-12 are upgraded at import */
  EXPECT_TRUE(load_and_create("opset12.onnx") == NULL);
  free(bytes);
}

typedef struct {
  oneflow_session_t* session;
  const oneflow_tensor_t* seq;
  const oneflow_tensor_t* none;
  int ok;
} sequence_thread_arg_t;

/* Runs sequence_model.onnx 50 times on the shared [1.5, -2], [4.25] sequence; ok when every run's
 * concatenation and returned sequence are right. */
static void* sequence_thread_main(void* p) {
  sequence_thread_arg_t* arg = (sequence_thread_arg_t*)p;
  const char* names[2] = {"s", "o"};
  const oneflow_tensor_t* in[2] = {arg->seq, arg->none};
  arg->ok = 1;
  for (int r = 0; r < 50 && arg->ok; ++r) {
    oneflow_tensor_t* out[4] = {NULL, NULL, NULL, NULL};
    oneflow_status_t st = oneflow_session_run(arg->session, names, in, 2, NULL, 0, out, 4);
    if (st) {
      oneflow_status_free(st);
      arg->ok = 0;
      break;
    }
    const float* cat = (const float*)oneflow_tensor_data(out[0]);
    arg->ok = oneflow_tensor_element_count(out[0]) == 3 && cat[0] == 1.5f && cat[1] == -2.0f && cat[2] == 4.25f &&
              oneflow_tensor_sequence_length(out[3]) == 2;
    for (int k = 0; k < 4; ++k) oneflow_tensor_release(out[k]);
  }
  return NULL;
}

/* Sequences and optionals (ABI 5): a sequence built from two tensors goes in, comes out as a sequence
 * (Identity) and concatenated (values by hand); an empty optional and a present one; info kinds;
 * errors for the wrong kind of value and bad elements; concurrent runs on one sequence (the TSan job
 * runs this test). */
static void test_sequences_and_optionals(void) {
  oneflow_session_t* s = make_session("sequence_model.onnx");
  oneflow_value_info_t info;
  oneflow_value_info_init(&info);
  REQUIRE_OK(oneflow_session_get_input_info(s, 0, &info));
  EXPECT_TRUE(info.kind == ONEFLOW_TYPE_SEQUENCE && info.dtype == ONEFLOW_DTYPE_F32);
  REQUIRE_OK(oneflow_session_get_input_info(s, 1, &info));
  EXPECT_TRUE(info.kind == ONEFLOW_TYPE_OPTIONAL);
  REQUIRE_OK(oneflow_session_get_output_info(s, 3, &info));
  EXPECT_TRUE(info.kind == ONEFLOW_TYPE_SEQUENCE);

  int64_t two = 2, one = 1;
  oneflow_tensor_t *a = NULL, *b = NULL, *seq = NULL, *none = NULL, *i64 = NULL;
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, &two, 1, &a));
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, &one, 1, &b));
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_I64, &one, 1, &i64));
  ((float*)oneflow_tensor_data(a))[0] = 1.5f;
  ((float*)oneflow_tensor_data(a))[1] = -2.0f;
  ((float*)oneflow_tensor_data(b))[0] = 4.25f;
  const oneflow_tensor_t* items[2] = {a, b};
  REQUIRE_OK(oneflow_tensor_create_sequence(ONEFLOW_DTYPE_F32, items, 2, &seq));
  REQUIRE_OK(oneflow_tensor_create_none(ONEFLOW_DTYPE_F32, &none));
  EXPECT_TRUE(oneflow_tensor_kind(seq) == ONEFLOW_VALUE_SEQUENCE && oneflow_tensor_sequence_length(seq) == 2);
  EXPECT_TRUE(oneflow_tensor_kind(none) == ONEFLOW_VALUE_NONE && oneflow_tensor_data(none) == NULL);
  EXPECT_TRUE(oneflow_tensor_kind(a) == ONEFLOW_VALUE_TENSOR && oneflow_tensor_kind(NULL) == ONEFLOW_VALUE_TENSOR);
  EXPECT_TRUE(oneflow_tensor_data(seq) == NULL && oneflow_tensor_rank(seq) == 0 && oneflow_tensor_byte_size(seq) == 0);

  const char* names[2] = {"s", "o"};
  const oneflow_tensor_t* in[2] = {seq, none};
  oneflow_tensor_t* out[4] = {NULL, NULL, NULL, NULL};
  REQUIRE_OK(oneflow_session_run(s, names, in, 2, NULL, 0, out, 4));
  const float* cat = (const float*)oneflow_tensor_data(out[0]);
  EXPECT_TRUE(oneflow_tensor_element_count(out[0]) == 3 && cat[0] == 1.5f && cat[1] == -2.0f && cat[2] == 4.25f);
  EXPECT_TRUE(*(const int64_t*)oneflow_tensor_data(out[1]) == 2);
  EXPECT_TRUE(*(const uint8_t*)oneflow_tensor_data(out[2]) == 0);
  EXPECT_TRUE(oneflow_tensor_kind(out[3]) == ONEFLOW_VALUE_SEQUENCE && oneflow_tensor_sequence_length(out[3]) == 2);
  {
    oneflow_tensor_t* e = NULL;
    REQUIRE_OK(oneflow_tensor_sequence_element(out[3], 1, &e));
    EXPECT_TRUE(oneflow_tensor_element_count(e) == 1 && ((const float*)oneflow_tensor_data(e))[0] == 4.25f);
    oneflow_tensor_release(e);
    EXPECT_ERROR(oneflow_tensor_sequence_element(out[3], 2, &e), ONEFLOW_INVALID_ARGUMENT, "out of range");
    EXPECT_ERROR(oneflow_tensor_sequence_element(a, 0, &e), ONEFLOW_INVALID_ARGUMENT, "not a sequence");
  }
  for (int k = 0; k < 4; ++k) oneflow_tensor_release(out[k]), out[k] = NULL;

  /* The optional holding a tensor. */
  in[1] = b;
  REQUIRE_OK(oneflow_session_run(s, names, in, 2, NULL, 0, out, 4));
  EXPECT_TRUE(*(const uint8_t*)oneflow_tensor_data(out[2]) == 1);
  for (int k = 0; k < 4; ++k) oneflow_tensor_release(out[k]), out[k] = NULL;

  /* Values of the wrong kind. */
  in[0] = a;
  in[1] = none;
  EXPECT_ERROR(oneflow_session_run(s, names, in, 2, NULL, 0, out, 4), ONEFLOW_INVALID_ARGUMENT, "expects seq(");
  in[0] = none;
  EXPECT_ERROR(oneflow_session_run(s, names, in, 2, NULL, 0, out, 4), ONEFLOW_INVALID_ARGUMENT, "none(float32)");
  in[0] = seq;
  in[1] = seq;
  EXPECT_ERROR(oneflow_session_run(s, names, in, 2, NULL, 0, out, 4), ONEFLOW_INVALID_ARGUMENT, "optional(");
  {
    oneflow_tensor_t* bad = NULL;
    const oneflow_tensor_t* mixed[2] = {a, i64};
    const oneflow_tensor_t* nested[1] = {seq};
    const oneflow_tensor_t* null_item[1] = {NULL};
    EXPECT_ERROR(oneflow_tensor_create_sequence(ONEFLOW_DTYPE_F32, mixed, 2, &bad), ONEFLOW_INVALID_ARGUMENT, "int64");
    EXPECT_ERROR(oneflow_tensor_create_sequence(ONEFLOW_DTYPE_F32, nested, 1, &bad), ONEFLOW_INVALID_ARGUMENT,
                 "sequences hold tensors");
    EXPECT_ERROR(oneflow_tensor_create_sequence(ONEFLOW_DTYPE_F32, null_item, 1, &bad), ONEFLOW_INVALID_ARGUMENT, "NULL");
    EXPECT_ERROR(oneflow_tensor_create_sequence(ONEFLOW_DTYPE_F32, NULL, 1, &bad), ONEFLOW_INVALID_ARGUMENT, "NULL");
    EXPECT_ERROR(oneflow_tensor_create_none(ONEFLOW_DTYPE_F32, NULL), ONEFLOW_INVALID_ARGUMENT, "NULL");
    /* An empty sequence is fine: concatenating it is the run's error. */
    REQUIRE_OK(oneflow_tensor_create_sequence(ONEFLOW_DTYPE_F32, NULL, 0, &bad));
    in[0] = bad;
    in[1] = none;
    EXPECT_ERROR(oneflow_session_run(s, names, in, 2, NULL, 0, out, 4), ONEFLOW_INVALID_ARGUMENT, "empty sequence");
    oneflow_tensor_release(bad);
  }
  { /* One sequence handle fed by several threads at once (shared element list, concurrent runs). */
    pthread_t threads[3];
    sequence_thread_arg_t args[3];
    for (int k = 0; k < 3; ++k) {
      args[k].session = s;
      args[k].seq = seq;
      args[k].none = none;
      args[k].ok = 0;
      EXPECT_TRUE(pthread_create(&threads[k], NULL, sequence_thread_main, &args[k]) == 0);
    }
    for (int k = 0; k < 3; ++k) {
      pthread_join(threads[k], NULL);
      EXPECT_TRUE(args[k].ok);
    }
  }
  oneflow_tensor_release(seq);
  oneflow_tensor_release(none);
  oneflow_tensor_release(a);
  oneflow_tensor_release(b);
  oneflow_tensor_release(i64);
  oneflow_session_release(s);
}

/* Whether string tensor `t` holds exactly `want` (n elements, each its NUL-terminated bytes). */
static int strings_equal(const oneflow_tensor_t* t, const char* const* want, int64_t n) {
  if (oneflow_tensor_dtype(t) != ONEFLOW_DTYPE_STRING || oneflow_tensor_element_count(t) != n) return 0;
  for (int64_t i = 0; i < n; ++i) {
    const char* data = NULL;
    size_t len = 0;
    if (oneflow_tensor_string_element(t, i, &data, &len) != NULL) return 0;
    if (len != strlen(want[i]) || memcmp(data, want[i], len) != 0 || data[len] != '\0') return 0;
  }
  return 1;
}

/* string_model.onnx (make_c_api_fixture.py): each output checked against values worked out by hand. */
static void test_string_tensors(void) {
  oneflow_session_t* s = make_session("string_model.onnx");
  oneflow_value_info_t info;
  oneflow_value_info_init(&info);
  REQUIRE_OK(oneflow_session_get_input_info(s, 0, &info));
  EXPECT_TRUE(info.dtype == ONEFLOW_DTYPE_STRING && strcmp(oneflow_dtype_name(ONEFLOW_DTYPE_STRING), "string") == 0);

  /* Explicit lengths: an element may hold a NUL ("b\0c" is three bytes). */
  const char* text[4] = {"Hello you", "a", "b\0c d", ""};
  const size_t lengths[4] = {9, 1, 5, 0};
  int64_t n = 4;
  oneflow_tensor_t* in = NULL;
  REQUIRE_OK(oneflow_tensor_create_strings(&n, 1, text, lengths, &in));
  EXPECT_TRUE(oneflow_tensor_data(in) == NULL && oneflow_tensor_byte_size(in) == 0);
  const char* data = NULL;
  size_t len = 0;
  REQUIRE_OK(oneflow_tensor_string_element(in, 2, &data, &len));
  EXPECT_TRUE(len == 5 && memcmp(data, "b\0c d", 5) == 0);

  const char* names[1] = {"text"};
  const oneflow_tensor_t* inputs[1] = {in};
  oneflow_tensor_t* out[4] = {NULL, NULL, NULL, NULL};
  REQUIRE_OK(oneflow_session_run(s, names, inputs, 1, NULL, 0, out, 4));
  REQUIRE_OK(oneflow_tensor_string_element(out[0], 2, &data, &len));
  EXPECT_TRUE(len == 6 && memcmp(data, "b\0c d!", 6) == 0);
  const char* shout_ends[2] = {"Hello you!", "a!"};
  EXPECT_TRUE(oneflow_tensor_element_count(out[0]) == 4);
  for (int i = 0; i < 2; ++i) {
    REQUIRE_OK(oneflow_tensor_string_element(out[0], i, &data, &len));
    EXPECT_TRUE(len == strlen(shout_ends[i]) && memcmp(data, shout_ends[i], len) == 0);
  }
  const int64_t* words = (const int64_t*)oneflow_tensor_data(out[1]);
  EXPECT_TRUE(words[0] == 2 && words[1] == 1 && words[2] == 2 && words[3] == 0);
  const uint8_t* greeting = (const uint8_t*)oneflow_tensor_data(out[2]);
  EXPECT_TRUE(greeting[0] == 1 && greeting[1] == 0 && greeting[2] == 0 && greeting[3] == 0);
  const int64_t* ids = (const int64_t*)oneflow_tensor_data(out[3]);
  EXPECT_TRUE(ids[0] == -1 && ids[1] == 1 && ids[2] == -1 && ids[3] == -1);
  for (int i = 0; i < 4; ++i) oneflow_tensor_release(out[i]);

  /* NUL-terminated elements (lengths NULL), a 2-D shape, and the bad calls. */
  const char* grid[4] = {"x", "yy", "", "zzz"};
  int64_t shape[2] = {2, 2};
  oneflow_tensor_t* g = NULL;
  REQUIRE_OK(oneflow_tensor_create_strings(shape, 2, grid, NULL, &g));
  EXPECT_TRUE(strings_equal(g, grid, 4));
  EXPECT_ERROR(oneflow_tensor_string_element(g, 4, &data, &len), ONEFLOW_INVALID_ARGUMENT, "out of range");
  EXPECT_ERROR(oneflow_tensor_string_element(g, 0, NULL, &len), ONEFLOW_INVALID_ARGUMENT, "NULL");
  int64_t one = 1;
  oneflow_tensor_t* f = NULL;
  REQUIRE_OK(oneflow_tensor_create(ONEFLOW_DTYPE_F32, &one, 1, &f));
  EXPECT_ERROR(oneflow_tensor_string_element(f, 0, &data, &len), ONEFLOW_INVALID_ARGUMENT, "not a string tensor");
  const char* holes[2] = {"a", NULL};
  oneflow_tensor_t* bad = NULL;
  int64_t two = 2;
  EXPECT_ERROR(oneflow_tensor_create_strings(&two, 1, holes, NULL, &bad), ONEFLOW_INVALID_ARGUMENT, "data[1] is NULL");
  EXPECT_ERROR(oneflow_tensor_create_strings(&two, 1, NULL, NULL, &bad), ONEFLOW_INVALID_ARGUMENT, "data is NULL");
  char buf[64];
  EXPECT_ERROR(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_STRING, &one, 1, buf, sizeof buf, NULL, NULL, &bad),
               ONEFLOW_INVALID_ARGUMENT, "oneflow_tensor_create_strings");
  /* A float tensor where the model takes strings, and strings where it takes floats. */
  const oneflow_tensor_t* wrong[1] = {f};
  EXPECT_ERROR(oneflow_session_run(s, names, wrong, 1, NULL, 0, out, 4), ONEFLOW_INVALID_ARGUMENT, "text");
  oneflow_session_t* m = make_session("const_model.onnx");
  const char* x_name[1] = {"x"};
  const oneflow_tensor_t* strings_in[1] = {g};
  oneflow_tensor_t* y[1] = {NULL};
  EXPECT_ERROR(oneflow_session_run(m, x_name, strings_in, 1, NULL, 0, y, 1), ONEFLOW_INVALID_ARGUMENT, "string");
  oneflow_session_release(m);
  oneflow_tensor_release(f);
  oneflow_tensor_release(g);
  oneflow_tensor_release(in);
  oneflow_session_release(s);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  test_versions();
  test_io_info();
  test_run();
  test_constant_and_external_models();
  test_concurrent_runs();
  test_shared_env_pool();
  test_borrowed_inputs();
  test_null_pointers();
  test_bad_inputs();
  test_struct_sizes();
  test_bad_models();
  test_sequences_and_optionals();
  test_string_tensors();
  return c_test_finish("c_api_test");
}
