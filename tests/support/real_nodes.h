// The local cluster's real nodes, as a test uses them (tests/harness/cluster/real_nodes.sh starts them: a
// kubelet on containerd each, tainted ringmaster.io/real-node=true:NoSchedule, and one image registry).
// Test support only.
#pragma once

#include <string>

#include "base/status.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::testing {

// The pod-spec fields (YAML, each line indented by `indent` spaces) that place a pod on a real node.
std::string RealNodePlacement(int indent);

// "<registry host:port>/<name>:<tag>" in `cluster`'s registry. FailedPrecondition (saying how to start
// one) when the cluster has no registry: it was started without real nodes.
StatusOr<std::string> RegistryImage(const TestCluster& cluster, const std::string& name, const std::string& tag);

// A pod's first container as its real node's containerd knows it.
struct PodContainer {
  std::string node;    // the real node the pod runs on
  std::string socket;  // that node's containerd socket
  std::string id;      // the container's id in containerd's k8s.io namespace
};

// Pod `ns/pod`'s first container. NotFound when the pod does not exist, is not on a real node of `cluster` or has
// no container started by containerd; other errors are kubectl's.
StatusOr<PodContainer> ContainerOf(const TestCluster& cluster, const std::string& ns, const std::string& pod);

// The host PID of `container`'s main process (`ctr task ls`; a node's processes share the host's PID namespace).
// NotFound when it has no running task: it ended, or its pod went with it. Internal when ctr fails.
StatusOr<int> ContainerPid(const PodContainer& container);

// Sends `signal` to the main process of pod `ns/pod`'s first container from outside, through its node's
// containerd (`ctr task kill`), as the kernel's OOM killer or a crash would end it. NotFound when the pod
// is not on a real node or has no running container; Internal when ctr fails (its message included).
Status SignalContainer(const TestCluster& cluster, const std::string& ns, const std::string& pod, int signal);
// The same for a container looked up earlier (ContainerOf): asks nothing of the apiserver, so it works while the
// control plane is away. Internal when ctr fails (a container that ended included).
Status SignalContainer(const PodContainer& container, int signal);

// Cuts pod `ns/pod` off the network inside its own network namespace (`nsenter -n` into its container's, then
// iptables): every packet in and out of it is dropped -- it vanishes, no reset, no ICMP error, as on a partition --
// but loopback's, and, unless `control_plane_too`, the apiserver's through its service address (default/kubernetes,
// which the kubelet hands the pod). Its peers, other pods and the host, the kubelet's probes included, are cut
// off. The rules live in chains of their own, hooked first into INPUT and OUTPUT, so HealPod removes exactly them.
// Errors: those of ContainerOf and ContainerPid; FailedPrecondition when the pod is already cut; Internal when an
// iptables command fails (its words included; what was added is then removed again).
Status PartitionPod(const TestCluster& cluster, const std::string& ns, const std::string& pod, bool control_plane_too);

// Undoes PartitionPod: removes its chains and their hooks from the pod's network namespace, nothing else.
// NotFound when the pod or its running container is gone (its network namespace, and the cut, went with it);
// FailedPrecondition when the pod is not cut; Internal when an iptables command fails.
Status HealPod(const TestCluster& cluster, const std::string& ns, const std::string& pod);

}  // namespace ringmaster::testing
