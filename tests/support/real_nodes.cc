#include "tests/support/real_nodes.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

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

StatusOr<PodContainer> ContainerOf(const TestCluster& cluster, const std::string& ns, const std::string& pod) {
  // --ignore-not-found: a pod that is gone prints nothing, told apart from kubectl's own failures.
  auto got = cluster.Kubectl({"get", "pod", pod, "-n", ns, "--ignore-not-found", "-o", "json"});
  if (!got.ok()) return got.status();
  if (!got->ok()) return UnknownError("kubectl get pod " + ns + "/" + pod + " failed: " + got->err);
  if (got->out.empty()) return NotFoundError("pod " + ns + "/" + pod + " does not exist");
  const nlohmann::json p = nlohmann::json::parse(got->out, nullptr, /*allow_exceptions=*/false);
  if (p.is_discarded()) return DataLossError("kubectl printed invalid JSON: " + got->out.substr(0, 200));
  PodContainer c;
  c.node = p.value("spec", nlohmann::json::object()).value("nodeName", "");
  const nlohmann::json statuses =
      p.value("status", nlohmann::json::object()).value("containerStatuses", nlohmann::json::array());
  c.id = statuses.empty() ? "" : statuses[0].value("containerID", "");
  if (c.id.rfind(kContainerdScheme, 0) != 0) {
    return NotFoundError("pod " + ns + "/" + pod + " has no container started by containerd (containerID '" + c.id +
                         "')");
  }
  c.id = c.id.substr(sizeof(kContainerdScheme) - 1);
  c.socket = cluster.dir() + "/nodes/" + c.node + "/containerd.sock";
  if (c.node.empty() || !std::filesystem::exists(c.socket)) {
    return NotFoundError("pod " + ns + "/" + pod + " is not on a real node of this cluster (node '" + c.node + "')");
  }
  return c;
}

StatusOr<int> ContainerPid(const PodContainer& container) {
  auto listed = RunCommand({"ctr", "-a", container.socket, "-n", "k8s.io", "task", "ls"}, std::chrono::seconds(30));
  if (!listed.ok()) return listed.status();
  if (!listed->ok()) return InternalError("ctr task ls on " + container.node + ": " + listed->err);
  // Columns: TASK PID STATUS, one task a line after a header.
  std::istringstream lines(listed->out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string task, status;
    int pid = 0;
    if (fields >> task >> pid >> status && task == container.id && status == "RUNNING" && pid > 0) return pid;
  }
  return NotFoundError("container " + container.id + " has no running task on " + container.node);
}

Status SignalContainer(const TestCluster& cluster, const std::string& ns, const std::string& pod, int signal) {
  RINGMASTER_ASSIGN_OR_RETURN(PodContainer c, ContainerOf(cluster, ns, pod));
  return SignalContainer(c, signal);
}

Status SignalContainer(const PodContainer& c, int signal) {
  auto killed =
      RunCommand({"ctr", "-a", c.socket, "-n", "k8s.io", "task", "kill", "--signal", std::to_string(signal), c.id},
                 std::chrono::seconds(30));
  if (!killed.ok()) return killed.status();
  if (!killed->ok()) return InternalError("ctr task kill " + c.id + " on " + c.node + ": " + killed->err);
  return Status::Ok();
}

namespace {

// PartitionPod's chains in the pod's filter table, jumped to first from INPUT and OUTPUT.
constexpr char kCutIn[] = "RINGMASTER-CUT-IN";
constexpr char kCutOut[] = "RINGMASTER-CUT-OUT";

// Runs `iptables args...` in the network namespace of host process `pid` (nsenter -n only: the node's mount
// namespace is its own, but iptables talks netlink, which follows the network namespace).
StatusOr<CommandResult> PodIptables(int pid, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"nsenter", "-t", std::to_string(pid), "-n", "iptables"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, std::chrono::seconds(30));
}

// PodIptables, for a step that must succeed: Internal naming the command and iptables' words when it fails.
Status MustPodIptables(int pid, const std::vector<std::string>& args) {
  auto r = PodIptables(pid, args);
  if (!r.ok()) return r.status();
  if (r->ok()) return Status::Ok();
  std::string command = "iptables";
  for (const auto& a : args) command += " " + a;
  return InternalError(command + " in the network namespace of pid " + std::to_string(pid) + ": " + r->err);
}

// Whether PartitionPod's chains are in pid's network namespace (`iptables -S` lists them; -S CHAIN fails for a
// chain that does not exist, but also for other reasons, which this must not take for "not cut").
StatusOr<bool> IsCut(int pid) {
  auto listed = PodIptables(pid, {"-S"});
  if (!listed.ok()) return listed.status();
  if (!listed->ok())
    return InternalError("iptables -S in the network namespace of pid " + std::to_string(pid) + ": " + listed->err);
  return listed->out.find(std::string("-N ") + kCutIn) != std::string::npos ||
         listed->out.find(std::string("-N ") + kCutOut) != std::string::npos;
}

// Removes PartitionPod's hooks and chains, each step tried whatever the others did (after a partial cut some are
// missing); then checks that none is left. Internal, with iptables' listing, when one is.
Status RemoveCut(int pid) {
  (void)PodIptables(pid, {"-D", "INPUT", "-j", kCutIn});
  (void)PodIptables(pid, {"-D", "OUTPUT", "-j", kCutOut});
  for (const char* chain : {kCutIn, kCutOut}) {
    (void)PodIptables(pid, {"-F", chain});
    (void)PodIptables(pid, {"-X", chain});
  }
  RINGMASTER_ASSIGN_OR_RETURN(bool still_cut, IsCut(pid));
  if (still_cut) return InternalError("pid " + std::to_string(pid) + "'s network namespace keeps a cut after removal");
  return Status::Ok();
}

// The apiserver as a pod addresses it: the cluster IP and port of service default/kubernetes (the kubelet's
// KUBERNETES_SERVICE_HOST/PORT). The host's DNAT rule sends that on to the apiserver; inside the pod's namespace
// the packets still carry this address.
StatusOr<std::pair<std::string, int>> ApiserverService(const TestCluster& cluster) {
  RINGMASTER_ASSIGN_OR_RETURN(nlohmann::json svc,
                              cluster.KubectlJson({"get", "service", "kubernetes", "-n", "default"}));
  const nlohmann::json spec = svc.value("spec", nlohmann::json::object());
  const std::string ip = spec.value("clusterIP", "");
  const nlohmann::json ports = spec.value("ports", nlohmann::json::array());
  const int port = ports.empty() ? 0 : ports[0].value("port", 0);
  if (ip.empty() || port == 0)
    return NotFoundError("service default/kubernetes has no cluster IP and port: " + svc.dump());
  return std::make_pair(ip, port);
}

// The cut's rules: each chain lets loopback (and the apiserver's service, when given) through and drops the rest.
std::vector<std::vector<std::string>> CutRules(const std::optional<std::pair<std::string, int>>& apiserver) {
  std::vector<std::vector<std::string>> rules = {{"-N", kCutIn},
                                                 {"-N", kCutOut},
                                                 {"-A", kCutIn, "-i", "lo", "-j", "RETURN"},
                                                 {"-A", kCutOut, "-o", "lo", "-j", "RETURN"}};
  if (apiserver) {
    const std::string ip = apiserver->first, port = std::to_string(apiserver->second);
    rules.push_back({"-A", kCutIn, "-s", ip, "-p", "tcp", "--sport", port, "-j", "RETURN"});
    rules.push_back({"-A", kCutOut, "-d", ip, "-p", "tcp", "--dport", port, "-j", "RETURN"});
  }
  rules.push_back({"-A", kCutIn, "-j", "DROP"});
  rules.push_back({"-A", kCutOut, "-j", "DROP"});
  // Hooked last, both within milliseconds: the cut starts whole.
  rules.push_back({"-I", "INPUT", "1", "-j", kCutIn});
  rules.push_back({"-I", "OUTPUT", "1", "-j", kCutOut});
  return rules;
}

}  // namespace

Status PartitionPod(const TestCluster& cluster, const std::string& ns, const std::string& pod, bool control_plane_too) {
  RINGMASTER_ASSIGN_OR_RETURN(PodContainer c, ContainerOf(cluster, ns, pod));
  RINGMASTER_ASSIGN_OR_RETURN(int pid, ContainerPid(c));
  RINGMASTER_ASSIGN_OR_RETURN(bool cut, IsCut(pid));
  if (cut) return FailedPreconditionError("pod " + ns + "/" + pod + " is already cut off");
  std::optional<std::pair<std::string, int>> apiserver;
  if (!control_plane_too) {
    RINGMASTER_ASSIGN_OR_RETURN(apiserver, ApiserverService(cluster));
  }
  for (const auto& rule : CutRules(apiserver)) {
    Status added = MustPodIptables(pid, rule);
    if (!added.ok()) {
      (void)RemoveCut(pid);  // no half cut left behind; the error that matters is the first
      return added;
    }
  }
  return Status::Ok();
}

Status HealPod(const TestCluster& cluster, const std::string& ns, const std::string& pod) {
  RINGMASTER_ASSIGN_OR_RETURN(PodContainer c, ContainerOf(cluster, ns, pod));
  RINGMASTER_ASSIGN_OR_RETURN(int pid, ContainerPid(c));
  RINGMASTER_ASSIGN_OR_RETURN(bool cut, IsCut(pid));
  if (!cut) return FailedPreconditionError("pod " + ns + "/" + pod + " is not cut off");
  return RemoveCut(pid);
}

}  // namespace ringmaster::testing
