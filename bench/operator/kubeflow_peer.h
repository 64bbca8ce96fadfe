// The peer of ringmaster-operator in its bench: Kubeflow's training-operator v1 (built by `make deps`
// from its Go module into the tool cache, hack/gomod/kubeflow), run as a process beside the
// local cluster the way its own manifests deploy it (manifests/base/deployment.yaml: one controller
// thread, controller-runtime's client limits of 20 QPS / burst 30, its webhook's certificate rotator),
// managing PyTorchJobs in one namespace. Test support only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "kube/resource.h"
#include "tests/support/background_process.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::bench {

struct KubeflowTool {
  std::string binary;       // .../training-operator
  std::string pytorch_crd;  // .../crds/kubeflow.org_pytorchjobs.yaml
};

// The cached build (tests/harness/lib.sh's tool_dir kubeflow). FailedPrecondition with what to run when
// `make deps` has not built it.
StatusOr<KubeflowTool> FindKubeflow(const std::string& source_dir);

// Installs the PyTorchJob CRD (server-side apply: it is too large for the last-applied annotation),
// creates `ns` and the empty Secret its certificate rotator fills, and starts the operator on `ns`
// with its metrics and probes off and its webhook on a free port; returns when its PyTorchJob
// controller's workers run. Its certificate rotator fills the Secret and then waits for the files a
// kubelet would mount from it at a fixed path (/tmp/k8s-webhook-server/serving-certs): this writes them
// there, as that mount would. Errors: kubectl's, or DeadlineExceeded with the operator's log tail.
Status StartKubeflow(const KubeflowTool& tool, const testing::TestCluster& cluster, const std::string& ns,
                     const std::string& log_file, testing::BackgroundProcess* process);

// The PyTorchJob resource (kubeflow.org/v1).
kube::GroupVersionResource PyTorchJobs();

// PyTorchJob `name` in `ns`: a Master and workers-1 Workers of one GPU each.
nlohmann::json PyTorchJob(const std::string& ns, const std::string& name, int workers);

}  // namespace ringmaster::bench
