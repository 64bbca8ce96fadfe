#include "worker-runtime/data/elastic_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/status_test_macros.h"
#include "worker-runtime/data/permutation.h"
#include "worker-runtime/data/splitmix64.h"

namespace ringmaster::data {
namespace {

ElasticSampler MakeSampler(uint64_t n, uint64_t b, uint64_t seed) {
  StatusOr<ElasticSampler> s = ElasticSampler::Create({n, b, seed});
  EXPECT_OK(s) << s.status();
  return std::move(s).value();
}

// One global step: every rank's plan, checked for internal consistency.
// Returns the union of the ranks' indices (in rank order).
std::vector<uint64_t> RunStep(ElasticSampler& sampler, const SampleCursor& cursor, uint32_t world,
                              StepPlan* first_plan) {
  std::vector<uint64_t> all;
  uint64_t min_share = ~0ULL, max_share = 0, expect_begin = 0;
  for (uint32_t r = 0; r < world; ++r) {
    StatusOr<StepPlan> plan = sampler.Plan(cursor, world, r);
    EXPECT_OK(plan) << plan.status();
    if (!plan.ok()) return all;
    if (r == 0) *first_plan = *plan;
    // Every rank agrees on the global batch and the next cursor.
    EXPECT_EQ(plan->epoch, first_plan->epoch);
    EXPECT_EQ(plan->global_begin, first_plan->global_begin);
    EXPECT_EQ(plan->global_size, first_plan->global_size);
    EXPECT_EQ(plan->next, first_plan->next);
    // Shares are contiguous, in rank order, and tile the batch.
    EXPECT_EQ(plan->share.begin, expect_begin);
    EXPECT_EQ(plan->indices.size(), plan->share.size);
    expect_begin += plan->share.size;
    min_share = std::min(min_share, plan->share.size);
    max_share = std::max(max_share, plan->share.size);
    all.insert(all.end(), plan->indices.begin(), plan->indices.end());
  }
  EXPECT_EQ(expect_begin, first_plan->global_size);
  EXPECT_LE(max_share - min_share, 1u) << "shares must differ by at most one";
  if (first_plan->global_size < world) {
    EXPECT_EQ(min_share, 0u);
  }
  StatusOr<SampleCursor> advanced = sampler.Advance(cursor);
  EXPECT_OK(advanced);
  if (advanced.ok()) {
    EXPECT_EQ(*advanced, first_plan->next);
  }
  return all;
}

std::vector<uint64_t> PermutationSlice(uint64_t n, uint64_t seed, const StepPlan& plan) {
  const std::vector<uint64_t> order = EpochPermutation(n, seed, plan.epoch);
  return std::vector<uint64_t>(order.begin() + plan.global_begin, order.begin() + plan.global_begin + plan.global_size);
}

// How much of the property a run exercised.
struct PropertyCounts {
  int epochs_verified = 0, rollbacks = 0, restores = 0, resizes = 0;
};

// One random training run with world-size changes between steps, failures that
// roll back to the last commit, and restores from older checkpoints; every
// committed epoch must contain every sample exactly once.
void RunRandomTrial(SplitMix64& rng, int trial, PropertyCounts* counts) {
  const uint64_t n = (trial % 10 == 0) ? rng.Below(4) : rng.Below(250);
  const uint64_t b = 1 + rng.Below(trial % 3 == 0 ? 300 : 40);  // sometimes B > N
  const uint64_t seed = rng.Next();
  const uint64_t epochs = 3;
  ElasticSampler sampler = MakeSampler(n, b, seed);
  const uint32_t max_world = static_cast<uint32_t>(std::min<uint64_t>(b + 5, 64));  // sometimes W > B
  uint32_t world = 1 + static_cast<uint32_t>(rng.Below(max_world));

  // Committed state: the serialized cursor plus, for the checker, which
  // samples of the cursor's epoch have been committed.
  struct Committed {
    std::string cursor_bytes;
    std::vector<int> seen;
  };
  Committed last{EncodeCursor({0, 0}), std::vector<int>(n, 0)};
  Committed checkpoint = last;  // an older commit, persisted every few steps
  SampleCursor cursor{0, 0};
  std::vector<int> seen(n, 0);
  std::vector<uint64_t> pending_redo;  // global batch of a step that failed before commit

  for (int step = 0; cursor.epoch < epochs; ++step) {
    ASSERT_LT(step, 100000) << "no progress";
    if (rng.Below(4) == 0) {
      world = 1 + static_cast<uint32_t>(rng.Below(max_world));
      ++counts->resizes;
    }
    StepPlan plan;
    std::vector<uint64_t> batch = RunStep(sampler, cursor, world, &plan);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "trial " << trial << " step " << step;
    ASSERT_EQ(plan.epoch, cursor.epoch);
    ASSERT_EQ(batch, PermutationSlice(n, seed, plan)) << "the global batch is the permutation slice after the cursor";
    if (!pending_redo.empty()) {
      // After a failure and a restore of the last commit, the next step
      // re-yields exactly the uncommitted samples (whatever the new world).
      std::vector<uint64_t> a = batch, p = pending_redo;
      std::sort(a.begin(), a.end());
      std::sort(p.begin(), p.end());
      EXPECT_EQ(a, p) << "trial " << trial << " step " << step;
      pending_redo.clear();
    }

    const uint64_t fate = rng.Below(10);
    if (fate == 0) {  // fail before commit; restore the last commit
      ++counts->rollbacks;
      pending_redo = batch;
      StatusOr<SampleCursor> restored = DecodeCursor(last.cursor_bytes);
      ASSERT_OK(restored);
      cursor = *restored;
      seen = last.seen;
      continue;
    }
    if (fate == 1) {  // lose the in-memory state; restore the older checkpoint
      ++counts->restores;
      StatusOr<SampleCursor> restored = DecodeCursor(checkpoint.cursor_bytes);
      ASSERT_OK(restored);
      cursor = *restored;
      seen = checkpoint.seen;
      last = checkpoint;
      continue;
    }
    // Commit.
    for (uint64_t id : batch) {
      ASSERT_LT(id, n);
      ++seen[id];
    }
    if (plan.ends_epoch) {
      for (uint64_t id = 0; id < n; ++id) {
        ASSERT_EQ(seen[id], 1) << "trial " << trial << " epoch " << plan.epoch << " sample " << id;
      }
      ++counts->epochs_verified;
      std::fill(seen.begin(), seen.end(), 0);
    }
    cursor = plan.next;
    last = Committed{EncodeCursor(cursor), seen};
    if (rng.Below(3) == 0) checkpoint = last;
  }
}

// The property over 400 random runs.
TEST(ElasticSamplerPropertyTest, ExactlyOncePerEpochUnderResizesAndRollbacks) {
  SplitMix64 rng(20240601);
  PropertyCounts counts;
  for (int trial = 0; trial < 400; ++trial) {
    RunRandomTrial(rng, trial, &counts);
    ASSERT_FALSE(HasFatalFailure()) << "trial " << trial;
  }
  // The run really exercised what it claims to.
  EXPECT_GE(counts.epochs_verified, 1000);
  EXPECT_GT(counts.rollbacks, 100);
  EXPECT_GT(counts.restores, 100);
  EXPECT_GT(counts.resizes, 100);
}

TEST(ElasticSamplerTest, ShareRule) {
  // 10 samples over 4 ranks: 3,3,2,2.
  EXPECT_EQ(ElasticSampler::ShareOf(10, 4, 0).size, 3u);
  EXPECT_EQ(ElasticSampler::ShareOf(10, 4, 1).begin, 3u);
  EXPECT_EQ(ElasticSampler::ShareOf(10, 4, 2).begin, 6u);
  EXPECT_EQ(ElasticSampler::ShareOf(10, 4, 3).size, 2u);
  // 2 samples over 5 ranks: 1,1,0,0,0.
  EXPECT_EQ(ElasticSampler::ShareOf(2, 5, 1).size, 1u);
  EXPECT_EQ(ElasticSampler::ShareOf(2, 5, 2).size, 0u);
  EXPECT_EQ(ElasticSampler::ShareOf(2, 5, 4).begin, 2u);
}

TEST(ElasticSamplerTest, ResizeMidEpochRestridesTheRemainder) {
  // N=10, B=4: steps [0,4) [4,8) [8,10). Two ranks for one step, then three.
  ElasticSampler s = MakeSampler(10, 4, 1);
  const std::vector<uint64_t> order = EpochPermutation(10, 1, 0);
  StatusOr<StepPlan> a = s.Plan({0, 0}, 2, 1);
  ASSERT_OK(a);
  EXPECT_EQ(a->indices, (std::vector<uint64_t>{order[2], order[3]}));
  EXPECT_EQ(a->next, (SampleCursor{0, 4}));
  StatusOr<StepPlan> b = s.Plan(a->next, 3, 0);
  ASSERT_OK(b);
  EXPECT_EQ(b->indices, (std::vector<uint64_t>{order[4], order[5]}));
  StatusOr<StepPlan> c = s.Plan(b->next, 3, 2);
  ASSERT_OK(c);
  EXPECT_EQ(c->global_size, 2u);  // the last batch is smaller: no padding
  EXPECT_TRUE(c->indices.empty());
  EXPECT_TRUE(c->ends_epoch);
  EXPECT_EQ(c->next, (SampleCursor{1, 0}));
}

TEST(ElasticSamplerTest, Deterministic) {
  ElasticSampler a = MakeSampler(1000, 64, 77);
  ElasticSampler b = MakeSampler(1000, 64, 77);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    for (uint64_t at = 0; at < 1000; at += 64) {
      for (uint32_t r = 0; r < 5; ++r) {
        StatusOr<StepPlan> x = a.Plan({epoch, at}, 5, r);
        StatusOr<StepPlan> y = b.Plan({epoch, at}, 5, r);
        ASSERT_TRUE(x.ok() && y.ok());
        EXPECT_EQ(x->indices, y->indices);
      }
    }
  }
  ElasticSampler other_seed = MakeSampler(1000, 64, 78);
  EXPECT_NE(a.Plan({0, 0}, 1, 0)->indices, other_seed.Plan({0, 0}, 1, 0)->indices);
}

TEST(ElasticSamplerTest, EmptyDataSet) {
  ElasticSampler s = MakeSampler(0, 8, 1);
  StatusOr<StepPlan> p = s.Plan({4, 0}, 3, 2);
  ASSERT_OK(p) << p.status();
  EXPECT_EQ(p->global_size, 0u);
  EXPECT_TRUE(p->indices.empty());
  EXPECT_TRUE(p->ends_epoch);
  EXPECT_EQ(p->next, (SampleCursor{5, 0}));
}

TEST(ElasticSamplerTest, BatchLargerThanDataSet) {
  ElasticSampler s = MakeSampler(5, 100, 1);
  std::vector<uint64_t> all;
  for (uint32_t r = 0; r < 2; ++r) {
    StatusOr<StepPlan> p = s.Plan({0, 0}, 2, r);
    ASSERT_OK(p);
    EXPECT_EQ(p->global_size, 5u);
    EXPECT_TRUE(p->ends_epoch);
    all.insert(all.end(), p->indices.begin(), p->indices.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

TEST(ElasticSamplerTest, CommittedEqualToNReadsAsNextEpoch) {
  ElasticSampler s = MakeSampler(6, 4, 1);
  StatusOr<StepPlan> p = s.Plan({2, 6}, 1, 0);
  ASSERT_OK(p);
  EXPECT_EQ(p->epoch, 3u);
  EXPECT_EQ(p->global_begin, 0u);
}

TEST(ElasticSamplerTest, InvalidArguments) {
  EXPECT_EQ(ElasticSampler::Create({10, 0, 1}).status().code(), StatusCode::kInvalidArgument);
  ElasticSampler s = MakeSampler(10, 4, 1);
  EXPECT_EQ(s.Plan({0, 0}, 0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Plan({0, 0}, 2, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Plan({0, 11}, 2, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Advance({0, 11}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::data
