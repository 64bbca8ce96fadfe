// The pure parts of the pod runner's image mode: image references, the image config, Kubernetes'
// command/args rules against ENTRYPOINT/CMD, user resolution, volume planning and the features it
// refuses, readiness and liveness counting, restart decisions and back-off, paths inside a rootfs and
// reading one member of a tar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/status_test_macros.h"
#include "base/subprocess.h"
#include "tests/pod_runner/container_env.h"
#include "tests/pod_runner/container_user.h"
#include "tests/pod_runner/image_ref.h"
#include "tests/pod_runner/oci_image.h"
#include "tests/pod_runner/pod_spec.h"
#include "tests/pod_runner/readiness_probe.h"
#include "tests/pod_runner/restart_policy.h"
#include "tests/pod_runner/rootfs_path.h"
#include "tests/pod_runner/tar_reader.h"

namespace ringmaster::testing {
namespace {

using json = nlohmann::json;
using Strings = std::vector<std::string>;

TEST(ImageReferenceTest, IgnoresRegistryAndPathAndDefaultsTheTag) {
  auto r = ParseImageReference("registry.example:5000/team/ringmaster-worker:0.1.0");
  ASSERT_OK(r);
  EXPECT_EQ(r->name, "ringmaster-worker");
  EXPECT_EQ(r->tag, "0.1.0");
  EXPECT_EQ(r->digest, "");
  EXPECT_EQ(ImageArchivePath("/images", *r), "/images/ringmaster-worker.tar");
  r = ParseImageReference("localhost:5000/ringmaster-operator");
  ASSERT_OK(r);
  EXPECT_EQ(r->name, "ringmaster-operator");
  EXPECT_EQ(r->tag, "latest");
  const std::string digest = "sha256:" + std::string(64, 'a');
  r = ParseImageReference("busybox@" + digest);
  ASSERT_OK(r);
  EXPECT_EQ(r->tag, "");  // a digest alone selects by digest
  EXPECT_EQ(r->digest, digest);
  r = ParseImageReference("busybox:1@" + digest);
  ASSERT_OK(r);
  EXPECT_EQ(r->tag, "1");
  for (const char* bad : {"", "Upper:1", "name:", "name@sha256:abc", "x/:1", "name:-bad"}) {
    EXPECT_EQ(ParseImageReference(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ImageConfigTest, ParsesEntrypointCmdEnvWorkingDirAndUser) {
  auto c = ParseImageConfig(json::parse(R"({"architecture": "amd64", "config": {"User": "65532:65532",
      "Entrypoint": ["/usr/local/bin/op"], "Cmd": ["--x"], "Env": ["PATH=/usr/bin", "EMPTY=", "EQ=a=b"],
      "WorkingDir": "/work"}})"));
  ASSERT_OK(c);
  EXPECT_EQ(c->entrypoint, Strings{"/usr/local/bin/op"});
  EXPECT_EQ(c->cmd, Strings{"--x"});
  EXPECT_EQ(c->env, (EnvList{{"PATH", "/usr/bin"}, {"EMPTY", ""}, {"EQ", "a=b"}}));
  EXPECT_EQ(c->working_dir, "/work");
  EXPECT_EQ(c->user, "65532:65532");
  auto empty = ParseImageConfig(json::parse(R"({"config": {"Entrypoint": null}})"));
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->entrypoint.empty());
  EXPECT_EQ(ParseImageConfig(json::parse(R"({"config": {"Env": ["NOEQUALS"]}})")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseImageConfig(json::parse(R"({"config": {"Cmd": "sh"}})")).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ImageCommandTest, FollowsKubernetesRulesForCommandAndArgs) {
  const Strings entrypoint = {"/entry", "e1"}, cmd = {"c1", "c2"};
  const EnvList env = {{"X", "ex"}};
  auto run = [&](const char* container) { return ImageContainerCommand(json::parse(container), env, entrypoint, cmd); };
  // Neither: ENTRYPOINT + CMD, no $(VAR) expansion of the image's parts.
  EXPECT_EQ(*run(R"({"name": "c"})"), (Strings{"/entry", "e1", "c1", "c2"}));
  // Only args: ENTRYPOINT + args (expanded).
  EXPECT_EQ(*run(R"j({"name": "c", "args": ["a", "$(X)"]})j"), (Strings{"/entry", "e1", "a", "ex"}));
  // command: the image's ENTRYPOINT and CMD are both ignored.
  EXPECT_EQ(*run(R"j({"name": "c", "command": ["/bin/x", "$(X)"]})j"), (Strings{"/bin/x", "ex"}));
  EXPECT_EQ(*run(R"({"name": "c", "command": ["/bin/x"], "args": ["y"]})"), (Strings{"/bin/x", "y"}));
  // An empty list is unset.
  EXPECT_EQ(*run(R"({"name": "c", "command": [], "args": []})"), (Strings{"/entry", "e1", "c1", "c2"}));
  // Only CMD in the image.
  EXPECT_EQ(*ImageContainerCommand(json::parse(R"({"name": "c"})"), env, {}, cmd), cmd);
  auto none = ImageContainerCommand(json::parse(R"({"name": "c"})"), env, {}, {});
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("no command specified"), std::string::npos);
}

TEST(PodFieldValueTest, ReadsDownwardApiFields) {
  json pod = json::parse(
      R"({"metadata": {"name": "p", "namespace": "n", "labels": {"a": "b"}}, "status": {"podIP": "127.0.0.9"}})");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.namespace"), "n");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.labels['a']"), "b");
  EXPECT_EQ(*PodFieldValue(pod, "status.podIP"), "127.0.0.9");
  EXPECT_EQ(PodFieldValue(pod, "spec.nope").status().code(), StatusCode::kInvalidArgument);
}

const char kPasswd[] =
    "root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
    "worker:x:1000:1001::/home/worker:/bin/sh\n";
const char kGroup[] = "root:x:0:\nnonroot:x:65532:\nstaff:x:50:\n";

TEST(ContainerUserTest, ContainerOverPodOverImage) {
  json pod = json::parse(R"({"metadata": {"name": "p", "namespace": "n"}, "spec": {}})");
  json c = json::parse(R"({"name": "c"})");
  // The image's user: numeric, a name (looked up), name:group.
  auto u = ResolveContainerUser(pod, c, "65532:65532", kPasswd, kGroup);
  ASSERT_OK(u);
  EXPECT_EQ(u->uid, 65532u);
  EXPECT_EQ(u->gid, 65532u);
  EXPECT_EQ(u->home, "/home/nonroot");
  u = ResolveContainerUser(pod, c, "worker", kPasswd, kGroup);
  ASSERT_OK(u);
  EXPECT_EQ(u->uid, 1000u);
  EXPECT_EQ(u->gid, 1001u);  // the primary group from passwd
  u = ResolveContainerUser(pod, c, "worker:staff", kPasswd, kGroup);
  ASSERT_OK(u);
  EXPECT_EQ(u->gid, 50u);
  u = ResolveContainerUser(pod, c, "", kPasswd, kGroup);
  ASSERT_OK(u);
  EXPECT_EQ(u->uid, 0u);
  EXPECT_EQ(u->home, "/root");
  // The pod's securityContext over the image, the container's over the pod's.
  pod["spec"]["securityContext"] =
      json::parse(R"({"runAsUser": 2000, "runAsGroup": 3000, "supplementalGroups": [7], "fsGroup": 8})");
  u = ResolveContainerUser(pod, c, "worker", kPasswd, kGroup);
  ASSERT_OK(u);
  EXPECT_EQ(u->uid, 2000u);
  EXPECT_EQ(u->gid, 3000u);
  EXPECT_EQ(u->groups, (std::vector<gid_t>{3000, 7, 8}));
  EXPECT_EQ(u->home, "/");  // no passwd entry for 2000
  c["securityContext"] = json::parse(R"({"runAsUser": 1000})");
  u = ResolveContainerUser(pod, c, "", kPasswd, kGroup);
  ASSERT_OK(u);
  EXPECT_EQ(u->uid, 1000u);
  EXPECT_EQ(u->gid, 3000u);
}

TEST(ContainerUserTest, RunAsNonRootAndUnknownNamesFailThePod) {
  json pod = json::parse(
      R"({"metadata": {"name": "p", "namespace": "n"}, "spec": {"securityContext": {"runAsNonRoot": true}}})");
  json c = json::parse(R"({"name": "c"})");
  auto root = ResolveContainerUser(pod, c, "", kPasswd, kGroup);
  EXPECT_EQ(root.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(root.status().message().find(
                "container has runAsNonRoot and image will run as root (pod: \"n/p\", container: c)"),
            std::string::npos)
      << root.status();
  auto named = ResolveContainerUser(pod, c, "worker", kPasswd, kGroup);
  EXPECT_NE(named.status().message().find("non-numeric user (worker)"), std::string::npos) << named.status();
  c["securityContext"] = json::parse(R"({"runAsUser": 1000})");
  EXPECT_OK(ResolveContainerUser(pod, c, "worker", kPasswd, kGroup));
  c["securityContext"] = json::parse(R"({"runAsNonRoot": false})");
  EXPECT_OK(ResolveContainerUser(pod, c, "", kPasswd, kGroup));  // the container's setting wins
  EXPECT_EQ(ResolveContainerUser(pod, json::parse(R"({"name": "c"})"), "ghost", kPasswd, kGroup).status().code(),
            StatusCode::kInvalidArgument);
  json plain = json::parse(R"({"metadata": {"name": "p"}, "spec": {}})");
  EXPECT_EQ(ResolveContainerUser(plain, c, "ghost", kPasswd, kGroup).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveContainerUser(plain, c, "1000:nogroup", kPasswd, kGroup).status().code(),
            StatusCode::kInvalidArgument);
}

json Pod(const std::string& spec) {
  return json::parse(R"({"metadata": {"name": "p", "namespace": "n"}, "spec": )" + spec + "}");
}

TEST(PodSpecTest, PlansSupportedVolumesAndMounts) {
  json pod = Pod(R"({"restartPolicy": "Never", "containers": [{"name": "c", "image": "i",
      "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}, {"name": "host", "mountPath": "/h", "readOnly": true},
                       {"name": "conf", "mountPath": "/etc/conf", "subPath": "sub"}]}],
      "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "host", "hostPath": {"path": "/data", "type": "Directory"}},
                  {"name": "conf", "configMap": {"name": "cm", "items": [{"key": "k", "path": "f", "mode": 256}], "defaultMode": 420}},
                  {"name": "sec", "secret": {"secretName": "s", "optional": true}},
                  {"name": "api", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 600}},
                                                          {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}}]})");
  ASSERT_OK(CheckPodSupported(pod));
  auto volumes = PlanPodVolumes(pod);
  ASSERT_OK(volumes);
  ASSERT_EQ(volumes->size(), 5u);
  EXPECT_EQ((*volumes)[0].kind, PodVolume::Kind::kEmptyDir);
  EXPECT_EQ((*volumes)[1].kind, PodVolume::Kind::kHostPath);
  EXPECT_EQ((*volumes)[1].host_path, "/data");
  EXPECT_EQ((*volumes)[1].host_path_type, "Directory");
  EXPECT_EQ((*volumes)[2].default_mode, 420);
  ASSERT_EQ((*volumes)[2].sources.size(), 1u);
  EXPECT_EQ((*volumes)[2].sources[0].name, "cm");
  EXPECT_EQ((*volumes)[2].sources[0].items[0].mode, 256);
  EXPECT_EQ((*volumes)[3].sources[0].kind, FileSource::Kind::kSecret);
  EXPECT_EQ((*volumes)[3].sources[0].name, "s");
  EXPECT_TRUE((*volumes)[3].sources[0].optional);
  ASSERT_EQ((*volumes)[4].sources.size(), 2u);
  EXPECT_EQ((*volumes)[4].sources[0].kind, FileSource::Kind::kServiceAccountToken);
  EXPECT_EQ((*volumes)[4].sources[0].expiration_seconds, 600);
  EXPECT_EQ((*volumes)[4].sources[1].items[0].key, "metadata.namespace");
  auto mounts = PlanContainerMounts(pod["spec"]["containers"][0], *volumes);
  ASSERT_OK(mounts);
  ASSERT_EQ(mounts->size(), 3u);
  EXPECT_TRUE((*mounts)[1].read_only);
  EXPECT_EQ((*mounts)[2].sub_path, "sub");
}

TEST(PodSpecTest, UnsupportedVolumesAndFeaturesFailWithTheirName) {
  auto volumes = PlanPodVolumes(Pod(R"({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "x"}}]})"));
  EXPECT_EQ(volumes.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(volumes.status().message(),
            "volume data: volume type persistentVolumeClaim is not supported by the pod runner");
  EXPECT_EQ(
      PlanPodVolumes(Pod(R"({"volumes": [{"name": "p", "projected": {"sources": [{"clusterTrustBundle": {}}]}}]})"))
          .status()
          .code(),
      StatusCode::kUnimplemented);
  const std::string ok_container = R"("containers": [{"name": "c", "image": "i"}])";
  EXPECT_OK(CheckPodSupported(Pod(R"({"restartPolicy": "Never", )" + ok_container + "}")));
  EXPECT_OK(CheckPodSupported(Pod(R"({"restartPolicy": "OnFailure", )" + ok_container + "}")));
  EXPECT_OK(CheckPodSupported(Pod(R"({)" + ok_container + "}")));  // Always, the default
  EXPECT_OK(
      CheckPodSupported(Pod(R"({"containers": [{"name": "c", "livenessProbe": {"exec": {"command": ["true"]}}}]})")));
  EXPECT_EQ(CheckPodSupported(Pod(R"({"restartPolicy": "Sometimes", )" + ok_container + "}")).code(),
            StatusCode::kInvalidArgument);
  struct Case {
    std::string spec, names;
  };
  for (
      const Case& c : std::vector<Case>{
          {R"({"restartPolicy": "Never", "initContainers": [{"name": "i"}], )" + ok_container + "}", "initContainers"},
          {R"({"restartPolicy": "Never", "hostPID": true, )" + ok_container + "}", "hostPID"},
          {R"({"restartPolicy": "Never", "containers": [{"name": "c", "startupProbe": {"exec": {}}}]})",
           "container c: startupProbe"},
          {R"({"containers": [{"name": "c", "livenessProbe": {"grpc": {"port": 1}}}]})",
           "container c: a grpc livenessProbe"},
          {R"({"restartPolicy": "Never", "containers": [{"name": "c", "lifecycle": {}}]})", "container c: lifecycle"},
          {R"({"restartPolicy": "Never", "containers": [{"name": "c", "tty": true}]})", "tty"},
          {R"({"restartPolicy": "Never", "containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]})",
           "capabilities.add"},
          {R"({"restartPolicy": "Never", "containers": [{"name": "c", "readinessProbe": {"grpc": {"port": 1}}}]})",
           "grpc"}}) {
    Status s = CheckPodSupported(Pod(c.spec));
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << c.spec;
    EXPECT_NE(s.message().find(c.names), std::string::npos) << s;
    EXPECT_NE(s.message().find("is not supported by the pod runner"), std::string::npos) << s;
  }
  std::vector<PodVolume> vols = {PodVolume{"v", PodVolume::Kind::kEmptyDir, "", "", {}, 0644}};
  auto mounts = [&](const char* m) { return PlanContainerMounts(json::parse(m), vols).status(); };
  EXPECT_EQ(mounts(R"({"name": "c", "volumeMounts": [{"name": "x", "mountPath": "/x"}]})").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(mounts(R"({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "rel"}]})").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(mounts(R"({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/x", "subPath": "../up"}]})").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      mounts(R"j({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/x", "subPathExpr": "$(A)"}]})j").code(),
      StatusCode::kUnimplemented);
  EXPECT_EQ(
      mounts(
          R"({"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/x", "mountPropagation": "Bidirectional"}]})")
          .code(),
      StatusCode::kUnimplemented);
}

TEST(PodSpecTest, AddsTheServiceAccountVolumeUnlessTheSpecOptsOut) {
  json pod = Pod(R"({"containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "own",
      "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}], "volumes": [{"name": "own", "emptyDir": {}}]})");
  json with = WithServiceAccountVolume(pod);
  ASSERT_EQ(with["spec"]["volumes"].size(), 2u);
  EXPECT_EQ(with["spec"]["volumes"][1]["projected"]["sources"].size(), 3u);
  EXPECT_EQ(with["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], kServiceAccountMountPath);
  EXPECT_EQ(with["spec"]["containers"][1]["volumeMounts"].size(), 1u);  // it mounts its own there
  auto volumes = PlanPodVolumes(with);
  ASSERT_OK(volumes);
  EXPECT_EQ((*volumes)[1].sources[1].name, "kube-root-ca.crt");
  EXPECT_EQ(WithServiceAccountVolume(with), with);  // idempotent
  pod["spec"]["automountServiceAccountToken"] = false;
  EXPECT_EQ(WithServiceAccountVolume(pod), pod);
}

TEST(ReadinessTest, ParsesProbesAndCountsThresholds) {
  auto p = ParseReadinessProbe(json::parse(R"({"name": "c", "ports": [{"name": "health", "containerPort": 8081}],
      "readinessProbe": {"httpGet": {"path": "readyz", "port": "health"}, "periodSeconds": 2, "failureThreshold": 2,
                         "successThreshold": 2, "initialDelaySeconds": 1}})"));
  ASSERT_OK(p);
  ASSERT_TRUE(p->has_value());
  const ProbeSpec& s = **p;
  EXPECT_EQ(s.kind, ProbeSpec::Kind::kHttpGet);
  EXPECT_EQ(s.port, 8081);
  EXPECT_EQ(s.path, "/readyz");
  EXPECT_EQ(s.period, std::chrono::seconds(2));
  EXPECT_FALSE(ParseReadinessProbe(json::parse(R"({"name": "c"})"))->has_value());
  EXPECT_EQ(ParseReadinessProbe(json::parse(R"({"name": "c", "readinessProbe": {"tcpSocket": {"port": "nope"}}})"))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseReadinessProbe(
                json::parse(R"({"name": "c", "readinessProbe": {"httpGet": {"port": 1, "scheme": "HTTPS"}}})"))
                .status()
                .code(),
            StatusCode::kUnimplemented);
  auto exec =
      ParseReadinessProbe(json::parse(R"({"name": "c", "readinessProbe": {"exec": {"command": ["cat", "/ready"]}}})"));
  ASSERT_OK(exec);
  EXPECT_EQ((*exec)->command, (Strings{"cat", "/ready"}));
  EXPECT_EQ((*exec)->failure_threshold, 3);

  using Clock = ReadinessState::Clock;
  const Clock::time_point t0 = Clock::now();
  ReadinessState r(s, t0);
  EXPECT_FALSE(r.Due(t0));  // the initial delay
  EXPECT_TRUE(r.Due(t0 + std::chrono::seconds(1)));
  EXPECT_FALSE(r.Record(true, t0 + std::chrono::seconds(1)));  // one success of two
  EXPECT_FALSE(r.Due(t0 + std::chrono::seconds(2)));           // every period
  EXPECT_TRUE(r.Record(true, t0 + std::chrono::seconds(3)));
  EXPECT_TRUE(r.ready());
  EXPECT_FALSE(r.Record(false, t0 + std::chrono::seconds(5)));  // one failure of two
  EXPECT_TRUE(r.ready());
  EXPECT_TRUE(r.Record(false, t0 + std::chrono::seconds(7)));
  EXPECT_FALSE(r.ready());
}

TEST(LivenessTest, ParsesLikeReadinessAndKillsAfterFailureThresholdFailuresInARow) {
  auto p = ParseLivenessProbe(json::parse(R"({"name": "c", "ports": [{"name": "health", "containerPort": 8081}],
      "readinessProbe": {"exec": {"command": ["x"]}},
      "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 2, "failureThreshold": 2,
                        "successThreshold": 3, "initialDelaySeconds": 1}})"));
  ASSERT_OK(p);
  ASSERT_TRUE(p->has_value());
  const ProbeSpec& s = **p;
  EXPECT_EQ(s.kind, ProbeSpec::Kind::kHttpGet);
  EXPECT_EQ(s.port, 8081);
  EXPECT_EQ(s.path, "/healthz");
  EXPECT_EQ(s.success_threshold, 1);  // the apiserver requires 1 for liveness
  EXPECT_FALSE(
      ParseLivenessProbe(json::parse(R"({"name": "c", "readinessProbe": {"exec": {"command": ["x"]}}})"))->has_value());
  Status bad =
      ParseLivenessProbe(json::parse(R"({"name": "c", "livenessProbe": {"tcpSocket": {"port": "nope"}}})")).status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("livenessProbe"), std::string::npos) << bad;

  using Clock = LivenessState::Clock;
  const Clock::time_point t0 = Clock::now();
  LivenessState l(s, t0);
  EXPECT_FALSE(l.Due(t0));
  EXPECT_TRUE(l.Due(t0 + std::chrono::seconds(1)));
  EXPECT_FALSE(l.Record(false, t0 + std::chrono::seconds(1)));  // one failure of two
  EXPECT_FALSE(l.Due(t0 + std::chrono::seconds(2)));
  EXPECT_FALSE(l.Record(true, t0 + std::chrono::seconds(3)));  // a success starts over
  EXPECT_FALSE(l.Record(false, t0 + std::chrono::seconds(5)));
  EXPECT_TRUE(l.Record(false, t0 + std::chrono::seconds(7)));  // two in a row: kill it
  EXPECT_EQ(l.failures(), 2);
  EXPECT_FALSE(l.Record(false, t0 + std::chrono::seconds(9)));  // once
}

TEST(RestartPolicyTest, DecidesLikeTheKubelet) {
  EXPECT_EQ(*ParseRestartPolicy(Pod(R"({})")), RestartPolicy::kAlways);
  EXPECT_EQ(*ParseRestartPolicy(Pod(R"({"restartPolicy": "Always"})")), RestartPolicy::kAlways);
  EXPECT_EQ(*ParseRestartPolicy(Pod(R"({"restartPolicy": "OnFailure"})")), RestartPolicy::kOnFailure);
  EXPECT_EQ(*ParseRestartPolicy(Pod(R"({"restartPolicy": "Never"})")), RestartPolicy::kNever);
  EXPECT_EQ(ParseRestartPolicy(Pod(R"({"restartPolicy": "never"})")).status().code(), StatusCode::kInvalidArgument);
  for (int code : {0, 1, 3, 137}) {
    EXPECT_TRUE(ShouldRestart(RestartPolicy::kAlways, code)) << code;
    EXPECT_EQ(ShouldRestart(RestartPolicy::kOnFailure, code), code != 0) << code;
    EXPECT_FALSE(ShouldRestart(RestartPolicy::kNever, code)) << code;
  }
}

TEST(RestartPolicyTest, BacksOffDoublingUpToTheMaxAndStartsOverAfterALongRun) {
  using std::chrono::milliseconds;
  const RestartBackOff& b = kTestRestartBackOff;
  EXPECT_EQ(b.initial, milliseconds(1000));
  EXPECT_EQ(b.max, milliseconds(10000));
  const milliseconds brief(200);
  milliseconds d = NextRestartDelay(b, milliseconds(0), brief);
  std::vector<long> delays;
  for (int i = 0; i < 6; ++i) {
    delays.push_back(d.count());
    d = NextRestartDelay(b, d, brief);
  }
  EXPECT_EQ(delays, (std::vector<long>{1000, 2000, 4000, 8000, 10000, 10000}));
  EXPECT_EQ(NextRestartDelay(b, milliseconds(8000), milliseconds(9999)), milliseconds(10000));
  EXPECT_EQ(NextRestartDelay(b, milliseconds(8000), milliseconds(10000)), milliseconds(1000));  // ran 10 s
  // The kubelet's own numbers, for reference.
  EXPECT_EQ(NextRestartDelay(kKubeletRestartBackOff, milliseconds(0), brief), std::chrono::seconds(10));
  EXPECT_EQ(NextRestartDelay(kKubeletRestartBackOff, std::chrono::seconds(160), brief), std::chrono::minutes(5));
}

TEST(RootfsPathTest, ResolvesSymlinksInsideTheRoot) {
  const std::string root = ::testing::TempDir() + "rootfs_path_" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/run");
  std::filesystem::create_directories(root + "/var");
  std::filesystem::create_directories(root + "/etc");
  std::filesystem::create_symlink("/run", root + "/var/run");     // absolute: the image's /run, not the host's
  std::filesystem::create_symlink("../../..", root + "/etc/up");  // ".." stops at the root
  std::ofstream(root + "/etc/passwd") << "root:x:0:0::/root:/bin/sh\n";
  EXPECT_EQ(*ResolveInRoot(root, "/var/run/secrets/kubernetes.io"), "/run/secrets/kubernetes.io");
  EXPECT_EQ(*ResolveInRoot(root, "/etc/up/etc/passwd"), "/etc/passwd");
  EXPECT_EQ(*ResolveInRoot(root, "/"), "/");
  std::filesystem::create_symlink("loop", root + "/loop");
  EXPECT_EQ(ResolveInRoot(root, "/loop/x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadFileInRoot(root, "/etc/up/etc/passwd"), "root:x:0:0::/root:/bin/sh\n");
  EXPECT_EQ(ReadFileInRoot(root, "/etc/group"), "");
  std::filesystem::remove_all(root);
}

TEST(TarReaderTest, ReadsOneMemberWithShortAndLongNames) {
  const std::string dir = ::testing::TempDir() + "tar_reader_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::string long_dir = "blobs/sha256/" + std::string(120, 'd');
  std::filesystem::create_directories(dir + "/in/" + long_dir);
  std::ofstream(dir + "/in/index.json") << R"({"manifests": []})";
  std::ofstream(dir + "/in/" + long_dir + "/blob") << "long";
  std::ofstream(dir + "/in/big") << std::string(5000, 'x');
  for (const char* format : {"gnu", "pax"}) {
    const std::string archive = dir + "/" + format + ".tar";
    SpawnOptions o;
    o.argv = {"tar", "--format", format, "-cf", archive, "-C", dir + "/in", "."};
    auto p = Subprocess::Start(o);
    ASSERT_OK(p);
    ASSERT_EQ(p->Wait().code, 0);
    EXPECT_EQ(*ReadTarMember(archive, "index.json"), R"({"manifests": []})") << format;
    EXPECT_EQ(*ReadTarMember(archive, "./" + long_dir + "/blob"), "long") << format;
    EXPECT_EQ(ReadTarMember(archive, "big")->size(), 5000u) << format;
    EXPECT_EQ(ReadTarMember(archive, "big", 100).status().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(ReadTarMember(archive, "missing").status().code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(ReadTarMember(dir + "/none.tar", "x").status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringmaster::testing
