/* A minimal embedding of OneFlow through its C API: load an ONNX model, feed its first input with a
 * deterministic pattern, run, print every output. With EXPECTED.f32 (raw float32, as written by
 * make_model.py) it also checks the first output and exits 1 on a mismatch.
 *   usage: infer MODEL.onnx [EXPECTED.f32]
 * Build: cc -std=c99 infer.c -Iinclude -Lbuild -loneflow -Wl,-rpath,build -lm -o infer */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "oneflow_c.h"

/* Prints the status' message and returns 1 when the call failed. */
static int failed(oneflow_status_t st, const char* what) {
  if (!st) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, oneflow_code_name(oneflow_status_code(st)), oneflow_status_message(st));
  oneflow_status_free(st);
  return 1;
}

static int check_expected(const oneflow_tensor_t* y, const char* path) {
  FILE* f = fopen(path, "rb");
  const float* got = (const float*)oneflow_tensor_data(y);
  int64_t i, n = oneflow_tensor_element_count(y);
  int bad = 0;
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  for (i = 0; i < n; ++i) {
    float want;
    if (fread(&want, sizeof want, 1, f) != 1 || fabsf(got[i] - want) > 1e-5f) {
      fprintf(stderr, "mismatch at %lld\n", (long long)i);
      bad = 1;
      break;
    }
  }
  fclose(f);
  if (!bad) printf("output matches %s\n", path);
  return bad;
}

int main(int argc, char** argv) {
  oneflow_graph_t* graph = NULL;
  oneflow_session_t* session = NULL;
  oneflow_tensor_t* x = NULL;
  oneflow_tensor_t* outputs[8] = {NULL};
  oneflow_value_info_t in_info, out_info;
  int64_t shape[8];
  const char* names[1];
  const oneflow_tensor_t* inputs[1];
  size_t i, j, num_outputs;
  int rc = 1;

  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.onnx [EXPECTED.f32]\n", argv[0]);
    return 2;
  }
  printf("oneflow %s\n", oneflow_version());
  if (failed(oneflow_graph_load_file(argv[1], &graph), "loading the model")) goto done;
  if (failed(oneflow_session_create(NULL, graph, NULL, &session), "creating the session")) goto done;

  oneflow_value_info_init(&in_info);
  if (failed(oneflow_session_get_input_info(session, 0, &in_info), "querying input 0")) goto done;
  if (in_info.dtype != ONEFLOW_DTYPE_F32 || in_info.rank < 0 || in_info.rank > 8) {
    fprintf(stderr, "this example feeds one float32 input of known rank\n");
    goto done;
  }
  for (i = 0; i < (size_t)in_info.rank; ++i) shape[i] = in_info.dims[i] >= 0 ? in_info.dims[i] : 1;
  if (failed(oneflow_tensor_create(ONEFLOW_DTYPE_F32, shape, (size_t)in_info.rank, &x), "creating the input")) goto done;
  {
    float* p = (float*)oneflow_tensor_data(x);
    for (j = 0; j < (size_t)oneflow_tensor_element_count(x); ++j) p[j] = (float)(j % 7) * 0.5f - 1.5f;
  }

  names[0] = in_info.name;
  inputs[0] = x;
  num_outputs = oneflow_session_output_count(session);
  if (num_outputs > 8) num_outputs = 8;
  if (failed(oneflow_session_run(session, names, inputs, 1, NULL, 0, outputs, 8), "running")) goto done;

  for (i = 0; i < num_outputs; ++i) {
    const float* y = (const float*)oneflow_tensor_data(outputs[i]);
    oneflow_value_info_init(&out_info);
    if (failed(oneflow_session_get_output_info(session, i, &out_info), "querying an output")) goto done;
    printf("%s: %s[", out_info.name, oneflow_dtype_name(oneflow_tensor_dtype(outputs[i])));
    for (j = 0; j < oneflow_tensor_rank(outputs[i]); ++j)
      printf("%s%lld", j ? "," : "", (long long)oneflow_tensor_shape(outputs[i])[j]);
    printf("] =");
    if (oneflow_tensor_dtype(outputs[i]) == ONEFLOW_DTYPE_F32)
      for (j = 0; j < (size_t)oneflow_tensor_element_count(outputs[i]) && j < 32; ++j) printf(" %g", (double)y[j]);
    printf("\n");
  }
  rc = argc > 2 ? check_expected(outputs[0], argv[2]) : 0;

done:
  for (i = 0; i < 8; ++i) oneflow_tensor_release(outputs[i]);
  oneflow_tensor_release(x);
  oneflow_session_release(session);
  oneflow_graph_release(graph);
  return rc;
}
