// Helpers for tests that run ringmaster-operator as a process next to the test cluster.
#pragma once

#include <string>
#include <vector>

#include "tests/support/background_process.h"
#include "tests/support/test_cluster.h"

namespace ringmaster::testing {

// Starts `binary` (ringmaster-operator) against `cluster`, managing namespace `ns`, with metrics and
// probes on ports chosen by the kernel (see LoggedPort), plus `extra` flags. Output goes to `log_file`.
inline Status StartOperatorProcess(BackgroundProcess* process, const std::string& binary, const TestCluster& cluster,
                                   const std::string& ns, const std::string& log_file,
                                   const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {
      binary,       "--kubeconfig",           cluster.kubeconfig(), "--namespace",
      ns,           "--metrics-bind-address", "127.0.0.1:0",        "--health-probe-bind-address",
      "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return process->Start(argv, log_file);
}

// The port the operator logged for `what` ("metrics" or "/healthz and /readyz"); "" when not (yet) logged.
inline std::string LoggedPort(const std::string& log, const std::string& what) {
  auto at = log.find("serving " + what + " on ");
  if (at == std::string::npos) return "";
  auto open = log.find("(port ", at);
  if (open == std::string::npos) return "";
  auto close = log.find(')', open);
  return log.substr(open + 6, close - open - 6);
}

}  // namespace ringmaster::testing
