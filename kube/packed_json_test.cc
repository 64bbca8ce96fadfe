// KeyTable's packed JSON: exact round trips, shared keys, the table's bounds, and bytes it did not write.
#include "kube/packed_json.h"

#include <gtest/gtest.h>

#include <limits>

namespace ringmaster::kube {
namespace {

using nlohmann::json;

json Decoded(const KeyTable& t, const std::vector<std::uint8_t>& b) {
  auto d = t.Decode(b.data(), b.size());
  EXPECT_TRUE(d.has_value());
  return d.value_or(json("not decoded"));
}

TEST(PackedJsonTest, EveryTypeRoundTripsExactly) {
  KeyTable t;
  json v = {{"null", nullptr},
            {"yes", true},
            {"no", false},
            {"zero", 0u},
            {"u", std::numeric_limits<std::uint64_t>::max()},
            {"neg", -7},
            {"min", std::numeric_limits<std::int64_t>::min()},
            {"max", std::numeric_limits<std::int64_t>::max()},
            {"third", 1.0 / 3},
            {"whole", 2.0},
            {"s", "n\u00e9\x01"},
            {"empty", ""},
            {"a", json::array({1, json::array(), json::object(), json::array({json::object({{"k", "v"}})})})},
            {"o", json::object()},
            {"bin", json::binary({1, 2, 3})}};
  json got = Decoded(t, t.Encode(v));
  EXPECT_EQ(got, v);
  EXPECT_EQ(got.dump(), v.dump());  // the same types: 2.0 stays a double, 0 unsigned, -7 signed
  EXPECT_EQ(got["neg"].type(), json::value_t::number_integer);
  EXPECT_EQ(got["zero"].type(), json::value_t::number_unsigned);
  for (const json& scalar : {json(nullptr), json(5), json(-5), json("x"), json(0.5), json::array()})
    EXPECT_EQ(Decoded(t, t.Encode(scalar)), scalar);
}

// uids, apiserver timestamps and pod IPs take their short forms, and every string that only looks like one
// (uppercase, a fraction of a second, an offset, an impossible date, leading zeros) stays itself.
TEST(PackedJsonTest, UidsTimesAndAddressesAreShorterAndRenderBackExactly) {
  KeyTable t;
  const std::string uid = "f0e213bf-c322-41c6-81c9-30ba043ad30a";
  const std::string time = "2026-11-29T00:32:09Z";
  const std::string ip = "127.139.0.117";
  for (const std::string& s :
       {uid, time, ip, std::string("1970-01-01T00:00:00Z"), std::string("0.0.0.0"), std::string("255.255.255.255")}) {
    const auto packed = t.Encode(json(s));
    EXPECT_EQ(Decoded(t, packed), json(s));
    EXPECT_LT(packed.size(), s.size()) << s << " took no short form";
  }
  EXPECT_EQ(t.Encode(json(uid)).size(), 17u);
  EXPECT_EQ(t.Encode(json(time)).size(), 6u);
  EXPECT_EQ(t.Encode(json(ip)).size(), 5u);
  for (const std::string& s :
       {std::string("F0E213BF-C322-41C6-81C9-30BA043AD30A"), std::string("f0e213bf-c322-41c6-81c9-30ba043ad30"),
        std::string("f0e213bfxc322-41c6-81c9-30ba043ad30a"), std::string("f0e213bf-c322-41c6-81c9-30ba043ad30g"),
        std::string("2026-11-29T00:32:09.000Z"), std::string("2026-11-29T00:32:09+01:00"),
        std::string("2026-02-30T00:00:00Z"), std::string("2026-11-29 00:32:09Z"), std::string("1969-12-31T23:59:59Z"),
        std::string("127.139.000.117"), std::string("127.139.0"), std::string("1.2.3.4 "), std::string("256.1.1.1")}) {
    const auto packed = t.Encode(json(s));
    EXPECT_EQ(Decoded(t, packed), json(s)) << s;
    EXPECT_EQ(packed.size(), 2 + s.size()) << s << " should have stayed a plain string";
  }
}

// A long string the value already holds is written once: a job's membership message sits in its status twice.
TEST(PackedJsonTest, ARepeatedLongStringIsWrittenOnce) {
  KeyTable t;
  const std::string message = "generation 1, world size 8 (joined: job-worker-0, job-worker-1, job-worker-2)";
  json once = {{"a", message}, {"b", "x"}};
  json twice = {{"a", message}, {"b", message}, {"c", json::array({message, "node-a-long-name", "node-a-long-name"})}};
  const auto one = t.Encode(once), two = t.Encode(twice);
  EXPECT_EQ(Decoded(t, two), twice);
  EXPECT_LT(two.size(), one.size() + 30) << "the repeats cost a reference each, not the message again";
  // Short strings are never references; a long one that only starts the same is its own string.
  json near = {{"a", message}, {"b", message + "!"}, {"c", "short"}, {"d", "short"}};
  EXPECT_EQ(Decoded(t, t.Encode(near)), near);
  // A reference past the strings written so far is refused, not followed.
  std::vector<std::uint8_t> bad = {13, 0};  // kRepeat 0 with nothing before it
  EXPECT_FALSE(t.Decode(bad.data(), bad.size()).has_value());
}

TEST(PackedJsonTest, KeysAreSharedSoARepeatedShapeCostsItsValuesOnly) {
  KeyTable t;
  json pod = json::parse(R"({"metadata": {"name": "job-1-worker-0", "namespace": "bench", "resourceVersion": "12"},
    "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-28T21:00:00Z"}]}})");
  const auto first = t.Encode(pod);
  const size_t keys = t.size();
  EXPECT_EQ(keys, 8u + 5u);  // "status" twice, one key; and the five string values (kMaxValuesPerKey)
  const auto second = t.Encode(pod);
  EXPECT_EQ(t.size(), keys);  // nothing new to learn
  EXPECT_EQ(first, second);
  EXPECT_LT(second.size(), json::to_cbor(pod).size() * 2 / 3);
  EXPECT_EQ(Decoded(t, second), pod);
}

// A member of few values ("phase") has them in the table like keys: a byte each. One of many ("name") takes
// kMaxValuesPerKey and then no more; the ones taken stay references, and what a value holds comes back exactly.
TEST(PackedJsonTest, AMembersFewValuesAreSharedAndItsManyAreNot) {
  KeyTable t;
  const std::vector<std::string> phases = {"Pending", "Running", "Succeeded", "Failed"};
  auto pod = [&](int i) { return json{{"name", "worker-" + std::to_string(i)}, {"phase", phases[i % 4]}}; };
  const size_t first = t.Encode(pod(0)).size();
  for (int i = 1; i < 100; ++i) ASSERT_EQ(Decoded(t, t.Encode(pod(i))), pod(i));
  EXPECT_EQ(t.size(), 2 + kMaxValuesPerKey + 4) << "the keys, the first names and the phases";
  // "worker-500" costs its bytes; "Running" costs a reference (one tag, one id byte).
  const auto late = t.Encode(pod(501));
  EXPECT_EQ(Decoded(t, late), pod(501));
  EXPECT_EQ(late.size(), 1 + 1 + 1 + (2 + 10) + 1 + 2) << "object, count, name: key, string; phase: key, reference";
  EXPECT_EQ(t.Encode(pod(0)).size(), first) << "a name taken early stays a reference";
  EXPECT_LT(first, late.size());
  // The same string as another member's value, or inside an array, is the same reference; a top-level
  // string the table does not hold stays a string.
  json mixed = {{"phase", "Running"}, {"previous", json::array({"Running", "Gone"})}};
  EXPECT_EQ(Decoded(t, t.Encode(mixed)), mixed);
  EXPECT_EQ(t.Encode(json("Running")).size(), 2u);
  EXPECT_EQ(t.Encode(json("Elsewhere")).size(), 2u + 9u);
  // An id the table never gave out is refused, not followed.
  std::vector<std::uint8_t> bad = {14, 0x7f};  // kInterned 127
  EXPECT_FALSE(t.Decode(bad.data(), bad.size()).has_value());
}

TEST(PackedJsonTest, KeysBeyondTheTablesBoundsAreWrittenOutInFull) {
  KeyTable t(/*max_keys=*/2, /*max_key_length=*/8);
  json v = {{"a", 1}, {"b", 2}, {"c", 3}, {"a-very-long-key", 4}};
  json got = Decoded(t, t.Encode(v));
  EXPECT_EQ(got, v);
  EXPECT_EQ(t.size(), 2u);
  // A second table never saw these ids: the bytes are not its.
  KeyTable other;
  const auto bytes = t.Encode(v);
  EXPECT_FALSE(other.Decode(bytes.data(), bytes.size()).has_value());
}

TEST(PackedJsonTest, BytesItDidNotWriteAreRefusedNotThrown) {
  KeyTable t;
  const auto good = t.Encode(json{{"k", json::array({"v", 1, 2.5})}});
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(t.Decode(good.data(), n).has_value()) << "truncated to " << n;
  std::vector<std::uint8_t> trailing = good;
  trailing.push_back(0);
  EXPECT_FALSE(t.Decode(trailing.data(), trailing.size()).has_value());
  const std::vector<std::uint8_t> bad_tag = {0x42};
  EXPECT_FALSE(t.Decode(bad_tag.data(), bad_tag.size()).has_value());
  // An array claiming more members than there are bytes.
  const std::vector<std::uint8_t> huge = {8, 0xff, 0xff, 0xff, 0xff, 0x0f};
  EXPECT_FALSE(t.Decode(huge.data(), huge.size()).has_value());
  // A deep nest (100,000 arrays of one, around a null) decodes without recursion.
  std::vector<std::uint8_t> deep;
  for (int i = 0; i < 100000; ++i) deep.insert(deep.end(), {8, 1});
  deep.push_back(0);
  EXPECT_TRUE(t.Decode(deep.data(), deep.size()).has_value());
}

}  // namespace
}  // namespace ringmaster::kube
