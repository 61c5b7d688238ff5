// The TCP rendezvous store: the service (run by the serving rank) and the client every rank holds.
//
// The service runs on gRPC's callback API, so a Get that waits for a key and a Join held open for
// a rank's lifetime cost no thread: a waiting Get is parked in `waiters_` until a Set answers it or
// its deadline cancels it; a Join stream is cancelled when the rank's connection closes, which is
// how the store learns that a rank was lost.
#include "comm/tcp_store.h"

#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "rendezvous.grpc.pb.h"

namespace oneflow {
namespace {

using Clock = std::chrono::steady_clock;
namespace rv = ::oneflow::rendezvous;

std::chrono::system_clock::time_point DeadlineIn(int64_t ms) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(std::max<int64_t>(ms, 1));
}

std::string HostPort(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

class StoreService;

// A Get for a key not set yet: answered by the Set that publishes it, or cancelled by its deadline.
class WaitingGet final : public grpc::ServerUnaryReactor {
 public:
  WaitingGet(StoreService* service, std::string key, rv::GetReply* reply)
      : service_(service), key_(std::move(key)), reply_(reply) {}
  void Deliver(const std::string& value) {
    reply_->set_value(value);
    Finish(grpc::Status::OK);
  }
  void OnCancel() override;
  void OnDone() override { delete this; }

 private:
  StoreService* const service_;
  const std::string key_;
  rv::GetReply* const reply_;
};

// A rank's membership: one message to accept it, then held open for as long as the rank lives.
class Membership final : public grpc::ServerWriteReactor<rv::JoinAccepted> {
 public:
  Membership(StoreService* service, int rank) : service_(service), rank_(rank) { StartWrite(&accepted_); }
  void OnWriteDone(bool) override {}
  void OnCancel() override;
  void OnDone() override { delete this; }

 private:
  StoreService* const service_;
  const int rank_;
  rv::JoinAccepted accepted_;
};

// A Join refused at once (the status says why).
class RefusedJoin final : public grpc::ServerWriteReactor<rv::JoinAccepted> {
 public:
  explicit RefusedJoin(const grpc::Status& why) { Finish(why); }
  void OnDone() override { delete this; }
};

class StoreService final : public rv::Store::CallbackService {
 public:
  explicit StoreService(int world_size) : members_(static_cast<size_t>(world_size)) {}

  grpc::ServerWriteReactor<rv::JoinAccepted>* Join(grpc::CallbackServerContext*, const rv::JoinRequest* q) override {
    const int size = static_cast<int>(members_.size());
    if (q->world_size() != size)
      return new RefusedJoin(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                          StrCat("rank ", q->rank(), " (", q->host(), ") says the job has ",
                                                 q->world_size(), " ranks; rank 0 says ", size)));
    if (q->rank() < 0 || q->rank() >= size)
      return new RefusedJoin(grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                                          StrCat("rank ", q->rank(), " (", q->host(), ") is not in a job of ", size,
                                                 " ranks")));
    std::lock_guard<std::mutex> lock(mutex_);
    Member& m = members_[static_cast<size_t>(q->rank())];
    if (m.state != Member::kAbsent)
      return new RefusedJoin(grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                          StrCat("rank ", q->rank(), " joined twice: from ", m.host, " and now from ",
                                                 q->host(), " (two processes with the same RANK?)")));
    m.state = Member::kJoined;
    m.host = q->host();
    return new Membership(this, q->rank());
  }

  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext* c, const rv::LeaveRequest* q, rv::LeaveReply*) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (q->rank() >= 0 && static_cast<size_t>(q->rank()) < members_.size()) {
        Member& m = members_[static_cast<size_t>(q->rank())];
        if (m.state == Member::kJoined) m.state = Member::kLeft;
      }
    }
    changed_.notify_all();
    return Done(c, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* c, const rv::SetRequest* q, rv::SetReply*) override {
    std::vector<WaitingGet*> answered;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[q->key()] = q->value();
      auto it = waiters_.find(q->key());
      if (it != waiters_.end()) {
        answered = std::move(it->second);
        waiters_.erase(it);
      }
    }
    for (WaitingGet* w : answered) w->Deliver(q->value());
    return Done(c, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* c, const rv::GetRequest* q, rv::GetReply* reply) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(q->key());
    if (it != values_.end()) {
      reply->set_value(it->second);
      return Done(c, grpc::Status::OK);
    }
    auto* waiter = new WaitingGet(this, q->key(), reply);
    waiters_[q->key()].push_back(waiter);
    return waiter;
  }

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* c, const rv::CheckRequest* q, rv::CheckReply* reply) override {
    std::lock_guard<std::mutex> lock(mutex_);
    reply->set_set(values_.count(q->key()) > 0);
    return Done(c, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* c, const rv::StatusRequest*, rv::StatusReply* reply) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t r = 0; r < members_.size(); ++r) {
      if (members_[r].state == Member::kLost) {
        reply->add_lost(static_cast<int>(r));
        reply->add_lost_hosts(members_[r].host);
      } else if (members_[r].state == Member::kAbsent) {
        reply->add_never_joined(static_cast<int>(r));
      }
    }
    return Done(c, grpc::Status::OK);
  }

  // A Join stream ended without the rank leaving: its process is gone (unless the store stops).
  void Departed(int rank) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Member& m = members_[static_cast<size_t>(rank)];
      if (m.state == Member::kJoined && !stopping_) m.state = Member::kLost;
    }
    changed_.notify_all();
  }

  // Removes a waiting Get whose deadline passed; false when a Set has taken it to answer.
  bool Forget(const std::string& key, WaitingGet* waiter) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return false;
    auto w = std::find(it->second.begin(), it->second.end(), waiter);
    if (w == it->second.end()) return false;
    it->second.erase(w);
    if (it->second.empty()) waiters_.erase(it);
    return true;
  }

  // Waits until no rank other than `self` is still in the job (each left, was lost, or never
  // came), or until `deadline`; then every later departure is a shutdown, not a loss.
  void AwaitOthers(int self, Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_until(lock, deadline, [&] {
      for (size_t r = 0; r < members_.size(); ++r)
        if (static_cast<int>(r) != self && members_[r].state == Member::kJoined) return false;
      return true;
    });
    stopping_ = true;
  }

 private:
  struct Member {
    enum State { kAbsent, kJoined, kLeft, kLost } state = kAbsent;
    std::string host;
  };

  static grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* c, const grpc::Status& status) {
    grpc::ServerUnaryReactor* r = c->DefaultReactor();
    r->Finish(status);
    return r;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Member> members_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<WaitingGet*>> waiters_;
  bool stopping_ = false;
};

void WaitingGet::OnCancel() {
  if (service_->Forget(key_, this)) Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the wait for " + key_ + " ended"));
}

void Membership::OnCancel() {
  service_->Departed(rank_);
  Finish(grpc::Status::CANCELLED);
}

// The gRPC server of the rank that serves the store.
struct ServedStore {
  std::unique_ptr<StoreService> service;
  std::unique_ptr<grpc::Server> server;
  bool v6 = false;
  // Stops at once: the members' held Join streams would otherwise keep ~Server's unbounded
  // Shutdown waiting (a rank 0 that failed to join its own store must still report and exit).
  ~ServedStore() {
    if (!server) return;
    server->Shutdown(DeadlineIn(100));
    server->Wait();
  }
};

// Whether `host` (a name or an address, brackets allowed) resolves to IPv6 only.
bool OnlyIpv6(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || !found) return false;
  bool v4 = false;
  for (addrinfo* a = found; a; a = a->ai_next) v4 |= a->ai_family == AF_INET;
  freeaddrinfo(found);
  return !v4;
}

// Whether `port` can be listened on (as gRPC binds: SO_REUSEADDR, every address). Checked before
// gRPC tries, so a port in use gets our error alone rather than gRPC's log line too.
bool PortFree(bool v6, int port) {
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return true;  // let gRPC report it
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage a{};
  socklen_t len = 0;
  if (v6) {
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&a);
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_any;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<sockaddr_in*>(&a);
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_ANY);
    a4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *a4;
  }
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0;
  close(fd);
  return free;
}

std::unique_ptr<ServedStore> Serve(const TcpStoreOptions& o) {
  const bool v6 = OnlyIpv6(o.master_addr);
  const std::string in_use = StrCat("rank ", o.rank, " cannot serve the rendezvous store on port ", o.master_port,
                                    ": the port is in use, by another job or program on this host; choose another "
                                    "MASTER_PORT (oneflow launch --master-port)");
  OF_CHECK(PortFree(v6, o.master_port), kIo, in_use);
  auto s = std::make_unique<ServedStore>();
  s->v6 = v6;
  s->service = std::make_unique<StoreService>(o.world_size);
  // Every address of the host: MASTER_ADDR names this host as the others reach it, which may not be
  // an address this process can tell is its own (a name, a NAT).
  const std::string address = HostPort(v6 ? "::" : "0.0.0.0", o.master_port);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  // gRPC would otherwise share the port with another job's store (SO_REUSEPORT) and split the
  // ranks between them.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A host that vanishes without closing its connections (power, network) is noticed by pings.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.RegisterService(s->service.get());
  s->server = builder.BuildAndStart();
  OF_CHECK(s->server && port == o.master_port, kIo, in_use);
  return s;
}

class TcpStore final : public RendezvousStore {
 public:
  TcpStore(const TcpStoreOptions& o, std::unique_ptr<ServedStore> served)
      : o_(o), where_(HostPort(o.master_addr, o.master_port)), served_(std::move(served)) {
    // The serving rank reaches its own store over loopback: MASTER_ADDR is how the other hosts
    // reach this one (a name, a NAT address), which this host may not route to itself.
    const std::string target = served_ ? HostPort(served_->v6 ? "::1" : "127.0.0.1", o.master_port) : where_;
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // ranks reach the master directly, not via http_proxy
    // The store may come up after this rank: retry the connection every 100-500 ms, not gRPC's
    // default backoff of up to 2 minutes.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    stub_ = rv::Store::NewStub(channel_);
    OF_CHECK(channel_->WaitForConnected(DeadlineIn(o.timeout_ms)), kRuntime, "rank ", o.rank,
             " could not reach the rendezvous store at ", where_, " within ", o.timeout_ms,
             " ms (is rank 0 running, and are MASTER_ADDR and MASTER_PORT those of its host?)");
    rv::JoinRequest join;
    join.set_rank(o.rank);
    join.set_world_size(o.world_size);
    join.set_host(o.host);
    membership_ = stub_->Join(&membership_context_, join);
    rv::JoinAccepted accepted;
    if (!membership_->Read(&accepted)) {
      grpc::Status status = membership_->Finish();
      membership_.reset();
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
          status.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
          status.error_code() == grpc::StatusCode::OUT_OF_RANGE)
        Fail(ErrorCode::kInvalidArgument, "the rendezvous store at ", where_, " refused rank ", o.rank, ": ",
             status.error_message());
      Fail(ErrorCode::kRuntime, "rank ", o.rank, " could not join the rendezvous store at ", where_, ": ",
           status.error_message());
    }
  }
  ~TcpStore() override { Leave(); }

  void Set(const std::string& key, const std::vector<char>& value) override {
    rv::SetRequest q;
    q.set_key(key);
    q.set_value(value.data(), value.size());
    rv::SetReply reply;
    grpc::ClientContext c;
    // No wait_for_ready: the connection is up since Join, so a store that is gone (its host lost)
    // fails this at once instead of after the timeout.
    c.set_deadline(DeadlineIn(o_.timeout_ms));
    grpc::Status status = stub_->Set(&c, q, &reply);
    OF_CHECK(status.ok(), kRuntime, "rank ", o_.rank, " cannot publish rendezvous key '", key, "' at ", where_, ": ",
             status.error_message());
  }

  std::vector<char> Get(const std::string& key, int64_t timeout_ms) override {
    rv::GetRequest q;
    q.set_key(key);
    rv::GetReply reply;
    grpc::ClientContext c;
    c.set_deadline(DeadlineIn(timeout_ms));
    grpc::Status status = stub_->Get(&c, q, &reply);
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      Fail(ErrorCode::kRuntime, "rendezvous key '", key, "' was not published within ", timeout_ms, " ms");
    OF_CHECK(status.ok(), kRuntime, "rank ", o_.rank, " cannot read rendezvous key '", key, "' at ", where_, ": ",
             status.error_message());
    return std::vector<char>(reply.value().begin(), reply.value().end());
  }

  bool Check(const std::string& key) override {
    rv::CheckRequest q;
    q.set_key(key);
    rv::CheckReply reply;
    grpc::ClientContext c;
    c.set_deadline(DeadlineIn(o_.timeout_ms));
    grpc::Status status = stub_->Check(&c, q, &reply);
    OF_CHECK(status.ok(), kRuntime, "rank ", o_.rank, " cannot check rendezvous key '", key, "' at ", where_, ": ",
             status.error_message());
    return reply.set();
  }

  std::string LostRanks(const std::vector<int>& among) override {
    rv::StatusReply reply;
    grpc::ClientContext c;
    c.set_deadline(DeadlineIn(std::min<int64_t>(o_.timeout_ms, 2000)));
    grpc::Status status = stub_->Status(&c, rv::StatusRequest(), &reply);
    auto in = [&](int r) { return std::find(among.begin(), among.end(), r) != among.end(); };
    if (!status.ok())  // the store's process is gone (or its host unreachable): that is rank 0
      return in(0) && o_.rank != 0 ? "0 (it served the rendezvous store at " + where_ + ", which is unreachable)" : "";
    std::string text;
    for (int i = 0; i < reply.lost_size(); ++i)
      if (in(reply.lost(i))) text += (text.empty() ? "" : ", ") + StrCat(reply.lost(i), " on ", reply.lost_hosts(i));
    for (int r : reply.never_joined())
      if (in(r)) text += (text.empty() ? "" : ", ") + StrCat(r, " (never joined)");
    return text;
  }

  void Leave() override {
    std::lock_guard<std::mutex> lock(leave_mutex_);
    if (!membership_) return;
    rv::LeaveRequest q;
    q.set_rank(o_.rank);
    rv::LeaveReply reply;
    grpc::ClientContext c;
    c.set_deadline(DeadlineIn(2000));
    (void)stub_->Leave(&c, q, &reply);  // best effort: the store may be gone already
    if (served_) {
      served_->service->AwaitOthers(o_.rank, Clock::now() + std::chrono::milliseconds(o_.timeout_ms));
      served_->server->Shutdown(DeadlineIn(100));
    }
    membership_context_.TryCancel();
    (void)membership_->Finish();
    membership_.reset();
    if (served_) served_->server->Wait();
  }

 private:
  const TcpStoreOptions o_;
  const std::string where_;
  std::unique_ptr<ServedStore> served_;  // declared first: outlives the client's calls into it
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rv::Store::Stub> stub_;
  grpc::ClientContext membership_context_;
  std::unique_ptr<grpc::ClientReader<rv::JoinAccepted>> membership_;
  std::mutex leave_mutex_;
};

}  // namespace

std::shared_ptr<RendezvousStore> ConnectTcpStore(const TcpStoreOptions& o) {
  OF_REQUIRE(o.world_size >= 1 && o.rank >= 0 && o.rank < o.world_size, "rank ", o.rank, " is not in a job of ",
             o.world_size, " ranks");
  OF_REQUIRE(o.master_port >= 1 && o.master_port <= 65535, "MASTER_PORT ", o.master_port, " is not a TCP port");
  OF_REQUIRE(!o.master_addr.empty(), "no MASTER_ADDR for the rendezvous store");
  OF_REQUIRE(o.timeout_ms > 0, "the rendezvous timeout must be positive");
  std::unique_ptr<ServedStore> served;
  if (o.serve) served = Serve(o);
  return std::make_shared<TcpStore>(o, std::move(served));
}

}  // namespace oneflow
