#include "worker-runtime/store/messages.h"

#include "worker-runtime/store/auth.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::store::protocol {
namespace {

Status Malformed(std::string_view what, const Status& why) {
  return InvalidArgumentError("malformed store " + std::string(what) + ": " + why.message());
}

}  // namespace

std::string EncodeChallenge(std::string_view server_nonce) {
  std::string out(kMagic);
  out.append(server_nonce);
  return out;
}

StatusOr<std::string> DecodeChallenge(std::string_view payload) {
  if (payload.size() != kMagic.size() + kNonceBytes || !payload.starts_with(kMagic)) {
    return UnauthenticatedError("peer at the store address does not speak the store protocol");
  }
  return std::string(payload.substr(kMagic.size()));
}

std::string EncodeHello(const Hello& hello) {
  WireWriter w;
  w.Bytes(hello.client_nonce).U64(hello.generation).U32(hello.rank).Bytes(hello.mac);
  return w.data();
}

StatusOr<Hello> DecodeHello(std::string_view payload) {
  WireReader r(payload);
  Hello hello;
  auto read = [&]() -> Status {
    RINGMASTER_ASSIGN_OR_RETURN(hello.client_nonce, r.Bytes(kNonceBytes));
    RINGMASTER_ASSIGN_OR_RETURN(hello.generation, r.U64());
    RINGMASTER_ASSIGN_OR_RETURN(hello.rank, r.U32());
    RINGMASTER_ASSIGN_OR_RETURN(hello.mac, r.Bytes(kMacBytes));
    if (hello.client_nonce.size() != kNonceBytes) return InvalidArgumentError("client nonce is not 32 bytes");
    if (!r.AtEnd()) return InvalidArgumentError("trailing bytes");
    return Status::Ok();
  };
  if (Status s = read(); !s.ok()) return Malformed("hello", s);
  return hello;
}

std::string EncodeRequest(const Request& request) {
  WireWriter w;
  w.U8(static_cast<uint8_t>(request.op)).U32(static_cast<uint32_t>(request.keys.size()));
  for (const std::string& key : request.keys) w.Bytes(key);
  w.Bytes(request.value).U64(request.timeout_ms);
  return w.data();
}

StatusOr<Request> DecodeRequest(std::string_view payload, size_t max_value_bytes) {
  WireReader r(payload);
  Request request;
  auto read = [&]() -> Status {
    RINGMASTER_ASSIGN_OR_RETURN(uint8_t op, r.U8());
    if (op < static_cast<uint8_t>(Op::kSet) || op > static_cast<uint8_t>(Op::kAdd)) {
      return InvalidArgumentError("unknown op " + std::to_string(op));
    }
    request.op = static_cast<Op>(op);
    RINGMASTER_ASSIGN_OR_RETURN(uint32_t nkeys, r.U32());
    if (nkeys > kMaxKeys) return InvalidArgumentError(std::to_string(nkeys) + " keys, more than the limit");
    const bool one_key = request.op != Op::kWait;  // Wait: any number of keys but zero
    if (nkeys == 0 || (one_key && nkeys != 1)) {
      return InvalidArgumentError("op " + std::to_string(op) + " with " + std::to_string(nkeys) + " keys");
    }
    for (uint32_t i = 0; i < nkeys; ++i) {
      RINGMASTER_ASSIGN_OR_RETURN(std::string key, r.Bytes(kMaxKeyBytes));
      request.keys.push_back(std::move(key));
    }
    RINGMASTER_ASSIGN_OR_RETURN(request.value, r.Bytes(max_value_bytes));
    RINGMASTER_ASSIGN_OR_RETURN(request.timeout_ms, r.U64());
    if (request.op == Op::kAdd && request.value.size() != 8) return InvalidArgumentError("add without an 8-byte delta");
    if (!r.AtEnd()) return InvalidArgumentError("trailing bytes");
    return Status::Ok();
  };
  if (Status s = read(); !s.ok()) return Malformed("request", s);
  return request;
}

std::string EncodeResponse(const Status& status, std::string_view value) {
  WireWriter w;
  w.U8(static_cast<uint8_t>(status.code())).Bytes(status.message()).Bytes(value);
  return w.data();
}

StatusOr<Response> DecodeResponse(std::string_view payload, size_t max_value_bytes) {
  WireReader r(payload);
  Response response;
  auto read = [&]() -> Status {
    RINGMASTER_ASSIGN_OR_RETURN(uint8_t code, r.U8());
    RINGMASTER_ASSIGN_OR_RETURN(std::string message, r.Bytes(kMaxStatusMessageBytes));
    RINGMASTER_ASSIGN_OR_RETURN(response.value, r.Bytes(max_value_bytes));
    if (!r.AtEnd()) return InvalidArgumentError("trailing bytes");
    if (code > static_cast<uint8_t>(StatusCode::kGone)) {
      return InternalError("store sent unknown status code " + std::to_string(code));
    }
    if (code != 0) response.status = Status(static_cast<StatusCode>(code), std::move(message));
    return Status::Ok();
  };
  if (Status s = read(); !s.ok()) {
    if (s.code() == StatusCode::kInternal) return s;
    return Malformed("response", s);
  }
  return response;
}

}  // namespace ringmaster::store::protocol
