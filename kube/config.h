// Client configuration: where the apiserver is and how to authenticate, resolved once with kubectl's
// precedence (explicit --kubeconfig, $KUBECONFIG, in-cluster service account, ~/.kube/config).
//
// Errors: kInvalidArgument for malformed kubeconfig content or a missing context/cluster/user,
// kNotFound when no configuration source exists, kFailedPrecondition for unreadable referenced files.
// Thread-safety: ClientConfig is a value; BearerTokenSource is thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::kube {

struct ClientConfig {
  std::string server;  // "https://host:port", no trailing slash
  // TLS. PEM data; files named in a kubeconfig are read once at load time.
  std::string ca_pem;           // empty: the system trust store
  std::string client_cert_pem;  // with client_key_pem: client-certificate authentication
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so; logged as a warning
  std::string tls_server_name;
  // Bearer token: a static token, or a file re-read when it changes (projected tokens rotate).
  std::string bearer_token;
  std::string bearer_token_file;
  std::string namespace_name = "default";  // the context's namespace, or the pod's in-cluster
  std::string user_agent = "ringmaster/0.1";
  // Client-side flow control and request timeout (client-go defaults: 5 QPS, burst 10; ours is higher
  // because a controller with informers issues few requests).
  double qps = 50;
  int burst = 100;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  std::vector<std::string> warnings;  // things the loader wants logged (e.g. insecure TLS)
};

// The process environment the loaders consult, as a seam for tests. ProcessEnvironment() reads the
// real one; tests fill the fields directly.
struct ConfigEnvironment {
  std::function<std::optional<std::string>(const std::string&)> getenv;
  std::string home;  // for ~/.kube/config
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};
ConfigEnvironment ProcessEnvironment();

// Parses kubeconfig YAML. `context` overrides current-context when non-empty. Relative file paths
// in the kubeconfig are resolved against `base_dir` (the directory of the kubeconfig file).
StatusOr<ClientConfig> ParseKubeconfig(const std::string& yaml, const std::string& base_dir,
                                       const std::string& context = "");

// Reads one kubeconfig file (or several separated by ':' as in $KUBECONFIG: maps are merged,
// the first file to define a name wins, current-context comes from the first file that sets it).
StatusOr<ClientConfig> LoadKubeconfigFiles(const std::string& paths, const std::string& context = "");

// The in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT, the service-account token file (used
// as a rotating token file), ca.crt and namespace from env.service_account_dir.
StatusOr<ClientConfig> InClusterConfig(const ConfigEnvironment& env);

// kubectl's precedence: explicit_kubeconfig, then $KUBECONFIG, then in-cluster, then ~/.kube/config.
StatusOr<ClientConfig> LoadConfig(const std::string& explicit_kubeconfig, const std::string& context,
                                  const ConfigEnvironment& env);

// Supplies the bearer token for each request. A token file is re-read when its modification time
// or size changes, and at least every `max_age`, so a rotated projected token is picked up.
class BearerTokenSource {
 public:
  BearerTokenSource(std::string static_token, std::string token_file,
                    std::chrono::seconds max_age = std::chrono::seconds(60));
  // The current token ("" when neither a token nor a file is configured). kFailedPrecondition when
  // the file cannot be read and no earlier value exists; an earlier value is kept on a failed re-read.
  StatusOr<std::string> Token();

 private:
  // Constant after construction.
  const std::string static_token_;
  const std::string token_file_;
  const std::chrono::seconds max_age_;
  // Guarded by mu_.
  std::mutex mu_;
  std::string cached_;
  long long cached_mtime_ns_ = -1;
  long long cached_size_ = -1;
  std::chrono::steady_clock::time_point read_at_{};
};

// Reads a whole file; kFailedPrecondition naming the path when it cannot.
StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace ringmaster::kube
