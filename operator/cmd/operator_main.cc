// ringmaster-operator: runs TrainingJobs as elastic sets of GPU worker pods. See --help.
#include <malloc.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "kube/client.h"
#include "kube/client_metrics.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/leader_election.h"
#include "metrics/metrics_server.h"
#include "operator/cmd/logging.h"
#include "operator/cmd/options.h"
#include "operator/controller/controller.h"
#include "operator/controller/operator_metrics.h"

namespace rm = ringmaster;
using rm::LogLevel;

namespace {

std::string DefaultIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return std::string(host) + "_" + std::to_string(getpid());
}

// Waits for SIGTERM or SIGINT, which main() blocked in every thread before starting any.
int WaitForSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);  // raised by ourselves when leadership is lost
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

using rm::operator_cmd::OperatorOptions;

// The leader election, when --leader-elect: the elector, the thread running it, and that thread's end.
struct Election {
  std::unique_ptr<rm::kube::LeaderElector> elector;
  std::thread thread;
  std::future<void> ended;  // ready once elector->Run() has returned
};

// The clients WaitThenStop cancels when their step of the shutdown overruns (Run says why the controller, its
// Events and its lease have a client each; the controller's is cancelled by TrainingJobController::Stop).
struct Clients {
  std::shared_ptr<rm::kube::Client> events, election;
};

// Client: the Kubernetes client from the kubeconfig (or in-cluster config) with the flags' rate limits.
// The client configuration from --kubeconfig/--context (or in-cluster), with the flags' QPS and burst.
// Errors: the configuration cannot be loaded; logged here, the caller exits 1.
rm::StatusOr<rm::kube::ClientConfig> LoadKubeConfig(const OperatorOptions& opts, const rm::LogSink& log) {
  auto config = rm::kube::LoadConfig(opts.kubeconfig, opts.context, rm::kube::ProcessEnvironment());
  if (!config.ok()) {
    log(LogLevel::kError, "cannot load the Kubernetes client configuration: " + config.status().ToString());
    return config.status();
  }
  for (const auto& w : config->warnings) log(LogLevel::kWarning, w);
  config->qps = opts.kube_api_qps;
  config->burst = opts.kube_api_burst;
  config->user_agent = "ringmaster-operator/0.1";  // the apiserver's audit log tells its requests apart
  return config;
}

// A client with a token bucket of its own. Errors: the client cannot be created; logged here.
rm::StatusOr<std::shared_ptr<rm::kube::Client>> NewKubeClient(const rm::kube::ClientConfig& config,
                                                              std::shared_ptr<rm::kube::ClientMetrics> metrics,
                                                              const rm::LogSink& log) {
  auto client = rm::kube::NewClient(config, std::move(metrics), log);
  if (!client.ok()) log(LogLevel::kError, "cannot create the Kubernetes client: " + client.status().ToString());
  return client;
}

// Controller: its options (informers' namespace and resync, workers, per-job objects) from the flags.
rm::controller::ControllerOptions ControllerOptionsFrom(const OperatorOptions& opts,
                                                        std::shared_ptr<rm::kube::ClientMetrics> client_metrics,
                                                        const rm::LogSink& log) {
  rm::controller::ControllerOptions co;
  co.watch_namespace = opts.watch_namespace;
  co.workers = opts.workers;
  co.resync_period = opts.resync_period;
  co.reconciler.worker_network_policy = opts.worker_network_policy;
  co.reconciler.disruption_taints = opts.disruption_taints;
  co.client_metrics = std::move(client_metrics);
  co.log = log;
  return co;
}

// Servers: /metrics and /healthz + /readyz, each unless its bind address is "0", on separate ports and
// threads, so a slow scrape never holds up a probe. /metrics: `registry` and the jobs' state from the
// controller's cache, collected at scrape time. Ready once the caches are synced; a standby replica (not
// leading) is ready to take over. The servers borrow `registry`, `controller` and `leading` until
// destroyed. Errors: a bind failure; logged here, the caller exits 1.
rm::Status StartServers(const OperatorOptions& opts, const std::shared_ptr<prometheus::Registry>& registry,
                        rm::controller::TrainingJobController& controller, const std::atomic<bool>& leading,
                        std::unique_ptr<rm::metrics::MetricsServer>& metrics_server,
                        std::unique_ptr<rm::metrics::MetricsServer>& health_server, const rm::LogSink& log) {
  if (opts.metrics_bind_address != "0") {
    rm::metrics::MetricsServerOptions mo;
    mo.bind_address = opts.metrics_bind_address;
    mo.collectables = {registry, controller.StateMetrics()};
    auto started = rm::metrics::MetricsServer::Start(std::move(mo));
    if (!started.ok()) {
      log(LogLevel::kError,
          "cannot serve metrics on " + opts.metrics_bind_address + ": " + started.status().ToString());
      return started.status();
    }
    metrics_server = std::move(started).value();
    log(LogLevel::kInfo,
        "serving metrics on " + opts.metrics_bind_address + " (port " + std::to_string(metrics_server->port()) + ")");
  }
  if (opts.health_probe_bind_address != "0") {
    rm::metrics::MetricsServerOptions ho;
    ho.bind_address = opts.health_probe_bind_address;
    ho.checks = {{"/healthz", [] { return true; }},
                 {"/readyz", [&leading, &controller] { return !leading.load() || controller.Synced(); }}};
    auto started = rm::metrics::MetricsServer::Start(std::move(ho));
    if (!started.ok()) {
      log(LogLevel::kError,
          "cannot serve health probes on " + opts.health_probe_bind_address + ": " + started.status().ToString());
      return started.status();
    }
    health_server = std::move(started).value();
    log(LogLevel::kInfo, "serving /healthz and /readyz on " + opts.health_probe_bind_address + " (port " +
                             std::to_string(health_server->port()) + ")");
  }
  return rm::Status::Ok();
}

// Leader election: with --leader-elect, a candidate whose callbacks start the controller on winning
// and raise SIGUSR1 (setting `exit_code`) when it cannot start or leadership is lost; otherwise the
// controller starts now. The callbacks borrow every reference argument until election.thread is
// joined. Errors: the elector cannot be created or the controller not started; logged here.
rm::Status StartLeading(const OperatorOptions& opts, const std::string& identity,
                        std::shared_ptr<rm::kube::Client> client, rm::controller::TrainingJobController& controller,
                        std::atomic<bool>& leading, int& exit_code, Election& election,
                        rm::controller::OperatorMetrics& metrics, const rm::LogSink& log) {
  if (!opts.leader_elect) {
    metrics.SetLeading(true);
    rm::Status s = controller.Start();
    if (!s.ok()) log(LogLevel::kError, s.ToString());
    return s;
  }
  rm::kube::LeaderElectionConfig lc;
  lc.lease_namespace = opts.leader_election_namespace;
  lc.lease_name = opts.leader_election_id;
  lc.identity = identity;
  lc.lease_duration = opts.lease_duration;
  lc.renew_deadline = opts.renew_deadline;
  lc.retry_period = opts.retry_period;
  lc.log = log;
  lc.on_started_leading = [&, log] {
    log(LogLevel::kInfo, identity + " is the leader; starting the controller");
    leading = true;
    metrics.SetLeading(true);
    if (rm::Status s = controller.Start(); !s.ok()) {
      log(LogLevel::kError, s.ToString());
      exit_code = 1;
      kill(getpid(), SIGUSR1);
    }
  };
  lc.on_stopped_leading = [&, log] {
    metrics.SetLeading(false);
    if (leading.exchange(false)) {
      log(LogLevel::kError, identity + " lost leadership; exiting so a restart rejoins as a candidate");
      exit_code = exit_code == 0 ? 1 : exit_code;
      kill(getpid(), SIGUSR1);
    }
  };
  lc.on_new_leader = [&identity, log](const std::string& who) {
    if (who != identity) log(LogLevel::kInfo, "the leader is " + who);
  };
  auto created = rm::kube::LeaderElector::Create(std::move(client), lc);
  if (!created.ok()) {
    log(LogLevel::kError, "leader election: " + created.status().ToString());
    return created.status();
  }
  election.elector = std::move(created).value();
  log(LogLevel::kInfo,
      identity + " is a candidate for lease " + opts.leader_election_namespace + "/" + opts.leader_election_id);
  rm::kube::LeaderElector* elector = election.elector.get();
  std::packaged_task<void()> run([elector] { elector->Run(); });
  election.ended = run.get_future();
  election.thread = std::thread(std::move(run));
  return rm::Status::Ok();
}

// How long the lease's release and the events' flush may each take once the controller has stopped: past it,
// their client's requests are cancelled. With --shutdown-timeout they bound the whole shutdown, which must end
// within the pod's grace period (30 s by default) for the lease to be released and the last lines logged.
constexpr std::chrono::seconds kShutdownStepTimeout{5};

// Wait: until SIGTERM or SIGINT (or our SIGUSR1), then stop in order, each step bounded (a stopped or unreachable
// apiserver must not hold the exit; client-go's and controller-runtime's shutdown is bounded the same way): the
// controller (in-flight reconciles may finish within --shutdown-timeout, then what is left is cancelled), the
// election (releases the Lease so a standby takes over at once), the pending events, the servers.
void WaitThenStop(const OperatorOptions& opts, rm::controller::TrainingJobController& controller,
                  std::atomic<bool>& leading, Election& election, const Clients& clients,
                  rm::kube::EventRecorder& recorder, std::unique_ptr<rm::metrics::MetricsServer>& metrics_server,
                  std::unique_ptr<rm::metrics::MetricsServer>& health_server, const rm::LogSink& log) {
  int sig = WaitForSignal();
  if (sig != SIGUSR1)
    log(LogLevel::kInfo, std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + "; shutting down");
  leading = false;
  controller.Stop(opts.shutdown_timeout);
  if (election.elector) {
    election.elector->Stop();
    // Best effort: an apiserver that does not answer must not keep the process; the lease then expires by itself.
    if (election.ended.wait_for(kShutdownStepTimeout) != std::future_status::ready) {
      log(LogLevel::kWarning, "shutdown: the leader election did not end within " +
                                  std::to_string(kShutdownStepTimeout.count()) + " s (the lease's release); cancelled");
      clients.election->rest().Cancel();
    }
    election.thread.join();
  }
  if (!recorder.Flush(kShutdownStepTimeout))
    log(LogLevel::kWarning,
        "shutdown: events not written within " + std::to_string(kShutdownStepTimeout.count()) + " s; dropped");
  // Whatever the recorder is still sending ends now, so that destroying it does not wait for the apiserver.
  clients.events->rest().Cancel();
  metrics_server.reset();
  health_server.reset();
  log(LogLevel::kInfo, "stopped");
}

// client -> controller -> servers -> leader election -> wait. Returns the process exit code.
int Run(const OperatorOptions& opts) {
  rm::LogSink log = rm::operator_cmd::MakeLogger(opts.log_format);
  const std::string identity = opts.identity.empty() ? DefaultIdentity() : opts.identity;

  auto registry = std::make_shared<prometheus::Registry>();
  auto client_metrics = std::make_shared<rm::kube::ClientMetrics>(*registry);
  rm::controller::OperatorMetrics operator_metrics(*registry, "trainingjob", opts.leader_election_id);
  // Three clients, so three token buckets (--kube-api-qps/--kube-api-burst each), as kube-scheduler and
  // kube-controller-manager do: the controller's writes (the membership publish above all) never wait behind a
  // backlog of Events, and the lease is renewed on time however busy the controller is -- a leader that loses
  // its lease because its own reconciles used up the bucket would restart and make the backlog worse.
  auto config = LoadKubeConfig(opts, log);
  if (!config.ok()) return 1;
  auto client = NewKubeClient(*config, client_metrics, log);
  auto events_client = NewKubeClient(*config, client_metrics, log);
  auto election_client = NewKubeClient(*config, client_metrics, log);
  if (!client.ok() || !events_client.ok() || !election_client.ok()) return 1;
  const Clients clients{*events_client, *election_client};

  rm::kube::EventRecorderOptions ro;
  ro.host = identity;
  ro.log = log;
  rm::kube::EventRecorder recorder(*events_client, ro);
  rm::controller::TrainingJobController controller(*client, &recorder, &operator_metrics,
                                                   ControllerOptionsFrom(opts, client_metrics, log));

  std::atomic<bool> leading{!opts.leader_elect};
  std::unique_ptr<rm::metrics::MetricsServer> metrics_server, health_server;  // destroyed before the controller
  if (!StartServers(opts, registry, controller, leading, metrics_server, health_server, log).ok()) return 1;

  int exit_code = 0;
  Election election;
  if (!StartLeading(opts, identity, *election_client, controller, leading, exit_code, election, operator_metrics, log)
           .ok())
    return 1;

  WaitThenStop(opts, controller, leading, election, clients, recorder, metrics_server, health_server, log);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // One malloc arena: glibc gives every thread that allocates its own (up to 8 per core), and each keeps
  // the memory its threads freed. Reconciles are not allocation-bound. Measured with 200 jobs x 8 workers
  // and 10 failures (ringmaster-operator-bench): peak RSS 29.7 MiB with two arenas, 25.7 MiB with one.
  mallopt(M_ARENA_MAX, 1);
  auto opts = rm::operator_cmd::ParseOperatorFlags(rm::cli::Args(argc, argv));
  if (auto exit_code = rm::cli::ExitEarly("ringmaster-operator", opts, rm::operator_cmd::UsageText)) return *exit_code;
  // Every thread inherits this mask; WaitForSignal() is the one place these signals are taken.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Four I/O threads for the three clients and their watches instead of cpprestsdk's forty (their stacks
  // and allocator state are a fifth of an idle operator's memory). Nothing has made a client yet.
  if (rm::Status sized = rm::kube::SetHttpIoThreads(4); !sized.ok()) {
    std::fprintf(stderr, "ringmaster-operator: %s\n", sized.ToString().c_str());
    return 1;
  }
  return Run(*opts);
}
