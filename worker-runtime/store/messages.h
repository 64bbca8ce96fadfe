// The rendezvous store's messages (protocol.h) as values, with their encoders and decoders: every byte
// the server or a client reads from the network after framing goes through one of the Decode functions.
// Decoders never read past their input and accept exactly what the matching encoder writes (a decoded
// message re-encodes to the same bytes), so a garbled or hostile peer gets a clean error.
//
// Errors: InvalidArgument naming the message ("malformed store request: ...").
// Thread-safety: values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "worker-runtime/store/protocol.h"

namespace ringmaster::store::protocol {

// Limits a server enforces on what clients send.
inline constexpr size_t kMaxKeys = 4096;
inline constexpr size_t kMaxKeyBytes = 4096;
inline constexpr size_t kMaxHelloBytes = 1024;
// Longest status message a client accepts in a response.
inline constexpr size_t kMaxStatusMessageBytes = 1 << 16;

// CHALLENGE: kMagic followed by the server's nonce (kNonceBytes).
std::string EncodeChallenge(std::string_view server_nonce);
// The server nonce. Errors: Unauthenticated when the payload is not a challenge (the peer does not
// speak the store protocol).
StatusOr<std::string> DecodeChallenge(std::string_view payload);

// HELLO: the client's half of the handshake.
struct Hello {
  std::string client_nonce;  // kNonceBytes
  uint64_t generation = 0;
  uint32_t rank = 0;
  std::string mac;  // at most kMacBytes

  bool operator==(const Hello&) const = default;
};
std::string EncodeHello(const Hello& hello);
StatusOr<Hello> DecodeHello(std::string_view payload);

// REQUEST: one operation. A decoded request is well-formed for its op: Set, Get and Add name one key,
// Wait at least one; an Add's value is its 8-byte big-endian delta.
struct Request {
  Op op = Op::kGet;
  std::vector<std::string> keys;  // at most kMaxKeys, each at most kMaxKeyBytes
  std::string value;
  uint64_t timeout_ms = 0;

  bool operator==(const Request&) const = default;
};
std::string EncodeRequest(const Request& request);
StatusOr<Request> DecodeRequest(std::string_view payload, size_t max_value_bytes);

// RESPONSE (and WELCOME, whose value is the server's proof): the outcome and a value.
struct Response {
  Status status;  // the operation's outcome, as the server sent it
  std::string value;

  bool operator==(const Response&) const = default;
};
std::string EncodeResponse(const Status& status, std::string_view value = {});
// Errors (of the message itself, not the status it carries): InvalidArgument when malformed or when
// the value is longer than `max_value_bytes`; Internal for a status code this build does not know.
StatusOr<Response> DecodeResponse(std::string_view payload, size_t max_value_bytes);

}  // namespace ringmaster::store::protocol
