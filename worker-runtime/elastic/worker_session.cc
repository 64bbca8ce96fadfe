#include "worker-runtime/elastic/worker_session.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "worker-runtime/elastic/process_set_rules.h"
#include "worker-runtime/elastic/termination_report.h"
#include "worker-runtime/membership/static_source.h"

namespace ringmaster::elastic {
namespace {

// A port the kernel says is free now (a world of one serves its store there a moment later).
StatusOr<int> FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return UnavailableError("socket: cannot pick a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port <= 0) return UnavailableError("cannot pick a free port on 127.0.0.1");
  return port;
}

std::string RandomSecret() {
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 4; ++i) s += std::to_string(rd());
  return s;
}

SessionTopology TopologyOf(const api::Membership& record, const std::string& me) {
  SessionTopology t;
  t.generation = record.generation;
  t.size = record.world_size();
  // Hosts (api::HostOf: a pod in a cluster) in order of their lowest rank: Horovod's local and cross ranks.
  std::vector<std::string> hosts;
  const api::Member* self = record.Find(me);
  for (const auto& m : record.members) {
    t.worker_ids.push_back(m.id());
    if (std::find(hosts.begin(), hosts.end(), api::HostOf(m)) == hosts.end()) hosts.push_back(api::HostOf(m));
  }
  t.cross_size = static_cast<int>(hosts.size());
  if (self == nullptr) return t;
  const std::string host = api::HostOf(*self);
  t.rank = self->rank;
  t.local_rank = LocalRank(record, me);  // the rank the driver's RuntimeConfig::local_rank has too
  t.local_size = LocalSize(record, me);
  t.cross_rank = static_cast<int>(std::find(hosts.begin(), hosts.end(), host) - hosts.begin());
  return t;
}

}  // namespace

StatusOr<std::unique_ptr<WorkerSession>> WorkerSession::Create(const std::map<std::string, std::string>& env,
                                                               LogSink log) {
  WorkerOptions o;
  RINGMASTER_RETURN_IF_ERROR(ApplyWorkerEnvironment(env, &o));
  RINGMASTER_ASSIGN_OR_RETURN(runtime::RuntimeConfig config, runtime::ParseRuntimeConfig(env));
  if (auto timeout = env.find(std::string(api::env::kCollectiveTimeoutMs));
      timeout != env.end() && !timeout->second.empty()) {
    o.timeout_ms = static_cast<int>(config.timeout.count());
  }
  // With a checkpoint directory and no interval of its own, every commit is offered to the asynchronous
  // writer (newest wins: a slow disk skips intermediate states instead of slowing the training).
  if (!o.checkpoint_dir.empty() && o.checkpoint_every == 0) o.checkpoint_every = 1;
  const bool standalone = !o.has_membership_source();
  if (!standalone) RINGMASTER_RETURN_IF_ERROR(CheckWorkerOptions(o));
  auto out = env.find(std::string(api::env::kOut));
  const bool journal = out != env.end() && !out->second.empty();
  std::unique_ptr<WorkerSession> session(
      new WorkerSession(std::move(o), std::move(config), standalone, journal, std::move(log)));
  if (standalone) RINGMASTER_RETURN_IF_ERROR(session->MakeStandalone());
  session->termination_log_ = TerminationLogPath(env);
  session->node_ = NodeFromEnvironment(env);
  return session;
}

WorkerSession::WorkerSession(WorkerOptions options, runtime::RuntimeConfig config, bool standalone, bool journal,
                             LogSink log)
    : options_(std::move(options)),
      config_(std::move(config)),
      standalone_(standalone),
      journal_wanted_(journal),
      log_(std::move(log)),
      state_([this] { return pending_; }, [](std::string_view) { return Status::Ok(); }) {}

WorkerSession::~WorkerSession() {
  Finish();
  if (source_) source_->Stop();
  driver_.reset();
}

Status WorkerSession::MakeStandalone() {
  RINGMASTER_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
  options_.host = "127.0.0.1";
  options_.store_port = port;
  if (options_.worker_id.empty()) options_.worker_id = "worker-0";
  options_.secret = RandomSecret();
  options_.health_port = 0;  // two scripts on one laptop must not fight over one port
  options_.min_size = 1;
  api::Membership record;
  record.generation = 1;
  record.coordinator = "127.0.0.1:" + std::to_string(port);
  record.members.push_back({options_.worker_id, "", 0, "127.0.0.1", "localhost"});
  record.reason = "Standalone";
  source_ = std::make_unique<membership::StaticMembershipSource>(std::move(record));
  return Status::Ok();
}

Status WorkerSession::Start() {
  if (driver_) return FailedPreconditionError("the session is already started");
  if (!source_) {
    RINGMASTER_ASSIGN_OR_RETURN(source_, OpenMembershipSource(options_, log_));
  }
  RINGMASTER_ASSIGN_OR_RETURN(checkpoints_, OpenCheckpoints(options_, log_));
  if (journal_wanted_) {
    auto journal = SampleJournal::Open(options_.out + "/journal." + options_.worker_id + ".log");
    if (!journal.ok()) return journal.status().WithContext("the sample journal in RINGMASTER_OUT");
    journal_.emplace(std::move(journal).value());
  }
  heartbeat_ = std::make_unique<Heartbeat>(options_.heartbeat_file);
  metrics_ = std::make_unique<WorkerMetrics>(OpenGpuTelemetry(options_, log_));
  Status served = metrics_->Serve(options_.host + ":" + std::to_string(options_.health_port));
  Log(log_, served.ok() ? LogLevel::kInfo : LogLevel::kWarning, metrics_->ServeOutcome(served, options_.health_port));
  driver_ = std::make_unique<ElasticDriver>(DriverOptions(options_, config_, metrics_.get(), checkpoints_.get(), log_),
                                            source_.get(), &state_);
  driver_->RequireMinSize(min_size());
  RINGMASTER_RETURN_IF_ERROR(driver_->Start());
  RINGMASTER_ASSIGN_OR_RETURN(bool member, Join());
  if (!member) return FailedPreconditionError("worker " + options_.worker_id + " left the job before it joined");
  return Status::Ok();
}

void WorkerSession::Restored(int64_t incarnation, int64_t step) {
  if (heartbeat_) heartbeat_->Set(step);
  if (journal_) {
    Status s = journal_->Restored(incarnation, step);
    if (!s.ok()) Log(log_, LogLevel::kWarning, s.ToString());
  }
}

StatusOr<bool> WorkerSession::Join() {
  if (!driver_) return FailedPreconditionError("the session is not started");
  RINGMASTER_ASSIGN_OR_RETURN(
      bool member, driver_->Join([this](int64_t incarnation, int64_t step) { Restored(incarnation, step); }));
  if (!member) return false;
  SessionTopology t = TopologyOf(driver_->record(), options_.worker_id);
  std::lock_guard lock(mu_);
  topology_ = std::move(t);
  return true;
}

void WorkerSession::RequireMinSize(int n) {
  {
    std::lock_guard lock(mu_);
    required_min_size_ = std::max(required_min_size_, n);
  }
  if (driver_) driver_->RequireMinSize(n);
}

int WorkerSession::min_size() const {
  std::lock_guard lock(mu_);
  return std::max(options_.min_size, required_min_size_);
}

void WorkerSession::Interrupted(const Status& why) {
  if (driver_) driver_->Interrupted(why);
}

Status WorkerSession::EndWorker(const Status& why) {
  // The GPU: the joined runtime's, else the launcher's choice; none on the host.
  const runtime::Runtime* rt = runtime();
  const int device = rt != nullptr ? rt->device() : config_.backend == comm::Backend::kGloo ? -1 : config_.device;
  auto written = WriteTerminationMessage(
      termination_log_, {options_.worker_id, node_, DescribeGpu(device, options_.gpus), why.ToString()});
  Log(log_, LogLevel::kError, "this worker cannot go on: " + why.ToString());
  if (written.ok()) {
    Log(log_, LogLevel::kInfo, "termination message written to " + termination_log_);
  } else {
    Log(log_, LogLevel::kWarning, written.status().ToString());
  }
  return why;
}

Status WorkerSession::Commit(std::string bytes, const data::SampleCursor& next) {
  pending_ = std::move(bytes);
  Status committed;
  if (driver_) {
    committed = driver_->Commit(next);
  } else {
    state_.Commit(state_.committed_step() + 1, next);
  }
  pending_.clear();
  if (committed.ok() && heartbeat_) heartbeat_->Set(state_.committed_step());
  return committed;
}

void WorkerSession::Finish() {
  if (driver_) driver_->Finish();
}

runtime::Runtime* WorkerSession::runtime() const { return driver_ ? driver_->Context().rt : nullptr; }

SessionTopology WorkerSession::topology() const {
  std::lock_guard lock(mu_);
  return topology_;
}

StatusOr<int> WorkerSession::RuleProcessSet(const std::string& name) const {
  if (!driver_) return FailedPreconditionError("the session is not started");
  return driver_->Context().ProcessSet(name);
}

void WorkerSession::CountSamples(uint64_t n) {
  if (metrics_) metrics_->Samples(n);
}

Status WorkerSession::JournalAttempt(int64_t step, uint64_t epoch, const std::vector<uint64_t>& samples) {
  if (!journal_) return FailedPreconditionError("no sample journal: RINGMASTER_OUT is not set");
  const int64_t incarnation = driver_ ? driver_->Context().incarnation : 0;
  return journal_->Attempt(incarnation, step, epoch, samples);
}

}  // namespace ringmaster::elastic
