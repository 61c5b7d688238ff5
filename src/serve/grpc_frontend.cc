#include "serve/grpc_frontend.h"

#include <grpcpp/grpcpp.h>

#include <thread>

#include "base/error.h"
#include "base/trace.h"
#include "grpc_service.grpc.pb.h"
#include "serve/datatype.h"
#include "serve/kserve_grpc_codec.h"
#include "serve/server.h"

namespace oneflow {
namespace serve {
namespace {

grpc::StatusCode GrpcCodeOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kUnavailable: return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kCancelled: return grpc::StatusCode::CANCELLED;
    case StatusCode::kTooLarge: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kInternal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

grpc::Status StatusOf(const ServeError& e) { return grpc::Status(GrpcCodeOf(e.code()), e.what()); }

// Runs `fn` and finishes the call with its outcome (ServeError -> its code; others INTERNAL).
template <typename Fn>
grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, Fn&& fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  try {
    fn();
    reactor->Finish(grpc::Status::OK);
  } catch (const ServeError& e) {
    reactor->Finish(StatusOf(e));
  } catch (const std::exception& e) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
  }
  return reactor;
}

void FillTensorMetadata(const std::vector<TensorSpec>& specs, bool batched,
                        google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>* out) {
  for (const TensorSpec& s : specs) {
    auto* t = out->Add();
    t->set_name(s.name);
    t->set_datatype(ProtocolDatatypeName(s.dtype));
    if (batched) t->add_shape(-1);
    for (int64_t d : s.dims) t->add_shape(d);
  }
}

// A ModelInfer call waiting for its batch: a client that cancels marks the queued request.
class InferReactor : public grpc::ServerUnaryReactor {
 public:
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  void OnCancel() override { cancelled->store(true); }
  void OnDone() override { delete this; }
};

}  // namespace

class GrpcFrontend::Service final : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit Service(Server& server) : server_(server) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* c, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* r) override {
    return Answer(c, [&] { r->set_live(server_.live()); });
  }
  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* c, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* r) override {
    return Answer(c, [&] { r->set_ready(server_.ready()); });
  }
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* c, const inference::ModelReadyRequest* q,
                                       inference::ModelReadyResponse* r) override {
    return Answer(c, [&] {
      try {
        server_.repository().Find(q->name(), q->version());
        r->set_ready(true);
      } catch (const ServeError& e) {
        if (e.code() != StatusCode::kUnavailable) throw;
        r->set_ready(false);
      }
    });
  }
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* c, const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* r) override {
    return Answer(c, [&] {
      r->set_name("oneflow");
      r->set_version(ONEFLOW_VERSION_STRING);
      for (const char* e : {"binary_tensor_data", "model_repository", "model_configuration", "schedule_policy"})
        r->add_extensions(e);
    });
  }
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* c, const inference::ModelMetadataRequest* q,
                                          inference::ModelMetadataResponse* r) override {
    return Answer(c, [&] {
      std::shared_ptr<ModelScheduler> s = server_.repository().Find(q->name(), q->version());
      const ModelSettings& settings = s->settings();
      r->set_name(q->name());
      for (int64_t v : server_.repository().ReadyVersions(q->name())) r->add_versions(std::to_string(v));
      r->set_platform(settings.platform());
      FillTensorMetadata(settings.inputs, settings.max_batch_size > 0, r->mutable_inputs());
      FillTensorMetadata(settings.outputs, settings.max_batch_size > 0, r->mutable_outputs());
    });
  }
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* c, const inference::ModelConfigRequest* q,
                                        inference::ModelConfigResponse* r) override {
    return Answer(c, [&] { *r->mutable_config() = server_.repository().Find(q->name(), q->version())->settings().resolved; });
  }
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* c, const inference::RepositoryIndexRequest* q,
                                            inference::RepositoryIndexResponse* r) override {
    return Answer(c, [&] {
      for (const ModelIndexEntry& e : server_.repository().Index(q->ready())) {
        auto* m = r->add_models();
        m->set_name(e.name);
        m->set_version(e.version);
        m->set_state(e.state);
        m->set_reason(e.reason);
      }
    });
  }
  grpc::ServerUnaryReactor* RepositoryModelLoad(grpc::CallbackServerContext* c,
                                                const inference::RepositoryModelLoadRequest* q,
                                                inference::RepositoryModelLoadResponse*) override {
    return ChangeRepository(c, q->model_name(), q->parameters_size() > 0, true);
  }
  grpc::ServerUnaryReactor* RepositoryModelUnload(grpc::CallbackServerContext* c,
                                                  const inference::RepositoryModelUnloadRequest* q,
                                                  inference::RepositoryModelUnloadResponse*) override {
    return ChangeRepository(c, q->model_name(), q->parameters_size() > 0, false);
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* c, const inference::ModelInferRequest* q,
                                       inference::ModelInferResponse* r) override {
    const auto received = std::chrono::steady_clock::now();
    TraceScope trace("serve", "grpc infer");  // decoding and queueing, on a gRPC thread
    trace.Arg("model", q->model_name());
    auto* reactor = new InferReactor;
    try {
      if (server_.stopping()) Refuse(StatusCode::kUnavailable, "the server is stopping");
      server_.repository().Find(q->model_name(), q->model_version());  // an unknown model first
      InferRequest request = DecodeGrpcInferRequest(*q);  // views q's raw bytes: q lives until Finish
      request.cancelled = reactor->cancelled;
      request.protocol = "grpc";
      request.received = received;
      std::string model = q->model_name(), id = request.id;
      InferCallback done = [reactor, r, model, id](InferOutcome outcome) {
        TraceScope trace("serve", "encode grpc reply");
        if (outcome.code != StatusCode::kOk) {
          reactor->Finish(grpc::Status(GrpcCodeOf(outcome.code), outcome.message));
          return;
        }
        try {
          EncodeGrpcInferResponse(model, outcome.version, id, outcome.outputs, r);
          reactor->Finish(grpc::Status::OK);
        } catch (const std::exception& e) {
          reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
        }
      };
      server_.repository().Submit(q->model_name(), q->model_version(), std::move(request), std::move(done));
    } catch (const ServeError& e) {
      reactor->Finish(StatusOf(e));
    } catch (const std::exception& e) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
    }
    return reactor;
  }

 private:
  // Loading compiles sessions and unloading drains queues: off the gRPC threads.
  grpc::ServerUnaryReactor* ChangeRepository(grpc::CallbackServerContext* c, const std::string& model,
                                             bool has_parameters, bool load) {
    grpc::ServerUnaryReactor* reactor = c->DefaultReactor();
    if (has_parameters) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "parameters (config or file overrides) are not supported; edit the repository instead"));
      return reactor;
    }
    if (server_.stopping()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is stopping"));
      return reactor;
    }
    Server* server = &server_;
    std::thread([reactor, server, model, load] {
      try {
        server->repository().LoadOrUnload(model, load);
        reactor->Finish(grpc::Status::OK);
      } catch (const ServeError& e) {
        reactor->Finish(StatusOf(e));
      } catch (const std::exception& e) {
        reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
      }
    }).detach();
    return reactor;
  }

  Server& server_;
};

struct GrpcFrontend::GrpcServer {
  std::unique_ptr<grpc::Server> server;
};

GrpcFrontend::GrpcFrontend(Server& server, const std::string& host, int port)
    : service_(std::make_unique<Service>(server)), server_(std::make_unique<GrpcServer>()) {
  grpc::ServerBuilder builder;
  std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(service_.get());
  size_t limit = std::min<size_t>(server.options().max_request_bytes, static_cast<size_t>(INT32_MAX));
  builder.SetMaxReceiveMessageSize(static_cast<int>(limit));
  builder.SetMaxSendMessageSize(INT32_MAX);
  server_->server = builder.BuildAndStart();
  OF_CHECK(server_->server && port_ > 0, kIo, "cannot listen for gRPC on ", address);
}

GrpcFrontend::~GrpcFrontend() { Shutdown(Clock::now()); }

void GrpcFrontend::Shutdown(std::chrono::steady_clock::time_point deadline) {
  if (!server_->server) return;
  server_->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                std::max(deadline - Clock::now(), Clock::duration::zero())));
  server_->server->Wait();
  server_->server.reset();
}

}  // namespace serve
}  // namespace oneflow
