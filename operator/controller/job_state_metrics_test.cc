// JobStateMetrics: the series the chart's alerts are written over, computed from the cached jobs.
#include "operator/controller/job_state_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <memory>
#include <string>

#include "metrics/metrics_server.h"

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

json Job(const std::string& ns, const std::string& name, json spec, json status) {
  return {{"apiVersion", "ringmaster.io/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"namespace", ns}, {"name", name}}},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

// family name -> "namespace/trainingjob" -> value, of the families with those labels.
std::map<std::string, std::map<std::string, double>> ByJob(const std::vector<prometheus::MetricFamily>& families) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& f : families) {
    for (const auto& m : f.metric) {
      std::string ns, job;
      for (const auto& l : m.label) {
        if (l.name == "namespace") ns = l.value;
        if (l.name == "trainingjob") job = l.value;
      }
      if (job.empty()) continue;
      out[f.name][ns + "/" + job] = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

// RingmasterRestartBudgetNearlySpent compares restarts with maxRestarts: both per job, maxRestarts 10 (the
// API's default) where the spec has none.
TEST(JobStateMetricsTest, RestartsAndTheirBudgetPerJob) {
  kube::Store store;
  store.Upsert("ns/a", std::make_shared<const json>(Job(
                           "ns", "a", {{"replicas", {{"min", 2}, {"max", 4}}}, {"elasticPolicy", {{"maxRestarts", 3}}}},
                           {{"phase", "Running"}, {"restartCount", 2}})));
  store.Upsert("ns/b", std::make_shared<const json>(
                           Job("ns", "b", {{"replicas", {{"min", 1}, {"max", 1}}}}, {{"phase", "Failed"}})));
  bool active = true;
  JobStateMetrics metrics(&store, [&] { return active; });

  auto got = ByJob(metrics.Collect());
  EXPECT_EQ(got["ringmaster_trainingjob_restarts_total"]["ns/a"], 2);
  EXPECT_EQ(got["ringmaster_trainingjob_max_restarts"]["ns/a"], 3);
  EXPECT_EQ(got["ringmaster_trainingjob_restarts_total"]["ns/b"], 0);
  EXPECT_EQ(got["ringmaster_trainingjob_max_restarts"]["ns/b"], 10) << "the API's default";
  EXPECT_EQ(got["ringmaster_trainingjob_workers_min"]["ns/a"], 2);
  EXPECT_EQ(got["ringmaster_trainingjob_info"].size(), 2u);

  active = false;  // a standby reports nothing
  EXPECT_TRUE(metrics.Collect().empty());
}

// More jobs than one batch of series: every family still has one series per job under one header, in the
// text exactly as prometheus-cpp renders the gathered families.
TEST(JobStateMetricsTest, ManyJobsComeInBatchesThatJoinIntoOneFamilyEach) {
  auto store = std::make_unique<kube::Store>();
  for (int i = 0; i < 1234; ++i) {
    const std::string name = "job-" + std::to_string(i);
    store->Upsert("ns/" + name, std::make_shared<const json>(Job("ns", name, {{"replicas", {{"min", 1}, {"max", 2}}}},
                                                                 {{"phase", "Running"}, {"restartCount", i}})));
  }
  auto metrics = std::make_shared<JobStateMetrics>(store.get(), [] { return true; });
  size_t batches = 0;
  metrics->CollectEach([&](prometheus::MetricFamily f) {
    ++batches;
    EXPECT_LE(f.metric.size(), 1234u);
  });
  const auto families = metrics->Collect();
  EXPECT_GT(batches, families.size()) << "per-job families come in more than one batch";
  auto got = ByJob(families);
  EXPECT_EQ(got["ringmaster_trainingjob_info"].size(), 1234u);
  EXPECT_EQ(got["ringmaster_trainingjob_restarts_total"]["ns/job-1000"], 1000);
  const std::string text = metrics::RenderText({metrics});
  EXPECT_EQ(text, prometheus::TextSerializer().Serialize(families));
  size_t info_headers = 0;
  for (size_t at = text.find("# TYPE ringmaster_trainingjob_info "); at != std::string::npos;
       at = text.find("# TYPE ringmaster_trainingjob_info ", at + 1))
    ++info_headers;
  EXPECT_EQ(info_headers, 1u);
}

}  // namespace
}  // namespace ringmaster::controller
