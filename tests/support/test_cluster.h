// Access to the local control plane a test runs against (tests/harness/cluster/cluster.sh).
// The ctest fixture starts it and sets RINGMASTER_TEST_CLUSTER_DIR; the cluster writes cluster.env
// there with its addresses and files.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "tests/support/subprocess.h"

namespace ringmaster::testing {

class TestCluster {
 public:
  // Reads $RINGMASTER_TEST_CLUSTER_DIR/cluster.env. FailedPrecondition (with what to do) when the
  // variable is unset or the cluster is not up.
  static StatusOr<TestCluster> FromEnvironment();

  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return Get("KUBECONFIG"); }
  const std::string& server() const { return Get("APISERVER_URL"); }  // https://127.0.0.1:PORT
  const std::string& ca_file() const { return Get("CA_FILE"); }
  // Any key of cluster.env, or "" when absent.
  const std::string& Get(const std::string& key) const;

  // Runs kubectl against this cluster as cluster admin.
  StatusOr<CommandResult> Kubectl(const std::vector<std::string>& args, const std::string& input = "",
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
  // Runs kubectl and parses its standard output as JSON; a non-zero exit is an error carrying stderr.
  StatusOr<nlohmann::json> KubectlJson(const std::vector<std::string>& args) const;
  // `kubectl apply -f -` of a manifest; an error carries kubectl's message.
  Status Apply(const std::string& manifest) const;
  // Applies the CRD file at `path` server-side (a CRD may exceed client-side apply's 256 KiB annotation) and
  // waits until it is Established. Safe when tests run in parallel (two first applies race to create it; the
  // loser retries as an update).
  Status EnsureCrd(const std::string& path, const std::string& crd_name) const;

 private:
  std::string dir_;
  std::map<std::string, std::string> env_;
};

// Polls `check` every `interval` until it returns true or `timeout` passes. `check` may write a
// description of the state it saw into `*last`, which the DeadlineExceeded error then carries.
Status WaitFor(const std::string& what, std::chrono::milliseconds timeout,
               const std::function<bool(std::string* last)>& check,
               std::chrono::milliseconds interval = std::chrono::milliseconds(250));

// A namespace name unique to this test process and `base`, safe as a DNS label.
std::string UniqueName(const std::string& base);

}  // namespace ringmaster::testing
