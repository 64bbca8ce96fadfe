// The kubelet's view of a container, as the pod runner reproduces it: env resolution and $(VAR) expansion.
#include "tests/pod_runner/container_env.h"

#include <gtest/gtest.h>

#include "base/status_test_macros.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;

json Pod() {
  return json::parse(R"j({
    "metadata": {"name": "job-worker-1", "namespace": "ns1", "uid": "u-1",
                 "labels": {"app": "train"}, "annotations": {"note": "hi"}},
    "spec": {"nodeName": "node-a", "serviceAccountName": "job-worker"},
    "status": {"podIP": "127.70.0.5", "hostIP": "127.0.0.1"}})j");
}

KeyLookup Lookup() {
  return [](const std::string& kind, const std::string& name, const std::string& key) -> StatusOr<std::string> {
    if (kind == "Secret" && name == "s" && key == "k") return std::string("s3cr3t");
    if (kind == "ConfigMap" && name == "cm" && key == "k") return std::string("from-cm");
    return NotFoundError(kind + " " + name + " has no " + key);
  };
}

std::string Value(const EnvList& env, const std::string& name) {
  for (const auto& [k, v] : env)
    if (k == name) return v;
  return "<absent>";
}

TEST(ContainerEnvTest, ResolvesValuesFieldsSecretsAndConfigMaps) {
  json c = json::parse(R"j({"name": "t", "env": [
    {"name": "A", "value": "a"},
    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    {"name": "UID", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}}},
    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
    {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
    {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
    {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
    {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "missing", "key": "k", "optional": true}}},
    {"name": "ADDR", "value": "$(IP):$(PORT) $(POD)"},
    {"name": "A", "value": "again-$(A)"}]})j");
  auto env = ResolveContainerEnv(Pod(), c, Lookup());
  ASSERT_OK(env) << env.status();
  EXPECT_EQ(Value(*env, "POD"), "job-worker-1");
  EXPECT_EQ(Value(*env, "NS"), "ns1");
  EXPECT_EQ(Value(*env, "UID"), "u-1");
  EXPECT_EQ(Value(*env, "IP"), "127.70.0.5");
  EXPECT_EQ(Value(*env, "NODE"), "node-a");
  EXPECT_EQ(Value(*env, "SA"), "job-worker");
  EXPECT_EQ(Value(*env, "APP"), "train");
  EXPECT_EQ(Value(*env, "NOTE"), "hi");
  EXPECT_EQ(Value(*env, "SECRET"), "s3cr3t");
  EXPECT_EQ(Value(*env, "CM"), "from-cm");
  EXPECT_EQ(Value(*env, "OPT"), "<absent>");                          // optional and missing: not set
  EXPECT_EQ(Value(*env, "ADDR"), "127.70.0.5:$(PORT) job-worker-1");  // undefined references stay
  EXPECT_EQ(Value(*env, "A"), "again-a");  // a later entry replaces the earlier one, in place
  EXPECT_EQ((*env)[0].first, "A");
}

TEST(ContainerEnvTest, MissingSecretAndUnsupportedSourcesAreErrors) {
  json missing = json::parse(
      R"j({"name": "t", "env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}]})j");
  auto s = ResolveContainerEnv(Pod(), missing, Lookup());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("env S"), std::string::npos) << s.status();
  json field = json::parse(
      R"j({"name": "t", "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}]})j");
  EXPECT_EQ(ResolveContainerEnv(Pod(), field, Lookup()).status().code(), StatusCode::kInvalidArgument);
  json from = json::parse(R"j({"name": "t", "envFrom": [{"secretRef": {"name": "s"}}]})j");
  EXPECT_EQ(ResolveContainerEnv(Pod(), from, Lookup()).status().code(), StatusCode::kUnimplemented);
  json resource = json::parse(
      R"j({"name": "t", "env": [{"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]})j");
  EXPECT_EQ(ResolveContainerEnv(Pod(), resource, Lookup()).status().code(), StatusCode::kUnimplemented);
}

TEST(PodFieldValueTest, ReadsDownwardApiFields) {
  json pod = json::parse(
      R"({"metadata": {"name": "p", "namespace": "n", "labels": {"a": "b"}}, "status": {"podIP": "127.0.0.9"}})");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.namespace"), "n");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.labels['a']"), "b");
  EXPECT_EQ(*PodFieldValue(pod, "status.podIP"), "127.0.0.9");
  EXPECT_EQ(PodFieldValue(pod, "spec.nope").status().code(), StatusCode::kInvalidArgument);
}

TEST(ContainerEnvTest, ExpandsLikeKubernetes) {
  std::map<std::string, std::string> vars = {{"A", "1"}, {"B", "two"}};
  EXPECT_EQ(ExpandVars("$(A)-$(B)", vars), "1-two");
  EXPECT_EQ(ExpandVars("$$(A)", vars), "$(A)");  // escaped
  EXPECT_EQ(ExpandVars("$(C)", vars), "$(C)");   // undefined: unchanged
  EXPECT_EQ(ExpandVars("$(A", vars), "$(A");     // unterminated: unchanged
  EXPECT_EQ(ExpandVars("cost $5 $", vars), "cost $5 $");
  EXPECT_EQ(ExpandVars("", vars), "");
}

TEST(ContainerEnvTest, CommandIsCommandThenArgsExpanded) {
  json c = json::parse(
      R"j({"name": "t", "command": ["trainer", "--id", "$(POD)"], "args": ["--out", "/o/$(POD)", "$$(POD)"]})j");
  auto argv = ContainerCommand(c, {{"POD", "w-1"}});
  ASSERT_OK(argv) << argv.status();
  EXPECT_EQ(*argv, (std::vector<std::string>{"trainer", "--id", "w-1", "--out", "/o/w-1", "$(POD)"}));
  json no_command = json::parse(R"j({"name": "t", "args": ["--x"]})j");
  auto s = ContainerCommand(no_command, {});
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("entrypoint"), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::testing
