#include "tests/support/test_cluster.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace ringmaster::testing {

StatusOr<TestCluster> TestCluster::FromEnvironment() {
  const char* dir = std::getenv("RINGMASTER_TEST_CLUSTER_DIR");
  if (dir == nullptr || *dir == '\0') {
    return FailedPreconditionError(
        "RINGMASTER_TEST_CLUSTER_DIR is not set: run these tests through ctest (make test-integration), "
        "whose fixture starts the local control plane");
  }
  TestCluster cluster;
  cluster.dir_ = dir;
  std::ifstream in(cluster.dir_ + "/cluster.env");
  if (!in) {
    return FailedPreconditionError("no cluster.env in " + cluster.dir_ +
                                   ": the local control plane is not up (see tests/harness/cluster/cluster.sh)");
  }
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    cluster.env_[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const char* key : {"KUBECONFIG", "APISERVER_URL", "CA_FILE", "KUBECTL"}) {
    if (cluster.Get(key).empty()) return FailedPreconditionError(std::string("cluster.env lacks ") + key);
  }
  return cluster;
}

const std::string& TestCluster::Get(const std::string& key) const {
  static const std::string kEmpty;
  auto it = env_.find(key);
  return it == env_.end() ? kEmpty : it->second;
}

StatusOr<CommandResult> TestCluster::Kubectl(const std::vector<std::string>& args, const std::string& input,
                                             std::chrono::milliseconds timeout) const {
  std::vector<std::string> argv = {Get("KUBECTL"), "--kubeconfig", kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout, input);
}

StatusOr<nlohmann::json> TestCluster::KubectlJson(const std::vector<std::string>& args) const {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"-o", "json"});
  RINGMASTER_ASSIGN_OR_RETURN(CommandResult r, Kubectl(full));
  if (!r.ok()) return UnknownError("kubectl failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return DataLossError("kubectl printed invalid JSON: " + r.out.substr(0, 200));
  return j;
}

Status TestCluster::Apply(const std::string& manifest) const {
  RINGMASTER_ASSIGN_OR_RETURN(CommandResult r, Kubectl({"apply", "-f", "-"}, manifest));
  if (!r.ok()) return UnknownError("kubectl apply failed: " + r.err);
  return Status::Ok();
}

Status TestCluster::EnsureCrd(const std::string& path, const std::string& crd_name) const {
  std::string last;
  Status applied = WaitFor("CRD " + crd_name + " to apply", std::chrono::seconds(30), [&](std::string* seen) {
    // Server-side: a CRD over 256 KiB (the TrainingJob's, with the inlined pod template) does not fit the
    // last-applied annotation of a client-side apply.
    auto r = Kubectl({"apply", "--server-side", "--force-conflicts", "-f", path});
    if (r.ok()) *seen = r->err;
    return r.ok() && r->ok();
  });
  RINGMASTER_RETURN_IF_ERROR(applied);
  // Polled, not `kubectl wait --for=condition=Established`: that fails at once on a CRD just created, whose
  // status has no conditions yet (a large schema widens that window).
  return WaitFor("CRD " + crd_name + " to be Established", std::chrono::seconds(30), [&](std::string* seen) {
    auto r = Kubectl({"get", "crd", crd_name, "-o", "jsonpath={range .status.conditions[*]}{.type}={.status} {end}"});
    if (r.ok()) *seen = r->out + r->err;
    return r.ok() && r->ok() && r->out.find("Established=True ") != std::string::npos;
  });
}

Status WaitFor(const std::string& what, std::chrono::milliseconds timeout,
               const std::function<bool(std::string* last)>& check, std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (true) {
    if (check(&last)) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return DeadlineExceededError("timed out after " + std::to_string(timeout.count()) + " ms waiting for " + what +
                                   (last.empty() ? "" : "; last seen: " + last));
    }
    std::this_thread::sleep_for(interval);
  }
}

std::string UniqueName(const std::string& base) {
  static std::atomic<int> counter{0};
  return base + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace ringmaster::testing
