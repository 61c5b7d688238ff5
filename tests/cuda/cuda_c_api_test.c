/* The C ABI's CUDA section: device count and reason, device info, and session creation on a
 * device, checked for what this machine has (with or without a device, with or without CUDA). */
#include <stdio.h>
#include <string.h>

#include "oneflow_c.h"

static int failures = 0;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      ++failures;                                         \
    }                                                     \
  } while (0)

/* Returns the status code and frees the status; copies its message into msg. */
static oneflow_code_t Take(oneflow_status_t s, char* msg, size_t cap) {
  oneflow_code_t code = oneflow_status_code(s);
  snprintf(msg, cap, "%s", oneflow_status_message(s));
  oneflow_status_free(s);
  return code;
}

int main(int argc, char** argv) {
  char reason[512], msg[1024];
  int32_t count = -1;
  oneflow_cuda_device_info_t info;
  oneflow_graph_t* graph = NULL;
  oneflow_session_t* session = NULL;
  oneflow_code_t code;
  if (argc != 2) {
    fprintf(stderr, "usage: %s model.onnx\n", argv[0]);
    return 2;
  }

  CHECK(Take(oneflow_cuda_device_count(NULL, NULL, 0), msg, sizeof msg) == ONEFLOW_INVALID_ARGUMENT, "NULL count");
  code = Take(oneflow_cuda_device_count(&count, reason, sizeof reason), msg, sizeof msg);
  CHECK(code == ONEFLOW_OK && count >= 0, "device count: code %d count %d", (int)code, (int)count);
  printf("CUDA devices: %d%s%s\n", (int)count, count == 0 ? ", because: " : "", reason);

  oneflow_cuda_device_info_init(&info);
  code = Take(oneflow_cuda_get_device_info(0, &info), msg, sizeof msg);
  if (count == 0) {
    CHECK(strlen(reason) > 0, "no reason given for zero devices");
    CHECK(code == ONEFLOW_UNSUPPORTED && strstr(msg, "no CUDA device") != NULL, "info without device: %d %s",
          (int)code, msg);
  } else {
    CHECK(code == ONEFLOW_OK && info.name[0] != '\0' && info.multiprocessors > 0, "info: %d %s", (int)code, msg);
    printf("device 0: %s, sm_%d%d, %d SMs\n", info.name, (int)info.major, (int)info.minor, (int)info.multiprocessors);
  }
  code = Take(oneflow_cuda_get_device_info(count, &info), msg, sizeof msg);
  CHECK(code == (count == 0 ? ONEFLOW_UNSUPPORTED : ONEFLOW_INVALID_ARGUMENT), "info past the end: %d %s", (int)code,
        msg);

  CHECK(Take(oneflow_graph_load_file(argv[1], &graph), msg, sizeof msg) == ONEFLOW_OK, "load: %s", msg);
  /* CPU through the device entry point works like oneflow_session_create. */
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CPU, 0, &session), msg, sizeof msg);
  CHECK(code == ONEFLOW_OK && session != NULL, "CPU session: %d %s", (int)code, msg);
  oneflow_session_release(session);
  session = NULL;
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CPU, 1, &session), msg, sizeof msg);
  CHECK(code == ONEFLOW_INVALID_ARGUMENT && session == NULL, "CPU index 1: %d %s", (int)code, msg);
  /* CUDA: without a device the reason is named; with one, the index is checked first. */
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, 0, &session), msg, sizeof msg);
  CHECK(code == ONEFLOW_UNSUPPORTED && session == NULL, "CUDA session: %d %s", (int)code, msg);
  if (count == 0) CHECK(strstr(msg, "no CUDA device") != NULL && strstr(msg, reason) != NULL, "message: %s", msg);
  printf("CUDA session: %s\n", msg);
  if (count > 0) {
    code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, count, &session), msg,
                sizeof msg);
    CHECK(code == ONEFLOW_INVALID_ARGUMENT, "CUDA index past the end: %d %s", (int)code, msg);
  }
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, (oneflow_device_kind_t)7, 0, &session), msg,
              sizeof msg);
  CHECK(code == ONEFLOW_INVALID_ARGUMENT, "unknown kind: %d %s", (int)code, msg);
  oneflow_graph_release(graph);
  if (failures == 0) printf("cuda_c_api: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
