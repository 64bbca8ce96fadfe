// Framing and field encoding of the rendezvous store protocol.
//
// A frame is a 4-byte big-endian length followed by that many payload bytes;
// frames longer than the reader's limit are refused before any allocation.
// Payloads are sequences of fixed-width big-endian integers and
// length-prefixed byte strings. WireReader never reads past its input: every
// getter fails cleanly on truncated or garbled data.
//
// Thread-safety: values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "worker-runtime/store/socket.h"

namespace ringmaster::store {

class WireWriter {
 public:
  WireWriter& U8(uint8_t v);
  WireWriter& U32(uint32_t v);
  WireWriter& U64(uint64_t v);
  WireWriter& Bytes(std::string_view v);  // u32 length + bytes
  const std::string& data() const { return data_; }

 private:
  std::string data_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  // Errors: InvalidArgument "truncated message" when the input ends early, or
  // when a byte string is longer than `max_len`.
  StatusOr<uint8_t> U8();
  StatusOr<uint32_t> U32();
  StatusOr<uint64_t> U64();
  StatusOr<std::string> Bytes(size_t max_len = 1u << 30);
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Writes one frame. Errors: as Socket::WriteAll.
Status WriteFrame(Socket& socket, std::string_view payload, Deadline deadline);

// Reads one frame. `first_byte_deadline` bounds the wait for the frame to
// start (idle time); once a byte has arrived, the rest must arrive before
// `Clock::now() + body_timeout` (a truncated frame never holds a reader).
// Errors: Unavailable (closed), DeadlineExceeded, ResourceExhausted (frame
// longer than max_len).
StatusOr<std::string> ReadFrame(Socket& socket, size_t max_len, Deadline first_byte_deadline,
                                std::chrono::milliseconds body_timeout);

}  // namespace ringmaster::store
