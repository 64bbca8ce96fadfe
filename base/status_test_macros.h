// ASSERT_OK / EXPECT_OK for tests: like ASSERT_TRUE(x.ok()), but a failure prints the expression and the
// whole Status (code and message). Both take a Status or a StatusOr<T> and accept a streamed message:
//   ASSERT_OK(client.Get(key)) << "while reading " << key;
#pragma once

#include <gtest/gtest.h>

#include "base/status.h"

namespace ringmaster::testing_internal {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const StatusOr<T>& s) {
  return s.status();
}

// Any other type with ok() (a test helper's result) passes or fails by ok(); its streamed message says why.
template <typename T>
::testing::AssertionResult IsOk(const char* expression, const T& value) {
  if constexpr (requires { StatusOf(value); }) {
    const Status& s = StatusOf(value);
    if (s.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << expression << " is not OK: " << s;
  } else {
    if (value.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << expression << " is not OK";
  }
}

}  // namespace ringmaster::testing_internal

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::ringmaster::testing_internal::IsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::ringmaster::testing_internal::IsOk, expr)
