// `oneflow serve`: the inference server (src/serve) until SIGTERM or SIGINT, then a graceful drain.
#include <csignal>
#include <cstdio>

#include "cli.h"
#include "serve/server.h"
#include "serve/shard_control.h"

namespace oneflow {
namespace cli {

int ServeCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("serve", args,
                           {"model-repository", "http-port", "grpc-port", "metrics-port", "host", "threads", "http-threads",
                            "max-request-mb", "idle-timeout-s", "drain-timeout-s"},
                           {"access-log"});
  if (!a.positionals.empty()) throw UsageError("serve takes no positional arguments (use --model-repository DIR)");
  serve::ServerOptions options;
  options.model_repository = a.Get("model-repository");
  if (options.model_repository.empty()) throw UsageError("serve needs --model-repository DIR");
  options.http_port = a.GetInt("http-port", 8000, -1, 65535);
  options.grpc_port = a.GetInt("grpc-port", 8001, -1, 65535);
  options.metrics_port = a.GetInt("metrics-port", 8002, -1, 65535);
  options.host = a.Get("host", "127.0.0.1");
  options.threads = a.GetInt("threads", 0, 0, 4096);
  options.http_threads = a.GetInt("http-threads", 0, 0, 256);
  options.max_request_bytes = static_cast<size_t>(a.GetInt("max-request-mb", 256, 1, 1 << 20)) << 20;
  options.idle_timeout_seconds = a.GetInt("idle-timeout-s", 60, 1, 86400);
  options.access_log = a.Has("access-log");
  int drain_seconds = a.GetInt("drain-timeout-s", 30, 0, 86400);

  // The signals are taken by sigwait below: block them before any thread starts, so every thread
  // the server creates inherits the mask and none of them is interrupted.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that vanishes mid-reply is the connection's problem

  // Under `oneflow launch -n N`: rank 0 serves; the other ranks only run their part of the sharded
  // models' batches, until rank 0 stops (they ignore the signals: rank 0's drain decides).
  if (serve::InShardedJob()) {
    if (serve::ShardRank() != 0) return serve::RunShardFollower(options.model_repository, options.threads);
    serve::StartShardLeader();
  }
  serve::Server server(options);
  server.Start();
  std::fflush(stderr);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::fprintf(stderr, "oneflow serve: %s received\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  server.Stop(serve::Clock::now() + std::chrono::seconds(drain_seconds));
  return 0;
}

}  // namespace cli
}  // namespace oneflow
