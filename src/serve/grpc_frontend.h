// The gRPC front end: inference.GRPCInferenceService (grpc_service.proto) on gRPC's callback API,
// so a request waiting for its batch holds no thread; the model's instance thread finishes the
// call. docs/serving.md, "gRPC".
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace oneflow {
namespace serve {

class Server;

class GrpcFrontend {
 public:
  // Binds host:port (0: a free port). Throws Error(kIo) naming the address when it cannot.
  GrpcFrontend(Server& server, const std::string& host, int port);
  ~GrpcFrontend();

  int port() const { return port_; }
  // Stops accepting calls, waits for the running ones until `deadline` (then cancels them).
  void Shutdown(std::chrono::steady_clock::time_point deadline);

  class Service;  // grpc_frontend.cc

 private:
  int port_ = -1;
  std::unique_ptr<Service> service_;
  struct GrpcServer;
  std::unique_ptr<GrpcServer> server_;
};

}  // namespace serve
}  // namespace oneflow
