// The rendezvous store's messages, shared by client and server.
//
//   server -> client  CHALLENGE  "RMS1" server_nonce
//   client -> server  HELLO      client_nonce generation:u64 rank:u32 mac
//                                mac = HMAC(secret, "client" server_nonce client_nonce generation rank)
//   server -> client  WELCOME    code:u8 message [server_mac = HMAC(secret, "server" client_nonce server_nonce)]
//   client -> server  REQUEST    op:u8 key-count:u32 keys... value timeout_ms:u64
//   server -> client  RESPONSE   code:u8 message value
//
// timeout_ms: how long the server may hold the request -- a Get or Wait for its keys, and any request of a
// connection whose generation the server has not reached yet for that generation (store_server.h).
//
// Every message is one frame (see wire.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringmaster::store::protocol {

inline constexpr std::string_view kMagic = "RMS1";

enum class Op : uint8_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4 };

inline std::string ClientProofMessage(std::string_view server_nonce, std::string_view client_nonce, uint64_t generation,
                                      uint32_t rank) {
  std::string m = "client";
  m.append(server_nonce);
  m.append(client_nonce);
  m.append(std::to_string(generation));
  m.push_back('/');
  m.append(std::to_string(rank));
  return m;
}

inline std::string ServerProofMessage(std::string_view client_nonce, std::string_view server_nonce) {
  std::string m = "server";
  m.append(client_nonce);
  m.append(server_nonce);
  return m;
}

}  // namespace ringmaster::store::protocol
