/* The embedded inference server through the C ABI (oneflow_server_*): a service starts it in its
 * own process on ports the system picks, a plain HTTP/1.1 client (this file, over a socket) asks it
 * for health and an inference, and the answer is checked against the model's formula computed
 * here: y = Relu(x + b) + x for the fixture's model.onnx (make_c_api_fixture.py). Then the stop
 * with a drain, and the errors: NULLs, a too-small options struct, a bad port kind, a repository
 * that is not a directory, a second start.
 * Usage: oneflow_server_c_api_test FIXTURE_DIR WORK_DIR */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c_test_check.h"

static void copy_file(const char* from, const char* to) {
  FILE* in = fopen(from, "rb");
  FILE* out = fopen(to, "wb");
  REQUIRE(in && out, "cannot copy %s to %s", from, to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) REQUIRE(fwrite(buf, 1, n, out) == n, "short write to %s", to);
  fclose(in);
  fclose(out);
}

/* One HTTP/1.1 exchange on a new connection ("Connection: close"); returns the status code and
 * copies the body (NUL-terminated) into `body`. */
static int http(int port, const char* method, const char* path, const char* payload, char* body, size_t capacity) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0, "socket");
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((unsigned short)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  char request[4096];
  size_t len = payload ? strlen(payload) : 0;
  int head = snprintf(request, sizeof request,
                      "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n%s",
                      method, path, len, payload ? payload : "");
  REQUIRE(head > 0 && (size_t)head < sizeof request, "request too long");
  REQUIRE(write(fd, request, (size_t)head) == head, "write");
  static char response[65536];
  size_t got = 0;
  ssize_t n;
  while ((n = read(fd, response + got, sizeof response - 1 - got)) > 0) got += (size_t)n;
  close(fd);
  response[got] = '\0';
  int status = -1;
  if (sscanf(response, "HTTP/1.1 %d", &status) != 1) return -1;
  const char* start = strstr(response, "\r\n\r\n");
  snprintf(body, capacity, "%s", start ? start + 4 : "");
  return status;
}

/* The numbers of the JSON array after `"key":[` in `text`, up to `max`; returns how many. */
static int json_numbers_after(const char* text, const char* key, double* out, int max) {
  const char* p = strstr(text, key);
  if (!p) return 0;
  p = strchr(p, '[');
  if (!p) return 0;
  int n = 0;
  ++p;
  while (n < max && *p && *p != ']') {
    char* end;
    double v = strtod(p, &end);
    if (end == p) break;
    out[n++] = v;
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  return n;
}

int main(int argc, char** argv) {
  REQUIRE(argc == 3, "usage: %s FIXTURE_DIR WORK_DIR", argv[0]);
  char repo[1024], path[1200], model_path[1200];
  snprintf(repo, sizeof repo, "%s/server_repository", argv[2]);
  mkdir(argv[2], 0755);
  mkdir(repo, 0755);
  snprintf(path, sizeof path, "%s/add_relu", repo);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/add_relu/1", repo);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/add_relu/1/model.onnx", repo);
  snprintf(model_path, sizeof model_path, "%s/model.onnx", argv[1]);
  copy_file(model_path, path);

  /* Options: defaults, and the size check that keeps a newer library inside an older struct. */
  oneflow_server_options_t options;
  memset(&options, 0xAB, sizeof options);
  REQUIRE_OK(oneflow_server_options_init(&options));
  EXPECT(options.struct_size == sizeof options, "struct_size %zu", options.struct_size);
  EXPECT(options.http_port == 8000 && options.grpc_port == 8001 && options.metrics_port == 8002, "default ports");
  EXPECT(options.model_repository == NULL && strcmp(options.host, "127.0.0.1") == 0, "default repository and host");
  EXPECT(options.threads == 0 && options.access_log == 0, "default threads and log");
  oneflow_status_t st = oneflow_server_options_init_sized(&options, 8);
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "a struct smaller than version 1 is refused");
  oneflow_status_free(st);
  st = oneflow_server_options_init_sized(NULL, sizeof options);
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "NULL options are refused");
  oneflow_status_free(st);

  oneflow_server_t* server = NULL;
  st = oneflow_server_create(&options, &server);
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT && server == NULL, "no repository: refused");
  oneflow_status_free(st);

  /* A repository that is not a directory: the start names it. */
  options.model_repository = "/nonexistent/repository";
  options.http_port = options.grpc_port = options.metrics_port = 0;
  REQUIRE_OK(oneflow_server_create(&options, &server));
  st = oneflow_server_start(server);
  EXPECT(oneflow_status_code(st) == ONEFLOW_NOT_FOUND && strstr(oneflow_status_message(st), "/nonexistent/repository"),
         "missing repository: %s", oneflow_status_message(st));
  oneflow_status_free(st);
  oneflow_server_release(server);

  options.model_repository = repo;
  options.threads = 1;
  REQUIRE_OK(oneflow_server_create(&options, &server));
  REQUIRE_OK(oneflow_server_start(server));
  st = oneflow_server_start(server);
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "a second start is refused");
  oneflow_status_free(st);

  int32_t http_port = -1, grpc_port = -1, metrics_port = -1, ready = 0, bogus = 0;
  REQUIRE_OK(oneflow_server_port(server, ONEFLOW_SERVER_PORT_HTTP, &http_port));
  REQUIRE_OK(oneflow_server_port(server, ONEFLOW_SERVER_PORT_GRPC, &grpc_port));
  REQUIRE_OK(oneflow_server_port(server, ONEFLOW_SERVER_PORT_METRICS, &metrics_port));
  EXPECT(http_port > 0 && grpc_port > 0 && metrics_port > 0, "ports %d %d %d", http_port, grpc_port, metrics_port);
  st = oneflow_server_port(server, 7, &bogus);
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "unknown port kind refused");
  oneflow_status_free(st);
  REQUIRE_OK(oneflow_server_ready(server, &ready));
  EXPECT(ready == 1, "ready after start");

  char body[65536];
  EXPECT(http(http_port, "GET", "/v2/health/ready", NULL, body, sizeof body) == 200, "HTTP ready");
  int status = http(http_port, "GET", "/v2/models/add_relu", NULL, body, sizeof body);
  EXPECT(status == 200 && strstr(body, "\"name\":\"add_relu\""), "metadata %d %s", status, body);

  /* y = Relu(x + b) + x, for a batch of 2. */
  const double x[8] = {1.5, -2, 0.25, 3, -1, -0.5, 2, 0};
  const double b[8] = {-1, 1, 1, -4, 0.5, 2, -3, 0};
  char payload[2048];
  snprintf(payload, sizeof payload,
           "{\"id\":\"c-1\",\"inputs\":["
           "{\"name\":\"x\",\"shape\":[2,4],\"datatype\":\"FP32\",\"data\":[%g,%g,%g,%g,%g,%g,%g,%g]},"
           "{\"name\":\"b\",\"shape\":[2,4],\"datatype\":\"FP32\",\"data\":[[%g,%g,%g,%g],[%g,%g,%g,%g]]}],"
           "\"outputs\":[{\"name\":\"y\"}]}",
           x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
  status = http(http_port, "POST", "/v2/models/add_relu/infer", payload, body, sizeof body);
  EXPECT(status == 200, "infer status %d: %s", status, body);
  EXPECT(strstr(body, "\"id\":\"c-1\"") != NULL, "request id echoed: %s", body);
  double y[16];
  int n = json_numbers_after(body, "\"data\"", y, 16);
  EXPECT(n == 8, "8 output values, got %d: %s", n, body);
  for (int i = 0; i < n && i < 8; ++i) {
    double s = x[i] + b[i];
    double want = (s > 0 ? s : 0) + x[i];
    EXPECT(y[i] == want, "y[%d] = %g, want %g", i, y[i], want);
  }

  /* A wrong shape is the caller's mistake: 400 naming the input, and the server keeps serving. */
  status = http(http_port, "POST", "/v2/models/add_relu/infer",
                "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\",\"data\":[1,2,3]},"
                "{\"name\":\"b\",\"shape\":[1,4],\"datatype\":\"FP32\",\"data\":[1,2,3,4]}]}",
                body, sizeof body);
  EXPECT(status == 400 && strstr(body, "'x'"), "bad shape: %d %s", status, body);
  EXPECT(http(metrics_port, "GET", "/metrics", NULL, body, sizeof body) == 200 &&
             strstr(body, "nv_inference_request_success{model=\"add_relu\",version=\"1\"} 1"),
         "metrics count the one success: %s", body);

  REQUIRE_OK(oneflow_server_stop(server, 5000));
  REQUIRE_OK(oneflow_server_stop(server, 0)); /* idempotent */
  REQUIRE_OK(oneflow_server_ready(server, &ready));
  EXPECT(ready == 0, "not ready after stop");
  EXPECT(http(http_port, "GET", "/v2/health/live", NULL, body, sizeof body) == -1, "port closed after stop");
  st = oneflow_server_stop(NULL, 0);
  EXPECT(oneflow_status_code(st) == ONEFLOW_INVALID_ARGUMENT, "NULL server refused");
  oneflow_status_free(st);
  oneflow_server_release(server);
  oneflow_server_release(NULL);
  return c_test_finish("server_c_api");
}
