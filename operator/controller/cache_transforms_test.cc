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

}  // namespace
}  // namespace ringmaster::controller
