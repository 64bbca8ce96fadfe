// WorkQueue semantics, including under concurrency (run these under TSan too).
#include "kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kube/client_metrics.h"
#include "metrics/metrics_server.h"

namespace ringmaster::kube {
namespace {

using std::chrono::milliseconds;

WorkQueueOptions NoLimit() {
  WorkQueueOptions o;
  o.rate_limiter = std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(1), milliseconds(4));
  return o;
}

TEST(WorkQueueTest, RepeatedAddsCollapseAndOrderIsFifo) {
  WorkQueue q(NoLimit());
  q.Add("a");
  q.Add("b");
  q.Add("a");
  q.Add("c");
  q.Add("b");
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_EQ(*q.Get(), "c");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsRequeuedOnDoneOnlyOnce) {
  WorkQueue q(NoLimit());
  q.Add("a");
  auto k = q.Get();
  ASSERT_EQ(*k, "a");
  q.Add("a");
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u);  // not handed out while processing
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, LowPriorityKeysWaitBehindNormalOnesInFifoOrder) {
  WorkQueue q(NoLimit());
  q.AddLowPriority("resync-1");
  q.AddLowPriority("resync-2");
  q.Add("failed");
  q.AddLowPriority("resync-3");
  q.Add("created");
  EXPECT_EQ(q.Len(), 5u);
  EXPECT_EQ(*q.Get(), "failed");
  EXPECT_EQ(*q.Get(), "created");
  EXPECT_EQ(*q.Get(), "resync-1");
  EXPECT_EQ(*q.Get(), "resync-2");
  EXPECT_EQ(*q.Get(), "resync-3");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, AddRaisesAWaitingLowPriorityKeyAndItIsHandedOutOnce) {
  WorkQueue q(NoLimit());
  q.AddLowPriority("a");
  q.AddLowPriority("b");
  q.Add("b");  // a real change to b: it goes ahead of a, and its low entry is dropped
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(q.Len(), 0u);
  q.Done("a");
  q.Done("b");
  // Nothing is left behind: the next key is the next one added (the stale entry of b is not handed out).
  q.AddLowPriority("c");
  EXPECT_EQ(*q.Get(), "c");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, LowPriorityAddNeverLowersAWaitingKey) {
  WorkQueue q(NoLimit());
  q.Add("a");
  q.AddLowPriority("a");
  q.AddLowPriority("b");
  q.Add("c");
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "c");
  EXPECT_EQ(*q.Get(), "b");
}

TEST(WorkQueueTest, HighPriorityKeysGoFirstRaiseWaitingKeysAndAreNeverLowered) {
  WorkQueue q(NoLimit());
  q.AddLowPriority("resync");
  q.Add("new-job-1");
  q.Add("new-job-2");
  q.AddHighPriority("pod-failed");
  q.Add("pod-failed");             // a normal add of a high key does not lower it
  q.AddHighPriority("new-job-2");  // its pods came up: raised, one entry
  q.AddHighPriority("resync");     // raised from the low lane
  EXPECT_EQ(q.Len(), 4u);
  EXPECT_EQ(*q.Get(), "pod-failed");
  EXPECT_EQ(*q.Get(), "new-job-2");
  EXPECT_EQ(*q.Get(), "resync");
  EXPECT_EQ(*q.Get(), "new-job-1");
  EXPECT_EQ(q.Len(), 0u);
  for (const char* k : {"pod-failed", "new-job-2", "resync", "new-job-1"}) q.Done(k);
  // A key added high while it is processing comes back ahead of normal keys when it is done.
  q.Add("x");
  auto y = (q.AddHighPriority("y"), q.Get());
  ASSERT_EQ(*y, "y");
  q.AddHighPriority("y");
  q.Add("z");
  q.Done("y");
  EXPECT_EQ(*q.Get(), "y");
  EXPECT_EQ(*q.Get(), "x");
  EXPECT_EQ(*q.Get(), "z");
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsRequeuedAtItsHighestPriority) {
  WorkQueue q(NoLimit());
  q.Add("a");
  ASSERT_EQ(*q.Get(), "a");
  q.AddLowPriority("a");  // a resync while a is being reconciled
  q.Add("b");
  q.Done("a");  // requeued behind b, at low priority
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  q.Done("b");

  q.Add("a");
  ASSERT_EQ(*q.Get(), "a");
  q.AddLowPriority("a");
  q.AddLowPriority("z");
  q.Add("a");   // then a real change: raised
  q.Done("a");  // requeued ahead of z
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "z");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, AddAfterDelaysAndEarliestWins) {
  WorkQueue q(NoLimit());
  auto start = std::chrono::steady_clock::now();
  q.AddAfter("late", milliseconds(300));
  q.AddAfter("x", milliseconds(200));
  q.AddAfter("x", milliseconds(50));   // sooner: replaces
  q.AddAfter("x", milliseconds(400));  // later: ignored
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(*q.Get(), "x");
  auto first = std::chrono::steady_clock::now() - start;
  EXPECT_GE(first, milliseconds(50));
  EXPECT_LT(first, milliseconds(290));
  EXPECT_EQ(*q.Get(), "late");
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
  q.Done("x");
  q.Done("late");
}

TEST(WorkQueueTest, RateLimitedBacksOffPerItemAndForgetResets) {
  WorkQueueOptions o;
  o.rate_limiter = std::make_unique<ItemExponentialFailureRateLimiter>(milliseconds(20), milliseconds(1000));
  WorkQueue q(std::move(o));
  q.AddRateLimited("k");
  q.AddRateLimited("k");  // collapses into the pending delayed add (20 ms, earliest wins)
  EXPECT_EQ(q.NumRequeues("k"), 2);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(*q.Get(), "k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(10));
  q.Forget("k");
  EXPECT_EQ(q.NumRequeues("k"), 0);
  q.Done("k");
}

TEST(WorkQueueTest, ShutDownWakesWorkersAndIgnoresAdds) {
  WorkQueue q(NoLimit());
  std::atomic<int> exited{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i)
    workers.emplace_back([&] {
      while (auto k = q.Get()) q.Done(*k);
      exited++;
    });
  std::this_thread::sleep_for(milliseconds(20));
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(exited, 4);
  q.Add("after");
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.Get().has_value());
  EXPECT_TRUE(q.ShuttingDown());
}

TEST(WorkQueueTest, QueuedKeysAreStillHandedOutAfterShutDown) {
  WorkQueue q(NoLimit());
  q.Add("a");
  q.Add("b");
  q.ShutDown();
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_FALSE(q.Get().has_value());
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForInFlightKeys) {
  WorkQueue q(NoLimit());
  q.Add("slow");
  auto k = q.Get();
  ASSERT_TRUE(k.has_value());
  std::atomic<bool> done{false};
  std::thread worker([&] {
    std::this_thread::sleep_for(milliseconds(100));
    done = true;
    q.Done(*k);
  });
  q.ShutDownWithDrain();
  EXPECT_TRUE(done);  // returned only after Done()
  worker.join();
}

// A worker that never finishes (until the test lets it go, after the drain gave up): a drain with a deadline
// returns anyway, counts the key still processing, and drops the keys still waiting instead of handing them out.
TEST(WorkQueueTest, ShutDownWithDrainGivesUpAtItsDeadlineAndDropsTheKeysWaiting) {
  WorkQueue q(NoLimit());
  q.Add("stuck");
  q.Add("waiting");
  std::promise<void> release;
  std::promise<std::string> started;
  std::thread worker([&] {
    auto k = q.Get();
    started.set_value(*k);
    release.get_future().wait();  // stuck until the drain has returned
    q.Done(*k);
  });
  EXPECT_EQ(started.get_future().get(), "stuck");
  EXPECT_EQ(q.ShutDownWithDrain(milliseconds(50)), 1u);
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.Get().has_value()) << "a key still waiting was handed out after the drain gave up";
  release.set_value();
  worker.join();
  q.Add("after");
  EXPECT_FALSE(q.Get().has_value());
}

TEST(WorkQueueTest, ShutDownWithDrainWithADeadlineReturnsZeroOnceDrained) {
  WorkQueue q(NoLimit());
  q.Add("a");
  q.Add("b");
  std::thread worker([&] {
    while (auto k = q.Get()) q.Done(*k);
  });
  // An hour: the worker drains long before (were the wait not woken by the last Done, the test would hang).
  EXPECT_EQ(q.ShutDownWithDrain(std::chrono::hours(1)), 0u);
  worker.join();
  EXPECT_EQ(q.Len(), 0u);
}

// Many producers, many workers: a key is never processed by two workers at once, every add made
// before the last Done of a key is observed by a later processing, and nothing is lost.
TEST(WorkQueueTest, ConcurrentWorkersNeverShareAKey) {
  WorkQueue q(NoLimit());
  constexpr int kKeys = 16, kProducers = 4, kAddsPerProducer = 2000, kWorkers = 6;
  std::mutex mu;
  std::map<std::string, int> in_flight;
  std::atomic<int> violations{0}, processed{0};
  std::vector<std::atomic<int>> last_seen_gen(kKeys);
  std::vector<std::atomic<int>> added_gen(kKeys);
  for (auto& g : last_seen_gen) g = 0;
  for (auto& g : added_gen) g = 0;

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        int idx = std::stoi(key->substr(1));
        {
          std::lock_guard<std::mutex> lock(mu);
          if (++in_flight[*key] != 1) violations++;
        }
        // Everything added before this Get is visible now (level-triggered).
        last_seen_gen[idx] = added_gen[idx].load();
        std::this_thread::yield();
        {
          std::lock_guard<std::mutex> lock(mu);
          --in_flight[*key];
        }
        processed++;
        q.Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kAddsPerProducer; ++i) {
        int idx = (i * 7 + p) % kKeys;
        added_gen[idx]++;
        // Half the producers add at low priority: raises and stale entries must lose no add either.
        if (p % 2)
          q.AddLowPriority("k" + std::to_string(idx));
        else
          q.Add("k" + std::to_string(idx));
      }
    });
  }
  for (auto& t : producers) t.join();
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(violations, 0);
  EXPECT_GT(processed, 0);
  EXPECT_LE(processed, kProducers * kAddsPerProducer);
  for (int i = 0; i < kKeys; ++i)
    EXPECT_EQ(last_seen_gen[i].load(), added_gen[i].load()) << "key " << i << " lost an add";
}

TEST(WorkQueueTest, ConcurrentRateLimitedRequeues) {
  WorkQueue q(NoLimit());
  std::atomic<int> attempts{0};
  for (int i = 0; i < 20; ++i) q.Add("k" + std::to_string(i));
  std::vector<std::thread> workers;
  std::atomic<int> finished{0};
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        attempts++;
        if (q.NumRequeues(*key) < 3) {
          q.AddRateLimited(*key);  // fail three times
        } else {
          q.Forget(*key);
          if (++finished == 20) q.ShutDown();
        }
        q.Done(*key);
      }
    });
  }
  for (auto& t : workers) t.join();
  EXPECT_EQ(finished, 20);
  EXPECT_EQ(attempts, 80);
}

TEST(WorkQueueTest, EverySeriesExistsAtZeroBeforeTheFirstAdd) {
  auto registry = std::make_shared<prometheus::Registry>();
  WorkQueueOptions o = NoLimit();
  o.name = "idle";
  o.metrics = std::make_shared<ClientMetrics>(*registry);
  WorkQueue q(std::move(o));
  const std::string text = metrics::RenderText({registry});
  for (const char* series :
       {"workqueue_depth{name=\"idle\"} 0\n", "workqueue_adds_total{name=\"idle\"} 0\n",
        "workqueue_retries_total{name=\"idle\"} 0\n", "workqueue_queue_duration_seconds_count{name=\"idle\"} 0\n",
        "workqueue_work_duration_seconds_count{name=\"idle\"} 0\n"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << " missing from\n" << text;
  }
}

TEST(WorkQueueTest, ReportsDepthAddsLatencyAndRetries) {
  auto registry = std::make_shared<prometheus::Registry>();
  WorkQueueOptions o = NoLimit();
  o.name = "jobs";
  o.metrics = std::make_shared<ClientMetrics>(*registry);
  WorkQueue q(std::move(o));
  q.Add("a");
  q.Add("b");
  q.Add("a");
  std::string text = metrics::RenderText({registry});
  EXPECT_NE(text.find("workqueue_depth{name=\"jobs\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("workqueue_adds_total{name=\"jobs\"} 3\n"), std::string::npos) << text;
  auto k = q.Get();
  q.AddRateLimited(*k);
  q.Done(*k);
  text = metrics::RenderText({registry});
  EXPECT_NE(text.find("workqueue_depth{name=\"jobs\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("workqueue_queue_duration_seconds_count{name=\"jobs\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("workqueue_work_duration_seconds_count{name=\"jobs\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("workqueue_retries_total{name=\"jobs\"} 1\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace ringmaster::kube
