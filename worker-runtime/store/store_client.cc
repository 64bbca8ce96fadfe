#include "store/store_client.h"

#include <thread>

#include "store/auth.h"
#include "store/protocol.h"
#include "store/wire.h"

namespace ringmaster::runtime {

namespace sp = store_protocol;

namespace {

constexpr size_t kMaxResponseBytes = 64u << 20;

Status DecodeStatus(WireReader& r) {
  RINGMASTER_ASSIGN_OR_RETURN(uint8_t code, r.U8());
  RINGMASTER_ASSIGN_OR_RETURN(std::string message, r.Bytes(1 << 16));
  if (code == 0) return Status::Ok();
  if (code > static_cast<uint8_t>(StatusCode::kGone)) return InternalError("store sent unknown status code");
  return Status(static_cast<StatusCode>(code), message);
}

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
  if (challenge.size() != sp::kMagic.size() + kNonceBytes || challenge.compare(0, sp::kMagic.size(), sp::kMagic) != 0) {
    return UnauthenticatedError("peer at the store address does not speak the store protocol");
  }
  std::string server_nonce = challenge.substr(sp::kMagic.size());
  RINGMASTER_ASSIGN_OR_RETURN(std::string client_nonce, RandomNonce());
  WireWriter hello;
  hello.Bytes(client_nonce)
      .U64(options.generation)
      .U32(options.rank)
      .Bytes(HmacSha256(options.secret,
                        sp::ClientProofMessage(server_nonce, client_nonce, options.generation, options.rank)));
  RINGMASTER_RETURN_IF_ERROR(WriteFrame(s, hello.data(), io));
  StatusOr<std::string> welcome = ReadFrame(s, 1 << 17, io, options.io_timeout);
  if (!welcome.ok()) {
    return UnauthenticatedError("store closed the connection during the handshake: " + welcome.status().ToString());
  }
  WireReader r(*welcome);
  RINGMASTER_RETURN_IF_ERROR(DecodeStatus(r));
  RINGMASTER_ASSIGN_OR_RETURN(std::string proof, r.Bytes(kMacBytes));
  if (!MacEquals(proof, HmacSha256(options.secret, sp::ServerProofMessage(client_nonce, server_nonce)))) {
    return UnauthenticatedError("store server failed to prove it holds the job secret");
  }
  return std::unique_ptr<StoreClient>(new StoreClient(std::move(options), std::move(s)));
}

StatusOr<std::string> StoreClient::Call(uint8_t op, const std::vector<std::string>& keys, const std::string& value,
                                        std::chrono::milliseconds wait) {
  WireWriter w;
  w.U8(op).U32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.Bytes(k);
  w.Bytes(value).U64(static_cast<uint64_t>(wait.count()));
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) return UnavailableError("store connection was lost by an earlier request");
  Deadline deadline = DeadlineIn(options_.io_timeout + wait);
  Status sent = WriteFrame(socket_, w.data(), deadline);
  StatusOr<std::string> response = sent.ok() ? ReadFrame(socket_, kMaxResponseBytes, deadline, options_.io_timeout)
                                             : StatusOr<std::string>(sent);
  if (!response.ok()) {
    broken_ = true;
    return UnavailableError("rendezvous store request failed: " + response.status().ToString());
  }
  WireReader r(*response);
  RINGMASTER_RETURN_IF_ERROR(DecodeStatus(r));
  return r.Bytes(kMaxResponseBytes);
}

Status StoreClient::Set(const std::string& key, const std::string& value) {
  return Call(static_cast<uint8_t>(sp::Op::kSet), {key}, value, std::chrono::milliseconds(0)).status();
}

StatusOr<std::string> StoreClient::Get(const std::string& key, std::chrono::milliseconds timeout) {
  return Call(static_cast<uint8_t>(sp::Op::kGet), {key}, {}, timeout);
}

Status StoreClient::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  if (keys.empty()) return Status::Ok();
  return Call(static_cast<uint8_t>(sp::Op::kWait), keys, {}, timeout).status();
}

StatusOr<int64_t> StoreClient::Add(const std::string& key, int64_t delta) {
  WireWriter v;
  v.U64(static_cast<uint64_t>(delta));
  RINGMASTER_ASSIGN_OR_RETURN(std::string out, Call(static_cast<uint8_t>(sp::Op::kAdd), {key}, v.data(),
                                                    std::chrono::milliseconds(0)));
  WireReader r(out);
  RINGMASTER_ASSIGN_OR_RETURN(uint64_t n, r.U64());
  return static_cast<int64_t>(n);
}

}  // namespace ringmaster::runtime
