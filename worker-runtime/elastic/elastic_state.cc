#include "worker-runtime/elastic/elastic_state.h"

#include <cstring>

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
  bytes_ = save_();
  step_ = step;
  cursor_ = cursor;
  has_state_ = true;
}

Status ElasticState::Restore() {
  if (!has_state_) {  // nothing committed yet: the initial bytes are the committed ones
    Commit(0, {});
    return Status::Ok();
  }
  return load_(bytes_);
}

std::string ElasticState::Encode() const {
  std::string out(kMagic, sizeof kMagic);
  PutU64(out, static_cast<uint64_t>(step_));
  PutU64(out, cursor_.epoch);
  PutU64(out, cursor_.committed);
  PutU64(out, bytes_.size());
  out += bytes_;
  return out;
}

Status ElasticState::Adopt(std::string_view in) {
  constexpr size_t kHeader = sizeof kMagic + 4 * 8;
  if (in.size() < kHeader || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0) {
    return DataLossError("elastic state: not an encoded state (" + std::to_string(in.size()) + " bytes)");
  }
  const uint64_t n = GetU64(in, sizeof kMagic + 24);
  if (n != in.size() - kHeader) return DataLossError("elastic state: length field disagrees with the size");
  step_ = static_cast<int64_t>(GetU64(in, sizeof kMagic));
  cursor_ = {GetU64(in, sizeof kMagic + 8), GetU64(in, sizeof kMagic + 16)};
  bytes_.assign(in.substr(kHeader));
  has_state_ = true;
  return Status::Ok();
}

}  // namespace ringmaster::elastic
