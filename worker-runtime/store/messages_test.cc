#include "worker-runtime/store/messages.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"
#include "worker-runtime/store/wire.h"

namespace ringmaster::store::protocol {
namespace {

std::string RawRequest(uint8_t op, const std::vector<std::string>& keys, std::string_view value, uint64_t timeout_ms) {
  WireWriter w;
  w.U8(op).U32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.Bytes(k);
  w.Bytes(value).U64(timeout_ms);
  return w.data();
}

TEST(StoreMessagesTest, EveryMessageRoundTrips) {
  Request request{Op::kWait, {"a", "b"}, "", 1500};
  auto decoded = DecodeRequest(EncodeRequest(request), 1024);
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, request);

  Hello hello{std::string(32, 'n'), 7, 3, std::string(32, 'm')};
  auto h = DecodeHello(EncodeHello(hello));
  ASSERT_OK(h);
  EXPECT_EQ(*h, hello);

  auto r = DecodeResponse(EncodeResponse(NotFoundError("no key"), "v"), 16);
  ASSERT_OK(r);
  EXPECT_EQ(r->status, NotFoundError("no key"));
  EXPECT_EQ(r->value, "v");

  auto nonce = DecodeChallenge(EncodeChallenge(std::string(32, 'c')));
  ASSERT_OK(nonce);
  EXPECT_EQ(*nonce, std::string(32, 'c'));
}

TEST(StoreMessagesTest, RequestsMalformedForTheirOpAreRefused) {
  struct Case {
    const char* what;
    std::string bytes;
  } cases[] = {
      {"unknown op", RawRequest(9, {"k"}, "", 0)},
      {"op 0", RawRequest(0, {"k"}, "", 0)},
      {"wait without keys", RawRequest(3, {}, "", 0)},
      {"set with two keys", RawRequest(1, {"a", "b"}, "v", 0)},
      {"get with two keys", RawRequest(2, {"a", "b"}, "", 0)},
      {"add with a 7-byte delta", RawRequest(4, {"n"}, "1234567", 0)},
      {"key too long", RawRequest(2, {std::string(kMaxKeyBytes + 1, 'k')}, "", 0)},
      {"value too long", RawRequest(1, {"k"}, std::string(33, 'v'), 0)},
      {"trailing bytes", RawRequest(2, {"k"}, "", 0) + "x"},
      {"truncated", RawRequest(2, {"k"}, "", 0).substr(0, 10)},
  };
  for (const Case& c : cases) {
    auto r = DecodeRequest(c.bytes, 32);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_TRUE(r.status().message().starts_with("malformed store request: ")) << r.status();
  }
  WireWriter many;
  many.U8(3).U32(0xffffffffu);  // announces far more keys than allowed, without sending them
  EXPECT_EQ(DecodeRequest(many.data(), 32).status().code(), StatusCode::kInvalidArgument);
}

TEST(StoreMessagesTest, BadHandshakesAndResponsesAreRefused) {
  EXPECT_EQ(DecodeChallenge("RMS1short").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(DecodeChallenge("HTTP" + std::string(32, 'c')).status().code(), StatusCode::kUnauthenticated);
  Hello short_nonce{std::string(8, 'n'), 7, 3, std::string(32, 'm')};
  EXPECT_EQ(DecodeHello(EncodeHello(short_nonce)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeHello(EncodeHello({std::string(32, 'n'), 7, 3, std::string(33, 'm')})).status().code(),
            StatusCode::kInvalidArgument);

  WireWriter unknown;
  unknown.U8(200).Bytes("?").Bytes("");
  EXPECT_EQ(DecodeResponse(unknown.data(), 16).status().code(), StatusCode::kInternal);
  EXPECT_EQ(DecodeResponse(EncodeResponse(Status::Ok(), "v") + "x", 16).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeResponse(EncodeResponse(Status::Ok(), std::string(17, 'v')), 16).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::store::protocol
