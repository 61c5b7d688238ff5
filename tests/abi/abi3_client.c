/* A program compiled against the ABI 3 header as it was frozen (tests/abi/abi3/oneflow_c.h), and
 * linked against the library of this build: whatever the header has gained since, a program built
 * for ABI 3 must still load, pass its struct sizes, run a model and get the right answer.
 *   abi3_client C_API_FIXTURE_DIR      (tests/c_api/make_c_api_fixture.py's model and data) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oneflow_c.h" /* the frozen copy: tests/CMakeLists.txt puts tests/abi/abi3 on the path */

static int g_failures = 0;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);           \
      fprintf(stderr, __VA_ARGS__);                                  \
      fprintf(stderr, "\n");                                         \
      ++g_failures;                                                  \
    }                                                                \
  } while (0)

static int ok(oneflow_status_t st, const char* what) {
  if (st == NULL) return 1;
  fprintf(stderr, "FAIL %s: %s: %s\n", what, oneflow_code_name(oneflow_status_code(st)), oneflow_status_message(st));
  oneflow_status_free(st);
  ++g_failures;
  return 0;
}

static float* read_f32(const char* dir, const char* name, size_t count) {
  char path[4096];
  float* data = (float*)malloc(count * sizeof(float));
  FILE* f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "rb");
  if (f == NULL || data == NULL || fread(data, sizeof(float), count, f) != count) {
    fprintf(stderr, "cannot read %s (%zu floats)\n", path, count);
    exit(2);
  }
  fclose(f);
  return data;
}

int main(int argc, char** argv) {
  enum { kBatch = 3, kCols = 4 };
  const int64_t shape[2] = {kBatch, kCols};
  const char* names[2] = {"x", "b"};
  char path[4096];
  oneflow_env_options_t env_options;
  oneflow_env_t* env = NULL;
  oneflow_graph_t* graph = NULL;
  oneflow_session_options_t options;
  oneflow_session_t* session = NULL;
  oneflow_value_info_t info;
  oneflow_training_options_t training;
  oneflow_tensor_t *x = NULL, *b = NULL;
  oneflow_tensor_t* out[2] = {NULL, NULL};
  const oneflow_tensor_t* in[2];
  float *xd, *bd, *yd, *zd;
  size_t i;

  if (argc != 2) {
    fprintf(stderr, "usage: %s C_API_FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  CHECK(oneflow_api_version() >= ONEFLOW_API_VERSION, "the library implements ABI %u, the client was built for %d",
        (unsigned)oneflow_api_version(), ONEFLOW_API_VERSION);

  /* Structs of the ABI 3 sizes, filled by the library without a byte past them. */
  oneflow_env_options_init(&env_options);
  CHECK(env_options.struct_size == sizeof env_options, "env options struct_size %zu", env_options.struct_size);
  env_options.shared_thread_pool = 1;
  env_options.intra_op_threads = 2;
  oneflow_session_options_init(&options);
  CHECK(options.struct_size == sizeof options && options.optimization_level == 2, "session options defaults");
  oneflow_training_options_init(&training);
  CHECK(training.struct_size == sizeof training && training.learning_rate > 0.0f, "training options defaults");
  oneflow_value_info_init(&info);

  snprintf(path, sizeof path, "%s/model.onnx", argv[1]);
  if (!ok(oneflow_env_create_with_options(&env_options, &env), "env") ||
      !ok(oneflow_graph_load_file(path, &graph), "load") ||
      !ok(oneflow_session_create(env, graph, &options, &session), "session"))
    return 1;
  if (ok(oneflow_session_get_input_info(session, 0, &info), "input info"))
    CHECK(info.name != NULL && strcmp(info.name, "x") == 0 && info.rank == 2, "input 0 is x[?, 4]");

  xd = read_f32(argv[1], "x3.f32", kBatch * kCols);
  bd = read_f32(argv[1], "b3.f32", kBatch * kCols);
  yd = read_f32(argv[1], "y3.f32", kBatch * kCols);
  zd = read_f32(argv[1], "z3.f32", kBatch * kCols);
  if (ok(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, xd, sizeof(float) * kBatch * kCols, NULL, NULL, &x),
         "x") &&
      ok(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, bd, sizeof(float) * kBatch * kCols, NULL, NULL, &b),
         "b")) {
    in[0] = x;
    in[1] = b;
    if (ok(oneflow_session_run(session, names, in, 2, NULL, 0, out, 2), "run")) {
      const float* y = (const float*)oneflow_tensor_data(out[0]);
      const float* z = (const float*)oneflow_tensor_data(out[1]);
      for (i = 0; i < (size_t)(kBatch * kCols); ++i) {
        CHECK(fabsf(y[i] - yd[i]) <= 1e-5f * (1.0f + fabsf(yd[i])), "y[%zu] = %g, numpy %g", i, y[i], yd[i]);
        CHECK(fabsf(z[i] - zd[i]) <= 1e-5f * (1.0f + fabsf(zd[i])), "z[%zu] = %g, numpy %g", i, z[i], zd[i]);
      }
    }
  }
  oneflow_tensor_release(out[0]);
  oneflow_tensor_release(out[1]);
  oneflow_tensor_release(x);
  oneflow_tensor_release(b);
  oneflow_session_release(session);
  oneflow_graph_release(graph);
  oneflow_env_release(env);
  free(xd);
  free(bd);
  free(yd);
  free(zd);
  if (g_failures) return 1;
  printf("abi3 client: a program built for ABI 3 runs on this library (ABI %u)\n", (unsigned)oneflow_api_version());
  return 0;
}
