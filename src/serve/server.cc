#include "serve/server.h"

#include <algorithm>
#include <thread>

#include "base/thread_pool.h"
#include "serve/grpc_frontend.h"
#include "serve/http_frontend.h"
#include "serve/log.h"
#include "serve/shard_control.h"

namespace oneflow {
namespace serve {

Server::Server(ServerOptions options) : options_(std::move(options)) {
  OF_REQUIRE(!options_.model_repository.empty(), "no model repository given");
  OF_REQUIRE(options_.http_port >= -1 && options_.http_port <= 65535, "HTTP port ", options_.http_port,
             " is outside [0, 65535] (-1 disables it)");
  OF_REQUIRE(options_.grpc_port >= -1 && options_.grpc_port <= 65535, "gRPC port ", options_.grpc_port,
             " is outside [0, 65535] (-1 disables it)");
  OF_REQUIRE(options_.metrics_port >= -1 && options_.metrics_port <= 65535, "metrics port ", options_.metrics_port,
             " is outside [0, 65535] (-1 disables it)");
  OF_REQUIRE(options_.threads >= 0 && options_.http_threads >= 0, "thread counts must not be negative");
  OF_REQUIRE(options_.max_request_bytes > 0, "the request size limit must be positive");
  OF_REQUIRE(options_.idle_timeout_seconds > 0, "the idle timeout must be positive");
}

Server::~Server() {
  if (started_ && !stopped_) Stop(Clock::now());
}

void Server::Start() {
  OF_CHECK(!started_, kInvalidArgument, "the server was already started");
  RepositoryOptions repo;
  repo.root = options_.model_repository;
  repo.threads = options_.threads > 0 ? options_.threads : ThreadPool::DefaultThreadCount();
  repository_ = std::make_unique<ModelRepository>(repo);
  repository_->LoadAll();
  int io_threads = options_.http_threads > 0 ? options_.http_threads : std::min(4, ThreadPool::DefaultThreadCount());
  if (options_.http_port >= 0)
    http_ = std::make_unique<HttpFrontend>(*this, HttpFrontend::Routes::kInference, options_.host, options_.http_port,
                                           io_threads);
  if (options_.grpc_port >= 0) grpc_ = std::make_unique<GrpcFrontend>(*this, options_.host, options_.grpc_port);
  if (options_.metrics_port >= 0)
    metrics_ = std::make_unique<HttpFrontend>(*this, HttpFrontend::Routes::kMetrics, options_.host,
                                              options_.metrics_port, 1);
  started_ = true;
  Log("serving ", options_.model_repository, http_ ? StrCat("; HTTP on ", options_.host, ":", http_->port()) : "",
      grpc_ ? StrCat("; gRPC on ", options_.host, ":", grpc_->port()) : "",
      metrics_ ? StrCat("; metrics on ", options_.host, ":", metrics_->port(), "/metrics") : "");
}

void Server::Stop(Clock::time_point deadline) {
  if (!started_ || stopped_) return;
  stopping_ = true;
  Log("stopping: finishing the requests already accepted");
  if (http_) http_->StopAccepting();
  repository_->UnloadAll(deadline);  // every accepted request is answered (run, or 503 past the deadline)
  StopShardFollowers();              // the other ranks of a sharded job exit too
  if (http_) http_->Shutdown(std::max(deadline, Clock::now() + std::chrono::seconds(1)));
  if (grpc_) grpc_->Shutdown(std::max(deadline, Clock::now() + std::chrono::seconds(1)));
  if (metrics_) metrics_->Shutdown(Clock::now());
  stopped_ = true;
  Log("stopped");
}

int Server::http_port() const { return http_ ? http_->port() : -1; }
int Server::grpc_port() const { return grpc_ ? grpc_->port() : -1; }
int Server::metrics_port() const { return metrics_ ? metrics_->port() : -1; }

bool Server::ready() const { return live() && !stopping_ && repository_->AllReady(); }

}  // namespace serve
}  // namespace oneflow
