#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "worker-runtime/fusion/request.h"

namespace ringmaster::fusion {
namespace {

TEST(CompletionTest, OnDoneRunsOnTheFinishingThreadWithTheStatus) {
  auto c = std::make_shared<Completion>();
  Handle h(c);
  std::atomic<int> calls{0};
  std::thread::id ran_on;
  Status seen;
  h.OnDone([&](const Status& s) {
    seen = s;
    ran_on = std::this_thread::get_id();
    ++calls;
  });
  EXPECT_EQ(calls.load(), 0) << "a pending collective must not call back";
  std::thread::id finisher;
  std::thread t([&] {
    finisher = std::this_thread::get_id();
    c->Finish(AbortedError("peer lost"));
    c->Finish(Status::Ok());  // a second Finish changes nothing and calls nothing
  });
  t.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(ran_on, finisher);
  EXPECT_EQ(seen.code(), StatusCode::kAborted);
  EXPECT_EQ(h.Wait().code(), StatusCode::kAborted);
}

TEST(CompletionTest, OnDoneAfterFinishRunsAtOnceOnTheCaller) {
  auto c = std::make_shared<Completion>();
  c->Finish(Status::Ok());
  bool called = false;
  Handle(c).OnDone([&](const Status& s) {
    EXPECT_TRUE(s.ok());
    called = true;
  });
  EXPECT_TRUE(called);
}

TEST(CompletionTest, EmptyHandleCallsBackWithFailedPrecondition) {
  StatusCode code = StatusCode::kOk;
  Handle().OnDone([&](const Status& s) { code = s.code(); });
  EXPECT_EQ(code, StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ringmaster::fusion
