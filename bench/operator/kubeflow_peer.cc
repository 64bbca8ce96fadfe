#include "bench/operator/kubeflow_peer.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kube/base64.h"
#include "tests/support/subprocess.h"

namespace ringmaster::bench {

namespace {

// Where open-policy-agent/cert-controller (as Kubeflow configures it) expects the Secret mounted.
constexpr char kCertDir[] = "/tmp/k8s-webhook-server/serving-certs";

// A TCP port on 127.0.0.1 that was free a moment ago; 0 when none could be bound.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

}  // namespace

StatusOr<KubeflowTool> FindKubeflow(const std::string& source_dir) {
  auto r = testing::RunCommand(
      {"bash", "-c", "source \"$1/tests/harness/lib.sh\" && tool_bin kubeflow training-operator", "bash", source_dir});
  if (!r.ok()) return r.status();
  if (!r->ok() || r->out.empty())
    return FailedPreconditionError("Kubeflow's training-operator is not built: " + r->err +
                                   " (make bench-operator, or hack/deps.sh bench-tools, builds it from its Go module)");
  KubeflowTool t;
  t.binary = r->out.substr(0, r->out.find('\n'));
  t.pytorch_crd = t.binary.substr(0, t.binary.rfind('/')) + "/crds/kubeflow.org_pytorchjobs.yaml";
  if (!std::ifstream(t.pytorch_crd)) return FailedPreconditionError("no PyTorchJob CRD at " + t.pytorch_crd);
  return t;
}

Status StartKubeflow(const KubeflowTool& tool, const testing::TestCluster& cluster, const std::string& ns,
                     const std::string& log_file, testing::BackgroundProcess* process) {
  auto crd = cluster.Kubectl({"apply", "--server-side", "-f", tool.pytorch_crd});
  if (!crd.ok()) return crd.status();
  if (!crd->ok()) return UnknownError("installing the PyTorchJob CRD failed: " + crd->err);
  // (kubectl wait refuses a CRD whose status has no conditions yet, so poll.)
  RINGMASTER_RETURN_IF_ERROR(
      testing::WaitFor("the PyTorchJob CRD to be Established", std::chrono::seconds(60), [&](std::string*) {
        auto r = cluster.Kubectl({"get", "crd", "pytorchjobs.kubeflow.org", "-o",
                                  "jsonpath={.status.conditions[?(@.type==\"Established\")].status}"});
        return r.ok() && r->ok() && r->out == "True";
      }));
  RINGMASTER_RETURN_IF_ERROR(cluster.Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"));
  RINGMASTER_RETURN_IF_ERROR(
      cluster.Apply("apiVersion: v1\nkind: Secret\nmetadata: {name: training-operator-webhook-cert, "
                    "namespace: " +
                    ns + "}\n"));
  int webhook = FreePort();
  if (webhook == 0) return UnavailableError("no free port for the Kubeflow operator's webhook");
  RINGMASTER_RETURN_IF_ERROR(
      process->Start({"env", "MY_POD_NAMESPACE=" + ns, "KUBECONFIG=" + cluster.kubeconfig(), tool.binary, "--namespace",
                      ns, "--enable-scheme", "pytorchjob", "--metrics-bind-address", "0", "--health-probe-bind-address",
                      "0", "--webhook-server-port", std::to_string(webhook), "--zap-log-level", "info"},
                     log_file));
  // The certificate rotator fills the Secret and then waits for the files a kubelet would mount from
  // it (at a path of its own, kCertDir); the bench writes them as that mount would.
  RINGMASTER_RETURN_IF_ERROR(
      testing::WaitFor("the webhook certificate in the Secret", std::chrono::seconds(60), [&](std::string*) {
        auto r = cluster.KubectlJson({"get", "secret", "training-operator-webhook-cert", "-n", ns, "-o", "json"});
        if (!r.ok() || !r->contains("data") || !(*r)["data"].contains("tls.crt")) return false;
        std::filesystem::create_directories(kCertDir);
        for (const char* f : {"tls.crt", "tls.key"}) {
          auto pem = kube::Base64Decode((*r)["data"].value(f, ""));
          if (!pem.ok()) return false;
          std::ofstream(std::string(kCertDir) + "/" + f, std::ios::trunc) << *pem;
        }
        return true;
      }));
  return testing::WaitFor(
      "Kubeflow's PyTorchJob controller to start", std::chrono::seconds(180),
      [&](std::string* last) {
        std::string log = process->Log();
        *last = log.size() > 2000 ? log.substr(log.size() - 2000) : log;
        return log.find("\"controller\": \"pytorchjob-controller\", \"worker count\"") != std::string::npos;
      },
      std::chrono::milliseconds(200));
}

kube::GroupVersionResource PyTorchJobs() { return {"kubeflow.org", "v1", "pytorchjobs"}; }

nlohmann::json PyTorchJob(const std::string& ns, const std::string& name, int workers) {
  auto replica = [](int n) {
    return nlohmann::json{
        {"replicas", n},
        {"restartPolicy", "OnFailure"},
        {"template",
         {{"spec",
           {{"containers", nlohmann::json::array({{{"name", "pytorch"},
                                                   {"image", "example/trainer:1"},
                                                   {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}})}}}}}};
  };
  nlohmann::json specs = {{"Master", replica(1)}};
  if (workers > 1) specs["Worker"] = replica(workers - 1);
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"pytorchReplicaSpecs", specs}}}};
}

}  // namespace ringmaster::bench
