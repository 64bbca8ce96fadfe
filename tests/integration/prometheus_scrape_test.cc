// Two real Prometheus servers find the operator and the workers of an elastic job by Kubernetes service
// discovery against the local cluster -- one with the selection and relabelling the chart's ServiceMonitor and
// PodMonitor make, the other by the prometheus.io/scrape annotations the operator's and the workers' pods carry
// (as the prometheus-community chart's kubernetes-pods job does: no trainingjob label from the scrape, so the
// workers' own labels must do) -- and scrape them through a worker kill and a scale-up, with the chart's
// PrometheusRule loaded. Then: promtool accepts both endpoints' text (no family twice); on both servers every
// dashboard and rule expression evaluates without error and every dashboard panel's query returns a series (the
// GPU panels: when the workers' NVML shows a GPU, else none); the generation, the membership changes and the
// restarts Prometheus holds equal the job's status; and the goodput the operator accounted for the kill
// (status.goodput) is what Prometheus shows: one failure, its recovery in the histogram, lost seconds by phase.
//
// The workers run from the worker image on the cluster's real nodes (kubelets on containerd): their pods have
// real IPs on the nodes' bridge, which Prometheus, on this host, reaches. The operator runs as a process of the
// test, as in elastic_workers_e2e_test, listening on the pod IP of a stand-in pod that carries the chart's labels
// and its "metrics" port: that IP must be one of this host's, so the stand-in is on a KWOK node of the test's own
// (KWOK's pod IPs are loopback addresses). The chart's Service selects such pods, but its Endpoints cannot be
// followed here (the apiserver refuses loopback addresses), so the operator is found by the pod role with the
// Service's selector instead.
#include <fstream>
#include <regex>

#include "tests/integration/elastic_workers_fixture.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

const std::string kChart = std::string(RINGMASTER_SOURCE_DIR) + "/helm/ringmaster";
const std::string kRelease = "rm";
constexpr int kOperatorMetricsPort = 8080;

class PrometheusScrapeTest : public ElasticWorkersE2eTest {
 protected:
  // The stand-in pod (the chart's selector labels, port "metrics") on a KWOK node of its own, then the operator
  // on its pod IP. The workers need no runner: the real nodes' kubelets run them.
  void StartOperator() override {
    ASSERT_NO_FATAL_FAILURE(AddPoolNode(ns_ + "-operator", ns_, 0));
    // With the chart's annotations for Prometheus servers that scrape by them.
    ASSERT_OK(cluster_.Apply(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: operator\n  namespace: " + ns_ +
        "\n  labels: {app.kubernetes.io/name: ringmaster, app.kubernetes.io/instance: " + kRelease +
        "}\n  annotations: {prometheus.io/scrape: 'true', prometheus.io/port: '" +
        std::to_string(kOperatorMetricsPort) + "', prometheus.io/path: /metrics}\nspec:\n" + PoolPlacement(ns_, 2) +
        "  containers:\n  - name: operator\n    image: ringmaster/operator:dev\n"
        "    ports: [{name: metrics, containerPort: " +
        std::to_string(kOperatorMetricsPort) + "}]\n"));
    Status ip = WaitFor("the operator pod's IP", seconds(30), [&](std::string* last) {
      auto pod = cluster_.KubectlJson({"get", "pod", "operator", "-n", ns_});
      if (pod.ok()) operator_ip_ = pod->value("status", json::object()).value("podIP", "");
      *last = pod.ok() ? pod->value("status", json::object()).dump() : pod.status().ToString();
      return !operator_ip_.empty();
    });
    ASSERT_OK(ip) << ip;
    // Later flags win: metrics on the pod's IP.
    Status started =
        StartOperatorProcess(&operator_, RINGMASTER_OPERATOR_BIN, cluster_, ns_, out_ + "/operator.log",
                             {"--metrics-bind-address", operator_ip_ + ":" + std::to_string(kOperatorMetricsPort),
                              // the lease the chart's RingmasterNoLeader rule watches
                              "--leader-election-id", kRelease + "-ringmaster-operator"});
    ASSERT_OK(started) << started;
  }

  void TearDown() override {
    if (HasFailure() && prometheus_.Running()) std::cerr << "---- prometheus log ----\n" << prometheus_.Log() << "\n";
    if (HasFailure() && annotated_.Running())
      std::cerr << "---- prometheus (annotations) log ----\n" << annotated_.Log();
    prometheus_.Stop();
    annotated_.Stop();
    ElasticWorkersE2eTest::TearDown();
  }

  // The chart's PrometheusRule's groups, as a rules file for Prometheus and promtool.
  std::string RenderRules() {
    auto rendered = RunCommand(
        {cluster_.Get("HELM"), "template", kRelease, kChart, "--kube-version", cluster_.Get("KUBERNETES_VERSION"),
         "--api-versions", "monitoring.coreos.com/v1/PrometheusRule", "--show-only", "templates/prometheusrule.yaml"},
        seconds(60));
    EXPECT_COMMAND_OK(rendered) << (rendered.ok() ? rendered->err : rendered.status().ToString());
    if (!rendered.ok() || !rendered->ok()) return "";
    const std::string out = rendered->out;
    const auto spec = out.find("\nspec:\n");
    EXPECT_NE(spec, std::string::npos) << out;
    if (spec == std::string::npos) return "";
    // spec's children are indented two spaces: drop them to make `groups:` the top level.
    std::istringstream in(out.substr(spec + 7));
    std::string line, rules;
    while (std::getline(in, line)) rules += (line.rfind("  ", 0) == 0 ? line.substr(2) : line) + "\n";
    return rules;
  }

  // A Prometheus server in `dir` with these scrape configs and the rules file; its port in *port.
  void StartPrometheus(BackgroundProcess* server, const std::string& dir, const std::string& rules_file,
                       const std::string& scrape_configs, std::string* port) {
    std::filesystem::create_directories(dir);
    std::ofstream cfg(dir + "/prometheus.yml");
    cfg << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        << "rule_files: ['" << rules_file << "']\n"
        << "scrape_configs:\n"
        << scrape_configs;
    cfg.close();
    // (Not `promtool check config`: Debian's promtool has no Kubernetes discovery either. The server refuses a
    // bad file at start, which the first query below then reports with the server's log.)
    auto free = RunCommand(
        {"python3", "-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"});
    ASSERT_COMMAND_OK(free);
    *port = free->out.substr(0, free->out.find('\n'));
    ASSERT_OK(server->Start({cluster_.Get("PROMETHEUS"), "--config.file=" + dir + "/prometheus.yml",
                             "--storage.tsdb.path=" + dir + "/data", "--web.listen-address=127.0.0.1:" + *port},
                            dir + "/prometheus.log"));
  }

  std::string PodDiscovery() const {
    return "  kubernetes_sd_configs:\n  - role: pod\n    kubeconfig_file: " + cluster_.kubeconfig() +
           "\n    namespaces: {names: [" + ns_ + "]}\n";
  }

  // The chart's route: the ServiceMonitor's and the PodMonitor's selections and relabelling (honorLabels on the
  // operator's endpoint, off on the workers', whose own copies of namespace and trainingjob are dropped).
  void StartChartsPrometheus(const std::string& dir, const std::string& rules_file) {
    const std::string common =
        "  - {source_labels: [__meta_kubernetes_pod_container_port_name], regex: metrics, action: keep}\n"
        "  - {source_labels: [__meta_kubernetes_pod_phase], regex: 'Failed|Succeeded', action: drop}\n"
        "  - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}\n"
        "  - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}\n";
    const std::string configs =
        // The ServiceMonitor: the Service's pods (its selector: the chart's name and instance labels).
        "- job_name: ringmaster-operator\n  honor_labels: true\n" + PodDiscovery() + "  relabel_configs:\n" +
        "  - {source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name, "
        "__meta_kubernetes_pod_label_app_kubernetes_io_instance], regex: 'ringmaster;" +
        kRelease + "', action: keep}\n" + common +
        // The PodMonitor: every pod with a ringmaster.io/job-name label; trainingjob from it.
        "- job_name: ringmaster-workers\n" + PodDiscovery() + "  relabel_configs:\n" +
        "  - {source_labels: [__meta_kubernetes_pod_labelpresent_ringmaster_io_job_name], regex: 'true', action: "
        "keep}\n" +
        common +
        "  - {source_labels: [__meta_kubernetes_pod_label_ringmaster_io_job_name], target_label: trainingjob}\n" +
        "  metric_relabel_configs:\n  - {action: labeldrop, regex: 'exported_(namespace|trainingjob)'}\n";
    StartPrometheus(&prometheus_, dir, rules_file, configs, &prom_port_);
  }

  // The annotations' route, as the prometheus-community chart's kubernetes-pods job: pods annotated
  // prometheus.io/scrape, at their port and path annotations, honor_labels, namespace and pod from the target and
  // the pod's labels mapped -- no trainingjob but what the workers export.
  void StartAnnotationsPrometheus(const std::string& dir, const std::string& rules_file) {
    const std::string configs =
        "- job_name: kubernetes-pods\n  honor_labels: true\n" + PodDiscovery() + "  relabel_configs:\n" +
        "  - {source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape], regex: 'true', action: keep}\n"
        "  - {source_labels: [__meta_kubernetes_pod_phase], regex: 'Pending|Failed|Succeeded', action: drop}\n"
        "  - {source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path], regex: '(.+)', target_label: "
        "__metrics_path__}\n"
        "  - {source_labels: [__meta_kubernetes_pod_ip, __meta_kubernetes_pod_annotation_prometheus_io_port], "
        "regex: '(.+);(\\d+)', replacement: '$1:$2', target_label: __address__}\n"
        "  - {action: labelmap, regex: __meta_kubernetes_pod_label_(.+)}\n"
        "  - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}\n"
        "  - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}\n";
    StartPrometheus(&annotated_, dir, rules_file, configs, &annotated_port_);
  }

  // GET /api/v1/<what> with the form `params` from the server on `port` (the chart's route's when empty); the
  // decoded answer (an empty object when unreachable).
  json Api(const std::string& what, const std::vector<std::pair<std::string, std::string>>& params = {},
           const std::string& port = "") {
    std::vector<std::string> argv = {"curl", "-s", "--get"};
    for (const auto& [k, v] : params) argv.insert(argv.end(), {"--data-urlencode", k + "=" + v});
    argv.push_back("http://127.0.0.1:" + (port.empty() ? prom_port_ : port) + "/api/v1/" + what);
    auto r = RunCommand(argv, seconds(30));
    if (!r.ok() || !r->ok()) return json::object();
    json j = json::parse(r->out, nullptr, false);
    return j.is_object() ? j : json::object();
  }
  // An instant query at `time` (empty: now).
  json Query(const std::string& expr, const std::string& time = "", const std::string& port = "") {
    std::vector<std::pair<std::string, std::string>> params = {{"query", expr}};
    if (!time.empty()) params.push_back({"time", time});
    return Api("query", params, port);
  }
  static json Result(const json& answer) { return answer.value("data", json::object()).value("result", json::array()); }
  // The value of a one-series answer, or NaN.
  static double Scalar(const json& answer) {
    json r = Result(answer);
    if (r.size() != 1) return std::nan("");
    return std::stod(r[0]["value"][1].get<std::string>());
  }

  // promtool check metrics on an endpoint's text, and each family's # TYPE line once.
  void ExpectCleanExposition(const std::string& url) {
    SCOPED_TRACE(url);
    auto text = RunCommand({"curl", "-sf", url}, seconds(30));
    ASSERT_COMMAND_OK(text);
    auto lint = RunCommand({"promtool", "check", "metrics"}, seconds(30), text->out);
    ASSERT_OK(lint);
    EXPECT_EQ(lint->exit_code, 0) << lint->out << lint->err;
    std::map<std::string, int> types;
    std::istringstream in(text->out);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("# TYPE ", 0) == 0) types[line.substr(7, line.find(' ', 7) - 7)]++;
    EXPECT_GT(types.size(), 5u) << text->out;
    for (const auto& [family, n] : types) EXPECT_EQ(n, 1) << family << " emitted " << n << " times";
  }

  std::string operator_ip_, prom_port_, annotated_port_;
  BackgroundProcess prometheus_;  // the chart's route
  BackgroundProcess annotated_;   // the annotations' route
};

TEST_F(PrometheusScrapeTest, PrometheusFollowsAJobThroughAKillAndAScaleUp) {
  auto promtool = RunCommand({"sh", "-c", "command -v promtool"});
  ASSERT_COMMAND_OK(promtool) << "promtool is not installed: run make deps (Debian package prometheus)";
  // Debian's server has no Kubernetes service discovery: make deps builds one (hack/gomod/prometheus).
  ASSERT_FALSE(cluster_.Get("PROMETHEUS").empty()) << "cluster.env has no PROMETHEUS: run make deps";
  ASSERT_TRUE(std::filesystem::exists(cluster_.Get("PROMETHEUS"))) << cluster_.Get("PROMETHEUS") << ": run make deps";
  ASSERT_FALSE(cluster_.Get("HELM").empty()) << "cluster.env has no HELM: run make deps";
  const std::string dir = out_ + "/prometheus";
  std::filesystem::create_directories(dir);

  // The chart's alerts: promtool accepts them, and the server evaluates them throughout.
  const std::string rules = RenderRules();
  ASSERT_FALSE(rules.empty());
  ASSERT_NE(rules.find("groups:"), std::string::npos) << rules;
  std::ofstream(dir + "/rules.yaml") << rules;
  auto checked = RunCommand({"promtool", "check", "rules", dir + "/rules.yaml"}, seconds(30));
  ASSERT_COMMAND_OK(checked) << (checked.ok() ? checked->out + checked->err : checked.status().ToString()) << rules;
  StartChartsPrometheus(dir, dir + "/rules.yaml");
  StartAnnotationsPrometheus(dir + "/annotations", dir + "/rules.yaml");
  ASSERT_FALSE(HasFailure());

  // Slower steps than the other e2e tests (a kill and a scale-up must land mid-run), with checkpoints in the
  // workers' output volume: made here, writable by the image's user (1000) as that volume is, so that the
  // workers on both nodes share it.
  // 300 steps of 300 ms: 90 s, time enough for both servers to see the four workers while they train.
  for (size_t i = 0; i + 1 < workload_.args.size(); ++i) {
    if (workload_.args[i] == "--step-delay-ms") workload_.args[i + 1] = "300";
    if (workload_.args[i] == "--steps") workload_.args[i + 1] = "300";
  }
  std::filesystem::create_directories(out_ + "/train/ckpt");
  std::filesystem::permissions(out_ + "/train/ckpt", std::filesystem::perms::all);
  workload_.args.insert(workload_.args.end(), {"--checkpoint-dir", WorkersOut() + "/ckpt", "--checkpoint-every", "5"});
  ApplyJob();
  json running = WaitUntilTraining();
  ASSERT_FALSE(HasFailure());

  // A worker killed: the operator replaces it (world 2, then 3 again).
  const std::string victim = Membership(running)["members"][1].value("pod", "");
  const std::string victim_uid = Membership(running)["members"][1].value("uid", "");
  ASSERT_NO_FATAL_FAILURE(KillWorker(victim));
  // (Under a new name: the failed pod is kept for its logs, spec.runPolicy.keepFailedPods.)
  WaitForJob("the replacement to join", seconds(45), [&](const json& j) {
    const json m = Membership(j);
    if (m.value("worldSize", 0) != 3) return false;
    for (const auto& member : m.value("members", json::array()))
      if (member.value("uid", "") == victim_uid) return false;
    return true;
  });
  ASSERT_FALSE(HasFailure());
  // Scaled up to the maximum: four workers.
  auto scaled = cluster_.Kubectl({"scale", "-n", ns_, "tj/" + kJob, "--replicas=4"});
  ASSERT_COMMAND_OK(scaled) << (scaled.ok() ? scaled->err : "");
  json job =
      WaitForJob("four workers", seconds(45), [](const json& j) { return Membership(j).value("worldSize", 0) == 4; });
  ASSERT_FALSE(HasFailure());
  const int64_t generation = Membership(job).value("generation", int64_t{0});
  const int64_t restarts = job["status"].value("restartCount", int64_t{-1});
  ASSERT_GE(generation, 3);  // started, a worker lost (and replaced), scaled up

  // The operator accounted the kill in status.goodput (and, once the newest generation stepped, its report).
  json accounted =
      WaitForJob("status.goodput to account generation " + std::to_string(generation), seconds(60), [&](const json& j) {
        return j.value("status", json::object())
                   .value("goodput", json::object())
                   .value("accountedGeneration", int64_t{0}) >= generation;
      });
  ASSERT_FALSE(HasFailure());
  const json goodput = accounted["status"]["goodput"];
  SCOPED_TRACE("status.goodput: " + goodput.dump());
  EXPECT_EQ(goodput.value("failures", -1), 1) << "one worker killed";
  EXPECT_GT(goodput.value("lastRecoverySeconds", 0.0), 0);
  EXPECT_LT(goodput.value("lastRecoverySeconds", 1e9), 45) << "the kill to the survivors' next step";
  EXPECT_FALSE(goodput.contains("recoveringSince")) << "recovered";
  EXPECT_GT(goodput.value("ratio", 0.0), 0);
  EXPECT_LE(goodput.value("ratio", 2.0), 1);
  EXPECT_GT(goodput.value("productiveSeconds", 0.0), 0);
  const json lost = goodput.value("lostSeconds", json::object());
  EXPECT_GT(lost.value("rebuild", 0.0), 0) << "three changes rebuilt";
  EXPECT_GE(lost.value("detect", -1.0), 0);
  EXPECT_GT(lost.value("reschedule", 0.0), 0) << "two of three workers until the replacement joined";

  // Both servers see all four workers at the generation the status says (they are still training): the
  // annotations' route by the workers' own labels alone.
  const std::string sel = "namespace=\"" + ns_ + "\", trainingjob=\"" + kJob + "\"";
  std::string at;  // the evaluation time of every check below: while the workers run, both servers have them
  for (const std::string& port : {prom_port_, annotated_port_}) {
    Status seen = WaitFor(
        "Prometheus on " + port + " to scrape four workers at generation " + std::to_string(generation) +
            " and the goodput of the kill",
        seconds(60), [&](std::string* last) {
          json r =
              Query("count(ringmaster_worker_generation{" + sel + "} == " + std::to_string(generation) + ")", "", port);
          json failures = Query("ringmaster_trainingjob_failures_total{" + sel + "}", "", port);
          *last = r.dump() + " " + failures.dump();
          if (Scalar(r) != 4 || Scalar(failures) != 1) return false;
          const double t = Result(r)[0]["value"][0].get<double>();
          if (at.empty() || t > std::stod(at)) at = std::to_string(t);
          return true;
        });
    ASSERT_OK(seen) << seen << "\n" << Api("targets", {}, port).dump();
  }

  // Both endpoints, as promtool sees them.
  ExpectCleanExposition("http://" + operator_ip_ + ":" + std::to_string(kOperatorMetricsPort) + "/metrics");
  json worker_targets = Result(Query("up{job=\"ringmaster-workers\", " + sel + "} == 1", at));
  ASSERT_EQ(worker_targets.size(), 4u) << worker_targets.dump();
  ExpectCleanExposition("http://" + worker_targets[0]["metric"].value("instance", "") + "/metrics");
  EXPECT_EQ(Scalar(Query("up{job=\"ringmaster-operator\"}", at)), 1);
  // The workers' copies of the target's labels are dropped on the chart's route: no exported_ labels.
  EXPECT_TRUE(Result(Query("{__name__=~\"ringmaster_worker_.+\", exported_namespace!=\"\"}", at)).empty());
  EXPECT_TRUE(Result(Query("{__name__=~\"ringmaster_worker_.+\", exported_trainingjob!=\"\"}", at)).empty());
  EXPECT_EQ(Scalar(Query("count(ringmaster_worker_world_size{" + sel + "})", at, annotated_port_)), 4)
      << "the annotations' route, by the workers' labels";

  // The figures agree with the job's status: the last generation (operator and workers), the membership
  // changes (every generation; the rebuilds: all but the first) and the failure-driven restarts.
  EXPECT_EQ(Scalar(Query("max(ringmaster_worker_generation{" + sel + "})", at)), generation);
  EXPECT_EQ(Scalar(Query("ringmaster_trainingjob_membership_generation{" + sel + "}", at)), generation);
  EXPECT_EQ(Scalar(Query("sum(ringmaster_membership_changes_total{job=\"ringmaster-operator\"})", at)), generation);
  EXPECT_EQ(Scalar(Query(
                "sum(ringmaster_membership_changes_total{job=\"ringmaster-operator\", reason!=\"JobStarted\"})", at)),
            generation - 1);
  EXPECT_EQ(Scalar(Query("ringmaster_trainingjob_restarts_total{" + sel + "}", at)), restarts);
  EXPECT_EQ(Scalar(Query("ringmaster_trainingjob_max_restarts{" + sel + "}", at)), max_restarts_);
  EXPECT_EQ(Scalar(Query("ringmaster_trainingjob_workers_ready{" + sel + "}", at)), 4);
  EXPECT_EQ(Scalar(Query("max(leader_election_master_status)", at)), 1);
  // The replacement and the newcomer restored from a checkpoint; the survivors rebuilt at least twice.
  EXPECT_GE(Scalar(Query("sum(ringmaster_worker_checkpoint_seconds_count{op=\"restore\", " + sel + "})", at)), 1);
  EXPECT_GE(Scalar(Query("max(ringmaster_worker_rebuilds_total{" + sel + "})", at)), 2);
  // Rank 0 saved a checkpoint (every 5 steps) within the run: RingmasterCheckpointStale's timestamp.
  const double saved = Scalar(Query("max(ringmaster_worker_last_checkpoint_timestamp_seconds{" + sel + "})", at));
  EXPECT_GT(saved, std::stod(at) - 600) << "no checkpoint saved in the last 10 minutes";
  EXPECT_LE(saved, std::stod(at) + 1);
  // Goodput as the status has it: lost seconds per phase, the one recovery in the histogram, a live ratio.
  EXPECT_EQ(Result(Query("ringmaster_trainingjob_lost_seconds_total{" + sel + "}", at)).size(), 5u);
  for (const char* phase : {"detect", "reschedule", "rebuild", "restore", "replay"}) {
    EXPECT_NEAR(Scalar(Query("ringmaster_trainingjob_lost_seconds_total{" + sel + ", phase=\"" + phase + "\"}", at)),
                lost.value(phase, -1.0), 1e-6)
        << phase;
  }
  EXPECT_EQ(Scalar(Query("sum(ringmaster_trainingjob_recovery_seconds_count{job=\"ringmaster-operator\"})", at)), 1);
  EXPECT_NEAR(Scalar(Query("sum(ringmaster_trainingjob_recovery_seconds_sum{job=\"ringmaster-operator\"})", at)),
              goodput.value("lastRecoverySeconds", -1.0), 1e-3);
  const double ratio = Scalar(Query("ringmaster_trainingjob_goodput_ratio{" + sel + "}", at));
  EXPECT_GT(ratio, 0);
  EXPECT_LE(ratio, 1);

  // Every dashboard panel's query evaluates and returns at least one series, on both servers. GPU panels (a
  // description starting "[gpu]", the dashboard's convention for the workers' NVML series) return series exactly
  // when the workers' NVML shows them a GPU, which each worker logs once as it starts ("GPU telemetry on: ..." or
  // "GPU telemetry off: <why>"). Not this host's NVML: the workers run in the worker image on the real nodes,
  // whose nvidia.com/gpu are emulated (no driver behind them), so here they say off whatever this host has.
  // When off they must return none: the workers export no GPU series then.
  bool have_gpus = false;
  std::string telemetry;
  const std::map<std::string, std::string> logs = WorkerLogs();
  EXPECT_EQ(logs.size(), 5u) << "the four workers' logs and the killed one's (its pod is kept for its logs)";
  for (const auto& [pod, log] : logs) {
    std::smatch line;
    ASSERT_TRUE(std::regex_search(log, line, std::regex("GPU telemetry (on|off): [^\n]*")))
        << pod << " logged no GPU telemetry line:\n"
        << log;
    have_gpus = have_gpus || line[1] == "on";
    telemetry += "\n  " + pod + ": " + line.str();
  }
  std::cerr << "GPU panels are expected " << (have_gpus ? "with series" : "empty")
            << "; the workers logged:" << telemetry << "\n";
  std::ifstream dash_file(kChart + "/dashboards/ringmaster-operator.json");
  json dashboard = json::parse(dash_file, nullptr, false);
  ASSERT_TRUE(dashboard.is_object());
  for (const std::string& port : {prom_port_, annotated_port_}) {
    SCOPED_TRACE(port == prom_port_ ? "the chart's route (PodMonitor)" : "the annotations' route");
    int queries = 0, gpu_queries = 0, goodput_queries = 0;
    for (const auto& panel : dashboard["panels"]) {
      const bool gpu_panel = panel.value("description", "").rfind("[gpu]", 0) == 0;
      for (const auto& target : panel.value("targets", json::array())) {
        std::string expr = target.value("expr", "");
        // The marker is for the GPU series and nothing else: it cannot excuse another panel's empty query.
        EXPECT_EQ(gpu_panel, expr.find("ringmaster_worker_gpu_") != std::string::npos)
            << panel.value("title", "") << ": a panel is marked [gpu] exactly when its queries read GPU series";
        const bool goodput_query = expr.find("ringmaster_trainingjob_goodput_ratio") != std::string::npos ||
                                   expr.find("ringmaster_trainingjob_lost_seconds_total") != std::string::npos ||
                                   expr.find("ringmaster_trainingjob_recovery_seconds") != std::string::npos;
        goodput_queries += goodput_query;
        expr = std::regex_replace(expr, std::regex("\\$namespace"), ns_);
        expr = std::regex_replace(expr, std::regex("\\$job"), kJob);
        SCOPED_TRACE(panel.value("title", "") + ": " + expr);
        ++queries;
        json answer = Query(expr, at, port);
        EXPECT_EQ(answer.value("status", ""), "success") << answer.dump();
        if (!gpu_panel || have_gpus) {
          EXPECT_FALSE(Result(answer).empty()) << "no series";
          // A value, not NaN: the goodput row has data after the kill (the recovery quantiles too).
          for (const auto& series : Result(answer))
            if (goodput_query) {
              EXPECT_NE(series["value"][1].get<std::string>(), "NaN") << answer.dump();
            }
        } else {
          EXPECT_TRUE(Result(answer).empty()) << "GPU series from workers whose telemetry is off: " << answer.dump();
        }
        gpu_queries += gpu_panel;
      }
    }
    EXPECT_GE(queries - gpu_queries, 25);
    EXPECT_GE(gpu_queries, 5);
    EXPECT_GE(goodput_queries, 4);
    // The dashboard's variables find this job.
    for (const auto& var : dashboard["templating"]["list"]) {
      if (var.value("type", "") != "query") continue;
      std::smatch m;
      std::string q = var["query"].value("query", "");
      ASSERT_TRUE(std::regex_match(q, m, std::regex(R"(label_values\((.*), (\w+)\))"))) << q;
      std::string series = std::regex_replace(m[1].str(), std::regex("\\$namespace"), ns_);
      json values = Api("label/" + m[2].str() + "/values", {{"match[]", series}}, port);
      json list = values.value("data", json::array());
      EXPECT_NE(std::find(list.begin(), list.end(), m[2] == "namespace" ? json(ns_) : json(kJob)), list.end())
          << q << ": " << values.dump();
    }

    // Every rule's expression evaluates, and the server's own evaluations of the loaded rules are healthy.
    int rule_count = 0;
    Status evaluated = WaitFor("every rule evaluated", seconds(30), [&](std::string* last) {
      json groups = Api("rules", {}, port).value("data", json::object()).value("groups", json::array());
      rule_count = 0;
      bool healthy = !groups.empty();
      for (const auto& g : groups)
        for (const auto& r : g.value("rules", json::array())) {
          ++rule_count;
          healthy = healthy && r.value("health", "") == "ok";
        }
      *last = groups.dump();
      return healthy;
    });
    EXPECT_OK(evaluated) << evaluated;
    EXPECT_EQ(rule_count, 11);
    for (const auto& g : Api("rules", {}, port).value("data", json::object()).value("groups", json::array())) {
      for (const auto& r : g.value("rules", json::array())) {
        json answer = Query(r.value("query", ""), at, port);
        EXPECT_EQ(answer.value("status", ""), "success") << r.value("name", "") << ": " << answer.dump();
      }
    }
    // Nothing is wrong with this job, so none of the alerts about it fires.
    json alerts = Api("alerts", {}, port).value("data", json::object()).value("alerts", json::array());
    for (const auto& a : alerts) EXPECT_NE(a.value("state", ""), "firing") << a.dump();
  }
}

}  // namespace
}  // namespace ringmaster::testing
