// ringmaster-operator's command line: parsed once, at start, into OperatorOptions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::operator_cmd {

enum class LogFormat { kText, kJson };

struct OperatorOptions {
  std::string kubeconfig;                               // --kubeconfig; "" = $KUBECONFIG, in-cluster, ~/.kube/config
  std::string context;                                  // --context
  std::string watch_namespace;                          // --namespace; "" = every namespace
  std::string metrics_bind_address = "127.0.0.1:8080";  // --metrics-bind-address; "0" disables
  std::string health_probe_bind_address = "127.0.0.1:8081";  // --health-probe-bind-address; "0" disables
  bool leader_elect = false;                                 // --leader-elect
  std::string leader_election_namespace = "default";         // --leader-election-namespace
  std::string leader_election_id = "ringmaster-operator";    // --leader-election-id (the Lease's name)
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  int workers = 4;                          // --workers: concurrent reconciles (never two for one job)
  std::chrono::seconds resync_period{300};  // --resync-period
  // --shutdown-timeout: how long SIGTERM waits for reconciles in flight before cancelling them (their API
  // requests end at once). With the lease's release and the events' flush (5 s at most each) the exit stays within
  // a pod's default 30 s grace period.
  std::chrono::seconds shutdown_timeout{10};
  double kube_api_qps = 50;                 // --kube-api-qps
  int kube_api_burst = 100;                 // --kube-api-burst
  LogFormat log_format = LogFormat::kText;  // --log-format text|json
  bool worker_network_policy = true;        // --worker-network-policy[=false]: a NetworkPolicy per job
  // --disruption-taints: node taints ("key" or "key=value") announcing the node's loss; a worker on such a node
  // leaves its job at a step boundary. Defaults: the notices of Karpenter, the cluster autoscaler, AWS's node
  // termination handler and GKE's graceful node shutdown. "none" turns the rule off.
  std::vector<std::string> disruption_taints = {"karpenter.sh/disrupted",
                                                "ToBeDeletedByClusterAutoscaler",
                                                "aws-node-termination-handler/spot-itn",
                                                "aws-node-termination-handler/scheduled-maintenance",
                                                "aws-node-termination-handler/asg-lifecycle-termination",
                                                "cloud.google.com/impending-node-termination"};
  std::string identity;  // --identity; "" = hostname_pid
  bool help = false;
};

// Parses argv without argv[0] (base/cli.h: CLI11). InvalidArgument with a message that names the flag
// and what it accepts. `--help` sets help and nothing else is checked.
StatusOr<OperatorOptions> ParseOperatorFlags(const std::vector<std::string>& args);

// The text `--help` prints: every flag with what it does and its default.
std::string UsageText();

}  // namespace ringmaster::operator_cmd
