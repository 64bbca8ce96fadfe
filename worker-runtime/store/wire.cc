#include "worker-runtime/store/wire.h"

namespace ringmaster::store {

WireWriter& WireWriter::U8(uint8_t v) {
  data_.push_back(static_cast<char>(v));
  return *this;
}
WireWriter& WireWriter::U32(uint32_t v) {
  for (int i = 3; i >= 0; --i) data_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}
WireWriter& WireWriter::U64(uint64_t v) {
  for (int i = 7; i >= 0; --i) data_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return *this;
}
WireWriter& WireWriter::Bytes(std::string_view v) {
  U32(static_cast<uint32_t>(v.size()));
  data_.append(v);
  return *this;
}

StatusOr<uint8_t> WireReader::U8() {
  if (data_.size() - pos_ < 1) return InvalidArgumentError("truncated message");
  return static_cast<uint8_t>(data_[pos_++]);
}
StatusOr<uint32_t> WireReader::U32() {
  if (data_.size() - pos_ < 4) return InvalidArgumentError("truncated message");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(data_[pos_++]);
  return v;
}
StatusOr<uint64_t> WireReader::U64() {
  if (data_.size() - pos_ < 8) return InvalidArgumentError("truncated message");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(data_[pos_++]);
  return v;
}
StatusOr<std::string> WireReader::Bytes(size_t max_len) {
  RINGMASTER_ASSIGN_OR_RETURN(uint32_t len, U32());
  if (len > max_len) return InvalidArgumentError("byte string of " + std::to_string(len) + " bytes is too long");
  if (data_.size() - pos_ < len) return InvalidArgumentError("truncated message");
  std::string out(data_.substr(pos_, len));
  pos_ += len;
  return out;
}

Status WriteFrame(Socket& socket, std::string_view payload, Deadline deadline) {
  WireWriter header;
  header.U32(static_cast<uint32_t>(payload.size()));
  std::string frame = header.data();
  frame.append(payload);
  return socket.WriteAll(frame, deadline);
}

StatusOr<std::string> ReadFrame(Socket& socket, size_t max_len, Deadline first_byte_deadline,
                                std::chrono::milliseconds body_timeout) {
  unsigned char header[4];
  RINGMASTER_RETURN_IF_ERROR(socket.ReadExact(header, 1, first_byte_deadline));
  Deadline body_deadline = DeadlineIn(body_timeout);
  RINGMASTER_RETURN_IF_ERROR(socket.ReadExact(header + 1, 3, body_deadline));
  uint32_t len = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) | header[3];
  if (len > max_len) {
    return ResourceExhaustedError("frame of " + std::to_string(len) + " bytes exceeds the limit of " +
                                  std::to_string(max_len));
  }
  std::string payload(len, '\0');
  RINGMASTER_RETURN_IF_ERROR(socket.ReadExact(payload.data(), len, body_deadline));
  return payload;
}

}  // namespace ringmaster::store
