#include "worker-runtime/store/store_client.h"

#include <algorithm>
#include <thread>

#include "worker-runtime/store/auth.h"
#include "worker-runtime/store/messages.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::store {

namespace sp = store::protocol;

namespace {

constexpr size_t kMaxResponseBytes = 64u << 20;

}  // namespace

StatusOr<std::unique_ptr<StoreClient>> StoreClient::Connect(StoreClientOptions options) {
  if (options.secret.empty()) return InvalidArgumentError("store client needs a non-empty job secret");
  Deadline deadline = DeadlineIn(options.connect_timeout);
  StatusOr<Socket> socket = UnavailableError("not connected");
  for (auto backoff = std::chrono::milliseconds(5);;) {
    socket = Socket::Connect(options.host, options.port, deadline);
    if (socket.ok() || Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);  // rank 0 may still be starting the server
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  if (!socket.ok()) return socket.status().WithContext("connecting to the rendezvous store");
  Socket& s = *socket;
  Deadline io = DeadlineIn(options.io_timeout);
  RINGMASTER_ASSIGN_OR_RETURN(std::string challenge, ReadFrame(s, 1024, io, options.io_timeout));
  RINGMASTER_ASSIGN_OR_RETURN(std::string server_nonce, sp::DecodeChallenge(challenge));
  sp::Hello hello;
  RINGMASTER_ASSIGN_OR_RETURN(hello.client_nonce, RandomNonce());
  hello.generation = options.generation;
  hello.rank = options.rank;
  hello.mac = HmacSha256(options.secret,
                         sp::ClientProofMessage(server_nonce, hello.client_nonce, options.generation, options.rank));
  RINGMASTER_RETURN_IF_ERROR(WriteFrame(s, sp::EncodeHello(hello), io));
  StatusOr<std::string> payload = ReadFrame(s, 1 << 17, io, options.io_timeout);
  if (!payload.ok()) {
    // Not a verdict on the secret: a server that refuses one says so in a frame (Unauthenticated, below). A
    // connection closed here is a store going away -- rank 0 exiting at the job's end, or restarting -- which a
    // rendezvous retries until its deadline or the next generation.
    return UnavailableError("store closed the connection during the handshake: " + payload.status().ToString());
  }
  RINGMASTER_ASSIGN_OR_RETURN(sp::Response welcome, sp::DecodeResponse(*payload, kMacBytes));
  RINGMASTER_RETURN_IF_ERROR(welcome.status);
  if (!MacEquals(welcome.value, HmacSha256(options.secret, sp::ServerProofMessage(hello.client_nonce, server_nonce)))) {
    return UnauthenticatedError("store server failed to prove it holds the job secret");
  }
  return std::unique_ptr<StoreClient>(new StoreClient(std::move(options), std::move(s)));
}

StatusOr<std::string> StoreClient::Call(sp::Op op, const std::vector<std::string>& keys, const std::string& value,
                                        std::chrono::milliseconds wait) {
  // A server caps waits far below this; the cap keeps now + wait from overflowing the clock.
  wait = std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(std::chrono::hours(24 * 30)));
  const std::string request = sp::EncodeRequest({op, keys, value, static_cast<uint64_t>(wait.count())});
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) return UnavailableError("store connection was lost by an earlier request");
  Deadline deadline = DeadlineIn(options_.io_timeout + wait);
  Status sent = WriteFrame(socket_, request, deadline);
  StatusOr<std::string> response =
      sent.ok() ? ReadFrame(socket_, kMaxResponseBytes, deadline, options_.io_timeout) : StatusOr<std::string>(sent);
  if (!response.ok()) {
    broken_ = true;
    return UnavailableError("rendezvous store request failed: " + response.status().ToString());
  }
  RINGMASTER_ASSIGN_OR_RETURN(sp::Response decoded, sp::DecodeResponse(*response, kMaxResponseBytes));
  RINGMASTER_RETURN_IF_ERROR(decoded.status);
  return std::move(decoded.value);
}

Status StoreClient::Set(const std::string& key, const std::string& value) {
  return Call(sp::Op::kSet, {key}, value, std::chrono::milliseconds(0)).status();
}

StatusOr<std::string> StoreClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  return Call(sp::Op::kGet, {key}, {}, timeout);
}

Status StoreClient::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  if (keys.empty()) return Status::Ok();
  return Call(sp::Op::kWait, keys, {}, timeout).status();
}

StatusOr<int64_t> StoreClient::Add(const std::string& key, int64_t delta) {
  return AddOnceReached(key, delta, std::chrono::milliseconds(0));
}

StatusOr<int64_t> StoreClient::AddOnceReached(const std::string& key, int64_t delta, std::chrono::milliseconds wait) {
  WireWriter v;
  v.U64(static_cast<uint64_t>(delta));
  RINGMASTER_ASSIGN_OR_RETURN(std::string out, Call(sp::Op::kAdd, {key}, v.data(), wait));
  WireReader r(out);
  RINGMASTER_ASSIGN_OR_RETURN(uint64_t n, r.U64());
  return static_cast<int64_t>(n);
}

}  // namespace ringmaster::store
