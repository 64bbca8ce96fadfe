#include "operator/controller/cache_transforms.h"

#include <gtest/gtest.h>

namespace ringmaster::controller {
namespace {

using json = nlohmann::json;

TEST(CacheTransformsTest, APodKeepsWhatReconcileReads) {
  json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "j-worker-0", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                 "labels": {"a": "b", "ringmaster.io/job-name": "j", "ringmaster.io/worker-index": "0"},
                 "annotations": {"c": "d", "prometheus.io/scrape": "true", "ringmaster.io/created-for": "ScaledUp"},
                 "ownerReferences": [{"uid": "j"}],
                 "creationTimestamp": "t0", "deletionTimestamp": "t1", "deletionGracePeriodSeconds": 30,
                 "managedFields": [{"manager": "kwok", "fieldsV1": {"f:status": {}}}]},
    "spec": {"nodeName": "n1", "containers": [{"name": "t", "image": "i", "env": [{"name": "X"}]}],
             "volumes": [{"name": "v"}]},
    "status": {"phase": "Failed", "podIP": "127.0.0.9", "hostIP": "127.0.0.1",
               "conditions": [{"type": "Initialized", "status": "True", "lastTransitionTime": "t6"},
                              {"type": "Ready", "status": "False", "lastTransitionTime": "t2", "lastProbeTime": null},
                              {"type": "ContainersReady", "status": "False", "lastTransitionTime": "t2"},
                              {"type": "PodScheduled", "status": "True", "lastTransitionTime": "t7"},
                              {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                               "message": "Eviction API: evicting", "lastTransitionTime": "t5"}],
               "containerStatuses": [{"name": "t", "image": "i", "ready": false,
                                      "state": {"terminated": {"exitCode": 3, "reason": "Error", "finishedAt": "t3",
                                                               "startedAt": "t4"}}},
                                     {"name": "sidecar", "image": "s", "ready": true,
                                      "state": {"running": {"startedAt": "t4"}}}]}})");
  SlimPod(&pod);
  EXPECT_EQ(pod, json::parse(R"({
    "metadata": {"name": "j-worker-0", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                 "labels": {"ringmaster.io/job-name": "j", "ringmaster.io/worker-index": "0"},
                 "annotations": {"ringmaster.io/created-for": "ScaledUp"},
                 "deletionTimestamp": "t1", "deletionGracePeriodSeconds": 30},
    "spec": {"nodeName": "n1"},
    "status": {"phase": "Failed", "podIP": "127.0.0.9",
               "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "t2"},
                              {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                               "lastTransitionTime": "t5"}],
               "containerStatuses": [{"name": "t", "state": {"terminated": {"exitCode": 3, "reason": "Error",
                                                                             "finishedAt": "t3", "startedAt": "t4"}}}]}})"))
      << pod.dump(1);
}

TEST(CacheTransformsTest, AnUnschedulablePodKeepsTheSchedulersMessage) {
  json pod = json::parse(R"({"metadata": {"name": "p", "labels": {"x": "y"}}, "status": {"phase": "Pending",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": null,
                    "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "lastTransitionTime": "t"}]}})");
  SlimPod(&pod);
  EXPECT_EQ(pod["status"]["conditions"], json::parse(R"([{"type": "PodScheduled", "status": "False",
    "reason": "Unschedulable", "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}])"));
  EXPECT_FALSE(pod["metadata"].contains("labels"));  // none of the operator's
}

TEST(CacheTransformsTest, AWaitingContainerKeepsItsReasonAndMessage) {
  json pod = json::parse(R"({"metadata": {"name": "p"}, "status": {"phase": "Pending", "containerStatuses": [
    {"name": "t", "image": "r/w:bad", "state": {"waiting": {"reason": "ImagePullBackOff",
     "message": "Back-off pulling image \"r/w:bad\"", "extra": 1}}}]}})");
  SlimPod(&pod);
  EXPECT_EQ(
      pod["status"]["containerStatuses"][0]["state"],
      json::parse(R"({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"r/w:bad\""}})"));
}

TEST(CacheTransformsTest, APendingPodHasEmptyStatusLists) {
  json pod = {{"metadata", {{"name", "p"}}}, {"spec", {{"containers", json::array()}}}};
  SlimPod(&pod);
  EXPECT_EQ(pod["status"]["conditions"], json::array());
  EXPECT_EQ(pod["status"]["containerStatuses"], json::array());
  EXPECT_FALSE(pod["spec"].contains("nodeName"));
  EXPECT_FALSE(pod["status"].contains("phase"));
}

TEST(CacheTransformsTest, ANodeKeepsItsNameTaintsAndReadyCondition) {
  json node = json::parse(R"({"metadata": {"name": "n1", "resourceVersion": "3", "labels": {"x": "y"}},
    "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "spot/reclaim", "effect": "NoSchedule"}]},
    "status": {"capacity": {"nvidia.com/gpu": "8"}, "images": [{"names": ["a"]}],
               "conditions": [{"type": "MemoryPressure", "status": "False", "lastTransitionTime": "t"},
                              {"type": "Ready", "status": "True", "lastTransitionTime": "t",
                               "lastHeartbeatTime": "h", "message": "m"}]}})");
  SlimNode(&node);
  EXPECT_EQ(node, json::parse(R"({"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "resourceVersion": "3"},
    "spec": {"taints": [{"key": "spot/reclaim", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t"}]}})"));
}

// A job keeps everything reconcile reads and writes back (spec, status, labels, other annotations); only the
// managedFields and kubectl's copy of the applied spec go.
TEST(CacheTransformsTest, AJobLosesOnlyItsManagedFieldsAndKubectlsCopy) {
  json job = json::parse(R"({"apiVersion": "ringmaster.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "j", "namespace": "ns", "uid": "u", "labels": {"kueue.x-k8s.io/queue-name": "q"},
      "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"spec\": {}}", "team": "a"},
      "managedFields": [{"manager": "kubectl"}]},
    "spec": {"replicas": {"min": 2, "max": 4}}, "status": {"phase": "Running"}})");
  json expected = job;
  expected["metadata"].erase("managedFields");
  expected["metadata"]["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  SlimJob(&job);
  EXPECT_EQ(job, expected);

  json only_kubectl = {
      {"metadata", {{"name", "j"}, {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}}};
  SlimJob(&only_kubectl);
  EXPECT_EQ(only_kubectl, json({{"metadata", {{"name", "j"}}}})) << "no empty annotations left behind";
}

}  // namespace
}  // namespace ringmaster::controller
