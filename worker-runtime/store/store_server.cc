#include "worker-runtime/store/store_server.h"

#include <algorithm>

#include "worker-runtime/store/auth.h"
#include "worker-runtime/store/messages.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::store {

namespace sp = store::protocol;

struct StoreServer::Connection {
  Socket socket;
  std::thread thread;
  bool done = false;  // guarded by StoreServer::mu_
};

namespace {

using sp::EncodeResponse;

std::string ScopedKey(uint64_t generation, const std::string& key) { return std::to_string(generation) + "/" + key; }

}  // namespace

StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(StoreServerOptions options) {
  RINGMASTER_ASSIGN_OR_RETURN(Socket listener, Socket::Listen(options.host, options.port));
  return StartOnSocket(std::move(listener), std::move(options));
}

StatusOr<std::unique_ptr<StoreServer>> StoreServer::StartOnSocket(Socket listener, StoreServerOptions options) {
  if (options.secret.empty()) return InvalidArgumentError("store server needs a non-empty job secret");
  if (!listener.valid()) return InvalidArgumentError("store server needs a listening socket");
  std::unique_ptr<StoreServer> server(new StoreServer(std::move(listener), std::move(options)));
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

StoreServer::StoreServer(Socket listener, StoreServerOptions options)
    : options_(std::move(options)), listener_(std::move(listener)), generation_(options_.generation) {
  port_ = listener_.LocalPort();
}

StoreServer::~StoreServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& c : connections_) c->socket.Shutdown();
  }
  changed_.notify_all();
  listener_.Shutdown();
  if (accept_thread_.joinable()) accept_thread_.join();
  // No new connections now; join the rest.
  std::list<std::unique_ptr<Connection>> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns.swap(connections_);
  }
  for (auto& c : conns) {
    if (c->thread.joinable()) c->thread.join();
  }
}

Status StoreServer::AdvanceGeneration(uint64_t generation) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation <= generation_) {
      return InvalidArgumentError("generation " + std::to_string(generation) + " is not newer than " +
                                  std::to_string(generation_));
    }
    generation_ = generation;
    data_.clear();
  }
  changed_.notify_all();
  return Status::Ok();
}

uint64_t StoreServer::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}
uint64_t StoreServer::newest_requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return newest_requested_;
}
uint64_t StoreServer::held_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_requests_;
}
uint64_t StoreServer::rejected_handshakes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_handshakes_;
}
uint64_t StoreServer::dropped_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_connections_;
}

void StoreServer::ReapFinishedLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();  // it has finished; join is immediate
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void StoreServer::AcceptLoop() {
  for (;;) {
    StatusOr<Socket> accepted = listener_.Accept(DeadlineIn(std::chrono::hours(24)));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    if (!accepted.ok()) {
      if (accepted.status().code() == StatusCode::kDeadlineExceeded) continue;
      return;  // listener shut down or broken
    }
    ReapFinishedLocked();
    if (connections_.size() >= options_.max_connections) {
      ++dropped_connections_;
      continue;  // the Socket closes as it goes out of scope
    }
    auto conn = std::make_unique<Connection>();
    conn->socket = std::move(accepted).value();
    Connection* raw = conn.get();
    connections_.push_back(std::move(conn));
    raw->thread = std::thread([this, raw] { Serve(raw); });
  }
}

Status StoreServer::Handshake(Socket& socket, uint64_t* generation) {
  Deadline deadline = DeadlineIn(options_.io_timeout);
  RINGMASTER_ASSIGN_OR_RETURN(std::string server_nonce, RandomNonce());
  RINGMASTER_RETURN_IF_ERROR(WriteFrame(socket, sp::EncodeChallenge(server_nonce), deadline));
  RINGMASTER_ASSIGN_OR_RETURN(std::string payload,
                              ReadFrame(socket, sp::kMaxHelloBytes, deadline, options_.io_timeout));
  RINGMASTER_ASSIGN_OR_RETURN(sp::Hello hello, sp::DecodeHello(payload));
  const uint64_t gen = hello.generation;
  const uint32_t rank = hello.rank;
  std::string expected =
      HmacSha256(options_.secret, sp::ClientProofMessage(server_nonce, hello.client_nonce, gen, rank));
  if (!MacEquals(hello.mac, expected)) {
    Status refused = UnauthenticatedError("store refused rank " + std::to_string(rank) + ": bad job secret");
    (void)WriteFrame(socket, EncodeResponse(refused), deadline);
    return refused;
  }
  uint64_t current = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    current = generation_;
    if (gen >= current) newest_requested_ = std::max(newest_requested_, gen);
  }
  if (gen < current) {
    Status refused = AbortedError("store refused rank " + std::to_string(rank) + ": generation " + std::to_string(gen) +
                                  " is stale (current " + std::to_string(current) + ")");
    (void)WriteFrame(socket, EncodeResponse(refused), deadline);
    return refused;
  }
  std::string proof = HmacSha256(options_.secret, sp::ServerProofMessage(hello.client_nonce, server_nonce));
  RINGMASTER_RETURN_IF_ERROR(WriteFrame(socket, EncodeResponse(Status::Ok(), proof), deadline));
  *generation = gen;
  return Status::Ok();
}

void StoreServer::Serve(Connection* conn) {
  Socket& socket = conn->socket;
  uint64_t generation = 0;
  Status hs = Handshake(socket, &generation);
  if (!hs.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++rejected_handshakes_;
    conn->done = true;
    socket.Shutdown();  // the peer sees EOF now, not when the thread is reaped
    return;
  }
  const size_t max_frame = options_.max_value_bytes + sp::kMaxKeys * (sp::kMaxKeyBytes + 4) + 64;
  for (;;) {
    StatusOr<std::string> request =
        ReadFrame(socket, max_frame, DeadlineIn(options_.idle_timeout), options_.io_timeout);
    if (!request.ok()) break;  // closed, garbled length, truncated body: drop the connection
    std::string response = HandleRequest(*request, generation);
    if (response.empty()) break;  // malformed request: drop
    if (!WriteFrame(socket, response, DeadlineIn(options_.io_timeout)).ok()) break;
  }
  socket.Shutdown();
  std::lock_guard<std::mutex> lock(mu_);
  conn->done = true;
}

std::string StoreServer::HandleRequest(std::string_view payload, uint64_t conn_generation) {
  StatusOr<sp::Request> request = sp::DecodeRequest(payload, options_.max_value_bytes);
  if (!request.ok()) return {};
  const sp::Op op = request->op;
  std::vector<std::string> keys;
  for (const std::string& key : request->keys) keys.push_back(ScopedKey(conn_generation, key));
  std::string& value = request->value;

  // How long the request may wait: for its keys (Get, Wait), and for every op on a connection whose generation
  // the server has not reached yet. Capped before it becomes a duration: a timeout near 2^64 ms must not
  // overflow the clock.
  const auto wait = std::chrono::milliseconds(
      std::min<uint64_t>(request->timeout_ms, static_cast<uint64_t>(std::max<int64_t>(0, options_.max_wait.count()))));
  const Deadline deadline = DeadlineIn(wait);

  std::unique_lock<std::mutex> lock(mu_);
  auto generation_status = [&]() -> Status {
    if (stopping_) return UnavailableError("store server is shutting down");
    if (conn_generation < generation_) {
      return AbortedError("generation " + std::to_string(conn_generation) + " is stale (store is at " +
                          std::to_string(generation_) + ")");
    }
    if (conn_generation > generation_) {
      return UnavailableError("store has not reached generation " + std::to_string(conn_generation) + " yet");
    }
    return Status::Ok();
  };
  // A connection ahead of the server (a member that starts the next attempt of a generation before rank 0 has
  // opened it) is held until the server reaches its generation, moves past it or stops, within the request's
  // timeout; then it is answered as usual (Unavailable when the server still has not reached it). The member
  // learns the moment rank 0 opens the attempt instead of polling for it (ElasticDriver::Rendezvous).
  if (!stopping_ && conn_generation > generation_) {
    ++held_requests_;
    while (!stopping_ && conn_generation > generation_) {
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    --held_requests_;
  }
  if (Status s = generation_status(); !s.ok()) return EncodeResponse(s);

  switch (op) {
    case sp::Op::kSet:
      data_[keys[0]] = std::move(value);
      lock.unlock();
      changed_.notify_all();
      return EncodeResponse(Status::Ok());
    case sp::Op::kAdd: {
      WireReader vr(value);  // DecodeRequest checked: 8 bytes
      int64_t delta = static_cast<int64_t>(vr.U64().value());
      int64_t current = 0;
      auto it = data_.find(keys[0]);
      if (it != data_.end() && it->second.size() == 8) {
        WireReader cr(it->second);
        current = static_cast<int64_t>(cr.U64().value());
      }
      if (__builtin_add_overflow(current, delta, &current)) {  // a client must not make the server overflow
        return EncodeResponse(OutOfRangeError("adding " + std::to_string(delta) + " to store counter '" +
                                              request->keys[0] + "' overflows 64 bits"));
      }
      WireWriter w;
      w.U64(static_cast<uint64_t>(current));
      data_[keys[0]] = w.data();
      lock.unlock();
      changed_.notify_all();
      return EncodeResponse(Status::Ok(), w.data());
    }
    case sp::Op::kGet:
    case sp::Op::kWait: {
      auto all_present = [&] {
        return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data_.count(k) > 0; });
      };
      for (;;) {
        if (Status s = generation_status(); !s.ok()) return EncodeResponse(s);
        if (all_present()) break;
        if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !all_present()) {
          if (Status s = generation_status(); !s.ok()) return EncodeResponse(s);
          return EncodeResponse(DeadlineExceededError("timed out after " + std::to_string(wait.count()) +
                                                      " ms waiting for store key '" +
                                                      keys[0].substr(keys[0].find('/') + 1) + "'"));
        }
      }
      return EncodeResponse(Status::Ok(), op == sp::Op::kGet ? data_[keys[0]] : std::string());
    }
  }
  return {};
}

}  // namespace ringmaster::store
