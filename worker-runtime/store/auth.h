// HMAC-SHA256 challenge/response between store clients and the server: both
// sides prove they hold the per-job secret without sending it.
//
// Thread-safety: pure functions; OpenSSL's one-shot HMAC and RAND_bytes are
// thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace ringmaster::store {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;

// kNonceBytes of cryptographically random bytes. Errors: Internal.
StatusOr<std::string> RandomNonce();

// HMAC-SHA256(key, message), 32 raw bytes.
std::string HmacSha256(std::string_view key, std::string_view message);

// Constant-time comparison of two MACs.
bool MacEquals(std::string_view a, std::string_view b);

}  // namespace ringmaster::store
