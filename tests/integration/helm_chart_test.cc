// The Helm chart on the real control plane: it lints strictly; what it renders is accepted by this
// apiserver (server-side dry run) and is hardened by default (non-root, read-only root filesystem, a
// PodDisruptionBudget, a NetworkPolicy); bad values are refused by values.schema.json, or by the chart's
// own checks, with a message that names the value; it installs (CRD, RBAC, a leader-elected Deployment,
// metrics Service, dashboard) and its Deployment becomes Available on KWOK nodes; and — the point — the
// ClusterRole it grants is enough for ringmaster-operator to run a job: the real operator binary,
// authenticated only as the chart's service account, publishes a membership and creates the per-job RBAC
// and NetworkPolicy. The people who run jobs need no RBAC of their own either: the chart's edit and view
// ClusterRoles are aggregated into the built-in ones, so a user bound only to `edit` in a namespace creates
// the job there (and one bound to `view` only reads it). Its conveniences (name overrides, extra operator
// flags and environment, the monitors' extra labels) reach the objects they are for.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "api/names.h"
#include "base/status_test_macros.h"
#include "tests/support/background_process.h"
#include "tests/support/cluster_test.h"
#include "tests/support/manifests.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

const std::string kChart = std::string(RINGMASTER_SOURCE_DIR) + "/helm/ringmaster";

// Helm flags that render the chart as if the Prometheus Operator's CRDs were installed.
const std::vector<std::string> kPrometheusOperatorApis = {"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
                                                          "--api-versions", "monitoring.coreos.com/v1/PodMonitor",
                                                          "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"};

class HelmChartTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    EnsureTrainingJobCrd();
    release_ = UniqueName("rm");
    system_ns_ = CreateNamespace("rm-system");
    jobs_ns_ = CreateNamespace("rm-jobs");
  }
  void TearDown() override {
    (void)Helm({"uninstall", release_, "-n", system_ns_});
    ClusterTest::TearDown();
  }

  StatusOr<CommandResult> Helm(std::vector<std::string> args) {
    std::vector<std::string> argv = {cluster_.Get("HELM"), "--kubeconfig", cluster_.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(120));
  }

  // `helm template` of release_ into system_ns_ for this cluster's Kubernetes version, with `values`
  // (each a --set argument) and more of helm's `flags`.
  StatusOr<CommandResult> Template(const std::vector<std::string>& values = {},
                                   const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args = {
        "template", release_, kChart, "-n", system_ns_, "--kube-version", cluster_.Get("KUBERNETES_VERSION")};
    for (const auto& v : values) args.insert(args.end(), {"--set", v});
    args.insert(args.end(), flags.begin(), flags.end());
    return Helm(args);
  }

  // The objects of `manifests` as this apiserver would store them: `kubectl apply --dry-run=server`, which
  // runs validation and admission and persists nothing; its warnings (stderr) go to *warnings. An error
  // carries kubectl's message.
  StatusOr<std::vector<json>> DryRunOnServer(const std::string& manifests, std::string* warnings = nullptr) {
    RINGMASTER_ASSIGN_OR_RETURN(CommandResult r,
                                cluster_.Kubectl({"apply", "--dry-run=server", "-f", "-", "-o", "json"}, manifests));
    if (!r.ok()) return UnknownError("the apiserver refused the rendered chart: " + r.err);
    if (warnings != nullptr) *warnings = r.err;
    json out = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (out.is_discarded()) return DataLossError("kubectl printed invalid JSON: " + r.out.substr(0, 200));
    if (out.value("kind", "") != "List") return std::vector<json>{out};
    return out["items"].get<std::vector<json>>();
  }

  // Renders with `values` and dry-runs the result on the server; empty after a failed assertion.
  std::vector<json> RenderAccepted(const std::vector<std::string>& values = {}, std::string* warnings = nullptr) {
    auto rendered = Template(values);
    EXPECT_COMMAND_OK(rendered);
    if (!rendered.ok() || !rendered->ok()) return {};
    auto objects = DryRunOnServer(rendered->out, warnings);
    EXPECT_OK(objects) << objects.status();
    return objects.ok() ? *objects : std::vector<json>{};
  }

  static std::vector<json> OfKind(const std::vector<json>& objects, const std::string& kind) {
    std::vector<json> out;
    for (const auto& o : objects)
      if (o.value("kind", "") == kind) out.push_back(o);
    return out;
  }

  // Whether the ClusterRole among `objects` grants `resource` of `group`.
  static bool ClusterRoleGrants(const std::vector<json>& objects, const std::string& group,
                                const std::string& resource) {
    auto has = [](const json& list, const std::string& item) {
      return list.is_array() && std::find(list.begin(), list.end(), json(item)) != list.end();
    };
    for (const auto& role : OfKind(objects, "ClusterRole"))
      for (const auto& rule : role.value("rules", json::array()))
        if (has(rule.value("apiGroups", json::array()), group) && has(rule.value("resources", json::array()), resource))
          return true;
    return false;
  }

  // The object of `kind` named `name` among `objects`, or null.
  static json Named(const std::vector<json>& objects, const std::string& kind, const std::string& name) {
    for (const auto& o : OfKind(objects, kind))
      if (o["metadata"].value("name", "") == name) return o;
    return nullptr;
  }

  // The verbs `role`'s rules grant on `resource` of `group`, sorted, each once.
  static std::vector<std::string> Verbs(const json& role, const std::string& group, const std::string& resource) {
    auto has = [](const json& list, const std::string& item) {
      return list.is_array() && std::find(list.begin(), list.end(), json(item)) != list.end();
    };
    std::vector<std::string> verbs;
    for (const auto& rule : role.value("rules", json::array()))
      if (has(rule.value("apiGroups", json::array()), group) && has(rule.value("resources", json::array()), resource))
        for (const auto& v : rule.value("verbs", json::array())) verbs.push_back(v.get<std::string>());
    std::sort(verbs.begin(), verbs.end());
    verbs.erase(std::unique(verbs.begin(), verbs.end()), verbs.end());
    return verbs;
  }

  // Whether `user`, impersonated, may `verb` `resource` (with `subresource`, if any) in namespace `ns`:
  // `kubectl auth can-i`, which exits 0 for yes and 1 for no. An error for anything else.
  StatusOr<bool> CanI(const std::string& user, const std::string& verb, const std::string& resource,
                      const std::string& ns, const std::string& subresource = "") {
    std::vector<std::string> args = {"auth", "can-i", verb, resource, "--as", user, "-n", ns};
    if (!subresource.empty()) args.push_back("--subresource=" + subresource);
    RINGMASTER_ASSIGN_OR_RETURN(CommandResult r, cluster_.Kubectl(args));
    if (r.exit_code > 1) return UnknownError("kubectl auth can-i failed: " + r.err);
    return r.exit_code == 0;
  }

  // The operator container's args, one string.
  static std::string OperatorArgs(const std::vector<json>& objects) {
    std::string args;
    for (json d : OfKind(objects, "Deployment"))
      for (const auto& a : d["spec"]["template"]["spec"]["containers"][0].value("args", json::array()))
        args += a.get<std::string>() + " ";
    return args;
  }

  std::string release_, system_ns_, jobs_ns_;
};

TEST_F(HelmChartTest, ChartLintsAndRendersForThisKubernetes) {
  ASSERT_FALSE(cluster_.Get("HELM").empty()) << "cluster.env has no HELM: run make deps";
  auto lint = Helm({"lint", "--strict", kChart});
  ASSERT_OK(lint);
  EXPECT_EQ(lint->exit_code, 0) << lint->out << lint->err;
  auto rendered = Helm({"template", "r", kChart, "--kube-version", cluster_.Get("KUBERNETES_VERSION")});
  ASSERT_COMMAND_OK(rendered) << (rendered.ok() ? rendered->err : "");
  for (const char* kind : {"kind: ClusterRole\n", "kind: Deployment\n", "kind: Service\n", "kind: ConfigMap\n"}) {
    EXPECT_NE(rendered->out.find(kind), std::string::npos) << kind;
  }
  EXPECT_NE(rendered->out.find("--leader-elect"), std::string::npos);
}

TEST_F(HelmChartTest, DefaultsAreAcceptedByTheApiserverAndHardened) {
  // Pod Security admission warns about a Deployment whose pods the namespace's level would refuse.
  ASSERT_COMMAND_OK(cluster_.Kubectl({"label", "namespace", system_ns_, "pod-security.kubernetes.io/warn=restricted"}));
  std::string warnings;
  const std::vector<json> objects = RenderAccepted({}, &warnings);
  ASSERT_FALSE(objects.empty());
  EXPECT_EQ(warnings.find("PodSecurity"), std::string::npos) << "not restricted: " << warnings;
  // (The warning does come when the pods would break the level.)
  std::string loosened;
  ASSERT_FALSE(RenderAccepted({"securityContext.allowPrivilegeEscalation=true"}, &loosened).empty());
  EXPECT_NE(loosened.find("PodSecurity"), std::string::npos) << loosened;

  auto deployments = OfKind(objects, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  json& pod = deployments[0]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["securityContext"].value("runAsNonRoot", false), true) << pod["securityContext"];
  EXPECT_EQ(pod["securityContext"].value("runAsUser", 0), 65532) << "the operator image's non-root UID";
  EXPECT_EQ(pod["securityContext"]["seccompProfile"].value("type", ""), "RuntimeDefault");
  json& container = pod["containers"][0];
  json& sc = container["securityContext"];
  EXPECT_EQ(sc.value("readOnlyRootFilesystem", false), true) << sc;
  EXPECT_EQ(sc.value("allowPrivilegeEscalation", true), false) << sc;
  EXPECT_EQ(sc["capabilities"]["drop"], json::array({"ALL"})) << sc;
  EXPECT_NE(OperatorArgs(objects).find("--worker-network-policy=true"), std::string::npos) << OperatorArgs(objects);
  // The cloud's node-loss notices by default (values.yaml disruptionTaints): workers leave before the node goes.
  EXPECT_NE(OperatorArgs(objects).find("--disruption-taints=karpenter.sh/disrupted,"), std::string::npos)
      << OperatorArgs(objects);

  // Two replicas: a budget that keeps one through a node drain.
  auto pdbs = OfKind(objects, "PodDisruptionBudget");
  ASSERT_EQ(pdbs.size(), 1u);
  EXPECT_EQ(pdbs[0]["spec"]["minAvailable"], 1);
  EXPECT_EQ(pdbs[0]["spec"]["selector"], deployments[0]["spec"]["selector"]);

  // The operator's pods take connections only on the metrics and health ports; egress is not restricted.
  auto policies = OfKind(objects, "NetworkPolicy");
  ASSERT_EQ(policies.size(), 1u);
  json& np = policies[0]["spec"];
  EXPECT_EQ(np["podSelector"], deployments[0]["spec"]["selector"]);
  EXPECT_EQ(np["policyTypes"], json::array({"Ingress"})) << np;
  std::vector<int> ports;
  for (auto& rule : np["ingress"])
    for (auto& p : rule["ports"]) ports.push_back(p.value("port", 0));
  EXPECT_EQ(ports, (std::vector<int>{8080, 8081})) << np;

  // The operator creates a NetworkPolicy per job, so it is granted them.
  EXPECT_TRUE(ClusterRoleGrants(objects, "networking.k8s.io", "networkpolicies"));
  // Queued jobs: the operator controls their Kueue Workloads and reads the flavours their pods go to.
  EXPECT_TRUE(ClusterRoleGrants(objects, "kueue.x-k8s.io", "workloads"));
  EXPECT_TRUE(ClusterRoleGrants(objects, "kueue.x-k8s.io", "workloads/status"));
  EXPECT_TRUE(ClusterRoleGrants(objects, "kueue.x-k8s.io", "resourceflavors"));
}

TEST_F(HelmChartTest, EverySwitchTurnsItsObjectOff) {
  const std::vector<json> off = RenderAccepted(
      {"podDisruptionBudget.enabled=false", "networkPolicy.enabled=false", "workerNetworkPolicy.enabled=false"});
  ASSERT_FALSE(off.empty());
  EXPECT_TRUE(OfKind(off, "PodDisruptionBudget").empty());
  EXPECT_TRUE(OfKind(off, "NetworkPolicy").empty());
  EXPECT_FALSE(ClusterRoleGrants(off, "networking.k8s.io", "networkpolicies"));
  EXPECT_NE(OperatorArgs(off).find("--worker-network-policy=false"), std::string::npos) << OperatorArgs(off);

  // One replica: no budget (one of one would block every drain), whatever podDisruptionBudget.enabled says.
  const std::vector<json> single = RenderAccepted({"replicaCount=1"});
  ASSERT_FALSE(single.empty());
  EXPECT_TRUE(OfKind(single, "PodDisruptionBudget").empty());

  // What a platform engineer sets, as the apiserver accepts it.
  const std::vector<json> custom =
      RenderAccepted({"image.pullPolicy=Always", "imagePullSecrets[0].name=regcred", "podAnnotations.team=ml",
                      "podLabels.tier=control", "priorityClassName=system-cluster-critical", "nodeSelector.pool=system",
                      "networkPolicy.egress[0].ports[0].port=6443",
                      "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
                      "podDisruptionBudget.minAvailable=50%"});
  ASSERT_FALSE(custom.empty());
  auto deployments = OfKind(custom, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  json& tmpl = deployments[0]["spec"]["template"];
  EXPECT_EQ(tmpl["metadata"]["annotations"].value("team", ""), "ml");
  EXPECT_EQ(tmpl["metadata"]["labels"].value("tier", ""), "control");
  EXPECT_EQ(tmpl["spec"]["imagePullSecrets"][0].value("name", ""), "regcred");
  EXPECT_EQ(tmpl["spec"]["containers"][0].value("imagePullPolicy", ""), "Always");
  auto policies = OfKind(custom, "NetworkPolicy");
  ASSERT_EQ(policies.size(), 1u);
  EXPECT_EQ(policies[0]["spec"]["policyTypes"], json::array({"Ingress", "Egress"}));
  EXPECT_EQ(OfKind(custom, "PodDisruptionBudget").at(0)["spec"]["minAvailable"], "50%");
}

// Users' RBAC: two ClusterRoles, labelled so that the clusterrole-aggregation controller folds them into the
// built-in admin and edit (create, change, scale and delete TrainingJobs; read their status, which only the
// operator writes) and view (read them) roles, and nothing beyond TrainingJobs. The operator's own ClusterRole
// is aggregated nowhere.
TEST_F(HelmChartTest, UsersRolesAreAggregatedIntoTheBuiltInOnes) {
  const std::vector<json> objects = RenderAccepted();
  ASSERT_FALSE(objects.empty());
  const std::string full = release_ + "-ringmaster-operator";
  const std::string kAggregate = "rbac.authorization.k8s.io/aggregate-to-";
  using Strings = std::vector<std::string>;

  const json edit = Named(objects, "ClusterRole", full + "-edit");
  ASSERT_TRUE(edit.is_object()) << "no ClusterRole " << full << "-edit";
  const json edit_labels = edit["metadata"]["labels"];
  EXPECT_EQ(edit_labels.value(kAggregate + "edit", ""), "true") << edit_labels;
  EXPECT_EQ(edit_labels.value(kAggregate + "admin", ""), "true") << edit_labels;
  EXPECT_FALSE(edit_labels.contains(kAggregate + "view")) << "view would let readers write jobs: " << edit_labels;
  EXPECT_EQ(edit_labels.value("app.kubernetes.io/instance", ""), release_) << "helm uninstall finds it by this";
  EXPECT_EQ(Verbs(edit, "ringmaster.io", "trainingjobs"),
            (Strings{"create", "delete", "get", "list", "patch", "update", "watch"}));
  EXPECT_EQ(Verbs(edit, "ringmaster.io", "trainingjobs/scale"), (Strings{"get", "patch", "update"}));
  EXPECT_EQ(Verbs(edit, "ringmaster.io", "trainingjobs/status"), (Strings{"get"}));

  const json view = Named(objects, "ClusterRole", full + "-view");
  ASSERT_TRUE(view.is_object()) << "no ClusterRole " << full << "-view";
  const json view_labels = view["metadata"]["labels"];
  EXPECT_EQ(view_labels.value(kAggregate + "view", ""), "true") << view_labels;
  EXPECT_FALSE(view_labels.contains(kAggregate + "edit") || view_labels.contains(kAggregate + "admin")) << view_labels;
  EXPECT_EQ(Verbs(view, "ringmaster.io", "trainingjobs"), (Strings{"get", "list", "watch"}));
  EXPECT_EQ(Verbs(view, "ringmaster.io", "trainingjobs/status"), (Strings{"get", "list", "watch"}));
  EXPECT_TRUE(Verbs(view, "ringmaster.io", "trainingjobs/scale").empty());

  for (const json& role : {edit, view})
    for (const auto& rule : role["rules"])
      EXPECT_EQ(rule["apiGroups"], json::array({"ringmaster.io"})) << role["metadata"]["name"] << ": " << rule;
  const json op = Named(objects, "ClusterRole", full);
  ASSERT_TRUE(op.is_object());
  for (const auto& [key, value] : op["metadata"]["labels"].items())
    EXPECT_NE(key.rfind(kAggregate, 0), 0u) << "the operator's own ClusterRole is aggregated: " << key;

  // Off: the operator's ClusterRole only.
  const std::vector<json> off = RenderAccepted({"rbac.aggregateToDefaultRoles=false"});
  ASSERT_FALSE(off.empty());
  EXPECT_TRUE(Named(off, "ClusterRole", full + "-edit").is_null());
  EXPECT_TRUE(Named(off, "ClusterRole", full + "-view").is_null());
  EXPECT_EQ(OfKind(off, "ClusterRole").size(), 1u);
}

// fullnameOverride names every object (and the leader-election Lease) instead of <release>-ringmaster-operator;
// nameOverride replaces the second half and the app.kubernetes.io/name label, which the Deployment still selects
// its pods by. extraArgs come after the chart's flags, extraEnv after its variables, as the apiserver stores them.
TEST_F(HelmChartTest, OverridesAndExtrasReachTheirObjects) {
  const std::string full = "acme-trainer";
  const std::vector<json> objects =
      RenderAccepted({"fullnameOverride=" + full, "extraArgs[0]=--resync-period=120s", "extraArgs[1]=--identity=op",
                      "extraEnv[0].name=HTTPS_PROXY", "extraEnv[0].value=http://proxy.example:3128",
                      "extraEnv[1].name=NODE_NAME", "extraEnv[1].valueFrom.fieldRef.fieldPath=spec.nodeName"});
  ASSERT_FALSE(objects.empty());
  for (const std::string kind :
       {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "PodDisruptionBudget", "NetworkPolicy"})
    EXPECT_TRUE(Named(objects, kind, full).is_object()) << "no " << kind << " " << full;
  EXPECT_TRUE(Named(objects, "ClusterRole", full + "-edit").is_object());
  EXPECT_TRUE(Named(objects, "ClusterRole", full + "-view").is_object());
  EXPECT_TRUE(Named(objects, "Service", full + "-metrics").is_object());
  EXPECT_TRUE(Named(objects, "Role", full + "-leader-election").is_object());
  EXPECT_TRUE(Named(objects, "ConfigMap", full + "-dashboard").is_object());
  for (const auto& o : objects)
    EXPECT_EQ(o["metadata"].value("name", "").find("ringmaster-operator"), std::string::npos)
        << o["kind"] << " " << o["metadata"]["name"] << " kept the default name";
  const json binding = Named(objects, "ClusterRoleBinding", full);
  ASSERT_TRUE(binding.is_object());
  EXPECT_EQ(binding["roleRef"].value("name", ""), full);
  EXPECT_EQ(binding["subjects"][0].value("name", ""), full);

  json deployment = Named(objects, "Deployment", full);
  ASSERT_TRUE(deployment.is_object());
  const json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod.value("serviceAccountName", ""), full);
  const json& container = pod["containers"][0];
  const std::vector<std::string> args = container["args"].get<std::vector<std::string>>();
  ASSERT_GE(args.size(), 3u);
  EXPECT_NE(std::find(args.begin(), args.end(), "--leader-election-id=" + full), args.end()) << container["args"];
  EXPECT_EQ(std::vector<std::string>(args.end() - 2, args.end()),
            (std::vector<std::string>{"--resync-period=120s", "--identity=op"}))
      << container["args"];
  const json& env = container["env"];
  ASSERT_EQ(env.size(), 3u) << env;
  EXPECT_EQ(env[0].value("name", ""), "POD_NAME") << "the chart's own variables stay: " << env;
  EXPECT_EQ(env[1], json({{"name", "HTTPS_PROXY"}, {"value", "http://proxy.example:3128"}})) << env;
  EXPECT_EQ(env[2]["valueFrom"]["fieldRef"].value("fieldPath", ""), "spec.nodeName") << env;
  // Defaults add nothing.
  const std::vector<json> plain = RenderAccepted();
  ASSERT_FALSE(plain.empty());
  const json plain_deployment = Named(plain, "Deployment", release_ + "-ringmaster-operator");
  ASSERT_TRUE(plain_deployment.is_object());
  EXPECT_EQ(plain_deployment["spec"]["template"]["spec"]["containers"][0]["env"].size(), 1u);

  const std::vector<json> renamed = RenderAccepted({"nameOverride=trainer-operator"});
  ASSERT_FALSE(renamed.empty());
  json named = Named(renamed, "Deployment", release_ + "-trainer-operator");
  ASSERT_TRUE(named.is_object()) << "no Deployment " << release_ << "-trainer-operator";
  EXPECT_EQ(named["spec"]["selector"]["matchLabels"].value("app.kubernetes.io/name", ""), "trainer-operator");
  EXPECT_EQ(named["spec"]["template"]["metadata"]["labels"].value("app.kubernetes.io/name", ""), "trainer-operator");
  EXPECT_EQ(named["metadata"]["labels"].value("app.kubernetes.io/name", ""), "trainer-operator");
  EXPECT_TRUE(Named(renamed, "ServiceAccount", release_ + "-trainer-operator").is_object());
}

// The Prometheus Operator's CRDs are not on this cluster, so its objects are rendered as if they were
// (--api-versions) and checked here rather than by the apiserver: the ServiceMonitor, the PodMonitor over
// every job's worker pods, and the PrometheusRule, whose rules promtool accepts.
TEST_F(HelmChartTest, MonitoringObjectsRenderWhereThePrometheusOperatorIs) {
  // With the label kube-prometheus-stack's Prometheus selects each kind by (release=<its release>), and one more
  // on the PodMonitor alone.
  auto rendered = Template({"metrics.serviceMonitor.labels.release=kps", "metrics.podMonitor.labels.release=kps",
                            "metrics.podMonitor.labels.team=ml", "metrics.prometheusRule.labels.release=kps"},
                           kPrometheusOperatorApis);
  ASSERT_COMMAND_OK(rendered) << (rendered.ok() ? rendered->err : "");
  std::map<std::string, YAML::Node> by_kind;
  for (const YAML::Node& doc : YAML::LoadAll(rendered->out))
    if (doc && doc["kind"]) by_kind[doc["kind"].as<std::string>()] = doc;
  ASSERT_TRUE(by_kind.count("ServiceMonitor") && by_kind.count("PodMonitor") && by_kind.count("PrometheusRule"))
      << rendered->out;
  for (const char* kind : {"ServiceMonitor", "PodMonitor", "PrometheusRule"}) {
    const YAML::Node labels = by_kind[kind]["metadata"]["labels"];
    EXPECT_EQ(labels["release"].as<std::string>(""), "kps") << kind;
    EXPECT_EQ(labels["app.kubernetes.io/instance"].as<std::string>(""), release_)
        << kind << ": the chart's labels stay";
    EXPECT_EQ(labels["team"].as<std::string>(""), std::string(kind) == "PodMonitor" ? "ml" : "") << kind;
  }
  EXPECT_TRUE(by_kind["ServiceMonitor"]["spec"]["endpoints"][0]["honorLabels"].as<bool>());
  const YAML::Node pm = by_kind["PodMonitor"]["spec"];
  EXPECT_EQ(pm["selector"]["matchExpressions"][0]["key"].as<std::string>(), api::kJobNameLabel);
  EXPECT_EQ(pm["podMetricsEndpoints"][0]["port"].as<std::string>(), api::kWorkerMetricsPortName);
  EXPECT_TRUE(pm["namespaceSelector"]["any"].as<bool>());
  // The operator's pods carry the plain annotations too.
  EXPECT_EQ(
      by_kind["Deployment"]["spec"]["template"]["metadata"]["annotations"]["prometheus.io/scrape"].as<std::string>(),
      "true");

  const std::string rules = ::testing::TempDir() + release_ + "-rules.yaml";
  {
    YAML::Node file;
    file["groups"] = by_kind["PrometheusRule"]["spec"]["groups"];
    std::ofstream(rules) << file;
  }
  auto checked = RunCommand({"promtool", "check", "rules", rules}, seconds(30));
  ASSERT_OK(checked) << "promtool is not installed: run make deps (Debian package prometheus)";
  EXPECT_EQ(checked->exit_code, 0) << checked->out << checked->err;
  EXPECT_NE(checked->out.find("SUCCESS: 11 rules found"), std::string::npos) << checked->out;

  // Each alert fires on the series it is meant for, after its `for`, with its rendered text, and not on
  // the case beside it (promtool's rule unit tests, tests/integration/testdata/alert_rules_test.yaml).
  const std::string lease = by_kind["Deployment"]["metadata"]["name"].as<std::string>();
  std::ifstream in(std::string(RINGMASTER_SOURCE_DIR) + "/tests/integration/testdata/alert_rules_test.yaml");
  ASSERT_TRUE(in) << "alert_rules_test.yaml is missing from the source tree";
  std::string cases((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  cases = std::regex_replace(cases, std::regex("@RULES@"), rules);
  cases = std::regex_replace(cases, std::regex("@LEASE@"), lease);
  const std::string cases_path = ::testing::TempDir() + release_ + "-rules-test.yaml";
  std::ofstream(cases_path) << cases;
  auto tested = RunCommand({"promtool", "test", "rules", cases_path}, seconds(60));
  ASSERT_OK(tested);
  EXPECT_EQ(tested->exit_code, 0) << tested->out << tested->err;
  EXPECT_NE(tested->out.find("SUCCESS"), std::string::npos) << tested->out;
  if (!HasFailure()) {  // kept for a look when something failed
    std::filesystem::remove(rules);
    std::filesystem::remove(cases_path);
  }

  // One namespace watched: the PodMonitor looks only there.
  auto narrowed = Helm({"template", release_, kChart, "-n", system_ns_, "--kube-version",
                        cluster_.Get("KUBERNETES_VERSION"), "--api-versions", "monitoring.coreos.com/v1/PodMonitor",
                        "--set", "watchNamespace=" + jobs_ns_, "--show-only", "templates/podmonitor.yaml"});
  ASSERT_COMMAND_OK(narrowed) << (narrowed.ok() ? narrowed->err : "");
  EXPECT_EQ(YAML::Load(narrowed->out)["spec"]["namespaceSelector"]["matchNames"][0].as<std::string>(), jobs_ns_);
}

TEST_F(HelmChartTest, BadValuesAreRefusedNamingTheValue) {
  struct Case {
    std::string set;     // a --set argument
    std::string names;   // what stderr must contain: the value's path or name
    std::string reason;  // and what is wrong with it
  };
  const std::vector<Case> cases = {
      {"replicaCount=0", "/replicaCount", "want 1"},
      {"logFormat=xml", "/logFormat", "'text', 'json'"},
      {"image.pullPolicy=Sometimes", "/image/pullPolicy", "'IfNotPresent', 'Always', 'Never'"},
      {"leaderElection.leaseDuration=fifteen", "/leaderElection/leaseDuration", "does not match pattern"},
      {"replicas=2", "'replicas'", "not allowed"},  // a typo'd top-level key
      {"image.tagg=v1", "'tagg'", "not allowed"},
      {"metrics.port=70000", "/metrics/port", "want 65,535"},
      {"healthProbePort=0", "/healthProbePort", "want 1"},
      {"kubeApiQps=0", "/kubeApiQps", "want 1"},
      {"workers=0", "/workers", "want 1"},
      {"networkPolicy.enabled=yes", "/networkPolicy/enabled", "want boolean"},
      {"metrics.serviceMonitor.interval=often", "/metrics/serviceMonitor/interval", "does not match pattern"},
      {"metrics.podMonitor.interval=often", "/metrics/podMonitor/interval", "does not match pattern"},
      {"metrics.prometheusRule.rebuildFailures=0", "/metrics/prometheusRule/rebuildFailures", "want 1"},
      {"metrics.prometheusRule.belowMinimumFor=five", "/metrics/prometheusRule/belowMinimumFor",
       "does not match pattern"},
      {"metrics.prometheusRule.stalledFor=ten", "/metrics/prometheusRule/stalledFor", "does not match pattern"},
      {"metrics.prometheusRule.stragglerMinWorkers=2", "/metrics/prometheusRule/stragglerMinWorkers", "want 3"},
      {"fullnameOverride=Acme_Trainer", "/fullnameOverride", "does not match pattern"},
      {"nameOverride=-trainer", "/nameOverride", "does not match pattern"},
      {"extraArgs=--resync-period=120s", "/extraArgs", "want array"},
      {"extraEnv[0].value=x", "/extraEnv/0", "missing property 'name'"},
      {"extraEnv[0].name=A,extraEnv[0].valu=x", "'valu'", "not allowed"},
      {"rbac.aggregateToDefaultRoles=yes", "/rbac/aggregateToDefaultRoles", "want boolean"},
      {"rbac.aggregateToDefaultRole=false", "'aggregateToDefaultRole'", "not allowed"},
      // What the schema cannot say (two values together), said by the chart's own checks.
      {"leaderElection.renewDeadline=20s", "leaderElection.renewDeadline", "shorter than leaderElection.leaseDuration"},
      {"leaderElection.enabled=false", "leaderElection.enabled", "replicaCount=1"},
      {"healthProbePort=8080", "healthProbePort", "two listeners"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.set);
    auto rendered = Template({c.set});
    ASSERT_OK(rendered);
    EXPECT_NE(rendered->exit_code, 0) << rendered->out;
    EXPECT_NE(rendered->err.find(c.names), std::string::npos) << rendered->err;
    EXPECT_NE(rendered->err.find(c.reason), std::string::npos) << rendered->err;
  }
}

TEST_F(HelmChartTest, InstalledRbacIsEnoughForAnEditorToCreateAJobAndTheOperatorToRunIt) {
  auto install = Helm({"install", release_, kChart, "-n", system_ns_, "--set", "image.tag=test", "--set",
                       "watchNamespace=" + jobs_ns_});
  ASSERT_OK(install);
  ASSERT_EQ(install->exit_code, 0) << install->out << install->err;
  const std::string deploy = release_ + "-ringmaster-operator";
  // The release's notes: how to check the operator, where the sample job is, where the metrics are.
  for (const std::string& said : std::vector<std::string>{
           "rollout status deployment/" + deploy, "kubectl -n " + system_ns_ + " get deployments,pods -l ",
           "crds/samples/minimal.yaml", "kubectl apply -n " + jobs_ns_ + " -f crds/samples/minimal.yaml",
           "Service " + deploy + "-metrics", "ConfigMap " + deploy + "-dashboard"})
    EXPECT_NE(install->out.find(said), std::string::npos) << "the notes do not say " << said << ":\n" << install->out;

  // The people who run jobs: one user bound only to the built-in edit ClusterRole in the jobs' namespace,
  // another only to view, by RoleBindings there (gone with the namespace). The chart's aggregated
  // ClusterRoles reach edit and view once the controller-manager's clusterrole-aggregation controller has
  // folded them in (helm uninstall deletes them).
  const std::string editor = release_ + "-editor", viewer = release_ + "-viewer";
  const std::string kJobs = "trainingjobs.ringmaster.io";
  ASSERT_COMMAND_OK(
      cluster_.Kubectl({"create", "rolebinding", "editor", "-n", jobs_ns_, "--clusterrole=edit", "--user=" + editor}));
  ASSERT_COMMAND_OK(
      cluster_.Kubectl({"create", "rolebinding", "viewer", "-n", jobs_ns_, "--clusterrole=view", "--user=" + viewer}));
  Status aggregated =
      WaitFor("edit and view to aggregate the chart's ClusterRoles", seconds(60), [&](std::string* last) {
        auto create = CanI(editor, "create", kJobs, jobs_ns_);
        auto get = CanI(viewer, "get", kJobs, jobs_ns_);
        *last = "editor create: " + (create.ok() ? std::string(*create ? "yes" : "no") : create.status().ToString()) +
                ", viewer get: " + (get.ok() ? std::string(*get ? "yes" : "no") : get.status().ToString());
        return create.ok() && *create && get.ok() && *get;
      });
  ASSERT_OK(aggregated) << aggregated;
  struct Access {
    std::string user, verb, subresource;
    bool allowed;
  };
  for (const Access& a : std::vector<Access>{{editor, "create", "", true},
                                             {editor, "delete", "", true},
                                             {editor, "patch", "", true},
                                             {editor, "watch", "", true},
                                             {editor, "update", "scale", true},
                                             {editor, "get", "status", true},
                                             {editor, "update", "status", false},  // the status is the operator's
                                             {viewer, "get", "", true},
                                             {viewer, "list", "", true},
                                             {viewer, "watch", "", true},
                                             {viewer, "get", "status", true},
                                             {viewer, "create", "", false},
                                             {viewer, "delete", "", false},
                                             {viewer, "update", "scale", false}}) {
    auto can = CanI(a.user, a.verb, kJobs, jobs_ns_, a.subresource);
    ASSERT_OK(can);
    EXPECT_EQ(*can, a.allowed) << a.user << " " << a.verb << " " << kJobs << (a.subresource.empty() ? "" : "/")
                               << a.subresource;
  }
  // Only in the namespace of their RoleBinding.
  auto elsewhere = CanI(editor, "create", kJobs, system_ns_);
  ASSERT_OK(elsewhere);
  EXPECT_FALSE(*elsewhere) << "the editor may create jobs outside the namespace it is bound in";
  auto available =
      cluster_.Kubectl({"wait", "-n", system_ns_, "deployment/" + deploy, "--for=condition=Available", "--timeout=60s"},
                       "", seconds(70));
  ASSERT_OK(available);
  EXPECT_EQ(available->exit_code, 0) << available->err;

  // The operator, authenticated only as the chart's service account.
  auto token = cluster_.Kubectl({"create", "token", deploy, "-n", system_ns_, "--duration=1h"});
  ASSERT_COMMAND_OK(token) << (token.ok() ? token->err : "");
  const std::string kubeconfig = ::testing::TempDir() + release_ + ".kubeconfig";
  {
    std::ifstream ca_in(cluster_.ca_file());
    std::ofstream out(kubeconfig);
    out << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " << cluster_.server()
        << "\n    certificate-authority: " << cluster_.ca_file()
        << "\nusers:\n- name: sa\n  user:\n    token: " << token->out.substr(0, token->out.find('\n'))
        << "\ncontexts:\n- name: c\n  context: {cluster: c, user: sa}\n"
        << "current-context: c\n";
  }
  BackgroundProcess op;
  ASSERT_OK(op.Start({RINGMASTER_OPERATOR_BIN, "--kubeconfig", kubeconfig, "--namespace", jobs_ns_, "--leader-elect",
                      "--leader-election-namespace", system_ns_, "--leader-election-id", deploy,
                      "--metrics-bind-address", "0", "--health-probe-bind-address", "0"},
                     ::testing::TempDir() + release_ + "-operator.log"));
  // The job, created by the editor, not by an admin.
  const std::string job = ringmaster::testing::TrainingJobHead() + "metadata: {name: charted, namespace: " + jobs_ns_ +
                          "}\nspec:\n  replicas: {min: 2, max: 2}\n  elasticPolicy: {joinBatchWindowSeconds: 1}\n"
                          "  template:\n    spec:\n      containers:\n      - {name: t, image: example/trainer:1, "
                          "resources: {limits: {nvidia.com/gpu: 1}}}\n";
  auto created = cluster_.Kubectl({"create", "-f", "-", "--as", editor}, job);
  ASSERT_COMMAND_OK(created) << (created.ok() ? created->err : "");
  auto refused = cluster_.Kubectl({"delete", "tj", "charted", "-n", jobs_ns_, "--as", viewer});
  ASSERT_OK(refused);
  EXPECT_NE(refused->exit_code, 0) << "the viewer deleted the job";
  EXPECT_NE(refused->err.find("forbidden"), std::string::npos) << refused->err;
  Status published = WaitFor("a membership published under the chart's RBAC", seconds(90), [&](std::string* last) {
    auto job = cluster_.KubectlJson({"get", "tj", "charted", "-n", jobs_ns_});
    if (!job.ok()) return false;
    const json status = job->value("status", json::object());
    *last = status.dump();
    return status.value("membership", json::object()).value("worldSize", 0) == 2;
  });
  EXPECT_OK(published) << published << "\n" << op.Log();
  auto role = cluster_.Kubectl({"get", "role", "charted-worker", "-n", jobs_ns_});
  EXPECT_COMMAND_OK(role) << "the per-job Role was not created";
  auto policy = cluster_.Kubectl({"get", "networkpolicy", "charted-workers", "-n", jobs_ns_});
  EXPECT_COMMAND_OK(policy) << "the per-job NetworkPolicy was not created";
  EXPECT_EQ(op.Log().find("forbidden"), std::string::npos) << op.Log();
  op.Stop();
}

}  // namespace
}  // namespace ringmaster::testing
