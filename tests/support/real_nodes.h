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

// Sends `signal` to the main process of pod `ns/pod`'s first container from outside, through its node's
// containerd (`ctr task kill`), as the kernel's OOM killer or a crash would end it. NotFound when the pod
// is not on a real node or has no running container; Internal when ctr fails (its message included).
Status SignalContainer(const TestCluster& cluster, const std::string& ns, const std::string& pod, int signal);

}  // namespace ringmaster::testing
