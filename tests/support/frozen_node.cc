#include "tests/support/frozen_node.h"

#include <signal.h>

#include <fstream>

namespace ringmaster::testing {

namespace {
constexpr char kFreezerRoot[] = "/sys/fs/cgroup/freezer";

Status WriteFreezer(const std::string& state_file, const char* state) {
  std::ofstream out(state_file);
  out << state << "\n";
  out.close();
  if (!out) return InternalError("could not write " + std::string(state) + " to " + state_file);
  return Status::Ok();
}
}  // namespace

StatusOr<std::unique_ptr<FrozenNode>> FrozenNode::Freeze(const TestCluster& cluster, const std::string& node) {
  const std::string pid_file = cluster.dir() + "/pids/kubelet-" + node + ".pid";
  const std::string config = cluster.dir() + "/nodes/" + node + "/kubelet.yaml";
  int pid = 0;
  if (!(std::ifstream(pid_file) >> pid) || pid <= 1) {
    return NotFoundError("no kubelet pid in " + pid_file + ": " + node + " is not a real node of this cluster");
  }
  // The kubelet's pods live under its cgroupRoot in every v1 hierarchy (real_nodes.sh).
  std::ifstream in(config);
  std::string line, root;
  while (std::getline(in, line))
    if (line.rfind("cgroupRoot:", 0) == 0) root = line.substr(line.find_first_not_of(' ', 11));
  if (root.empty()) return NotFoundError(config + " names no cgroupRoot: " + node + " is not a real node");
  const std::string state = std::string(kFreezerRoot) + root + "/freezer.state";
  if (kill(pid, SIGSTOP) != 0)
    return InternalError("could not stop the kubelet of " + node + " (pid " + std::to_string(pid) + ")");
  std::unique_ptr<FrozenNode> frozen(new FrozenNode(pid, state));
  RINGMASTER_RETURN_IF_ERROR(WriteFreezer(state, "FROZEN"));
  return frozen;
}

FrozenNode::~FrozenNode() { (void)Thaw(); }

Status FrozenNode::Thaw() {
  if (thawed_) return Status::Ok();
  thawed_ = true;
  Status thawed = WriteFreezer(freezer_, "THAWED");
  kill(kubelet_pid_, SIGCONT);  // the kubelet last: it finds its pods running again
  return thawed;
}

}  // namespace ringmaster::testing
