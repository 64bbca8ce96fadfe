#include "api/membership.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::api {
namespace {

using json = nlohmann::json;

Membership TwoMembers() {
  Membership m;
  m.generation = 3;
  m.coordinator = "10.0.0.1:29500";
  m.members = {{"j-worker-0", "u0", 0, "10.0.0.1", "n0"}, {"j-worker-1", "u1", 1, "10.0.0.2", "n1"}};
  m.reason = "WorkerJoined";
  m.message = "generation 3, world size 2";
  m.changed_at = "2027-01-15T08:00:00Z";
  return m;
}

TEST(MembershipJsonTest, RoundTrips) {
  Membership m = TwoMembers();
  json j = MembershipToJson(m);
  EXPECT_EQ(j["worldSize"], 2);
  auto back = MembershipFromJson(j);
  ASSERT_OK(back);
  EXPECT_EQ(*back, m);
  auto empty = MembershipFromJson(json(nullptr));
  ASSERT_OK(empty);
  EXPECT_EQ(empty->generation, 0);
}

// Each malformed document is refused with InvalidArgument naming the field.
TEST(MembershipJsonTest, RejectsMalformedFieldsNamingThem) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& j) { j["generation"] = "two"; }, "status.membership.generation: expected integer, got string"},
      {[](json& j) { j["generation"] = -1; }, "status.membership.generation"},
      {[](json& j) { j["coordinator"] = 5; }, "status.membership.coordinator: expected string, got integer"},
      {[](json& j) { j["reason"] = true; }, "status.membership.reason: expected string"},
      {[](json& j) { j["message"] = json::array(); }, "status.membership.message: expected string"},
      {[](json& j) { j["changedAt"] = 1.5; }, "status.membership.changedAt: expected string, got number"},
      {[](json& j) { j["worldSize"] = "2"; }, "status.membership.worldSize: expected integer"},
      {[](json& j) { j["worldSize"] = 3; }, "status.membership.worldSize: 3 disagrees"},
      {[](json& j) { j["members"] = json::object(); }, "status.membership.members: expected array, got object"},
      {[](json& j) { j["members"][1] = "w"; }, "status.membership.members[1]: expected object, got string"},
      {[](json& j) { j["members"][1].erase("rank"); }, "status.membership.members[1].rank: required"},
      {[](json& j) { j["members"][1]["rank"] = "1"; }, "status.membership.members[1].rank: expected integer"},
      {[](json& j) { j["members"][1]["rank"] = 5; }, "status.membership.members: ranks must be 0..1"},
      {[](json& j) { j["members"][0]["pod"] = ""; }, "status.membership.members[0].pod: required"},
      {[](json& j) { j["members"][0]["uid"] = 7; }, "status.membership.members[0].uid: expected string"},
      {[](json& j) { j["members"][0]["address"] = 7; }, "status.membership.members[0].address: expected string"},
      {[](json& j) { j["members"][0]["node"] = 7; }, "status.membership.members[0].node: expected string"},
  };
  for (const auto& [mutate, want] : cases) {
    json j = MembershipToJson(TwoMembers());
    mutate(j);
    auto got = MembershipFromJson(j, "status.membership");
    ASSERT_FALSE(got.ok()) << want;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(want), std::string::npos) << got.status() << " lacks " << want;
  }
  EXPECT_EQ(MembershipFromJson(json("x")).status().code(), StatusCode::kInvalidArgument);
}

TEST(NextMembershipTest, SurvivorsKeepOrderNewcomersAppendedGenerationGrows) {
  Membership current = TwoMembers();
  current.members.push_back({"j-worker-2", "u2", 2, "10.0.0.3", "n0"});
  Membership next = NextMembership(
      current,
      [](const Member& m) -> std::optional<Member> {
        if (m.pod == "j-worker-0") return std::nullopt;  // rank 0 is lost
        Member kept = m;
        kept.node = "moved";
        return kept;
      },
      {{"j-worker-7", "u7", 0, "10.0.0.8", "n2"}},
      [](const Member& rank0) { return CoordinatorAddress(rank0, 29500); });
  EXPECT_EQ(next.generation, 4);
  ASSERT_EQ(next.world_size(), 3);
  EXPECT_EQ(next.members[0].pod, "j-worker-1");
  EXPECT_EQ(next.members[0].node, "moved");
  EXPECT_EQ(next.members[1].pod, "j-worker-2");
  EXPECT_EQ(next.members[2].pod, "j-worker-7");
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(next.members[i].rank, i);
  EXPECT_EQ(next.coordinator, "10.0.0.2:29500");
  EXPECT_TRUE(next.reason.empty());

  Membership none = NextMembership(
      next, [](const Member&) { return std::nullopt; }, {}, [](const Member&) { return std::string("unused"); });
  EXPECT_EQ(none.generation, 5);
  EXPECT_TRUE(none.coordinator.empty());
}

TEST(MembershipTextTest, ParsesTheLaunchersFileAndRefusesWhatIsNotJson) {
  auto parsed = ParseMembership(MembershipToJson(TwoMembers()).dump(2));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, TwoMembers());
  for (const char* text : {"", "{", "\xff", "{\"generation\": 1,}"}) {
    auto bad = ParseMembership(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(bad.status().message().starts_with("not valid JSON")) << bad.status();
  }
}

TEST(MembershipOfJobTest, ReadsStatusMembershipAndRefusesOtherShapes) {
  auto none = MembershipOfJob(json{{"metadata", {{"name", "j"}}}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  auto published = MembershipOfJob(json{{"status", {{"membership", MembershipToJson(TwoMembers())}}}});
  ASSERT_TRUE(published.ok()) << published.status();
  ASSERT_TRUE(published->has_value());
  EXPECT_EQ(**published, TwoMembers());
  // Never an exception, whatever the object looks like.
  for (const json& job : {json::array(), json("job"), json{{"status", "Running"}},
                          json{{"status", {{"membership", {{"members", 3}}}}}}}) {
    auto bad = MembershipOfJob(job);
    ASSERT_FALSE(bad.ok()) << job.dump();
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_NE(MembershipOfJob(json{{"status", {{"membership", {{"members", 3}}}}}})
                .status()
                .message()
                .find("status.membership.members"),
            std::string::npos);
}

}  // namespace
}  // namespace ringmaster::api
