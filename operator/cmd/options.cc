#include "cmd/options.h"

#include <charconv>
#include <functional>
#include <map>

namespace ringmaster::operator_cmd {

namespace {

struct Flag {
  const char* help;
  bool takes_value;
  std::function<Status(OperatorOptions&, const std::string&)> set;
};

Status ParseInt(const std::string& flag, const std::string& v, int min, int* out) {
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < min) {
    return InvalidArgumentError("--" + flag + " takes a whole number >= " + std::to_string(min) + ", not '" + v + "'");
  }
  *out = n;
  return Status::Ok();
}

Status ParseSeconds(const std::string& flag, const std::string& v, std::chrono::seconds* out) {
  std::string digits = v;
  if (!digits.empty() && digits.back() == 's') digits.pop_back();
  int n = 0;
  RINGMASTER_RETURN_IF_ERROR(ParseInt(flag, digits, 1, &n).WithContext("durations are whole seconds, e.g. 15s"));
  *out = std::chrono::seconds(n);
  return Status::Ok();
}

Status ParseBool(const std::string& flag, const std::string& v, bool* out) {
  if (v == "true" || v.empty()) *out = true;
  else if (v == "false") *out = false;
  else return InvalidArgumentError("--" + flag + " takes true or false, not '" + v + "'");
  return Status::Ok();
}

const std::map<std::string, Flag>& Flags() {
  using O = OperatorOptions;
  static const std::map<std::string, Flag> kFlags = {
      {"kubeconfig", {"Path to a kubeconfig. Default: $KUBECONFIG, then the in-cluster service account, then ~/.kube/config.", true,
                      [](O& o, const std::string& v) { o.kubeconfig = v; return Status::Ok(); }}},
      {"context", {"The kubeconfig context to use. Default: its current-context.", true,
                   [](O& o, const std::string& v) { o.context = v; return Status::Ok(); }}},
      {"namespace", {"Only manage TrainingJobs in this namespace. Default: every namespace.", true,
                     [](O& o, const std::string& v) { o.watch_namespace = v; return Status::Ok(); }}},
      {"metrics-bind-address", {"host:port for Prometheus metrics at /metrics; 0 disables. Default: 127.0.0.1:8080.", true,
                                [](O& o, const std::string& v) { o.metrics_bind_address = v; return Status::Ok(); }}},
      {"health-probe-bind-address", {"host:port for /healthz and /readyz; 0 disables. Default: 127.0.0.1:8081.", true,
                                     [](O& o, const std::string& v) { o.health_probe_bind_address = v; return Status::Ok(); }}},
      {"leader-elect", {"Elect a leader through a coordination.k8s.io Lease so only one replica acts. Default: false.", false,
                        [](O& o, const std::string& v) { return ParseBool("leader-elect", v, &o.leader_elect); }}},
      {"leader-election-namespace", {"Namespace of the leader-election Lease. Default: default.", true,
                                     [](O& o, const std::string& v) { o.leader_election_namespace = v; return Status::Ok(); }}},
      {"leader-election-id", {"Name of the leader-election Lease. Default: ringmaster-operator.", true,
                              [](O& o, const std::string& v) { o.leader_election_id = v; return Status::Ok(); }}},
      {"lease-duration", {"How long a leader's Lease lasts without renewal (seconds). Default: 15s.", true,
                          [](O& o, const std::string& v) { return ParseSeconds("lease-duration", v, &o.lease_duration); }}},
      {"renew-deadline", {"How long the leader keeps trying to renew before it gives up (seconds). Default: 10s.", true,
                          [](O& o, const std::string& v) { return ParseSeconds("renew-deadline", v, &o.renew_deadline); }}},
      {"retry-period", {"How often candidates try to acquire or renew (seconds). Default: 2s.", true,
                        [](O& o, const std::string& v) { return ParseSeconds("retry-period", v, &o.retry_period); }}},
      {"workers", {"Concurrent reconciles; one job is never reconciled by two at once. Default: 4.", true,
                   [](O& o, const std::string& v) { return ParseInt("workers", v, 1, &o.workers); }}},
      {"resync-period", {"How often every job is reconciled even without events (seconds). Default: 300s.", true,
                         [](O& o, const std::string& v) { return ParseSeconds("resync-period", v, &o.resync_period); }}},
      {"kube-api-qps", {"Client-side limit on API requests per second. Default: 50.", true,
                        [](O& o, const std::string& v) {
                          int n = 0;
                          RINGMASTER_RETURN_IF_ERROR(ParseInt("kube-api-qps", v, 1, &n));
                          o.kube_api_qps = n;
                          return Status::Ok();
                        }}},
      {"kube-api-burst", {"Client-side burst of API requests. Default: 100.", true,
                          [](O& o, const std::string& v) { return ParseInt("kube-api-burst", v, 1, &o.kube_api_burst); }}},
      {"log-format", {"text or json (one JSON object per line). Default: text.", true,
                      [](O& o, const std::string& v) {
                        if (v == "text") o.log_format = LogFormat::kText;
                        else if (v == "json") o.log_format = LogFormat::kJson;
                        else return InvalidArgumentError("--log-format takes text or json, not '" + v + "'");
                        return Status::Ok();
                      }}},
      {"identity", {"This replica's name in leader election and events. Default: <hostname>_<pid>.", true,
                    [](O& o, const std::string& v) { o.identity = v; return Status::Ok(); }}},
  };
  return kFlags;
}

}  // namespace

std::string UsageText() {
  std::string out =
      "ringmaster-operator: runs TrainingJobs (ringmaster.io/v1alpha1) as elastic sets of GPU worker pods and\n"
      "publishes their membership in each job's status.\n\nUsage: ringmaster-operator [flags]\n\nFlags:\n";
  for (const auto& [name, flag] : Flags()) {
    std::string head = "  --" + name + (flag.takes_value ? " VALUE" : "");
    out += head + std::string(head.size() < 36 ? 36 - head.size() : 1, ' ') + flag.help + "\n";
  }
  out += "  --help" + std::string(36 - 8, ' ') + "Print this text and exit.\n";
  return out;
}

StatusOr<OperatorOptions> ParseOperatorFlags(const std::vector<std::string>& args) {
  OperatorOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return o;
    }
    if (arg.rfind("--", 0) != 0) return InvalidArgumentError("unexpected argument '" + arg + "' (flags start with --; see --help)");
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = Flags().find(name);
    if (it == Flags().end()) return InvalidArgumentError("unknown flag --" + name + " (see --help)");
    if (it->second.takes_value && !has_value) {
      if (i + 1 >= args.size()) return InvalidArgumentError("--" + name + " needs a value (see --help)");
      value = args[++i];
    }
    RINGMASTER_RETURN_IF_ERROR(it->second.set(o, value));
  }
  if (o.renew_deadline >= o.lease_duration) {
    return InvalidArgumentError("--renew-deadline must be shorter than --lease-duration");
  }
  return o;
}

}  // namespace ringmaster::operator_cmd
