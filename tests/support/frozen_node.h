// A real node of the local cluster stopped dead, as a machine that hangs: its kubelet stopped (SIGSTOP: no
// heartbeat, no status, no reaction to deletions) and every process of its pods frozen (the cgroup v1 freezer
// of the node's cgroup root), while its network stays up, so peers see silence, not resets. The node
// lifecycle controller marks it NotReady after --node-monitor-grace-period, as it would a lost machine.
// Freezing a node stalls every pod on it: a test that does so runs alone (ctest SERIAL). Test support only.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::testing {

// Thread-compatible. Thaws on destruction.
class FrozenNode {
 public:
  // Freezes real node `node` of `cluster`. NotFound when the cluster has no such real node (no kubelet pid
  // file or kubelet.yaml under its directory); Internal when the kubelet cannot be signalled or the freezer
  // written (the harness runs as root).
  static StatusOr<std::unique_ptr<FrozenNode>> Freeze(const TestCluster& cluster, const std::string& node);

  ~FrozenNode();  // Thaw()s
  FrozenNode(const FrozenNode&) = delete;
  FrozenNode& operator=(const FrozenNode&) = delete;

  // Lets the pods' processes and the kubelet run again. Idempotent; Internal when the freezer refuses.
  Status Thaw();

 private:
  FrozenNode(int kubelet_pid, std::string freezer_state) : kubelet_pid_(kubelet_pid), freezer_(freezer_state) {}

  int kubelet_pid_;
  std::string freezer_;  // the node's freezer.state file
  bool thawed_ = false;
};

}  // namespace ringmaster::testing
