#include "api/training_job.h"

#include <gtest/gtest.h>

#include "api/json_fields.h"
#include "api/names.h"
#include "base/status_test_macros.h"

namespace ringmaster::api {
namespace {

using json = nlohmann::json;

// A TrainingJob with every field the decoder reads set (and nothing else).
TrainingJob FullJob() {
  TrainingJob job;
  job.metadata = {"bert", "default", "uid-1", 4, "2027-01-15T09:00:00Z"};
  TrainingJobSpec& spec = job.spec;
  spec.replicas = {2, 8, 4, 2, 1};
  spec.pod_template = {{"spec", {{"containers", {{{"name", "trainer"}, {"image", "busybox"}}}}}}};
  spec.checkpoint = {"ckpt", "/ckpt", 3};
  spec.elastic_policy = {10, 30, 10, 30, 60};
  spec.run_policy = {false, 600, 3600, "Running", 5};
  spec.scheduling = {"high", "default-scheduler", 600, GangScheduling{30}};
  spec.ports = {31000, 31100};
  TrainingJobStatus& status = job.status;
  status.observed_generation = 4;
  status.phase = "Running";
  status.selector = std::string(kJobNameLabel) + "=bert";
  status.conditions = {{"Running", "True", "WorkersRunning", "4 workers", "2027-01-15T08:00:00Z", 4}};
  status.replicas = ReplicaCounts{4, 5, 5, 0, 1, 1};
  status.restart_count = 1;
  status.recent_failures = {{"bert-worker-3", "u3", 137, "OOMKilled", "2027-01-15T08:01:00Z", 312},
                            {"bert-worker-6", "u6", 3, "Error", "2027-01-15T08:03:00Z", 4, "gpu-node-7", "2 (GPU-89)",
                             "worker bert-worker-6 on node gpu-node-7, GPU 2 (GPU-89): DataLoss: GPU 2: ECC"}};
  status.leaving = {{"bert-worker-5", "u5", "2027-01-15T08:02:00Z"}};
  status.start_time = "2027-01-15T07:00:00Z";
  status.completion_time = "2027-01-15T10:00:00Z";
  Membership m;
  m.generation = 2;
  m.coordinator = "10.0.0.1:29500";
  m.members = {{"bert-worker-0", "u0", 0, "10.0.0.1", "n0"}};
  m.reason = "WorkerJoined";
  m.message = "generation 2, world size 1";
  m.changed_at = "2027-01-15T08:00:00Z";
  status.membership = m;
  Goodput g;
  g.ratio = 0.9375;
  g.productive_seconds = 3375.5;
  g.wall_seconds = 3600.5;
  g.as_of = "2027-01-15T08:00:00.250Z";
  g.accounted_generation = 2;
  g.lost_seconds = {12.5, 40, 3.25, 0.5, 1.5};
  g.failures = 1;
  g.last_recovery_seconds = 57.75;
  g.recovering_since = "2027-01-15T08:10:00.100Z";
  status.goodput = g;
  return job;
}

TEST(TrainingJobTest, RoundTripsThroughJson) {
  const TrainingJob job = FullJob();
  json j = TrainingJobToJson(job);
  EXPECT_EQ(j["apiVersion"], kApiVersion);
  EXPECT_EQ(j["kind"], kKind);
  auto back = DecodeTrainingJob(j);
  ASSERT_OK(back);
  EXPECT_EQ(*back, job);
  EXPECT_EQ(TrainingJobToJson(*back), j);
}

TEST(TrainingJobTest, AbsentFieldsStayUnset) {
  auto job = DecodeTrainingJob(json{{"metadata", {{"name", "j"}}}, {"spec", {{"replicas", {{"min", 1}, {"max", 2}}}}}});
  ASSERT_OK(job);
  EXPECT_EQ(job->spec.replicas.min, 1);
  EXPECT_FALSE(job->spec.replicas.desired.has_value());
  EXPECT_FALSE(job->spec.replicas.multiple_of.has_value());
  EXPECT_FALSE(job->spec.run_policy.suspend.has_value());
  EXPECT_TRUE(job->spec.pod_template.is_null());
  EXPECT_FALSE(job->status.membership.has_value());
  EXPECT_FALSE(job->status.replicas.has_value());
  EXPECT_FALSE(job->status.goodput.has_value());
}

TEST(TrainingJobTest, GoodputUsesTheContractsNamesAndReadsWholeNumbersAsSeconds) {
  json j = GoodputToJson(FullJob().status.goodput.value());
  for (const char* key : {"ratio", "productiveSeconds", "wallSeconds", "asOf", "accountedGeneration", "lostSeconds",
                          "failures", "lastRecoverySeconds"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* phase : {"detect", "reschedule", "rebuild", "restore", "replay"})
    EXPECT_TRUE(j["lostSeconds"].contains(phase)) << phase;
  // The apiserver hands 40.0 back as 40.
  j["lostSeconds"]["reschedule"] = 40;
  j.erase("lastRecoverySeconds");
  j.erase("recoveringSince");
  auto status = DecodeTrainingJobStatus(json{{"goodput", j}});
  ASSERT_OK(status);
  ASSERT_TRUE(status->goodput.has_value());
  EXPECT_EQ(status->goodput->lost_seconds.reschedule, 40);
  EXPECT_FALSE(status->goodput->last_recovery_seconds.has_value());
  EXPECT_TRUE(status->goodput->recovering_since.empty());
}

// status.hangs and status.goodput.lostSeconds.hung (api/hang_report.h) round trip; no hangs is no field.
TEST(TrainingJobTest, HangsRoundTripAndAreAbsentWhenNone) {
  TrainingJobStatus s;
  s.hangs = 3;
  s.goodput = Goodput{};
  s.goodput->lost_seconds.hung = 12.5;
  const json j = TrainingJobStatusToJson(s);
  EXPECT_EQ(j["hangs"], 3);
  EXPECT_EQ(j["goodput"]["lostSeconds"]["hung"], 12.5);
  auto back = DecodeTrainingJobStatus(j);
  ASSERT_OK(back);
  EXPECT_EQ(back->hangs, 3);
  EXPECT_EQ(back->goodput->lost_seconds.hung, 12.5);
  EXPECT_FALSE(TrainingJobStatusToJson(TrainingJobStatus{}).contains("hangs"));
  EXPECT_EQ(DecodeTrainingJobStatus(json{{"hangs", "x"}}).status().code(), StatusCode::kInvalidArgument);
}

// "/spec/replicas/min" -> "spec.replicas.min", "/status/conditions/0/type" -> "status.conditions[0].type".
std::string PathOf(const json::json_pointer& pointer) {
  std::string out;
  std::string s = pointer.to_string();
  size_t pos = 1;
  while (pos <= s.size()) {
    size_t next = s.find('/', pos);
    std::string token = s.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!token.empty() && std::isdigit(static_cast<unsigned char>(token[0])))
      out += "[" + token + "]";
    else
      out += (out.empty() ? "" : ".") + token;
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

// Every field under `at` (and `at` itself), except the opaque pod template's contents.
void CollectFields(const json& doc, const json::json_pointer& at, std::vector<json::json_pointer>* out) {
  out->push_back(at);
  if (at.to_string() == "/spec/template") return;
  const json& v = doc.at(at);
  if (v.is_object()) {
    for (const auto& [key, _] : v.items()) CollectFields(doc, at / key, out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) CollectFields(doc, at / i, out);
  }
}

// A value of another type than `v`.
json WrongTypeFor(const json& v) {
  if (v.is_string()) return 7;
  if (v.is_object()) return "x";
  if (v.is_array()) return json{{"a", 1}};
  return "x";  // integer, boolean
}

TEST(TrainingJobTest, EveryFieldOfTheWrongTypeIsAnErrorNamingObjectAndField) {
  const json full = TrainingJobToJson(FullJob());
  std::vector<json::json_pointer> fields;
  for (const char* top : {"metadata", "spec", "status"})
    CollectFields(full, json::json_pointer(std::string("/") + top), &fields);
  ASSERT_GT(fields.size(), 60u);  // guards the walk itself
  for (const auto& field : fields) {
    json doc = full;
    const json original = doc.at(field);
    doc.at(field) = WrongTypeFor(original);
    auto got = DecodeTrainingJob(doc);
    ASSERT_FALSE(got.ok()) << field.to_string() << " of the wrong type was accepted";
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    std::string want = PathOf(field) + ": expected " + JsonTypeName(original) + ", got " + JsonTypeName(doc.at(field));
    if (PathOf(field).rfind("metadata", 0) != 0) want = "TrainingJob default/bert: " + want;
    EXPECT_NE(got.status().message().find(want), std::string::npos)
        << field.to_string() << ": '" << got.status().message() << "' does not contain '" << want << "'";
  }
}

TEST(TrainingJobTest, OutOfRangeIntegersAndNonObjectsAreRefused) {
  json doc = TrainingJobToJson(FullJob());
  doc["status"]["restartCount"] = int64_t{1} << 40;
  auto got = DecodeTrainingJob(doc);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("status.restartCount: 1099511627776 is out of range"), std::string::npos)
      << got.status();
  EXPECT_EQ(DecodeTrainingJob(json::array()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::api
