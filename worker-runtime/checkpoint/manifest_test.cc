#include "worker-runtime/checkpoint/manifest.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::checkpoint {
namespace {

Manifest Sample() {
  Manifest m;
  m.step = 1200;
  m.world_size = 8;
  m.created_unix_ms = 1717200000123;
  m.blobs = {{"model", 1048576, 0xe3069283u}, {"optimizer", 0, 0}, {"data.cursor", 42, 0xdeadbeefu}};
  return m;
}

TEST(ManifestTest, RoundTrip) {
  const std::string text = SerializeManifest(Sample());
  EXPECT_NE(text.find("\"created_at\": \"2024-06-01T00:00:00.123Z\""), std::string::npos) << text;
  StatusOr<Manifest> back = ParseManifest(text, "x/MANIFEST.json");
  ASSERT_OK(back) << back.status();
  EXPECT_EQ(*back, Sample());
}

// Found by fuzz_checkpoint_manifest (corpus: checkpoint_manifest/created_year_1): a creation time beyond
// system_clock's +-292 years overflowed converting to nanoseconds while serializing.
TEST(ManifestTest, AnyCreationTimeSerializes) {
  Manifest m = Sample();
  m.created_unix_ms = -62135596800000;
  const std::string text = SerializeManifest(m);
  EXPECT_NE(text.find("\"created_at\": \"0001-01-01T00:00:00.000Z\""), std::string::npos) << text;
  for (int64_t ms : {INT64_MIN, INT64_MAX}) {
    m.created_unix_ms = ms;
    StatusOr<Manifest> back = ParseManifest(SerializeManifest(m), "x/MANIFEST.json");
    ASSERT_OK(back) << back.status();
    EXPECT_EQ(*back, m);
  }
}

TEST(ManifestTest, EveryTruncationAndByteFlipIsRejectedOrHarmless) {
  const std::string text = SerializeManifest(Sample());
  for (size_t cut = 0; cut < text.size() - 1; ++cut) {  // the last byte is a newline
    StatusOr<Manifest> m = ParseManifest(text.substr(0, cut), "dir/MANIFEST.json");
    ASSERT_FALSE(m.ok()) << cut;
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find("dir/MANIFEST.json"), std::string::npos);
  }
  // A flipped byte may still parse (e.g. inside created_at), but must never
  // crash, and whatever parses is self-consistent.
  for (size_t i = 0; i < text.size(); ++i) {
    std::string bad = text;
    bad[i] ^= 0x41;
    StatusOr<Manifest> m = ParseManifest(bad, "f");
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    }
  }
}

TEST(ManifestTest, RejectsBadContent) {
  const char* bad[] = {
      "",
      "garbage",
      "[]",
      "{}",
      "\xff\xff\xff",
      R"({"format":"other","format_version":1})",
      R"({"format":"ringmaster-checkpoint","format_version":2,"checksum":"crc32c","step":1,"world_size":1,"created_unix_ms":0,"blobs":[]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"sha256","step":1,"world_size":1,"created_unix_ms":0,"blobs":[]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"crc32c","step":-1,"world_size":1,"created_unix_ms":0,"blobs":[]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"crc32c","step":1,"world_size":0,"created_unix_ms":0,"blobs":[]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"crc32c","step":1,"world_size":1,"created_unix_ms":0,"blobs":[{"name":"../etc","size":1,"crc32c":"00000000"}]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"crc32c","step":1,"world_size":1,"created_unix_ms":0,"blobs":[{"name":"a","size":1,"crc32c":"0000000"}]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"crc32c","step":1,"world_size":1,"created_unix_ms":0,"blobs":[{"name":"a","size":-1,"crc32c":"00000000"}]})",
      R"({"format":"ringmaster-checkpoint","format_version":1,"checksum":"crc32c","step":1,"world_size":1,"created_unix_ms":0,"blobs":[{"name":"a","size":1,"crc32c":"00000000"},{"name":"a","size":1,"crc32c":"00000000"}]})",
  };
  for (const char* text : bad) {
    StatusOr<Manifest> m = ParseManifest(text, "p");
    EXPECT_FALSE(m.ok()) << text;
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << text;
  }
}

TEST(ManifestTest, BlobNames) {
  EXPECT_OK(ValidateBlobName("model"));
  EXPECT_OK(ValidateBlobName("optimizer.rank-0_of_8"));
  for (const char* name : {"", ".hidden", "a/b", "..", "MANIFEST.json", "sp ace"}) {
    EXPECT_EQ(ValidateBlobName(name).code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(ValidateBlobName(std::string(129, 'a')).ok());
}

}  // namespace
}  // namespace ringmaster::checkpoint
