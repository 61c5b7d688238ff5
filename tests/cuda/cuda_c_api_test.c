/* The C ABI's CUDA section: device count and reason, device info, session creation on a device,
 * device tensors and oneflow_session_run_device, checked for what this machine has (with or without
 * a device, with or without CUDA). With a device, a CUDA session's outputs are compared with the
 * model's formula computed here (y = Relu(x + b) + x, z = Relu(y)), for host and device tensors. */
#include <stdio.h>
#include <string.h>

#include "../c_test_check.h"
#include "oneflow_c.h"

/* Returns the status code and frees the status; copies its message into msg. */
static oneflow_code_t Take(oneflow_status_t s, char* msg, size_t cap) {
  oneflow_code_t code = oneflow_status_code(s);
  snprintf(msg, cap, "%s", oneflow_status_message(s));
  oneflow_status_free(s);
  return code;
}

/* x, b of [3,4] with mixed signs; the expected y and z. */
static void MakeData(float* x, float* b, float* y, float* z) {
  int i;
  for (i = 0; i < 12; ++i) {
    float t;
    x[i] = (float)((i * 7) % 11) - 5.0f;
    b[i] = (float)((i * 5) % 7) - 3.0f;
    t = x[i] + b[i];
    y[i] = (t > 0.0f ? t : 0.0f) + x[i];
    z[i] = y[i] > 0.0f ? y[i] : 0.0f;
  }
}

static int SameFloats(const float* a, const float* b, int n) {
  int i;
  for (i = 0; i < n; ++i)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* Runs a CUDA session with host tensors, then again with device outputs fed back as device inputs
 * (a device tensor made by the library, and one wrapping its pointer without copying). */
static void CheckCudaSession(oneflow_session_t* session) {
  char msg[1024];
  float x[12], b[12], y[12], z[12];
  int64_t shape[2] = {3, 4};
  oneflow_tensor_t *tx = NULL, *tb = NULL, *out[2] = {NULL, NULL}, *dev[2] = {NULL, NULL}, *wrapped = NULL, *bad = NULL;
  const char* names[2] = {"x", "b"};
  const oneflow_tensor_t* in[2];
  oneflow_code_t code;
  int rep;
  MakeData(x, b, y, z);
  EXPECT(Take(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, x, sizeof x, NULL, NULL, &tx), msg,
              sizeof msg) == ONEFLOW_OK,
         "x: %s", msg);
  EXPECT(Take(oneflow_tensor_create_borrowed(ONEFLOW_DTYPE_F32, shape, 2, b, sizeof b, NULL, NULL, &tb), msg,
              sizeof msg) == ONEFLOW_OK,
         "b: %s", msg);
  in[0] = tx;
  in[1] = tb;
  for (rep = 0; rep < 3; ++rep) { /* with graphs on: eager, capture, replay */
    code = Take(oneflow_session_run(session, names, in, 2, NULL, 0, out, 2), msg, sizeof msg);
    EXPECT(code == ONEFLOW_OK, "CUDA run %d: %s", rep, msg);
    if (code != ONEFLOW_OK) break;
    EXPECT(oneflow_tensor_device_kind(out[0]) == ONEFLOW_DEVICE_CPU, "host output is not on the host");
    EXPECT(SameFloats((const float*)oneflow_tensor_data(out[0]), y, 12), "CUDA y differs (run %d)", rep);
    EXPECT(SameFloats((const float*)oneflow_tensor_data(out[1]), z, 12), "CUDA z differs (run %d)", rep);
    oneflow_tensor_release(out[0]);
    oneflow_tensor_release(out[1]);
    out[0] = out[1] = NULL;
  }
  /* Device outputs: y and z stay on the device. */
  code = Take(oneflow_session_run_device(session, names, in, 2, NULL, 0, 1, dev, 2), msg, sizeof msg);
  EXPECT(code == ONEFLOW_OK, "device outputs: %s", msg);
  if (code == ONEFLOW_OK) {
    EXPECT(oneflow_tensor_device_kind(dev[0]) == ONEFLOW_DEVICE_CUDA && oneflow_tensor_device_index(dev[0]) == 0,
           "device output kind %d", (int)oneflow_tensor_device_kind(dev[0]));
    /* A device tensor is refused by oneflow_session_run. */
    in[0] = dev[0];
    code = Take(oneflow_session_run(session, names, in, 2, NULL, 0, out, 2), msg, sizeof msg);
    EXPECT(code == ONEFLOW_INVALID_ARGUMENT && strstr(msg, "oneflow_session_run_device") != NULL,
           "device tensor to oneflow_session_run: %d %s", (int)code, msg);
    /* Fed back: x' = y (device, in place), b' = b (host) -> y' = Relu(y + b) + y. */
    EXPECT(Take(oneflow_tensor_create_device_borrowed(ONEFLOW_DTYPE_F32, shape, 2, ONEFLOW_DEVICE_CUDA, 0,
                                                      oneflow_tensor_data(dev[0]), 12 * sizeof(float), NULL, NULL,
                                                      &wrapped),
                msg, sizeof msg) == ONEFLOW_OK,
           "wrap: %s", msg);
    in[0] = wrapped;
    code = Take(oneflow_session_run_device(session, names, in, 2, NULL, 0, 0, out, 2), msg, sizeof msg);
    EXPECT(code == ONEFLOW_OK, "device input: %s", msg);
    if (code == ONEFLOW_OK) {
      const float* got = (const float*)oneflow_tensor_data(out[0]);
      int i, ok = 1;
      for (i = 0; i < 12; ++i) {
        float t = y[i] + b[i];
        ok &= got[i] == (t > 0.0f ? t : 0.0f) + y[i];
      }
      EXPECT(ok, "run with a device input differs");
      oneflow_tensor_release(out[0]);
      oneflow_tensor_release(out[1]);
    }
    /* A host pointer is not device memory. */
    code = Take(oneflow_tensor_create_device_borrowed(ONEFLOW_DTYPE_F32, shape, 2, ONEFLOW_DEVICE_CUDA, 0, x, sizeof x,
                                                      NULL, NULL, &bad), msg, sizeof msg);
    EXPECT(code == ONEFLOW_INVALID_ARGUMENT && bad == NULL, "host pointer as device memory: %d %s", (int)code, msg);
    oneflow_tensor_release(wrapped);
    /* Released while "the caller's stream" (the legacy default stream) may still use it. */
    EXPECT(Take(oneflow_tensor_record_stream(dev[0], NULL), msg, sizeof msg) == ONEFLOW_OK, "record_stream: %s", msg);
    oneflow_tensor_release(dev[0]);
    oneflow_tensor_release(dev[1]);
  }
  oneflow_tensor_release(tx);
  oneflow_tensor_release(tb);
}

/* What works the same with or without a device: options, host tensors' device, refusals. */
static void CheckDeviceTensorsAndOptions(const oneflow_graph_t* graph, int32_t count) {
  char msg[1024];
  float x[12];
  int64_t shape[2] = {3, 4};
  oneflow_device_session_options_t dopts;
  oneflow_session_t* session = NULL;
  oneflow_tensor_t *t = NULL, *out[2] = {NULL, NULL};
  oneflow_code_t code;
  const char* names[2] = {"x", "b"};
  const oneflow_tensor_t* in[2];
  memset(x, 0, sizeof x);
  oneflow_device_session_options_init(&dopts);
  EXPECT(dopts.struct_size == sizeof dopts && dopts.cuda_graphs == ONEFLOW_CUDA_GRAPHS_AUTO, "device options init");
  dopts.cuda_graphs = (oneflow_cuda_graph_mode_t)9;
  code = Take(oneflow_session_create_on_device_ex(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, 0, &dopts, &session), msg,
              sizeof msg);
  EXPECT(code == (count == 0 ? ONEFLOW_UNSUPPORTED : ONEFLOW_INVALID_ARGUMENT) && session == NULL,
         "bad cuda_graphs: %d %s", (int)code, msg);
  dopts.cuda_graphs = ONEFLOW_CUDA_GRAPHS_OFF;
  code = Take(oneflow_session_create_on_device_ex(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, 0, &dopts, &session), msg,
              sizeof msg);
  EXPECT(code == (count == 0 ? ONEFLOW_UNSUPPORTED : ONEFLOW_OK), "graphs off: %d %s", (int)code, msg);
  oneflow_session_release(session);
  session = NULL;
  code = Take(oneflow_tensor_create_device_borrowed(ONEFLOW_DTYPE_F32, shape, 2, ONEFLOW_DEVICE_CUDA, 0, x, sizeof x,
                                                    NULL, NULL, &t), msg, sizeof msg);
  if (count == 0)
    EXPECT(code == ONEFLOW_UNSUPPORTED && strstr(msg, "no CUDA device") != NULL, "device tensor: %s", msg);
  else
    EXPECT(code == ONEFLOW_INVALID_ARGUMENT, "host memory as a device tensor: %d %s", (int)code, msg);
  EXPECT(t == NULL, "a failed create wrote its output");
  /* A host tensor through the device entry: on the CPU. */
  EXPECT(Take(oneflow_tensor_create_device_borrowed(ONEFLOW_DTYPE_F32, shape, 2, ONEFLOW_DEVICE_CPU, 0, x, sizeof x,
                                                    NULL, NULL, &t),
              msg, sizeof msg) == ONEFLOW_OK,
         "host: %s", msg);
  EXPECT(oneflow_tensor_device_kind(t) == ONEFLOW_DEVICE_CPU && oneflow_tensor_device_index(t) == 0, "host kind");
  EXPECT(oneflow_tensor_device_kind(NULL) == ONEFLOW_DEVICE_CPU, "NULL kind");
  /* record_stream: NULL is refused; a host tensor needs nothing (with CUDA built in). */
  EXPECT(Take(oneflow_tensor_record_stream(NULL, NULL), msg, sizeof msg) == ONEFLOW_INVALID_ARGUMENT &&
             strstr(msg, "tensor") != NULL,
         "record_stream(NULL): %s", msg);
  code = Take(oneflow_tensor_record_stream(t, NULL), msg, sizeof msg);
  EXPECT(code == ONEFLOW_OK || (code == ONEFLOW_UNSUPPORTED && strstr(msg, "without CUDA") != NULL),
         "record_stream on a host tensor: %d %s", (int)code, msg);
  /* A CPU session: run_device works with host tensors and refuses device outputs. */
  EXPECT(Take(oneflow_session_create(NULL, graph, NULL, &session), msg, sizeof msg) == ONEFLOW_OK, "cpu: %s", msg);
  in[0] = t;
  in[1] = t;
  code = Take(oneflow_session_run_device(session, names, in, 2, NULL, 0, 0, out, 2), msg, sizeof msg);
  EXPECT(code == ONEFLOW_OK, "run_device on the CPU: %s", msg);
  if (code == ONEFLOW_OK) {
    oneflow_tensor_release(out[0]);
    oneflow_tensor_release(out[1]);
  }
  code = Take(oneflow_session_run_device(session, names, in, 2, NULL, 0, 1, out, 2), msg, sizeof msg);
  EXPECT(code == ONEFLOW_INVALID_ARGUMENT && strstr(msg, "CPU") != NULL, "device outputs on the CPU: %d %s", (int)code,
         msg);
  oneflow_session_release(session);
  oneflow_tensor_release(t);
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

  EXPECT(Take(oneflow_cuda_device_count(NULL, NULL, 0), msg, sizeof msg) == ONEFLOW_INVALID_ARGUMENT, "NULL count");
  code = Take(oneflow_cuda_device_count(&count, reason, sizeof reason), msg, sizeof msg);
  EXPECT(code == ONEFLOW_OK && count >= 0, "device count: code %d count %d", (int)code, (int)count);
  printf("CUDA devices: %d%s%s\n", (int)count, count == 0 ? ", because: " : "", reason);

  oneflow_cuda_device_info_init(&info);
  code = Take(oneflow_cuda_get_device_info(0, &info), msg, sizeof msg);
  if (count == 0) {
    EXPECT(strlen(reason) > 0, "no reason given for zero devices");
    EXPECT(code == ONEFLOW_UNSUPPORTED && strstr(msg, "no CUDA device") != NULL, "info without device: %d %s",
           (int)code, msg);
  } else {
    EXPECT(code == ONEFLOW_OK && info.name[0] != '\0' && info.multiprocessors > 0, "info: %d %s", (int)code, msg);
    printf("device 0: %s, sm_%d%d, %d SMs\n", info.name, (int)info.major, (int)info.minor, (int)info.multiprocessors);
  }
  code = Take(oneflow_cuda_get_device_info(count, &info), msg, sizeof msg);
  EXPECT(code == (count == 0 ? ONEFLOW_UNSUPPORTED : ONEFLOW_INVALID_ARGUMENT), "info past the end: %d %s", (int)code,
         msg);

  EXPECT(Take(oneflow_graph_load_file(argv[1], &graph), msg, sizeof msg) == ONEFLOW_OK, "load: %s", msg);
  /* CPU through the device entry point works like oneflow_session_create. */
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CPU, 0, &session), msg, sizeof msg);
  EXPECT(code == ONEFLOW_OK && session != NULL, "CPU session: %d %s", (int)code, msg);
  oneflow_session_release(session);
  session = NULL;
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CPU, 1, &session), msg, sizeof msg);
  EXPECT(code == ONEFLOW_INVALID_ARGUMENT && session == NULL, "CPU index 1: %d %s", (int)code, msg);
  /* CUDA: without a device the reason is named; with one, the index is checked first. */
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, 0, &session), msg, sizeof msg);
  if (count == 0) {
    EXPECT(code == ONEFLOW_UNSUPPORTED && session == NULL, "CUDA session: %d %s", (int)code, msg);
    EXPECT(strstr(msg, "no CUDA device") != NULL && strstr(msg, reason) != NULL, "message: %s", msg);
    printf("CUDA session: %s\n", msg);
  } else {
    EXPECT(code == ONEFLOW_OK && session != NULL, "CUDA session: %d %s", (int)code, msg);
    if (session) CheckCudaSession(session);
    oneflow_session_release(session);
    session = NULL;
    { /* The model's batch dim is symbolic: AUTO runs eagerly, ON captures a graph per shape set. */
      oneflow_device_session_options_t dopts;
      oneflow_device_session_options_init(&dopts);
      dopts.cuda_graphs = ONEFLOW_CUDA_GRAPHS_ON;
      code = Take(oneflow_session_create_on_device_ex(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, 0, &dopts, &session),
                  msg, sizeof msg);
      EXPECT(code == ONEFLOW_OK && session != NULL, "CUDA session with graphs: %d %s", (int)code, msg);
      if (session) CheckCudaSession(session);
      oneflow_session_release(session);
      session = NULL;
    }
  }
  CheckDeviceTensorsAndOptions(graph, count);
  if (count > 0) {
    code = Take(oneflow_session_create_on_device(NULL, graph, NULL, ONEFLOW_DEVICE_CUDA, count, &session), msg,
                sizeof msg);
    EXPECT(code == ONEFLOW_INVALID_ARGUMENT, "CUDA index past the end: %d %s", (int)code, msg);
  }
  code = Take(oneflow_session_create_on_device(NULL, graph, NULL, (oneflow_device_kind_t)7, 0, &session), msg,
              sizeof msg);
  EXPECT(code == ONEFLOW_INVALID_ARGUMENT, "unknown kind: %d %s", (int)code, msg);
  oneflow_graph_release(graph);
  return c_test_finish("cuda_c_api");
}
