// libFuzzer target: the blobs a worker decodes when it loads a checkpoint -- the elastic state's
// "RMSTATE1" header and payload (ElasticState::Adopt) and the data cursor (data::DecodeCursor). No
// crash, no over-read; a DataLoss error otherwise; what decodes re-encodes to an equal value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "worker-runtime/data/sample_cursor.h"
#include "worker-runtime/elastic/elastic_state.h"

using ringmaster::Status;
using ringmaster::StatusCode;
namespace data = ringmaster::data;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(bytes), size);

  ringmaster::elastic::ElasticState state([] { return std::string(); }, [](std::string_view) { return Status::Ok(); });
  Status adopted = state.Adopt(in);
  if (adopted.ok()) {
    Check(state.has_state() && state.Encode() == in);  // the encoding is canonical
  } else {
    Check(adopted.code() == StatusCode::kDataLoss && !state.has_state());
  }

  auto cursor = data::DecodeCursor(in);
  if (cursor.ok()) {
    auto again = data::DecodeCursor(data::EncodeCursor(*cursor));
    Check(again.ok() && *again == *cursor);
  } else {
    Check(cursor.status().code() == StatusCode::kDataLoss && !cursor.status().message().empty());
  }
  return 0;
}
