// libFuzzer target: a real store server (store_server.h) fed requests by an authenticated client. The
// input is a sequence of request payloads, each a 2-byte big-endian length and that many bytes; each
// goes out as one frame and the server must answer with a well-formed response or close the connection
// (a malformed request), never crash, hang or misbehave. Every input starts a new generation, so the
// server's map stays small however long the run.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "worker-runtime/store/auth.h"
#include "worker-runtime/store/messages.h"
#include "worker-runtime/store/store_server.h"
#include "worker-runtime/store/wire.h"

namespace sp = ringmaster::store::protocol;
using namespace ringmaster::store;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kSecret = "fuzz-secret";

void Check(bool ok) {
  if (!ok) std::abort();
}

StoreServer& Server() {
  static std::unique_ptr<StoreServer> server = [] {
    StoreServerOptions o;
    o.secret = std::string(kSecret);
    o.generation = 1;
    o.max_value_bytes = 1 << 16;
    o.io_timeout = 2s;
    o.max_wait = 2ms;  // Get/Wait of a missing key answer quickly
    auto s = StoreServer::Start(o);
    if (!s.ok()) std::abort();
    return std::move(s).value();
  }();
  return *server;
}

// An authenticated connection at `generation`, as StoreClient::Connect makes one.
Socket Connect(uint64_t generation) {
  Deadline deadline = DeadlineIn(5s);
  auto socket = Socket::Connect("127.0.0.1", Server().port(), deadline);
  Check(socket.ok());
  auto challenge = ReadFrame(*socket, 1024, deadline, 5s);
  Check(challenge.ok());
  auto server_nonce = sp::DecodeChallenge(*challenge);
  Check(server_nonce.ok());
  sp::Hello hello;
  hello.client_nonce = std::string(kNonceBytes, 'n');
  hello.generation = generation;
  hello.rank = 0;
  hello.mac = HmacSha256(kSecret, sp::ClientProofMessage(*server_nonce, hello.client_nonce, generation, 0));
  Check(WriteFrame(*socket, sp::EncodeHello(hello), deadline).ok());
  auto welcome = ReadFrame(*socket, 1 << 17, deadline, 5s);
  Check(welcome.ok());
  auto decoded = sp::DecodeResponse(*welcome, kMacBytes);
  Check(decoded.ok() && decoded->status.ok());
  return std::move(socket).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint64_t generation = Server().generation() + 1;
  Check(Server().AdvanceGeneration(generation).ok());
  Socket socket = Connect(generation);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (in.size() >= 2) {
    const size_t len = (static_cast<uint8_t>(in[0]) << 8) | static_cast<uint8_t>(in[1]);
    std::string_view payload = in.substr(2, len);
    in.remove_prefix(2 + payload.size());
    const bool well_formed = sp::DecodeRequest(payload, 1 << 16).ok();
    Check(WriteFrame(socket, payload, DeadlineIn(5s)).ok());
    auto frame = ReadFrame(socket, 64u << 20, DeadlineIn(5s), 5s);
    if (!frame.ok()) {
      // Only a malformed request closes the connection; a hang would show as DeadlineExceeded.
      Check(!well_formed && frame.status().code() == ringmaster::StatusCode::kUnavailable);
      return 0;
    }
    Check(well_formed);
    auto response = sp::DecodeResponse(*frame, 64u << 20);
    Check(response.ok());
    auto request = sp::DecodeRequest(payload, 1 << 16);
    if (response->status.ok() && request->op == sp::Op::kAdd) Check(response->value.size() == 8);
    if (response->status.ok() && request->op == sp::Op::kSet) Check(response->value.empty());
  }
  return 0;
}
