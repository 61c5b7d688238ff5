// `oneflow serve`: a KServe v2 (Open Inference Protocol) server over a Triton-style model
// repository. The server owns the repository (models, their schedulers) and the front ends that
// speak the protocol (HTTP/REST, gRPC; metrics). docs/serving.md.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "serve/repository.h"

namespace oneflow {
namespace serve {

struct ServerOptions {
  std::string model_repository;
  std::string host = "127.0.0.1";
  int http_port = 8000;     // 0: any free port (see Server::http_port()); -1: no HTTP front end
  int grpc_port = 8001;     // KServe v2 gRPC; 0: any free port; -1: none
  int metrics_port = 8002;  // Prometheus /metrics; 0: any free port; -1: none
  int threads = 0;          // compute threads shared by the model instances; 0: one per core
  int http_threads = 0;     // HTTP I/O threads; 0: min(4, cores)
  size_t max_request_bytes = size_t{256} << 20;  // larger bodies get 413
  int idle_timeout_seconds = 60;                 // a connection idle (or this slow) this long is closed
  bool access_log = false;                       // one line per request on stderr
};

class HttpFrontend;
class GrpcFrontend;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Stop(now) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the repository and opens the ports. Throws Error when a port cannot be bound or the
  // repository is not a directory; a model that fails to load only makes that model unavailable.
  void Start();
  // Stops accepting work, lets queued and running requests finish until `deadline`, answers the
  // rest with 503, closes the ports. Idempotent.
  void Stop(Clock::time_point deadline);

  int http_port() const;     // the bound port (useful with port 0); -1 when not serving HTTP
  int grpc_port() const;     // -1 when not serving gRPC
  int metrics_port() const;  // -1 when not serving metrics
  bool live() const { return started_ && !stopped_; }
  bool ready() const;        // live, not stopping, and every model ready
  bool stopping() const { return stopping_.load(); }
  ModelRepository& repository() { return *repository_; }
  const ServerOptions& options() const { return options_; }

 private:
  ServerOptions options_;
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<HttpFrontend> http_, metrics_;
  std::unique_ptr<GrpcFrontend> grpc_;
  std::atomic<bool> stopping_{false};
  bool started_ = false, stopped_ = false;
};

}  // namespace serve
}  // namespace oneflow
