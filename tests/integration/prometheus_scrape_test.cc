// A real Prometheus (Debian's) scrapes ringmaster-operator's /metrics: the in-house exposition format
// must be accepted by promtool and by the server, and the series a dashboard uses must be queryable.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/manifests.h"
#include "support/cluster_test.h"
#include "support/operator_process.h"
#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

class PrometheusScrapeTest : public JobTest {
 protected:
  PrometheusScrapeTest() : JobTest("prom") {}
};

// A free TCP port on 127.0.0.1, as the kernel picks it.
std::string FreePort() {
  auto r = RunCommand({"python3", "-c",
                       "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"});
  return r.ok() && r->ok() ? r->out.substr(0, r->out.find('\n')) : "";
}

TEST_F(PrometheusScrapeTest, PrometheusScrapesTheOperatorsSeries) {
  for (const char* tool : {"prometheus", "promtool"}) {
    auto which = RunCommand({"sh", "-c", std::string("command -v ") + tool});
    ASSERT_COMMAND_OK(which) << tool << " is not installed: run make deps (Debian package prometheus)";
  }
  BackgroundProcess op;
  ASSERT_OK(StartOperatorProcess(&op, RINGMASTER_OPERATOR_BIN, cluster_, ns_, ::testing::TempDir() + ns_ + "-op.log"));
  ASSERT_OK(cluster_
                  .Apply(ringmaster::testing::TrainingJobHead() + "metadata: {name: scraped, namespace: " + ns_ +
                         "}\nspec:\n  replicas: {min: 1, max: 2}\n  elasticPolicy: {joinBatchWindowSeconds: 1}\n"
                         "  template:\n    spec:\n      containers:\n      - {name: t, image: example/trainer:1, "
                         "resources: {limits: {nvidia.com/gpu: 1}}}\n")
                  );
  std::string metrics_port;
  ASSERT_OK(WaitFor("the operator's metrics port", seconds(30), [&](std::string*) {
                metrics_port = LoggedPort(op.Log(), "metrics");
                return !metrics_port.empty();
              }));
  ASSERT_TRUE(WaitFor("a published membership", seconds(60), [&](std::string*) {
                auto job = cluster_.KubectlJson({"get", "tj", "scraped", "-n", ns_});
                return job.ok() && job->value("status", json::object()).value("membership", json::object()).value("worldSize", 0) == 2;
              }).ok());

  // promtool lints the exposition text.
  auto text = RunCommand({"curl", "-sf", "http://127.0.0.1:" + metrics_port + "/metrics"});
  ASSERT_COMMAND_OK(text);
  auto lint = RunCommand({"promtool", "check", "metrics"}, seconds(30), text->out);
  ASSERT_OK(lint);
  EXPECT_EQ(lint->exit_code, 0) << lint->out << lint->err;

  // A Prometheus server scrapes it every second; its query API then answers with our series.
  const std::string dir = ::testing::TempDir() + ns_ + "-prometheus";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  {
    std::ofstream cfg(dir + "/prometheus.yml");
    cfg << "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n- job_name: ringmaster\n"
           "  static_configs:\n  - targets: ['127.0.0.1:" << metrics_port << "']\n";
  }
  std::string prom_port = FreePort();
  ASSERT_FALSE(prom_port.empty());
  BackgroundProcess prom;
  ASSERT_OK(prom.Start({"prometheus", "--config.file=" + dir + "/prometheus.yml", "--storage.tsdb.path=" + dir + "/data",
                          "--web.listen-address=127.0.0.1:" + prom_port},
                         dir + "/prometheus.log")
                  );
  auto query = [&](const std::string& q) -> json {
    auto r = RunCommand({"curl", "-s", "--get", "--data-urlencode", "query=" + q,
                         "http://127.0.0.1:" + prom_port + "/api/v1/query"});
    if (!r.ok() || !r->ok()) return json::object();
    json j = json::parse(r->out, nullptr, false);
    return j.is_object() ? j : json::object();
  };
  Status up = WaitFor("Prometheus to scrape the operator", seconds(60), [&](std::string* last) {
    json j = query("up{job=\"ringmaster\"}");
    *last = j.dump();
    auto result = j.value("data", json::object()).value("result", json::array());
    return !result.empty() && result[0]["value"][1] == "1";
  });
  ASSERT_OK(up) << up << "\n" << prom.Log();
  json changes = query("sum(ringmaster_membership_changes_total{reason=\"JobStarted\"})");
  auto result = changes.value("data", json::object()).value("result", json::array());
  ASSERT_FALSE(result.empty()) << changes.dump();
  EXPECT_EQ(result[0]["value"][1], "1");
  json latency = query("histogram_quantile(0.5, sum by (le) (ringmaster_membership_publish_latency_seconds_bucket))");
  EXPECT_FALSE(latency.value("data", json::object()).value("result", json::array()).empty()) << latency.dump();
  prom.Stop();
  op.Stop();
}

}  // namespace
}  // namespace ringmaster::testing
