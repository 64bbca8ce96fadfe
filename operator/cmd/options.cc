#include "operator/cmd/options.h"

#include <charconv>
#include <memory>

#include "base/cli.h"

namespace ringmaster::operator_cmd {

namespace {

// "a,b=c" -> {"a", "b=c"}; empty items are skipped; "none" is the empty list.
StatusOr<std::vector<std::string>> SplitTaints(const std::string& text) {
  std::vector<std::string> out;
  if (text == "none") return out;
  size_t from = 0;
  while (from <= text.size()) {
    size_t comma = text.find(',', from);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(from, comma - from);
    if (!item.empty()) out.push_back(std::move(item));
    from = comma + 1;
  }
  return out;
}

// "15s" or "15": a whole number of seconds >= 1.
StatusOr<std::chrono::seconds> ParseSeconds(const std::string& text) {
  std::string digits = text;
  if (!digits.empty() && digits.back() == 's') digits.pop_back();
  int n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || n < 1) {
    return InvalidArgumentError("'" + text + "' is not a duration in whole seconds >= 1, e.g. 15s");
  }
  return std::chrono::seconds(n);
}

StatusOr<LogFormat> ParseLogFormat(const std::string& text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return InvalidArgumentError("takes text or json, not '" + text + "'");
}

void AddLeaderElectionFlags(CLI::App& app, OperatorOptions& o) {
  app.add_flag("--leader-elect", o.leader_elect,
               "Elect a leader through a coordination.k8s.io Lease so only one replica acts (default: false).");
  app.add_option("--leader-election-namespace", o.leader_election_namespace, "Namespace of the leader-election Lease.");
  app.add_option("--leader-election-id", o.leader_election_id, "Name of the leader-election Lease.");
  cli::AddParsed<std::chrono::seconds>(app, "--lease-duration", &o.lease_duration, ParseSeconds,
                                       "How long a leader's Lease lasts without renewal (seconds).", "15s");
  cli::AddParsed<std::chrono::seconds>(app, "--renew-deadline", &o.renew_deadline, ParseSeconds,
                                       "How long the leader keeps trying to renew before it gives up (seconds).",
                                       "10s");
  cli::AddParsed<std::chrono::seconds>(app, "--retry-period", &o.retry_period, ParseSeconds,
                                       "How often candidates try to acquire or renew (seconds).", "2s");
  app.add_option("--identity", o.identity,
                 "This replica's name in leader election and events (default: <hostname>_<pid>).");
}

// The flags, bound to `o`; o's values are the defaults --help shows.
std::unique_ptr<CLI::App> NewOperatorApp(OperatorOptions& o) {
  auto app =
      cli::NewApp("ringmaster-operator",
                  "ringmaster-operator: runs TrainingJobs (ringmaster.io/v1alpha1) as elastic sets of GPU worker "
                  "pods and\npublishes their membership in each job's status.");
  app->add_option(
      "--kubeconfig", o.kubeconfig,
      "Path to a kubeconfig (default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config).");
  app->add_option("--context", o.context, "The kubeconfig context to use (default: its current-context).");
  app->add_option("--namespace", o.watch_namespace,
                  "Only manage TrainingJobs in this namespace (default: every namespace).");
  app->add_option("--metrics-bind-address", o.metrics_bind_address,
                  "host:port for Prometheus metrics at /metrics; 0 disables.");
  app->add_option("--health-probe-bind-address", o.health_probe_bind_address,
                  "host:port for /healthz and /readyz; 0 disables.");
  AddLeaderElectionFlags(*app, o);
  app->add_option("--workers", o.workers, "Concurrent reconciles; one job is never reconciled by two at once.")
      ->check(CLI::Range(1, 10000));
  cli::AddParsed<std::chrono::seconds>(*app, "--resync-period", &o.resync_period, ParseSeconds,
                                       "How often every job is reconciled even without events (seconds).", "300s");
  cli::AddParsed<std::chrono::seconds>(
      *app, "--shutdown-timeout", &o.shutdown_timeout, ParseSeconds,
      "On SIGTERM, how long reconciles in flight may finish before they and their API requests are cancelled "
      "(seconds); then the lease is released and events flushed, 5 s at most each. Keep it 10 s or more under the "
      "pod's terminationGracePeriodSeconds (30 s by default), or the kubelet kills the operator before it has "
      "released its lease.",
      "10s");
  app->add_option(
         "--kube-api-qps", o.kube_api_qps,
         "Client-side limit on API requests per second, of each of the operator's three clients (the "
         "controller's, its Events' and its leader election's). Starting a job of 8 workers takes 18 requests: "
         "raise it for thousands of jobs, as far as the apiserver sustains.")
      ->check(CLI::Range(1.0, 1e6));
  app->add_option("--kube-api-burst", o.kube_api_burst, "Client-side burst of API requests, of each client.")
      ->check(CLI::Range(1, 1000000));
  cli::AddParsed<LogFormat>(*app, "--log-format", &o.log_format, ParseLogFormat,
                            "text or json (one JSON object per line).", "text");
  app->add_flag("--worker-network-policy", o.worker_network_policy,
                "Create a NetworkPolicy per job letting only the job's own pods reach its workers (all but the "
                "health/metrics port); =false where RBAC lacks networkpolicies (default: true).");
  std::string default_taints;
  for (const auto& t : o.disruption_taints) default_taints += (default_taints.empty() ? "" : ",") + t;
  cli::AddParsed<std::vector<std::string>>(
      *app, "--disruption-taints", &o.disruption_taints, SplitTaints,
      "Comma-separated node taints (key or key=value) that announce the node's loss -- a spot reclaim notice, a "
      "drain about to start: a worker on such a node leaves its job at its next step boundary, its work committed, "
      "and is replaced elsewhere; \"none\" for none.",
      default_taints);
  return app;
}

}  // namespace

std::string UsageText() { return cli::UsageOf<OperatorOptions>(NewOperatorApp); }

StatusOr<OperatorOptions> ParseOperatorFlags(const std::vector<std::string>& args) {
  RINGMASTER_ASSIGN_OR_RETURN(OperatorOptions o, cli::ParseInto<OperatorOptions>(NewOperatorApp, args));
  if (o.help) return o;
  if (o.renew_deadline >= o.lease_duration) {
    return InvalidArgumentError("--renew-deadline must be shorter than --lease-duration");
  }
  return o;
}

}  // namespace ringmaster::operator_cmd
