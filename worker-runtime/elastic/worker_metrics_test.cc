// WorkerMetrics' job labels: every series carries the worker's job, so a job's workers are found however
// Prometheus scrapes them (the chart's PodMonitor, or the prometheus.io/scrape annotations).
#include "worker-runtime/elastic/worker_metrics.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <sstream>

#include "api/names.h"

namespace ringmaster::elastic {
namespace {

TEST(WorkerMetricsTest, EverySeriesCarriesTheJobsLabels) {
  WorkerMetrics m(nullptr, {{"trainingjob", "bert"}, {"namespace", "team-a"}});
  m.Joined(3, 4);
  m.Step(0.2);
  const std::string text = m.Render();
  EXPECT_NE(text.find("ringmaster_worker_generation{namespace=\"team-a\",trainingjob=\"bert\"} 3"), std::string::npos)
      << text;
  int series = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++series;
    EXPECT_NE(line.find("namespace=\"team-a\""), std::string::npos) << line;
    EXPECT_NE(line.find("trainingjob=\"bert\""), std::string::npos) << line;
  }
  EXPECT_GT(series, 20);
}

// A port that cannot be served (another process holds it: two hostNetwork jobs on one node) is one warning naming
// the setting that chose it, and the worker goes on: telemetry never stops training.
TEST(WorkerMetricsTest, HangsAreCounted) {
  WorkerMetrics m(nullptr, {});
  EXPECT_NE(m.Render().find("ringmaster_worker_hangs_total 0"), std::string::npos);
  m.Hung();
  m.Hung();
  EXPECT_NE(m.Render().find("ringmaster_worker_hangs_total 2"), std::string::npos) << m.Render();
}

TEST(WorkerMetricsTest, APortInUseIsAWarningNamingTheSettingNotAnError) {
  WorkerMetrics first(nullptr);
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  WorkerMetrics second(nullptr);
  const Status served = second.Serve("127.0.0.1:" + std::to_string(first.port()));
  ASSERT_FALSE(served.ok());
  const std::string line = second.ServeOutcome(served, first.port());
  EXPECT_NE(line.find("RINGMASTER_HEALTH_PORT"), std::string::npos) << line;
  EXPECT_NE(line.find("spec.ports.metrics"), std::string::npos) << line;
  EXPECT_NE(line.find("training goes on"), std::string::npos) << line;
  EXPECT_EQ(first.ServeOutcome(Status::Ok(), 0),
            "serving /metrics and /readyz on port " + std::to_string(first.port()));
}

TEST(WorkerMetricsTest, TheJobComesFromTheWorkersEnvironmentAndIsAbsentWithoutOne) {
  const std::string job(api::env::kJobName), ns(api::env::kJobNamespace);
  ::setenv(job.c_str(), "bert", 1);
  ::setenv(ns.c_str(), "team-a", 1);
  EXPECT_EQ(JobLabels(), (std::map<std::string, std::string>{{"namespace", "team-a"}, {"trainingjob", "bert"}}));
  ::setenv(ns.c_str(), "", 1);
  EXPECT_EQ(JobLabels(), (std::map<std::string, std::string>{{"trainingjob", "bert"}}));
  ::unsetenv(job.c_str());
  ::unsetenv(ns.c_str());
  EXPECT_TRUE(JobLabels().empty());
  EXPECT_EQ(WorkerMetrics().Render().find("trainingjob="), std::string::npos) << "ringmaster-run's workers: none";
}

}  // namespace
}  // namespace ringmaster::elastic
