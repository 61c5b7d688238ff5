#include "serve/http_frontend.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <google/protobuf/util/json_util.h>
#include <netdb.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>

#include "base/error.h"
#include "base/trace.h"
#include "serve/datatype.h"
#include "serve/kserve_http_codec.h"
#include "serve/log.h"
#include "serve/server.h"

namespace oneflow {
namespace serve {

struct HttpFrontend::Loop {
  Server* server = nullptr;
  HttpFrontend::Routes routes = HttpFrontend::Routes::kInference;
  event_base* base = nullptr;
  evhttp* http = nullptr;
  evhttp_bound_socket* bound = nullptr;
  std::atomic<int> outstanding{0};  // requests handed to a worker and not yet answered
};

namespace {

namespace rj = rapidjson;
using Loop = HttpFrontend::Loop;
using Writer = rj::Writer<rj::StringBuffer>;

// A reply prepared off the I/O thread (an inference, a model load) and sent on it.
struct DeferredReply {
  Loop* loop = nullptr;
  evhttp_request* req = nullptr;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  int status = 500;
  std::string body;
  std::string content_type = "application/json";
  std::optional<size_t> header_length;
  Clock::time_point start = Clock::now();
  std::string what;  // method and path, for the access log
};

void AddHeader(evhttp_request* req, const char* key, const std::string& value) {
  evhttp_add_header(evhttp_request_get_output_headers(req), key, value.c_str());
}

void Send(evhttp_request* req, int status, const std::string& body, const std::string& content_type,
          std::optional<size_t> header_length = std::nullopt) {
  AddHeader(req, "Content-Type", content_type);
  if (header_length) AddHeader(req, "Inference-Header-Content-Length", std::to_string(*header_length));
  evbuffer* out = evbuffer_new();
  if (!body.empty()) evbuffer_add(out, body.data(), body.size());
  evhttp_send_reply(req, status, nullptr, out);
  evbuffer_free(out);
}

void LogAccess(const Loop& loop, const std::string& what, int status, Clock::time_point start) {
  if (!loop.server->options().access_log) return;
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  Log(what, " ", status, " ", ms, " ms");
}

void OnConnectionClosed(evhttp_connection*, void* arg) { static_cast<DeferredReply*>(arg)->cancelled->store(true); }

// Runs on the loop's thread (event_base_once): sends the reply and frees it.
void DeliverReply(evutil_socket_t, short, void* arg) {
  std::unique_ptr<DeferredReply> reply(static_cast<DeferredReply*>(arg));
  if (evhttp_connection* conn = evhttp_request_get_connection(reply->req))
    evhttp_connection_set_closecb(conn, nullptr, nullptr);
  Send(reply->req, reply->status, reply->body, reply->content_type, reply->header_length);
  LogAccess(*reply->loop, reply->what, reply->status, reply->start);
  reply->loop->outstanding.fetch_sub(1);
}

// Hands a reply filled on another thread back to its loop.
void PostReply(DeferredReply* reply) {
  if (event_base_once(reply->loop->base, -1, EV_TIMEOUT, DeliverReply, reply, nullptr) != 0) {
    // Only when the loop's base cannot take events (out of memory): the request is dropped.
    reply->loop->outstanding.fetch_sub(1);
    delete reply;
  }
}

std::string ToJson(const std::function<void(Writer&)>& fill) {
  rj::StringBuffer buf;
  Writer w(buf);
  fill(w);
  return std::string(buf.GetString(), buf.GetSize());
}

void WriteString(Writer& w, const std::string& s) { w.String(s.c_str(), static_cast<rj::SizeType>(s.size())); }

void WriteTensorSpecs(Writer& w, const std::vector<TensorSpec>& specs, bool batched) {
  w.StartArray();
  for (const TensorSpec& s : specs) {
    w.StartObject();
    w.Key("name");
    WriteString(w, s.name);
    w.Key("datatype");
    w.String(ProtocolDatatypeName(s.dtype));
    w.Key("shape");
    w.StartArray();
    if (batched) w.Int64(-1);
    for (int64_t d : s.dims) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

// Protobuf's JSON writes 64-bit integers as strings ("dims": ["784"]); Triton's config JSON, which
// clients read, has numbers. Converts the values of the config's 64-bit integer fields back.
bool IsInt64Field(const std::string& key) {
  return key == "dims" || key == "versions" || key == "max_queue_delay_microseconds" ||
         key == "default_timeout_microseconds";
}

void Int64StringsToNumbers(rj::Value& v) {
  if (v.IsArray()) {
    for (auto& e : v.GetArray()) Int64StringsToNumbers(e);
  } else if (v.IsString()) {
    const char* s = v.GetString();
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(s, &end, 10);
    if (errno == 0 && end != s && *end == '\0') v.SetInt64(n);
  }
}

void ConfigIntegersAsNumbers(rj::Value& v) {
  if (v.IsObject()) {
    for (auto& m : v.GetObject()) {
      if (IsInt64Field(m.name.GetString())) Int64StringsToNumbers(m.value);
      else if (std::string(m.name.GetString()) != "parameters") ConfigIntegersAsNumbers(m.value);
    }
  } else if (v.IsArray()) {
    for (auto& e : v.GetArray()) ConfigIntegersAsNumbers(e);
  }
}

std::string Int64FieldsAsNumbers(const std::string& json) {
  rj::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) return json;
  ConfigIntegersAsNumbers(doc);
  return ToJson([&](Writer& w) { doc.Accept(w); });
}

// The request path, percent-decoded and split at '/'.
std::vector<std::string> PathSegments(evhttp_request* req) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* raw = uri ? evhttp_uri_get_path(uri) : nullptr;
  std::vector<std::string> parts;
  if (!raw) return parts;
  size_t n = 0;
  char* decoded = evhttp_uridecode(raw, 0, &n);
  if (!decoded) return parts;
  std::string path(decoded, n);
  free(decoded);
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

const char* MethodName(evhttp_cmd_type m) {
  switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_HEAD: return "HEAD";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_PATCH: return "PATCH";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    default: return "OTHER";
  }
}

class Router {
 public:
  Router(Loop& loop, evhttp_request* req) : loop_(loop), server_(*loop.server), req_(req) {}

  void Handle() {
    std::vector<std::string> p = PathSegments(req_);
    evhttp_cmd_type method = evhttp_request_get_command(req_);
    what_ = StrCat(MethodName(method), " ", evhttp_request_get_uri(req_));
    if (loop_.routes == HttpFrontend::Routes::kMetrics) {
      if (p.size() == 1 && p[0] == "metrics" && (method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD))
        return Reply(200, FormatPrometheus(server_.repository().Metrics()), "text/plain; version=0.0.4");
      return Refuse(StatusCode::kNotFound, "not found: this port serves GET /metrics");
    }
    if (p.empty() || p[0] != "v2") return Refuse(StatusCode::kNotFound, "not found: ", what_);
    // A body larger than the limit (but under libevent's hard cap) was read; refuse it as JSON.
    if (evbuffer_get_length(evhttp_request_get_input_buffer(req_)) > server_.options().max_request_bytes)
      return Refuse(StatusCode::kTooLarge, "the request body has ", evbuffer_get_length(evhttp_request_get_input_buffer(req_)),
                    " bytes; this server takes at most ", server_.options().max_request_bytes, " (--max-request-mb)");
    bool get = method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD, post = method == EVHTTP_REQ_POST;
    // An endpoint that exists but takes another method: 405 naming the one it takes.
    auto wrong_method = [&](const char* allowed) {
      AddHeader(req_, "Allow", allowed);
      Reply(405, ErrorJson(StrCat("method not allowed: ", what_, " (", p.empty() ? "" : "this endpoint takes ", allowed, ")")));
    };
    if (p.size() == 1) return get ? ServerMetadata() : wrong_method("GET");
    if (p.size() == 3 && p[1] == "health" && (p[2] == "live" || p[2] == "ready")) {
      if (!get) return wrong_method("GET");
      if (p[2] == "live") return Reply(server_.live() ? 200 : 503, "");
      return Reply(server_.ready() ? 200 : 503, "");
    }
    if (p.size() >= 3 && p[1] == "models") {
      std::string model = p[2], version;
      size_t rest = 3;
      if (p.size() >= 5 && p[3] == "versions") {
        version = p[4];
        rest = 5;
      }
      std::string action = p.size() > rest ? p[rest] : "";
      if (p.size() > rest + 1) return Refuse(StatusCode::kNotFound, "not found: ", what_);
      if (action.empty() || action == "ready" || action == "config") {
        if (!get) return wrong_method("GET");
        if (action.empty()) return ModelMetadata(model, version);
        if (action == "ready") return ModelReady(model, version);
        return ModelConfig(model, version);
      }
      if (action == "infer") return post ? Infer(model, version) : wrong_method("POST");
    }
    if (p.size() == 3 && p[1] == "repository" && p[2] == "index") return post ? RepositoryIndex() : wrong_method("POST");
    if (p.size() == 5 && p[1] == "repository" && p[2] == "models" && (p[4] == "load" || p[4] == "unload")) {
      if (!post) return wrong_method("POST");
      return RepositoryChange(p[3], p[4] == "load");
    }
    return Refuse(StatusCode::kNotFound, "not found: ", what_);
  }

 private:
  void Reply(int status, const std::string& body, const std::string& content_type = "application/json") {
    Send(req_, status, body, content_type);
    LogAccess(loop_, what_, status, start_);
  }
  template <typename... Args>
  void Refuse(StatusCode code, const Args&... args) {
    Reply(HttpStatusOf(code), ErrorJson(StrCat(args...)));
  }

  std::string Body() {
    evbuffer* in = evhttp_request_get_input_buffer(req_);
    size_t n = evbuffer_get_length(in);
    std::string body(n, '\0');
    if (n) evbuffer_copyout(in, body.data(), n);
    return body;
  }

  void ServerMetadata() {
    Reply(200, ToJson([](Writer& w) {
      w.StartObject();
      w.Key("name");
      w.String("oneflow");
      w.Key("version");
      w.String(ONEFLOW_VERSION_STRING);
      w.Key("extensions");
      w.StartArray();
      for (const char* e : {"binary_tensor_data", "model_repository", "model_configuration", "schedule_policy"})
        w.String(e);
      w.EndArray();
      w.EndObject();
    }));
  }

  void ModelMetadata(const std::string& model, const std::string& version) {
    try {
      std::shared_ptr<ModelScheduler> s = server_.repository().Find(model, version);
      std::vector<int64_t> versions = server_.repository().ReadyVersions(model);
      const ModelSettings& settings = s->settings();
      Reply(200, ToJson([&](Writer& w) {
        w.StartObject();
        w.Key("name");
        WriteString(w, model);
        w.Key("versions");
        w.StartArray();
        for (int64_t v : versions) WriteString(w, std::to_string(v));
        w.EndArray();
        w.Key("platform");
        WriteString(w, settings.platform());
        w.Key("inputs");
        WriteTensorSpecs(w, settings.inputs, settings.max_batch_size > 0);
        w.Key("outputs");
        WriteTensorSpecs(w, settings.outputs, settings.max_batch_size > 0);
        w.EndObject();
      }));
    } catch (const ServeError& e) {
      Refuse(e.code(), e.what());
    }
  }

  void ModelReady(const std::string& model, const std::string& version) {
    try {
      server_.repository().Find(model, version);
      Reply(200, "");
    } catch (const ServeError& e) {
      Refuse(e.code(), e.what());
    }
  }

  void ModelConfig(const std::string& model, const std::string& version) {
    try {
      std::shared_ptr<ModelScheduler> s = server_.repository().Find(model, version);
      std::string json;
      google::protobuf::util::JsonPrintOptions options;
      options.preserve_proto_field_names = true;
      options.always_print_primitive_fields = true;
      auto status = google::protobuf::util::MessageToJsonString(s->settings().resolved, &json, options);
      if (!status.ok()) return Refuse(StatusCode::kInternal, "cannot write the config as JSON: ", status.ToString());
      Reply(200, Int64FieldsAsNumbers(json));
    } catch (const ServeError& e) {
      Refuse(e.code(), e.what());
    }
  }

  void RepositoryIndex() {
    bool ready_only = false;
    std::string body = Body();
    if (!body.empty()) {
      rj::Document doc;
      doc.Parse<rj::kParseIterativeFlag>(body.data(), body.size());  // no recursion on nesting
      if (doc.HasParseError() || !doc.IsObject())
        return Refuse(StatusCode::kInvalidArgument, "repository index: the body must be a JSON object");
      auto it = doc.FindMember("ready");
      if (it != doc.MemberEnd()) {
        if (!it->value.IsBool()) return Refuse(StatusCode::kInvalidArgument, "repository index: 'ready' must be a boolean");
        ready_only = it->value.GetBool();
      }
    }
    std::vector<ModelIndexEntry> index = server_.repository().Index(ready_only);
    Reply(200, ToJson([&](Writer& w) {
      w.StartArray();
      for (const ModelIndexEntry& e : index) {
        w.StartObject();
        w.Key("name");
        WriteString(w, e.name);
        if (!e.version.empty()) {
          w.Key("version");
          WriteString(w, e.version);
        }
        w.Key("state");
        WriteString(w, e.state);
        w.Key("reason");
        WriteString(w, e.reason);
        w.EndObject();
      }
      w.EndArray();
    }));
  }

  // Loading compiles sessions and unloading drains queues: both run on a thread of their own so
  // the I/O loop keeps serving, and reply when done.
  void RepositoryChange(const std::string& model, bool load) {
    std::string body = Body();
    if (!body.empty()) {
      rj::Document doc;
      doc.Parse<rj::kParseIterativeFlag>(body.data(), body.size());  // no recursion on nesting
      if (doc.HasParseError() || !doc.IsObject())
        return Refuse(StatusCode::kInvalidArgument, "repository ", load ? "load" : "unload",
                      ": the body must be a JSON object");
      // Triton's clients send {"parameters": {"unload_dependents": false}} (no ensembles here: nothing
      // to do); config and file overrides of a load are refused.
      auto params = doc.FindMember("parameters");
      if (params != doc.MemberEnd() && params->value.IsObject())
        for (const auto& m : params->value.GetObject()) {
          std::string key = m.name.GetString();
          if (key == "unload_dependents") continue;
          return Refuse(StatusCode::kInvalidArgument, "repository ", load ? "load" : "unload", ": parameter '", key,
                        "' is not supported (config and file overrides: edit the repository instead)");
        }
    }
    if (server_.stopping()) return Refuse(StatusCode::kUnavailable, "the server is stopping");
    auto* reply = new DeferredReply;
    reply->loop = &loop_;
    reply->req = req_;
    reply->what = what_;
    reply->start = start_;
    loop_.outstanding.fetch_add(1);
    Server* server = &server_;
    std::thread([reply, server, model, load] {
      try {
        server->repository().LoadOrUnload(model, load);
        reply->status = 200;
      } catch (const ServeError& e) {
        reply->status = HttpStatusOf(e.code());
        reply->body = ErrorJson(e.what());
      } catch (const std::exception& e) {
        reply->status = 500;
        reply->body = ErrorJson(e.what());
      }
      PostReply(reply);
    }).detach();
  }

  void Infer(const std::string& model, const std::string& version) {
    TraceScope trace("serve", "http infer");  // decoding and queueing, on the I/O thread
    trace.Arg("model", model);
    if (server_.stopping()) return Refuse(StatusCode::kUnavailable, "the server is stopping");
    HttpInferRequest decoded;
    try {
      server_.repository().Find(model, version);  // an unknown model is named before the body is parsed
      std::optional<size_t> header_length;
      if (const char* h = evhttp_find_header(evhttp_request_get_input_headers(req_), "Inference-Header-Content-Length")) {
        char* end = nullptr;
        errno = 0;
        unsigned long long v = std::strtoull(h, &end, 10);
        if (errno || end == h || *end != '\0' || h[0] == '-')
          return Refuse(StatusCode::kInvalidArgument, "Inference-Header-Content-Length '", h, "' is not a byte count");
        header_length = static_cast<size_t>(v);
      }
      evbuffer* in = evhttp_request_get_input_buffer(req_);
      size_t size = evbuffer_get_length(in);
      const char* body = size ? reinterpret_cast<const char*>(evbuffer_pullup(in, -1)) : "";
      decoded = DecodeHttpInferRequest(body, size, header_length);
    } catch (const ServeError& e) {
      return Refuse(e.code(), e.what());
    }
    // What the response needs besides the outputs (the inputs move into the scheduler).
    auto shape = std::make_shared<HttpInferRequest>();
    shape->request.id = decoded.request.id;
    shape->request.outputs = decoded.request.outputs;
    shape->binary_output = decoded.binary_output;
    shape->binary_all_outputs = decoded.binary_all_outputs;

    auto* reply = new DeferredReply;
    reply->loop = &loop_;
    reply->req = req_;
    reply->what = what_;
    reply->start = start_;
    decoded.request.cancelled = reply->cancelled;
    decoded.request.protocol = "http";
    decoded.request.received = start_;
    loop_.outstanding.fetch_add(1);
    try {
      InferCallback done = [reply, shape, model](InferOutcome outcome) {
        TraceScope trace("serve", "encode http reply");
        if (outcome.code == StatusCode::kOk) {
          try {
            HttpBody body = EncodeHttpInferResponse(model, outcome.version, *shape, outcome.outputs);
            reply->status = 200;
            reply->body = std::move(body.bytes);
            reply->header_length = body.header_length;
            if (body.header_length) reply->content_type = "application/octet-stream";
          } catch (const std::exception& e) {
            reply->status = 500;
            reply->body = ErrorJson(StrCat("cannot encode the response: ", e.what()));
          }
        } else {
          reply->status = HttpStatusOf(outcome.code);
          reply->body = ErrorJson(outcome.message);
        }
        PostReply(reply);
      };
      server_.repository().Submit(model, version, std::move(decoded.request), std::move(done));
    } catch (const ServeError& e) {
      loop_.outstanding.fetch_sub(1);
      delete reply;
      return Refuse(e.code(), e.what());
    }
    // A client that goes away before the answer cancels its queued request.
    if (evhttp_connection* conn = evhttp_request_get_connection(req_))
      evhttp_connection_set_closecb(conn, OnConnectionClosed, reply);
  }

  Loop& loop_;
  Server& server_;
  evhttp_request* req_;
  std::string what_;
  Clock::time_point start_ = Clock::now();
};

void OnRequest(evhttp_request* req, void* arg) {
  Loop& loop = *static_cast<Loop*>(arg);
  try {
    Router(loop, req).Handle();
  } catch (const std::exception& e) {
    Send(req, 500, ErrorJson(StrCat("internal error: ", e.what())), "application/json");
  }
}

void UseThreads() {
  static std::once_flag once;
  std::call_once(once, [] { OF_CHECK(evthread_use_pthreads() == 0, kInternal, "libevent has no pthreads support"); });
}

// A listening socket on host:port (port 0: the kernel picks one).
int Listen(const std::string& host, int port, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  OF_CHECK(rc == 0, kIo, "cannot resolve '", host, "': ", gai_strerror(rc));
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      last_error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  OF_CHECK(fd >= 0, kIo, "cannot listen on ", host, ":", port, ": ", last_error);
  evutil_make_socket_nonblocking(fd);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound_port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                 : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

void DisableAccept(evutil_socket_t, short, void* arg) {
  Loop* loop = static_cast<Loop*>(arg);
  if (loop->bound) {
    evhttp_del_accept_socket(loop->http, loop->bound);
    loop->bound = nullptr;
  }
}

}  // namespace

HttpFrontend::HttpFrontend(Server& server, Routes routes, const std::string& host, int port, int threads)
    : server_(server), routes_(routes) {
  UseThreads();
  listen_fd_ = Listen(host, port, &port_);
  threads = std::max(1, threads);
  for (int i = 0; i < threads; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->server = &server_;
    loop->routes = routes_;
    loop->base = event_base_new();
    loop->http = loop->base ? evhttp_new(loop->base) : nullptr;
    OF_CHECK(loop->http, kOutOfMemory, "cannot create an HTTP event loop");
    evhttp_set_gencb(loop->http, OnRequest, loop.get());
    evhttp_set_allowed_methods(loop->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                               EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
    // libevent cuts a body off at its limit with a bare HTML 413 (it has no hook before the body is
    // read), so its cap is 4x ours: a body over our limit but under that is read and refused with
    // a JSON error a client can show; only larger ones get libevent's answer. Memory stays bounded.
    const size_t limit = server_.options().max_request_bytes;
    evhttp_set_max_body_size(loop->http, static_cast<ev_ssize_t>(limit > SIZE_MAX / 8 ? limit : 4 * limit));
    evhttp_set_timeout(loop->http, server_.options().idle_timeout_seconds);
    // Each loop accepts on its own descriptor of the one listening socket (evhttp closes it).
    int fd = dup(listen_fd_);
    OF_CHECK(fd >= 0, kIo, "cannot duplicate the listening socket: ", std::strerror(errno));
    loop->bound = evhttp_accept_socket_with_handle(loop->http, fd);
    OF_CHECK(loop->bound, kIo, "cannot accept on port ", port_);
    loops_.push_back(std::move(loop));
  }
  for (auto& loop : loops_) {
    event_base* base = loop->base;
    const size_t index = threads_.size();
    threads_.emplace_back([base, index] {
      SetTraceThreadName(StrCat("http io ", index));
      event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    });
  }
}

HttpFrontend::~HttpFrontend() { Shutdown(Clock::now()); }

void HttpFrontend::StopAccepting() {
  for (auto& loop : loops_) event_base_once(loop->base, -1, EV_TIMEOUT, DisableAccept, loop.get(), nullptr);
}

void HttpFrontend::Shutdown(std::chrono::steady_clock::time_point deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  StopAccepting();
  // Replies still on their way to a loop are sent before the loop ends.
  for (auto& loop : loops_)
    while (loop->outstanding.load() > 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // A short grace lets the loops write out what they just sent.
  timeval grace{0, 100 * 1000};
  for (auto& loop : loops_) event_base_loopexit(loop->base, &grace);
  for (std::thread& t : threads_) t.join();
  for (auto& loop : loops_) {
    evhttp_free(loop->http);
    event_base_free(loop->base);
  }
  loops_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

}  // namespace serve
}  // namespace oneflow
