#include "worker-runtime/elastic/elastic_state.h"

#include <cstring>

#include "worker-runtime/checkpoint/crc32c.h"

namespace ringmaster::elastic {

namespace {
constexpr char kMagic[8] = {'R', 'M', 'S', 'T', 'A', 'T', 'E', '1'};
void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
uint64_t GetU64(std::string_view in, size_t at) {
  uint64_t v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}
}  // namespace

void ElasticState::Commit(int64_t step, const data::SampleCursor& cursor) {
  Slot& slot = agreed_.valid && step > 0 ? tentative_ : agreed_;
  slot.bytes = save_();
  slot.step = step;
  slot.cursor = cursor;
  slot.valid = true;
  if (&slot == &agreed_) tentative_ = Slot{};
}

void ElasticState::Agree(int64_t step) {
  if (!tentative_.valid || tentative_.step > step) return;
  agreed_ = std::move(tentative_);
  tentative_ = Slot{};
}

Status ElasticState::Restore() {
  tentative_ = Slot{};
  if (!agreed_.valid) {  // nothing committed yet: the initial bytes are the committed ones
    Commit(0, {});
    return Status::Ok();
  }
  return load_(agreed_.bytes);
}

std::string ElasticState::EncodeSlot(const Slot& slot) {
  std::string out(kMagic, sizeof kMagic);
  PutU64(out, static_cast<uint64_t>(slot.step));
  PutU64(out, slot.cursor.epoch);
  PutU64(out, slot.cursor.committed);
  PutU64(out, slot.bytes.size());
  out += slot.bytes;
  return out;
}

size_t ElasticState::EncodedSize(bool tentative) const {
  const Slot& slot = tentative && tentative_.valid ? tentative_ : agreed_;
  return sizeof kMagic + 4 * sizeof(uint64_t) + slot.bytes.size();
}

uint32_t ElasticState::Checksum(const Slot& slot) {
  // The encoded form without building it: the header fields, then the bytes.
  const uint64_t header[4] = {static_cast<uint64_t>(slot.step), slot.cursor.epoch, slot.cursor.committed,
                              slot.bytes.size()};
  uint32_t crc = checkpoint::Crc32cExtend(0, kMagic, sizeof kMagic);
  crc = checkpoint::Crc32cExtend(crc, header, sizeof header);
  return checkpoint::Crc32cExtend(crc, slot.bytes.data(), slot.bytes.size());
}

Status ElasticState::Adopt(std::string_view in) {
  constexpr size_t kHeader = sizeof kMagic + 4 * 8;
  if (in.size() < kHeader || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0) {
    return DataLossError("elastic state: not an encoded state (" + std::to_string(in.size()) + " bytes)");
  }
  const uint64_t n = GetU64(in, sizeof kMagic + 24);
  if (n != in.size() - kHeader) return DataLossError("elastic state: length field disagrees with the size");
  agreed_.step = static_cast<int64_t>(GetU64(in, sizeof kMagic));
  agreed_.cursor = {GetU64(in, sizeof kMagic + 8), GetU64(in, sizeof kMagic + 16)};
  agreed_.bytes.assign(in.substr(kHeader));
  agreed_.valid = true;
  tentative_ = Slot{};
  return Status::Ok();
}

}  // namespace ringmaster::elastic
