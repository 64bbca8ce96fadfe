#include "kube/api_error.h"

#include <gtest/gtest.h>

namespace ringmaster::kube {
namespace {

TEST(ApiErrorTest, MapsHttpCodesAndReasons) {
  EXPECT_EQ(StatusCodeForHttp(404, "NotFound"), StatusCode::kNotFound);
  EXPECT_EQ(StatusCodeForHttp(409, "AlreadyExists"), StatusCode::kAlreadyExists);
  EXPECT_EQ(StatusCodeForHttp(409, "Conflict"), StatusCode::kConflict);
  EXPECT_EQ(StatusCodeForHttp(403, "Forbidden"), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusCodeForHttp(401, "Unauthorized"), StatusCode::kUnauthenticated);
  EXPECT_EQ(StatusCodeForHttp(422, "Invalid"), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeForHttp(400, "BadRequest"), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeForHttp(410, "Gone"), StatusCode::kGone);
  EXPECT_EQ(StatusCodeForHttp(500, "Expired"), StatusCode::kGone);  // watch "too old resource version"
  EXPECT_EQ(StatusCodeForHttp(429, "TooManyRequests"), StatusCode::kResourceExhausted);
  EXPECT_EQ(StatusCodeForHttp(500, "InternalError"), StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeForHttp(503, "ServiceUnavailable"), StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeForHttp(504, "Timeout"), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StatusCodeForHttp(0, ""), StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeForHttp(418, ""), StatusCode::kUnknown);
}

TEST(ApiErrorTest, ParsesMetaV1StatusBodyAndRoundTrips) {
  Status s = StatusFromHttpResponse(
      409,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" already exists","reason":"AlreadyExists","code":409})");
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  auto e = ApiErrorFromStatus(s);
  ASSERT_TRUE(e.has_value()) << s;
  EXPECT_EQ(e->http_code, 409);
  EXPECT_EQ(e->reason, "AlreadyExists");
  EXPECT_EQ(e->message, "pods \"x\" already exists");
  // Context added later does not hide the HTTP details.
  auto with_ctx = ApiErrorFromStatus(s.WithContext("creating pod x"));
  ASSERT_TRUE(with_ctx.has_value());
  EXPECT_EQ(with_ctx->http_code, 409);
  EXPECT_EQ(with_ctx->reason, "AlreadyExists");
}

TEST(ApiErrorTest, NonStatusBodyKeepsCodeAndDefaultReason) {
  Status s = StatusFromHttpResponse(503, "<html>upstream down</html>");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  auto e = ApiErrorFromStatus(s);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_code, 503);
  EXPECT_EQ(e->reason, "ServiceUnavailable");
  EXPECT_EQ(e->message, "<html>upstream down</html>");
}

TEST(ApiErrorTest, MessageMentioningHttpDoesNotConfuseTheParse) {
  Status s = StatusFromApiError({500, "InternalError", "upstream said HTTP 404 NotFound: nope"});
  auto e = ApiErrorFromStatus(s.WithContext("HTTP client"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->http_code, 500);
  EXPECT_EQ(e->reason, "InternalError");
  EXPECT_EQ(e->message, "upstream said HTTP 404 NotFound: nope");
}

TEST(ApiErrorTest, NonHttpStatusHasNoApiError) {
  EXPECT_FALSE(ApiErrorFromStatus(Status::Ok()).has_value());
  EXPECT_FALSE(ApiErrorFromStatus(UnavailableError("connection refused")).has_value());
}

}  // namespace
}  // namespace ringmaster::kube
