#include "kube/watch_decoder.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::kube {
namespace {

const std::string kAdded = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})";
const std::string kDeleted = R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"7"}}})";

TEST(WatchDecoderTest, DecodesLinesSplitAtEveryByte) {
  const std::string stream = kAdded + "\n\n" + kDeleted + "\n";
  for (size_t split = 0; split <= stream.size(); ++split) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    ASSERT_OK(d.Feed(std::string_view(stream).substr(0, split), &out));
    ASSERT_OK(d.Feed(std::string_view(stream).substr(split), &out));
    ASSERT_OK(d.Finish(&out));
    ASSERT_EQ(out.size(), 2u) << split;
    EXPECT_EQ(out[0].type, WatchEventType::kAdded);
    EXPECT_EQ(out[0].object["metadata"]["resourceVersion"], "5");
    EXPECT_EQ(out[1].type, WatchEventType::kDeleted);
  }
}

TEST(WatchDecoderTest, OneByteAtATime) {
  const std::string stream = kAdded + "\r\n" + kDeleted + "\n";
  WatchDecoder d;
  std::vector<WatchEvent> out;
  for (char c : stream) ASSERT_OK(d.Feed(std::string_view(&c, 1), &out));
  EXPECT_EQ(out.size(), 2u);
}

TEST(WatchDecoderTest, InvalidJsonNamesTheProblemAndSticks) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  Status s = d.Feed(kAdded + "\n{\"type\":\"ADDED\",\"object\":{]}\n" + kDeleted + "\n", &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("not valid JSON"), std::string::npos) << s;
  EXPECT_EQ(out.size(), 1u);  // the event before the bad line was delivered
  EXPECT_EQ(d.Feed(kDeleted + "\n", &out).code(), StatusCode::kDataLoss);
}

TEST(WatchDecoderTest, RejectsEventsOfTheWrongShape) {
  for (std::string line :
       {std::string("[1,2]"), std::string(R"({"object":{}})"), std::string(R"({"type":"EXPLODED","object":{}})"),
        std::string(R"({"type":"ADDED","object":"str"})"), std::string(R"({"type":7,"object":{}})"),
        std::string("\x01\xff garbage")}) {
    WatchDecoder d;
    std::vector<WatchEvent> out;
    Status s = d.Feed(line + "\n", &out);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << line;
    EXPECT_TRUE(out.empty());
  }
}

TEST(WatchDecoderTest, TruncatedChunkAtEndOfStream) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  ASSERT_OK(d.Feed(kAdded + "\n" + kDeleted.substr(0, 20), &out));
  Status s = d.Finish(&out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;
  EXPECT_EQ(out.size(), 1u);
}

TEST(WatchDecoderTest, WholeLastEventWithoutNewlineIsAccepted) {
  WatchDecoder d;
  std::vector<WatchEvent> out;
  ASSERT_OK(d.Feed(kAdded, &out));
  EXPECT_TRUE(out.empty());
  ASSERT_OK(d.Finish(&out));
  EXPECT_EQ(out.size(), 1u);
}

TEST(WatchDecoderTest, OverlongLineIsRefused) {
  WatchDecoder d(64);
  std::vector<WatchEvent> out;
  Status s = d.Feed(std::string(100, 'x'), &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("exceeds"), std::string::npos);
}

TEST(WatchDecoderTest, ErrorEventMapsToGone) {
  auto ev = ParseWatchEvent(
      R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (100)","reason":"Expired","code":410}})j");
  ASSERT_OK(ev);
  EXPECT_EQ(ev->type, WatchEventType::kError);
  Status s = StatusFromWatchError(ev->object);
  EXPECT_EQ(s.code(), StatusCode::kGone);
  EXPECT_NE(s.message().find("HTTP 410 Expired"), std::string::npos) << s;
}

TEST(WatchDecoderTest, BookmarkEvent) {
  auto ev = ParseWatchEvent(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}})");
  ASSERT_OK(ev);
  EXPECT_EQ(ev->type, WatchEventType::kBookmark);
}

}  // namespace
}  // namespace ringmaster::kube
