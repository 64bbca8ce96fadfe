#include "tests/support/real_nodes.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/support/subprocess.h"

namespace ringmaster::testing {

namespace {
constexpr char kRealNodeKey[] = "ringmaster.io/real-node";
constexpr char kContainerdScheme[] = "containerd://";
}  // namespace

std::string RealNodePlacement(int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  return pad + "nodeSelector: {" + kRealNodeKey + ": \"true\"}\n" + pad + "tolerations: [{key: " + kRealNodeKey +
         ", operator: Exists, effect: NoSchedule}]\n";
}

StatusOr<std::string> RegistryImage(const TestCluster& cluster, const std::string& name, const std::string& tag) {
  std::ifstream in(cluster.dir() + "/registry");
  std::string registry;
  if (!(in >> registry) || registry.empty()) {
    return FailedPreconditionError("the cluster in " + cluster.dir() +
                                   " has no image registry: start it with real nodes (cluster.sh up --real-nodes 2)");
  }
  return registry + "/" + name + ":" + tag;
}

Status SignalContainer(const TestCluster& cluster, const std::string& ns, const std::string& pod, int signal) {
  auto got = cluster.KubectlJson({"get", "pod", pod, "-n", ns});
  if (!got.ok()) return got.status();
  const nlohmann::json& p = *got;
  const std::string node = p.value("spec", nlohmann::json::object()).value("nodeName", "");
  const nlohmann::json statuses =
      p.value("status", nlohmann::json::object()).value("containerStatuses", nlohmann::json::array());
  std::string id = statuses.empty() ? "" : statuses[0].value("containerID", "");
  if (id.rfind(kContainerdScheme, 0) != 0) {
    return NotFoundError("pod " + ns + "/" + pod + " has no container started by containerd (containerID '" + id +
                         "')");
  }
  id = id.substr(sizeof(kContainerdScheme) - 1);
  const std::string socket = cluster.dir() + "/nodes/" + node + "/containerd.sock";
  if (node.empty() || !std::filesystem::exists(socket)) {
    return NotFoundError("pod " + ns + "/" + pod + " is not on a real node of this cluster (node '" + node + "')");
  }
  auto killed =
      RunCommand({"ctr", "-a", socket, "-n", "k8s.io", "task", "kill", "--signal", std::to_string(signal), id},
                 std::chrono::seconds(30));
  if (!killed.ok()) return killed.status();
  if (!killed->ok()) return InternalError("ctr task kill " + id + " on " + node + ": " + killed->err);
  return Status::Ok();
}

}  // namespace ringmaster::testing
