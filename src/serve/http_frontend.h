// The HTTP/REST front end on libevent's evhttp: several I/O threads, each with its own event loop,
// accept on one listening socket. Parsing and answering happen on the I/O threads; inference runs
// on the model's instance threads and its reply (already encoded there) is handed back to the
// connection's loop. Triton's HTTP front end is built the same way (libevent). docs/serving.md.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace oneflow {
namespace serve {

class Server;

class HttpFrontend {
 public:
  enum class Routes { kInference, kMetrics };  // the KServe v2 API, or only /metrics

  // Binds host:port (0: a free port) and starts `threads` I/O threads. Throws Error(kIo) naming
  // the address when it cannot bind.
  HttpFrontend(Server& server, Routes routes, const std::string& host, int port, int threads);
  ~HttpFrontend();

  int port() const { return port_; }
  // Stops accepting connections; requests already read are still answered.
  void StopAccepting();
  // Waits until every accepted request is answered (or `deadline`), then ends the I/O threads.
  void Shutdown(std::chrono::steady_clock::time_point deadline);

  struct Loop;  // one I/O thread: its event base and evhttp (http_frontend.cc)

 private:
  Server& server_;
  Routes routes_;
  int port_ = -1;
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::thread> threads_;
  bool shut_down_ = false;
};

}  // namespace serve
}  // namespace oneflow
