// C ABI, the inference server: oneflow_server_* over serve::Server (docs/serving.md).
#include <cstddef>

#include "c_api/c_api_internal.h"
#include "serve/server.h"

using namespace oneflow::capi;

struct oneflow_server_s {
  std::unique_ptr<serve::Server> server;
  bool started = false;
};

oneflow_status_t oneflow_server_options_init_sized(oneflow_server_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_server_options_t", [](oneflow_server_options_t& o) {
    o.host = "127.0.0.1";
    o.http_port = 8000;
    o.grpc_port = 8001;
    o.metrics_port = 8002;
    o.max_request_bytes = uint64_t{256} << 20;
    o.idle_timeout_seconds = 60;
  });
}

oneflow_status_t oneflow_server_create(const oneflow_server_options_t* options, oneflow_server_t** out_server) {
  return Guard([&] {
    OF_REQUIRE(out_server != nullptr, "out_server is NULL");
    OF_REQUIRE(options != nullptr, "server options are NULL");
    CheckSizedInput(options, "server options", "oneflow_server_options_init");  // every field below is there
    OF_REQUIRE(options->model_repository != nullptr, "server options: model_repository is NULL");
    serve::ServerOptions o;
    o.model_repository = options->model_repository;
    o.host = options->host ? options->host : "127.0.0.1";
    o.http_port = options->http_port;
    o.grpc_port = options->grpc_port;
    o.metrics_port = options->metrics_port;
    o.threads = options->threads;
    o.http_threads = options->http_threads;
    o.max_request_bytes = static_cast<size_t>(options->max_request_bytes);
    o.idle_timeout_seconds = options->idle_timeout_seconds;
    o.access_log = options->access_log != 0;
    auto s = std::make_unique<oneflow_server_s>();
    s->server = std::make_unique<serve::Server>(o);
    *out_server = s.release();
  });
}

oneflow_status_t oneflow_server_start(oneflow_server_t* server) {
  return Guard([&] {
    OF_REQUIRE(server != nullptr, "server is NULL");
    server->server->Start();
    server->started = true;
  });
}

oneflow_status_t oneflow_server_port(const oneflow_server_t* server, int32_t which, int32_t* out_port) {
  return Guard([&] {
    OF_REQUIRE(server != nullptr, "server is NULL");
    OF_REQUIRE(out_port != nullptr, "out_port is NULL");
    switch (which) {
      case ONEFLOW_SERVER_PORT_HTTP: *out_port = server->server->http_port(); break;
      case ONEFLOW_SERVER_PORT_GRPC: *out_port = server->server->grpc_port(); break;
      case ONEFLOW_SERVER_PORT_METRICS: *out_port = server->server->metrics_port(); break;
      default: OF_REQUIRE(false, "unknown server port kind ", which, " (HTTP 0, GRPC 1, METRICS 2)");
    }
  });
}

oneflow_status_t oneflow_server_ready(const oneflow_server_t* server, int32_t* out_ready) {
  return Guard([&] {
    OF_REQUIRE(server != nullptr, "server is NULL");
    OF_REQUIRE(out_ready != nullptr, "out_ready is NULL");
    *out_ready = server->started && server->server->ready() ? 1 : 0;
  });
}

oneflow_status_t oneflow_server_stop(oneflow_server_t* server, int64_t drain_timeout_ms) {
  return Guard([&] {
    OF_REQUIRE(server != nullptr, "server is NULL");
    OF_REQUIRE(drain_timeout_ms >= 0, "drain_timeout_ms is negative (", drain_timeout_ms, ")");
    server->server->Stop(serve::Clock::now() + std::chrono::milliseconds(drain_timeout_ms));
  });
}

void oneflow_server_release(oneflow_server_t* server) {
  if (!server) return;
  try {
    server->server->Stop(serve::Clock::now());
  } catch (...) {
    // Release cannot report; the server is torn down regardless.
  }
  delete server;
}
