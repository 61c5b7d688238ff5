/* C ABI of the native format: save as .ofm (inline and external weights), load it back from a
 * file, from memory (copied) and in place (borrowed), and check every run against numpy's
 * reference output of the fixture's const_model (y = Relu(x + W)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

static oneflow_code_t code_of(oneflow_status_t st, const char* must_contain) {
  oneflow_code_t c = oneflow_status_code(st);
  if (st && must_contain && !strstr(oneflow_status_message(st), must_contain)) {
    fprintf(stderr, "message lacks '%s': %s\n", must_contain, oneflow_status_message(st));
    ++g_fail;
  }
  oneflow_status_free(st);
  return c;
}

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* 64-byte aligned, as a zero-copy load requires. */
  char* buf = aligned_alloc(64, ((size_t)n + 63) / 64 * 64 + 64);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* Runs `graph` on x (2x3) and compares with the numpy reference bit for bit. */
static void run_and_compare(const oneflow_graph_t* graph, const float* x, const float* ref, const char* what) {
  oneflow_session_t* session = NULL;
  if (!expect_ok(oneflow_session_create(NULL, graph, NULL, &session), what)) return;
  int64_t shape[2] = {2, 3};
  oneflow_tensor_t* in = NULL;
  oneflow_tensor_t* out[1] = {NULL};
  if (expect_ok(
          oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, (void*)x, 6 * sizeof(float), NULL, NULL, &in),
          what)) {
    const char* names[1] = {"x"};
    const oneflow_tensor_t* ins[1] = {in};
    if (expect_ok(oneflow_session_run(session, names, ins, 1, NULL, 0, out, 1), what)) {
      const float* y = (const float*)oneflow_tensor_data(out[0]);
      EXPECT_TRUE(oneflow_tensor_element_count(out[0]) == 6);
      if (memcmp(y, ref, 6 * sizeof(float)) != 0) {
        fprintf(stderr, "%s: output differs from the numpy reference\n", what);
        ++g_fail;
      }
      oneflow_tensor_release(out[0]);
    }
  }
  oneflow_tensor_release(in);
  oneflow_session_release(session);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FIXTURE_DIR WORK_DIR\n", argv[0]);
    return 2;
  }
  char path[4096], out_path[4096];
  size_t n = 0;
  snprintf(path, sizeof path, "%s/xc.f32", argv[1]);
  float* x = (float*)read_file(path, &n);
  snprintf(path, sizeof path, "%s/yc.f32", argv[1]);
  float* ref = (float*)read_file(path, &n);
  if (!x || !ref) {
    fprintf(stderr, "fixture data missing in %s\n", argv[1]);
    return 1;
  }

  oneflow_graph_t* onnx = NULL;
  snprintf(path, sizeof path, "%s/const_model.onnx", argv[1]);
  if (!expect_ok(oneflow_graph_load_file(path, &onnx), "load onnx")) return 1;
  run_and_compare(onnx, x, ref, "onnx");

  /* Save as native (by extension) and load it back from the file. */
  snprintf(out_path, sizeof out_path, "%s/const_model.ofm", argv[2]);
  expect_ok(oneflow_graph_save(onnx, out_path, NULL), "save .ofm");
  oneflow_graph_t* native = NULL;
  if (expect_ok(oneflow_graph_load_file(out_path, &native), "load .ofm"))
    run_and_compare(native, x, ref, "native file");
  oneflow_graph_release(native);

  /* External weights, chosen format explicitly despite an unrelated extension. */
  oneflow_save_options_t so;
  oneflow_save_options_init(&so);
  so.format = ONEFLOW_FORMAT_NATIVE;
  so.external_data_file = "const_model.weights";
  snprintf(path, sizeof path, "%s/const_model_ext.bin", argv[2]);
  expect_ok(oneflow_graph_save(onnx, path, &so), "save external");
  native = NULL;
  if (expect_ok(oneflow_graph_load_file(path, &native), "load external"))
    run_and_compare(native, x, ref, "native external");
  oneflow_graph_release(native);

  /* Memory: sniffed, copied, then borrowed in place (no verification of checksums, too). */
  char* bytes = read_file(out_path, &n);
  EXPECT_TRUE(bytes != NULL);
  EXPECT_TRUE(oneflow_model_format_of(bytes, n) == ONEFLOW_FORMAT_NATIVE);
  EXPECT_TRUE(oneflow_model_format_of("\x08\x07", 2) == ONEFLOW_FORMAT_ONNX);
  EXPECT_TRUE(oneflow_model_format_of(NULL, 0) == ONEFLOW_FORMAT_ONNX);
  native = NULL;
  if (expect_ok(oneflow_graph_load_memory(bytes, n, NULL, &native), "load memory"))
    run_and_compare(native, x, ref, "memory copy");
  oneflow_graph_release(native);
  oneflow_load_options_t lo;
  oneflow_load_options_init(&lo);
  EXPECT_TRUE(lo.verify_checksums == 1 && lo.borrow_memory == 0);
  lo.borrow_memory = 1;
  lo.verify_checksums = 0;
  native = NULL;
  if (expect_ok(oneflow_graph_load_memory_ex(bytes, n, &lo, &native), "load borrowed"))
    run_and_compare(native, x, ref, "memory borrowed");
  oneflow_graph_release(native);
  /* In place needs 64-byte alignment. */
  memmove(bytes + 1, bytes, n);
  native = NULL;
  EXPECT_TRUE(code_of(oneflow_graph_load_memory_ex(bytes + 1, n, &lo, &native), "aligned") == ONEFLOW_INVALID_ARGUMENT);
  EXPECT_TRUE(native == NULL);
  memmove(bytes, bytes + 1, n);

  /* A truncated image fails cleanly, naming the problem. */
  EXPECT_TRUE(code_of(oneflow_graph_load_memory(bytes, n - 10, NULL, &native), "truncated") == ONEFLOW_INVALID_MODEL);
  /* A wrong struct_size is refused. */
  lo.struct_size = 4;
  EXPECT_TRUE(code_of(oneflow_graph_load_memory_ex(bytes, n, &lo, &native), "struct_size") == ONEFLOW_INVALID_ARGUMENT);
  free(bytes);

  /* Unknown extension; NULL arguments. */
  snprintf(path, sizeof path, "%s/model.unknown", argv[2]);
  EXPECT_TRUE(code_of(oneflow_graph_save(onnx, path, NULL), "extension") == ONEFLOW_INVALID_ARGUMENT);
  EXPECT_TRUE(code_of(oneflow_graph_save(NULL, path, NULL), NULL) == ONEFLOW_INVALID_ARGUMENT);
  EXPECT_TRUE(code_of(oneflow_graph_save(onnx, NULL, NULL), NULL) == ONEFLOW_INVALID_ARGUMENT);

  /* ONNX output: either the exporter is linked in (then the file loads and runs) or the save is
   * refused as unsupported. */
  snprintf(path, sizeof path, "%s/roundtrip.onnx", argv[2]);
  oneflow_status_t st = oneflow_graph_save(onnx, path, NULL);
  if (st) {
    EXPECT_TRUE(oneflow_status_code(st) == ONEFLOW_UNSUPPORTED);
    oneflow_status_free(st);
  } else {
    oneflow_graph_t* back = NULL;
    if (expect_ok(oneflow_graph_load_file(path, &back), "load exported onnx"))
      run_and_compare(back, x, ref, "onnx export");
    oneflow_graph_release(back);
  }

  oneflow_graph_release(onnx);
  free(x);
  free(ref);
  return c_test_finish("native C API");
}
