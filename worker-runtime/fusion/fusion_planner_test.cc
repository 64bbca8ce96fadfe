#include "worker-runtime/fusion/fusion_planner.h"

#include <gtest/gtest.h>

namespace ringmaster::fusion {
namespace {

Request Make(CollectiveKind kind, common::DataType type, size_t count, common::ReduceOp op = common::ReduceOp::kSum) {
  Request r;
  r.kind = kind;
  r.type = type;
  r.count = count;
  r.op = op;
  return r;
}

TEST(FusionPlannerTest, FusesConsecutiveCompatibleAllreducesUpToThreshold) {
  std::vector<Request> rs = {
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 10),
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 10),
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat64, 10),  // other type: new batch
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat64, 10, common::ReduceOp::kMax),  // other op
      Make(CollectiveKind::kBroadcast, common::DataType::kFloat64, 10),                          // alone
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 20),
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 20),     // 160 bytes > 120: new batch
      Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 1000)};  // larger than threshold
  std::vector<Request*> ptrs;
  for (auto& r : rs) ptrs.push_back(&r);
  auto batches = PlanBatches(ptrs, 120);
  std::vector<size_t> sizes;
  for (const auto& b : batches) sizes.push_back(b.requests.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(PlanBatches(ptrs, 0).size(), rs.size());  // fusion off
}

TEST(FusionPlannerTest, PackAndUnpackRoundTrip) {
  std::vector<float> a = {1, 2, 3}, b = {4, 5};
  std::vector<float> oa(3), ob(2);
  Request ra = Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 3);
  Request rb = Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 2);
  ra.in = a.data();
  ra.out = oa.data();
  rb.in = b.data();
  rb.out = ob.data();
  Batch batch{{&ra, &rb}};
  std::vector<uint8_t> buffer;
  PackBatch(batch, buffer);
  ASSERT_EQ(buffer.size(), 20u);
  UnpackBatch(batch, buffer);
  EXPECT_EQ(oa, a);
  EXPECT_EQ(ob, b);
}

TEST(FusionPlannerTest, FingerprintCoversWhatRanksMustAgreeOn) {
  Request a = Make(CollectiveKind::kAllreduce, common::DataType::kFloat32, 3);
  a.name = "g";
  Request b = a;
  EXPECT_EQ(a.Fingerprint(), b.Fingerprint());
  b.count = 4;
  EXPECT_NE(a.Fingerprint(), b.Fingerprint());
  b = a;
  b.name = "h";
  EXPECT_NE(a.Fingerprint(), b.Fingerprint());
  b = a;
  b.op = common::ReduceOp::kMax;
  EXPECT_NE(a.Fingerprint(), b.Fingerprint());
}

}  // namespace
}  // namespace ringmaster::fusion
