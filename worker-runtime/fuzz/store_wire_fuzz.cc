// libFuzzer target: the rendezvous store's wire protocol, as both ends decode it (store/messages.h,
// store/wire.h). The first byte picks what the rest is: a request (what the server reads), a hello
// (the server, during the handshake), a response or welcome (a client), a challenge (a client), or a raw
// byte stream cut into frames by ReadFrame over a real socket. Decoders must never crash, hang or
// over-read; whatever decodes re-encodes to the same message; errors always say what was wrong.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "worker-runtime/store/messages.h"
#include "worker-runtime/store/socket.h"
#include "worker-runtime/store/wire.h"

namespace sp = ringmaster::store::protocol;
using ringmaster::Status;
using ringmaster::StatusCode;

namespace {

constexpr size_t kMaxValue = 1 << 16;

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzRequest(std::string_view payload) {
  auto request = sp::DecodeRequest(payload, kMaxValue);
  if (!request.ok()) {
    Check(request.status().code() == StatusCode::kInvalidArgument && !request.status().message().empty());
    return;
  }
  Check(!request->keys.empty() && request->keys.size() <= sp::kMaxKeys && request->value.size() <= kMaxValue);
  Check(request->op == sp::Op::kWait || request->keys.size() == 1);
  Check(request->op != sp::Op::kAdd || request->value.size() == 8);
  for (const std::string& key : request->keys) Check(key.size() <= sp::kMaxKeyBytes);
  Check(sp::EncodeRequest(*request) == payload);  // the encoding is canonical
}

void FuzzHello(std::string_view payload) {
  auto hello = sp::DecodeHello(payload);
  if (!hello.ok()) {
    Check(hello.status().code() == StatusCode::kInvalidArgument && !hello.status().message().empty());
    return;
  }
  Check(hello->client_nonce.size() == 32 && hello->mac.size() <= 32);
  Check(sp::EncodeHello(*hello) == payload);
}

void FuzzResponse(std::string_view payload) {
  auto response = sp::DecodeResponse(payload, kMaxValue);
  if (!response.ok()) {
    Check(!response.status().message().empty());
    return;
  }
  Check(response->value.size() <= kMaxValue);
  // An OK status carries no message, so re-encoding may drop bytes; the decoded message round-trips.
  auto again = sp::DecodeResponse(sp::EncodeResponse(response->status, response->value), kMaxValue);
  Check(again.ok() && *again == *response);
}

void FuzzChallenge(std::string_view payload) {
  auto nonce = sp::DecodeChallenge(payload);
  if (!nonce.ok()) {
    Check(nonce.status().code() == StatusCode::kUnauthenticated);
    return;
  }
  Check(sp::EncodeChallenge(*nonce) == payload);
}

// The bytes arrive on a socket whose peer then closes: ReadFrame must cut them into frames, refuse
// oversized ones before allocating, and end with Unavailable (never a hang: the peer is gone).
void FuzzFrames(std::string_view stream) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return;
  ringmaster::store::Socket reader(fds[0]), writer(fds[1]);
  // The input is at most a few KiB (libFuzzer's -max_len), far below the socket buffer.
  if (::send(writer.fd(), stream.data(), stream.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(stream.size())) return;
  writer.Shutdown();
  using namespace std::chrono_literals;
  for (;;) {
    auto frame = ringmaster::store::ReadFrame(reader, 1024, ringmaster::store::DeadlineIn(5s), 5s);
    if (!frame.ok()) {
      Check(frame.status().code() == StatusCode::kUnavailable ||
            frame.status().code() == StatusCode::kResourceExhausted);
      return;
    }
    Check(frame->size() <= 1024);
    FuzzRequest(*frame);
    FuzzResponse(*frame);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: FuzzRequest(payload); break;
    case 1: FuzzHello(payload); break;
    case 2: FuzzResponse(payload); break;
    case 3: FuzzChallenge(payload); break;
    default: FuzzFrames(payload); break;
  }
  return 0;
}
