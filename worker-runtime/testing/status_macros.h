// ASSERT_OK / EXPECT_OK: print the Status when it is not OK.
#pragma once

#include <gtest/gtest.h>

#include "base/status.h"

#define RM_STATUS_OF_(expr) ::ringmaster::runtime::testing::StatusOf(expr)
#define ASSERT_OK(expr)                                \
  do {                                                 \
    ::ringmaster::Status rm_s_ = RM_STATUS_OF_(expr);  \
    ASSERT_TRUE(rm_s_.ok()) << #expr << ": " << rm_s_; \
  } while (0)
#define EXPECT_OK(expr)                                \
  do {                                                 \
    ::ringmaster::Status rm_s_ = RM_STATUS_OF_(expr);  \
    EXPECT_TRUE(rm_s_.ok()) << #expr << ": " << rm_s_; \
  } while (0)

namespace ringmaster::runtime::testing {
inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const StatusOr<T>& s) {
  return s.status();
}
}  // namespace ringmaster::runtime::testing
