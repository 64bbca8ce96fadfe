#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/status_test_macros.h"

namespace ringmaster {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_OK(s);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = NotFoundError("pods \"w-0\" not found");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: pods \"w-0\" not found");
}

TEST(StatusTest, WithContextPrefixesMessageAndKeepsCode) {
  Status s = UnavailableError("connection refused").WithContext("GET /api/v1/pods");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "GET /api/v1/pods: connection refused");
  EXPECT_OK(Status().WithContext("x"));
}

TEST(StatusTest, RetryableCodes) {
  EXPECT_TRUE(IsRetryable(StatusCode::kUnavailable));
  EXPECT_TRUE(IsRetryable(StatusCode::kResourceExhausted));
  EXPECT_FALSE(IsRetryable(StatusCode::kInvalidArgument));
  EXPECT_FALSE(IsRetryable(StatusCode::kAborted));
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  RINGMASTER_ASSIGN_OR_RETURN(int half, Half(x));
  RINGMASTER_ASSIGN_OR_RETURN(*out, Half(half));
  return Status::Ok();
}

TEST(StatusOrTest, ValueAndError) {
  StatusOr<int> ok = Half(8);
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, 4);
  StatusOr<int> bad = Half(3);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(StatusOrTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_OK(Quarter(8, &out));
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd: 3");
}

TEST(StatusOrTest, HoldsMoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_OK(p);
  std::unique_ptr<int> owned = std::move(p).value();
  EXPECT_EQ(*owned, 7);
}

}  // namespace
}  // namespace ringmaster
