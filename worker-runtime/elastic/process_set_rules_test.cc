// Process-set rules (what the driver re-splits in every generation) and the
// example trainer's option parsing (flags over RINGMASTER_* variables).
#include "worker-runtime/elastic/process_set_rules.h"

#include <gtest/gtest.h>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/elastic/worker_setup.h"
#include "worker-runtime/examples/train/train_example_options.h"

namespace ringmaster::elastic {
namespace {

api::Membership Record(std::vector<std::pair<std::string, std::string>> pods_and_nodes) {
  api::Membership r;
  r.generation = 7;
  for (size_t i = 0; i < pods_and_nodes.size(); ++i) {
    r.members.push_back(
        {pods_and_nodes[i].first, "uid", static_cast<int32_t>(i), "127.0.0.1:1", pods_and_nodes[i].second});
  }
  return r;
}

TEST(ProcessSetRulesTest, SetOfWorkersFollowsTheWorkersAcrossGenerations) {
  auto rule = SetOfWorkers("pair", {"w1", "w3"});
  auto before = rule(Record({{"w0", "a"}, {"w1", "a"}, {"w2", "b"}, {"w3", "b"}}));
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].ranks, (std::vector<int>{1, 3}));
  // w0 and w2 left: survivors keep their order, so w1 is rank 0 and w3 rank 1.
  auto after = rule(Record({{"w1", "a"}, {"w3", "b"}, {"w4", "c"}}));
  EXPECT_EQ(after[0].ranks, (std::vector<int>{0, 1}));
  // w3 lost too: the set shrinks to the one member left.
  EXPECT_EQ(rule(Record({{"w1", "a"}, {"w4", "c"}}))[0].ranks, (std::vector<int>{0}));
}

// RINGMASTER_PROCESS_SETS under the driver: the static sets keep the ranks each generation has.
TEST(ProcessSetRulesTest, SetOfRanksKeepsTheRanksTheGenerationHas) {
  auto rule = SetOfRanks("static:0", {3, 0, 2, 2});
  auto four = rule(Record({{"w0", "a"}, {"w1", "a"}, {"w2", "b"}, {"w3", "b"}}));
  ASSERT_EQ(four.size(), 1u);
  EXPECT_EQ(four[0].name, "static:0");
  EXPECT_EQ(four[0].ranks, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(rule(Record({{"w0", "a"}, {"w1", "a"}, {"w2", "b"}}))[0].ranks, (std::vector<int>{0, 2}));
  // A generation without any of them: the set has no members, so it does not exist there.
  auto none = EvaluateProcessSetRules({SetOfRanks("static:1", {5})}, Record({{"w0", "a"}}));
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST(ProcessSetRulesTest, SetsPerNodeGivesLocalSetsAndLeaders) {
  auto sets = SetsPerNode()(Record({{"w0", "b"}, {"w1", "a"}, {"w2", "b"}, {"w3", "a"}, {"w4", "c"}}));
  ASSERT_EQ(sets.size(), 4u);
  EXPECT_EQ(sets[0].name, "node:a");
  EXPECT_EQ(sets[0].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(sets[1].name, "node:b");
  EXPECT_EQ(sets[1].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(sets[2].name, "node:c");
  EXPECT_EQ(sets[2].ranks, (std::vector<int>{4}));
  EXPECT_EQ(sets[3].name, "node-leaders");
  EXPECT_EQ(sets[3].ranks, (std::vector<int>{0, 1, 4}));
}

// The local rank (the GPU under NCCL) is the place in the node's set, and moves when a worker leaves.
TEST(ProcessSetRulesTest, LocalRankIsTheIndexAmongTheMembersOnTheSameNode) {
  auto four = Record({{"w0", "b"}, {"w1", "a"}, {"w2", "b"}, {"w3", "a"}, {"w4", "c"}});
  std::vector<int> local;
  for (const char* w : {"w0", "w1", "w2", "w3", "w4"}) local.push_back(LocalRank(four, w));
  EXPECT_EQ(local, (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(LocalRank(Record({{"w1", "a"}, {"w3", "a"}}), "w3"), 1);
  EXPECT_EQ(LocalRank(Record({{"w3", "a"}}), "w3"), 0);
  EXPECT_EQ(LocalRank(four, "absent"), 0);
}

TEST(ProcessSetRulesTest, EvaluationDropsEmptySetsAndRefusesDuplicateNames) {
  auto record = Record({{"w0", "a"}, {"w1", "a"}});
  auto sets = EvaluateProcessSetRules({SetOfWorkers("gone", {"w9"}), SetOfWorkers("both", {"w0", "w1"})}, record);
  ASSERT_OK(sets) << sets.status().ToString();
  ASSERT_EQ(sets->size(), 1u);
  EXPECT_EQ((*sets)[0].name, "both");
  auto twice = EvaluateProcessSetRules({SetOfWorkers("x", {"w0"}), SetOfWorkers("x", {"w1"})}, record);
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("'x'"), std::string::npos) << twice.status().ToString();
}

TEST(ProcessSetRulesTest, StepContextNamesAMissingSet) {
  std::map<std::string, int> sets = {{"node:a", 1}};
  StepContext ctx;
  ctx.generation = 4;
  ctx.process_sets = &sets;
  EXPECT_EQ(ctx.ProcessSet("node:a").value(), 1);
  auto missing = ctx.ProcessSet("node:b");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("node:b"), std::string::npos);
}

StatusOr<examples::TrainOptions> Parse(std::vector<std::string> args, std::map<std::string, std::string> env) {
  args.insert(args.begin(), "ringmaster-train-example");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return examples::ParseTrainOptions(static_cast<int>(argv.size()), argv.data(), env);
}

TEST(TrainOptionsTest, InAPodEverythingComesFromTheOperatorsEnvironment) {
  auto o = Parse({"--steps", "5"}, {{std::string(api::env::kJobName), "job"},
                                    {std::string(api::env::kJobNamespace), "ns"},
                                    {std::string(api::env::kPodName), "job-worker-2"},
                                    {std::string(api::env::kPodIp), "127.4.0.9"},
                                    {std::string(api::env::kCoordinatorPort), std::to_string(api::kCoordinatorPort)},
                                    {std::string(api::env::kSecret), "s3cret"},
                                    {std::string(api::env::kMinWorkers), "2"},
                                    {std::string(api::env::kCheckpointDir), "/ckpt"}});
  ASSERT_OK(o) << o.status().ToString();
  EXPECT_EQ(o->steps, 5);
  EXPECT_TRUE(o->membership_file.empty());
  EXPECT_EQ(o->job_name, "job");
  EXPECT_EQ(o->job_namespace, "ns");
  EXPECT_EQ(o->worker_id, "job-worker-2");
  EXPECT_EQ(o->host, "127.4.0.9");
  EXPECT_EQ(o->store_port, api::kCoordinatorPort);
  EXPECT_EQ(o->min_size, 2);
  EXPECT_EQ(o->checkpoint_dir, "/ckpt");
}

TEST(TrainOptionsTest, FlagsWinAndTheLaunchersVariablesComeFirst) {
  auto o = Parse({"--worker-id", "flag-id", "--backend", "gloo", "--hierarchical", "true"},
                 {{std::string(api::env::kMembershipFile), "/tmp/m.json"},
                  {std::string(api::env::kWorkerId), "w1"},
                  {std::string(api::env::kPodName), "pod"},
                  {std::string(api::env::kStorePort), "4000"},
                  {std::string(api::env::kCoordinatorPort), std::to_string(api::kCoordinatorPort)},
                  {std::string(api::env::kSecret), "s"}});
  ASSERT_OK(o) << o.status().ToString();
  EXPECT_EQ(o->worker_id, "flag-id");
  EXPECT_EQ(o->store_port, 4000);
  EXPECT_TRUE(o->hierarchical);
  EXPECT_EQ(o->backend, comm::Backend::kGloo);
}

// The hang watchdog's settings: defaults, the environment (RINGMASTER_HANG_*), flags on top, and a bad value named.
TEST(TrainOptionsTest, TheHangWatchdogComesFromTheEnvironmentAndFlags) {
  std::map<std::string, std::string> env = {{std::string(api::env::kMembershipFile), "/m"},
                                            {std::string(api::env::kWorkerId), "w"},
                                            {std::string(api::env::kSecret), "s"},
                                            {std::string(api::env::kStorePort), "1"}};
  auto o = Parse({}, env);
  ASSERT_OK(o) << o.status().ToString();
  EXPECT_EQ(o->hang_factor, 10);
  EXPECT_EQ(o->hang_min_seconds, 30);
  env[std::string(api::env::kHangFactor)] = "0";
  env[std::string(api::env::kHangMinSeconds)] = "2.5";
  o = Parse({}, env);
  ASSERT_OK(o) << o.status().ToString();
  EXPECT_EQ(o->hang_factor, 0) << "0 turns it off";
  EXPECT_EQ(o->hang_min_seconds, 2.5);
  o = Parse({"--hang-factor", "4", "--hang-min-seconds", "9"}, env);
  ASSERT_OK(o) << o.status().ToString();
  EXPECT_EQ(o->hang_factor, 4);
  EXPECT_EQ(o->hang_min_seconds, 9);
  const ElasticOptions eo = DriverOptions(*o, runtime::RuntimeConfig{}, nullptr, nullptr, {});
  EXPECT_EQ(eo.hang_factor, 4);
  EXPECT_EQ(eo.hang_floor, std::chrono::milliseconds(9000));
  for (const char* bad : {"ten", "-1", "1e9", "3x"}) {
    env[std::string(api::env::kHangFactor)] = bad;
    o = Parse({}, env);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_NE(o.status().message().find(std::string(api::env::kHangFactor)), std::string::npos) << o.status();
  }
  env[std::string(api::env::kHangFactor)] = "10";
  env[std::string(api::env::kHangMinSeconds)] = "0";
  o = Parse({}, env);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find(std::string(api::env::kHangMinSeconds)), std::string::npos) << o.status();
}

TEST(TrainOptionsTest, BadInputNamesTheProblem) {
  const std::map<std::string, std::string> ok_env = {{std::string(api::env::kMembershipFile), "/m"},
                                                     {std::string(api::env::kWorkerId), "w"},
                                                     {std::string(api::env::kSecret), "s"},
                                                     {std::string(api::env::kStorePort), "1"}};
  auto message = [&](std::vector<std::string> args, std::map<std::string, std::string> env) {
    auto o = Parse(std::move(args), std::move(env));
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    return o.status().message();
  };
  EXPECT_NE(message({"--steps", "many"}, ok_env).find("--steps"), std::string::npos);
  EXPECT_NE(message({"--steps", "4abc"}, ok_env).find("--steps"), std::string::npos);
  EXPECT_NE(message({"--features", "-1"}, ok_env).find("--features"), std::string::npos);
  EXPECT_NE(message({"--steps"}, ok_env).find("--steps"), std::string::npos);
  EXPECT_NE(message({"--dtype", "int8"}, ok_env).find("--dtype"), std::string::npos);
  EXPECT_NE(message({"--backend", "mpi"}, ok_env).find("--backend"), std::string::npos);
  EXPECT_NE(message({"--bogus", "1"}, ok_env).find("--bogus"), std::string::npos);
  EXPECT_NE(message({}, {{std::string(api::env::kMembershipFile), "/m"}, {std::string(api::env::kStorePort), "4x"}})
                .find(std::string(api::env::kStorePort)),
            std::string::npos);
  EXPECT_NE(message({}, {{std::string(api::env::kSecret), "s"}}).find("no membership source"), std::string::npos);
  EXPECT_NE(message({}, {{std::string(api::env::kJobName), "j"},
                         {std::string(api::env::kPodName), "p"},
                         {std::string(api::env::kSecret), "s"},
                         {std::string(api::env::kCoordinatorPort), std::to_string(api::kCoordinatorPort)}})
                .find("--job-namespace"),
            std::string::npos);
  EXPECT_NE(message({}, {{std::string(api::env::kMembershipFile), "/m"}, {std::string(api::env::kWorkerId), "w"}})
                .find("--secret"),
            std::string::npos);
  auto help = Parse({"--help"}, {{std::string(api::env::kStorePort), "not a number"}});
  ASSERT_OK(help);
  EXPECT_TRUE(help->help);
  EXPECT_NE(examples::TrainUsage().find("--out"), std::string::npos);
  EXPECT_NE(examples::TrainUsage().find(std::string(api::env::kStorePort)), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::elastic
