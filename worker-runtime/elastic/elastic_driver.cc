#include "worker-runtime/elastic/elastic_driver.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "api/job_status.h"
#include "base/time_format.h"
#include "worker-runtime/checkpoint/crc32c.h"
#include "worker-runtime/elastic/failure_class.h"
#include "worker-runtime/elastic/peer_probe.h"
#include "worker-runtime/elastic/rebuild_plan.h"
#include "worker-runtime/elastic/restore_choice.h"
#include "worker-runtime/elastic/termination_notice.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/store/store_client.h"

namespace ringmaster::elastic {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using api::Membership;
using common::DataType;
using common::ReduceOp;

namespace {

// Store generations: every build of a membership generation gets its own (a retry of the same
// membership, after a failure the launcher/operator did not turn into a new record, gets the next).
constexpr int64_t kAttempts = 1024;
// How long rank 0's store holds a member's first request of an attempt it has not opened yet, at a time (the
// rendezvous asks again until its deadline, checking for a newer record in between).
constexpr auto kRendezvousHold = std::chrono::milliseconds(250);
uint64_t StoreGeneration(int64_t generation, int64_t attempt) {
  return static_cast<uint64_t>(generation * kAttempts + attempt);
}

double Seconds(Clock::time_point from) { return std::chrono::duration<double>(Clock::now() - from).count(); }

// A collective or rendezvous failure that a rebuild repairs (failure_class.h): anything else ends the worker.
bool IsMembershipFailure(StatusCode code) { return RebuildRepairs(code); }

StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("coordinator '" + address + "' is not host:port");
  int port = std::atoi(address.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return InvalidArgumentError("coordinator '" + address + "' has a bad port");
  return std::make_pair(address.substr(0, colon), static_cast<uint16_t>(port));
}

// The restore's allgather of each rank's (committed step, state size, origin), `count` int64s a rank: every rank
// sends its values to every other at once (point-to-point) and receives theirs, one round where the ring
// allgather takes n-1 in turn (~20 ms of the restore at 15 ranks on 2 cores: each hop waits for a process to be
// scheduled). Falls back to Allgather where the host communicator has no point-to-point (Unimplemented, the same
// on every rank of a backend). Errors: as the communicator's; on a failure the host communicator is aborted, so
// that the transfers still in flight end now (a rebuild follows anyway).
constexpr uint32_t kRestoreTag = 0x72657374;  // "rest": the only point-to-point on a communicator this early

Status AllgatherAtOnce(comm::Communicator& host, const int64_t* mine, size_t count, int64_t* all) {
  const int n = host.size(), me = host.rank();
  const size_t bytes = count * sizeof(int64_t);
  std::copy(mine, mine + count, all + static_cast<size_t>(me) * count);
  std::vector<std::unique_ptr<comm::Transfer>> transfers;
  Status failed;
  for (int d = 1; d < n && failed.ok(); ++d) {
    const int from = (me + n - d) % n, to = (me + d) % n;  // a ring's order: each peer's sends are spread out
    auto recv = host.PostRecv(all + static_cast<size_t>(from) * count, bytes, from, kRestoreTag);
    if (!recv.ok() && recv.status().code() == StatusCode::kUnimplemented && transfers.empty()) {
      return host.Allgather(mine, all, count, DataType::kInt64);
    }
    if (!recv.ok()) {
      failed = recv.status();
      break;
    }
    transfers.push_back(std::move(recv).value());
    auto send = host.PostSend(mine, bytes, to, kRestoreTag);
    if (!send.ok()) {
      failed = send.status();
      break;
    }
    transfers.push_back(std::move(send).value());
  }
  if (!failed.ok()) host.Abort("restore exchange failed: " + failed.ToString());
  for (auto& t : transfers) {
    Status s = t->Wait();  // every buffer here stays valid until its transfer ends
    if (failed.ok() && !s.ok()) {
      failed = s;
      host.Abort("restore exchange failed: " + s.ToString());
    }
  }
  return failed;
}

}  // namespace

StatusOr<int> StepContext::ProcessSet(const std::string& name) const {
  if (process_sets != nullptr) {
    auto it = process_sets->find(name);
    if (it != process_sets->end()) return it->second;
  }
  return NotFoundError("process set '" + name + "' does not exist in generation " + std::to_string(generation) +
                       " (no rule yields it, or none of its workers is a member)");
}

ElasticDriver::ElasticDriver(ElasticOptions options, membership::MembershipSource* source, ElasticState* state)
    : options_(std::move(options)), source_(source), state_(state), process_set_rules_(options_.process_sets) {
  // Static sets by rank (RINGMASTER_PROCESS_SETS) hold in every generation as far as it has the ranks.
  for (size_t i = 0; i < options_.runtime.process_sets.size(); ++i) {
    process_set_rules_.push_back(SetOfRanks("static:" + std::to_string(i), options_.runtime.process_sets[i]));
  }
}

ElasticDriver::~ElasticDriver() {
  StopWatcher();
  std::lock_guard lock(mu_);
  if (runtime_) runtime_->Abort("driver destroyed");
  runtime_.reset();
  retired_.reset();
  parent_.reset();
  server_.reset();
}

void ElasticDriver::Log(const std::string& line) const { ::ringmaster::Log(options_.log, LogLevel::kInfo, line); }

void ElasticDriver::RequireMinSize(int n) {
  int current = required_min_size_.load();
  while (n > current && !required_min_size_.compare_exchange_weak(current, n)) {}
}

RebuildStats ElasticDriver::last_rebuild() const {
  std::lock_guard lock(mu_);
  return last_rebuild_;
}

void ElasticDriver::Watch() {
  while (!stop_watch_.load()) {
    auto next = source_->WaitNewer(newest_seen_.load(), 100ms);
    if (next.ok()) {
      OnNewRecord(*next);
    } else if (next.status().code() == StatusCode::kCancelled) {
      return;
    }
    if (switch_.pending()) CheckPendingSwitch();
    CheckHang();
    CheckTermination();
  }
}

void ElasticDriver::CheckHang() {
  // An orderly switch has a wait of its own (CheckPendingSwitch), and a newer generation aborts the step anyway.
  if (switch_.pending() || Superseded()) return;
  std::lock_guard lock(mu_);
  // Only the runtime of the generation armed at its join: not while it is quiesced or the next one is built.
  if (!runtime_ || hang_armed_.lock() != runtime_) return;
  const std::optional<HangVerdict> verdict = hang_.Check();
  if (!verdict) return;
  const int64_t generation = built_record_.generation;
  char line[320];
  std::snprintf(line, sizeof line,
                "generation %lld: no step committed for %.1f s (%.1f x the median step %.3f s): the generation is "
                "hung; revoking and rebuilding",
                static_cast<long long>(generation), verdict->stalled_seconds,
                verdict->median_seconds > 0 ? verdict->stalled_seconds / verdict->median_seconds : 0.0,
                verdict->median_seconds);
  ::ringmaster::Log(options_.log, LogLevel::kWarning, line);
  if (options_.metrics) options_.metrics->Hung();
  // As a newer generation would: the collective in flight returns Aborted and the training thread rebuilds.
  runtime_->Abort(line);
  const api::Member* self = built_record_.Find(options_.worker_id);
  api::HangReport report{self != nullptr ? self->pod : options_.worker_id,
                         generation,
                         verdict->stalled_seconds,
                         verdict->median_seconds,
                         verdict->step,
                         FormatRfc3339(std::chrono::system_clock::now(), TimePrecision::kMillis)};
  // The owner publishes the next generation for every member (one stuck where its own watchdog cannot see it, too).
  // On a thread of its own, after the previous report: a slow apiserver never holds up the watcher.
  hang_report_ = std::async(std::launch::async, [previous = std::move(hang_report_), source = source_,
                                                 log = options_.log, report = std::move(report)]() mutable {
    if (previous.valid()) previous.wait();
    Status reported = source->ReportHang(report);
    ::ringmaster::Log(log, reported.ok() ? LogLevel::kInfo : LogLevel::kWarning,
                      "the hang of generation " + std::to_string(report.generation) +
                          (reported.ok() ? " was reported" : " was not reported: " + reported.ToString()));
  });
}

void ElasticDriver::CheckTermination() {
  const auto sigterm = TerminationNotice::Received();
  if (!sigterm) return;
  // Still in the newest generation: the operator has not acted on the pod's deletion (yet).
  const api::Membership latest = source_->Latest();
  const bool member = latest.Find(options_.worker_id) != nullptr;
  const bool never_joined = joined_generation_.load() == 0;
  if (!never_joined && (!member || Clock::now() - *sigterm < TerminationNotice::kOperatorWait)) return;
  Log(never_joined ? "SIGTERM before joining any generation: exiting"
                   : "SIGTERM " + std::to_string(TerminationNotice::kOperatorWait.count()) +
                         " s ago and still a member of generation " + std::to_string(latest.generation) +
                         " (no operator removed this worker): exiting");
  TerminationNotice::EndAsSigterm();
}

void ElasticDriver::OnNewRecord(const api::Membership& next) {
  std::lock_guard lock(mu_);
  const bool training = runtime_ && joined_generation_.load() == built_record_.generation;
  // Another orderly change before the boundary (a join, then a disruption): the members switch there to it.
  if (training && switch_.pending() && newest_seen_.load() == switch_.pending_generation() &&
      next.generation == switch_.pending_generation() + 1 && OrderlyReason(next)) {
    switch_.Retarget(next.generation);
    newest_seen_.store(next.generation);
    Log("generation " + std::to_string(next.generation) + " (" + next.reason +
        ") too: switching to it at the same step boundary");
    return;
  }
  if (training && !switch_.pending() && newest_seen_.load() == built_record_.generation &&
      OrderlyChange(built_record_, next)) {
    // Pending before newest_seen_ moves: SwitchDue() must never see the new generation without it.
    Status begun = switch_.Begin(next.generation, local_step_.load());
    if (begun.ok()) {
      newest_seen_.store(next.generation);
      Log("generation " + std::to_string(next.generation) + " (" + next.reason +
          ") lets every member finish its step: switching at step " +
          (switch_.Step() > 0 ? std::to_string(switch_.Step()) : "rank 0 chooses") + "'s boundary");
      return;
    }
    Log("generation " + std::to_string(next.generation) + ": " + begun.ToString() + "; aborting the step instead");
    switch_.Clear();
  }
  newest_seen_.store(next.generation);
  if (next.generation > seen_generation_) {  // an orderly switch is seen at its boundary instead (Join)
    seen_generation_ = next.generation;
    seen_at_ = Clock::now();
  }
  AbortFor(next.generation);
}

void ElasticDriver::AbortFor(int64_t generation) {
  switch_.Clear();
  // Quiesce: a collective in flight returns Aborted; the training thread rebuilds.
  if (runtime_) runtime_->Abort("membership generation " + std::to_string(generation));
  // A rendezvous of the superseded generation through our store fails fast.
  if (server_ && server_->generation() < StoreGeneration(generation, 0)) {
    (void)server_->AdvanceGeneration(StoreGeneration(generation, 0));
  }
}

void ElasticDriver::CheckPendingSwitch() {
  const int64_t boundary = switch_.Step();
  const auto now = Clock::now().time_since_epoch().count();
  const auto since_commit = Clock::duration(now - last_commit_.load());
  const auto wait = std::max<Clock::duration>(options_.boundary_wait, 2 * Clock::duration(last_step_time_.load()));
  std::string why;
  if (boundary > 0 && local_step_.load() > boundary) {
    why = "this member started step " + std::to_string(local_step_.load()) + ", past the boundary " +
          std::to_string(boundary) + " (it saw the change late)";
  } else if (since_commit > wait && switch_.Age() > wait) {
    why = "no step committed for " +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) +
          " ms while waiting for the boundary (a peer may have died)";
  } else {
    return;
  }
  std::lock_guard lock(mu_);
  if (!switch_.pending()) return;
  const int64_t generation = switch_.pending_generation();
  Log("generation " + std::to_string(generation) + ": " + why + "; aborting the step");
  AbortFor(generation);
}

bool ElasticDriver::SwitchDue() {
  if (!Superseded()) return false;
  if (!switch_.pending()) return true;  // the runtime is being aborted: stop now
  const int64_t boundary = switch_.Step();
  if (boundary <= 0 || state_->committed_step() < boundary) return false;
  // Every member stops at this boundary, alive: agree on the last step, so that the next generation resumes
  // from it rather than from the step before. A failure here rolls it back, as any unconfirmed step.
  Status agreed = AgreeOnLast();
  if (!agreed.ok()) Log("the boundary step " + std::to_string(boundary) + " was not agreed: " + agreed.ToString());
  return true;
}

Status ElasticDriver::Build(const api::Membership& record, RebuildStats* stats) {
  const int64_t gen = record.generation;
  const auto* me = record.Find(options_.worker_id);
  const int rank = me->rank;
  const auto deadline = Clock::now() + options_.rebuild_timeout;
  attempt_ = attempt_generation_ == gen ? attempt_ + 1 : 0;
  attempt_generation_ = gen;
  if (attempt_ >= kAttempts) return AbortedError("generation " + std::to_string(gen) + ": too many attempts");

  // 1. Rendezvous.
  auto t = Clock::now();
  RINGMASTER_ASSIGN_OR_RETURN(std::shared_ptr<store::StoreClient> client, Rendezvous(record, rank, deadline));
  stats->rendezvous = Seconds(t);

  // 2. Communicator.
  t = Clock::now();
  runtime::RuntimeConfig config = options_.runtime;
  config.name = "g" + std::to_string(gen) + "." + std::to_string(attempt_);
  config.timeout = std::min(config.timeout, options_.rebuild_timeout);
  config.process_sets.clear();  // re-created by rule (CreateProcessSets)
  // This generation's local rank (it moves when a worker on the same node leaves or joins). The GPU
  // does not move with it: the process's tensors live on one. Without a launcher's RINGMASTER_DEVICE,
  // the first generation's local rank picks it and later ones keep it.
  config.local_rank = LocalRank(record, options_.worker_id);
  if (config.device < 0) config.device = pinned_device_;  // -1 before the first build: the local rank's
  OpenTimeline(rank);
  if (timeline_failed_) config.timeline_path.clear();  // warned once: the runtime does not try again
  auto created = CreateWorld(config, client, record, rank, stats);
  {
    std::lock_guard lock(mu_);
    parent_.reset();  // shrunk or not, a later build starts from this one or afresh
  }
  if (!created.ok())
    return created.status().WithContext("building the generation-" + std::to_string(gen) + " communicator");
  std::shared_ptr<runtime::Runtime> rt(std::move(created).value());
  {
    std::lock_guard lock(mu_);
    runtime_ = rt;
    built_record_ = record;
    if (pinned_device_ < 0) pinned_device_ = config.device >= 0 ? config.device : config.local_rank;
    if (Superseded(gen)) rt->Abort("superseded");
  }
  RINGMASTER_RETURN_IF_ERROR(CreateProcessSets(*rt, record));
  stats->communicator = Seconds(t);
  {
    auto hp = SplitHostPort(record.coordinator);  // Rendezvous already parsed it
    if (hp.ok()) switch_.Running({hp->first, hp->second, options_.secret, StoreGeneration(gen, attempt_), rank});
  }

  // 3. Restore.
  t = Clock::now();
  RINGMASTER_RETURN_IF_ERROR(Sync(*rt, stats));
  stats->restore = Seconds(t);
  return Status::Ok();
}

StatusOr<std::shared_ptr<store::StoreClient>> ElasticDriver::Rendezvous(const api::Membership& record, int rank,
                                                                        Clock::time_point deadline) {
  const int64_t gen = record.generation;
  if (rank == 0) {
    std::lock_guard lock(mu_);
    // A member that gave up an attempt of this generation before rank 0 even began it (rank 0 was late: a
    // newcomer rebuilt at once while the survivors were still busy with the previous generation) has moved on
    // to a later attempt and said so (NextRecord). Rank 0 starts there too, not at an attempt that member
    // will never come back to: else each side kept failing its own attempt and moved one on, never meeting.
    const uint64_t requested = server_->newest_requested();
    if (requested > StoreGeneration(gen, attempt_) && requested < StoreGeneration(gen, kAttempts)) {
      const int64_t skipped_to = static_cast<int64_t>(requested - StoreGeneration(gen, 0));
      Log("generation " + std::to_string(gen) + ": a member already waits at attempt " + std::to_string(skipped_to) +
          ": building that attempt instead of attempt " + std::to_string(attempt_));
      attempt_ = skipped_to;
    }
    if (server_->generation() < StoreGeneration(gen, attempt_)) {
      RINGMASTER_RETURN_IF_ERROR(server_->AdvanceGeneration(StoreGeneration(gen, attempt_)));
    }
  }
  // A member's address is a host without a port (api::Member): the record's coordinator is the store.
  const std::string& coordinator = record.coordinator;
  if (coordinator.empty())
    return InvalidArgumentError("generation " + std::to_string(record.generation) + " names no coordinator");
  RINGMASTER_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
  // Rank 0 advances its store when it sees the record, usually within a few ms of the others. Until then the
  // server holds this member's first request (a store that is not up yet: retry soon, backing off to 50 ms), in
  // slices, so that a newer record still ends the rendezvous within one.
  auto backoff = 2ms;
  for (;;) {
    if (Superseded(gen)) return AbortedError("generation " + std::to_string(gen) + " superseded during rendezvous");
    store::StoreClientOptions co;
    co.host = hp.first;
    co.port = hp.second;
    co.secret = options_.secret;
    co.generation = StoreGeneration(gen, attempt_);
    co.rank = rank;
    co.connect_timeout = 300ms;
    co.io_timeout = options_.rebuild_timeout;
    auto c = store::StoreClient::Connect(co);
    Status probe = c.status();
    bool held = false;
    if (c.ok()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      const auto hold = std::clamp<std::chrono::milliseconds>(left, 0ms, kRendezvousHold);
      const auto asked = Clock::now();
      probe = (*c)->AddOnceReached("elastic.joined", 1, hold).status();
      if (probe.ok()) {
        return std::shared_ptr<store::StoreClient>(std::move(c).value());
      }
      // An Unavailable sooner than the hold is no wait for rank 0 (a server going away, or one that does not
      // hold requests): back off as for a store that is not up.
      held = probe.code() == StatusCode::kUnavailable && hold > 0ms && Clock::now() - asked >= hold;
    }
    if (probe.code() == StatusCode::kUnauthenticated) return probe;
    if (probe.code() == StatusCode::kAborted) {
      // Rank 0 is at a later attempt of this generation (or a newer generation): follow it.
      if (attempt_ + 1 >= kAttempts) return probe.WithContext("rendezvous at " + coordinator);
      ++attempt_;
      continue;
    }
    if (Clock::now() > deadline) return probe.WithContext("rendezvous at " + coordinator);
    if (held) continue;  // the server waited for rank 0 already
    std::this_thread::sleep_for(backoff);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 50ms);
  }
}

StatusOr<std::unique_ptr<runtime::Runtime>> ElasticDriver::CreateWorld(const runtime::RuntimeConfig& config,
                                                                       std::shared_ptr<store::Store> store,
                                                                       const api::Membership& record, int rank,
                                                                       RebuildStats* stats) {
  std::shared_ptr<runtime::Runtime> parent;
  {
    std::lock_guard lock(mu_);
    parent = parent_;
  }
  RebuildPlan plan = PlanRebuild(parent ? &parent_record_ : nullptr, record, parent && parent->CanShrink());
  if (plan.shrink && !parent->SameDevice(config)) {
    // A shrunk communicator stays on its parent's GPU; this build asks for another (a program's own config).
    plan = RebuildPlan{
        false, {}, "this build's GPU is not the previous communicator's (" + std::to_string(parent->device()) + ")"};
  }
  if (parent) {
    // Only when this worker holds a shrinkable communicator does the agreement matter; the others
    // propose "fresh" too, so a mixed world builds afresh.
    RINGMASTER_ASSIGN_OR_RETURN(bool agreed,
                                AgreeOnShrink(*store, config.name + "/shrink", rank, record.world_size(),
                                              ShrinkProposal(plan, parent_incarnation_), options_.rebuild_timeout));
    if (plan.shrink && !agreed) plan = RebuildPlan{false, {}, "not every rank holds the same communicator"};
  } else {
    RINGMASTER_RETURN_IF_ERROR(store->Set(config.name + "/shrink/" + std::to_string(rank), "fresh"));
  }
  if (plan.shrink) {
    Log("communicator: shrinking generation " + std::to_string(parent_record_.generation) + "'s (" + plan.why + ", " +
        std::to_string(plan.excluded.size()) + " ranks excluded)");
    stats->shrunk = true;
    return runtime::Runtime::CreateByShrinking(config, std::move(store), *parent, plan.excluded, timeline_);
  }
  if (parent) Log("communicator: a fresh build (" + plan.why + ")");
  return runtime::Runtime::Create(config, std::move(store), rank, record.world_size(), timeline_);
}

Status ElasticDriver::Quiesce(const std::string& why) {
  switch_.Clear();  // a rebuild follows: any orderly switch is done or given up
  if (!quiesce_error_.ok()) return quiesce_error_;
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard lock(mu_);
    rt = std::move(runtime_);
    runtime_.reset();
  }
  if (!rt) return Status::Ok();
  // A step whose agreement the runtime already recorded (every rank's vote reached this rank) but that no commit
  // promoted yet is agreed: keep it rather than roll it back.
  if (state_->tentative() && rt->Agreed() >= state_->tentative_step()) {
    state_->Agree(state_->tentative_step());
    OnAgreed(*rt);
  }
  // Abort alone only raises a flag: an engine thread inside a collective fails out of it and may still
  // revoke or abort the communicator on its way (NCCL). Only once every engine thread is out is
  // CanShrink() final, and Shrink alone on the communicator.
  Status quiesced = rt->Quiesce(why, QuiesceTimeout());
  std::shared_ptr<runtime::Runtime> dropped;  // destroyed outside mu_ (its destructor joins threads)
  {
    std::lock_guard lock(mu_);
    if (quiesced.ok() && rt->CanShrink()) {
      dropped = std::move(parent_);
      parent_ = std::move(rt);
      parent_record_ = built_record_;
      parent_incarnation_ = static_cast<int64_t>(StoreGeneration(attempt_generation_, attempt_));
    } else {
      // Destroyed after the next generation's first committed step (Commit), not now: a peer still in
      // this generation's collective may write to our connections until it joins the next one, and a
      // connection closed under such a write makes Gloo lose the write and its waiter wait for the
      // timeout. The teardown (an engine thread, a Gloo event loop) also leaves the rebuild's path.
      dropped = std::move(retired_);
      retired_ = std::move(rt);
    }
  }
  if (quiesced.ok()) return Status::Ok();
  quiesce_error_ = InternalError("generation " + std::to_string(built_record_.generation) +
                                 "'s runtime did not quiesce, so no later generation is built here (restart the "
                                 "worker): " +
                                 quiesced.ToString());
  Log(quiesce_error_.ToString());
  return quiesce_error_;
}

Status ElasticDriver::CreateProcessSets(runtime::Runtime& rt, const api::Membership& record) {
  process_sets_.clear();
  if (process_set_rules_.empty()) return Status::Ok();
  RINGMASTER_ASSIGN_OR_RETURN(auto sets, EvaluateProcessSetRules(process_set_rules_, record));
  std::string summary;
  for (auto& set : sets) {
    std::string ranks;
    for (int r : set.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    auto id = rt.AddProcessSet(set.ranks);
    if (!id.ok()) return id.status().WithContext("re-creating process set '" + set.name + "' [" + ranks + "]");
    process_sets_[set.name] = *id;
    summary += " " + set.name + "=[" + ranks + "]";
  }
  Log("process sets of generation " + std::to_string(record.generation) + ":" + summary);
  return Status::Ok();
}

Status ElasticDriver::Sync(runtime::Runtime& rt, RebuildStats* stats) {
  // One engine cycle on the host communicator: an allgather (all at once, AllgatherAtOnce) of what every rank
  // holds (its agreed and tentative steps with their checksums and sizes), from which each rank makes the same
  // choice (restore_choice.h: the newest agreed step whose holders' checksums are equal), then the root's
  // state of that step is broadcast.
  constexpr size_t kFields = 8;
  // Where this rank's state comes from (api::restored_from): kept through an earlier generation it trained in, a
  // checkpoint loaded at start, or the program's initial bytes.
  constexpr const char* kOrigins[] = {"peer", "checkpoint", "initial"};
  const int64_t origin = joined_generation_.load() != 0 ? 0 : loaded_checkpoint_step_ >= 0 ? 1 : 2;
  const bool tentative = state_->tentative();
  const int64_t mine[kFields] = {state_->agreed_step(),
                                 static_cast<int64_t>(state_->AgreedChecksum()),
                                 static_cast<int64_t>(state_->EncodedSize(false)),
                                 tentative ? state_->tentative_step() : -1,
                                 tentative ? static_cast<int64_t>(state_->TentativeChecksum()) : 0,
                                 tentative ? static_cast<int64_t>(state_->EncodedSize(true)) : 0,
                                 origin,
                                 0};
  RestoreChoice choice;
  std::string blob;
  Status synced = rt.RunOnHost("elastic.restore", [&](comm::Communicator& host) -> Status {
    std::vector<int64_t> all(kFields * static_cast<size_t>(host.size()));
    RINGMASTER_RETURN_IF_ERROR(AllgatherAtOnce(host, mine, kFields, all.data()));
    std::vector<HeldState> held(host.size());
    for (int r = 0; r < host.size(); ++r) {
      const int64_t* f = &all[kFields * r];
      held[r] = HeldState{f[0], static_cast<uint32_t>(f[1]), f[2], f[3], static_cast<uint32_t>(f[4]), f[5], f[6]};
    }
    RINGMASTER_ASSIGN_OR_RETURN(choice, ChooseRestore(held));
    if (choice.size < 0)
      return InternalError("rank " + std::to_string(choice.root) + " reported a state of " +
                           std::to_string(choice.size) + " bytes");
    // The root sends the chosen step; a holder of the same step starts from its own copy (the broadcast
    // overwrites it with the same bytes); anyone else receives into a buffer of the announced size.
    const HeldState& me = held[host.rank()];
    if (me.agreed_step == choice.step && me.agreed_crc == choice.crc) {
      blob = state_->Encode();
    } else if (me.tentative_step == choice.step && me.tentative_crc == choice.crc) {
      blob = state_->EncodeTentative();
    } else {
      blob.resize(static_cast<size_t>(choice.size));
    }
    if (blob.empty()) return Status::Ok();
    return host.Broadcast(blob.data(), blob.data(), blob.size(), DataType::kUInt8, choice.root);
  });
  RINGMASTER_RETURN_IF_ERROR(synced);
  for (const auto& line : choice.rejected) {
    ::ringmaster::Log(options_.log, LogLevel::kWarning, "restore: " + line + "; trying an older agreed step");
  }
  restored_from_ = kOrigins[std::clamp<int64_t>(choice.origin, 0, 2)];
  if (rt.rank() == choice.root) {
    if (choice.tentative) state_->Agree(choice.step);
  } else {
    if (checkpoint::Crc32c(blob.data(), blob.size()) != choice.crc)
      return DataLossError("the state of step " + std::to_string(choice.step) + " from rank " +
                           std::to_string(choice.root) + " arrived with another checksum than it sent");
    Status s = state_->Adopt(blob);
    if (!s.ok()) return InternalError("state from rank " + std::to_string(choice.root) + ": " + s.ToString());
  }
  Status s = state_->Restore();
  if (!s.ok()) return InternalError("restoring the committed state: " + s.ToString());
  Log("restored step " + std::to_string(choice.step) + " (cursor " + data::CursorToString(state_->cursor()) +
      ") from rank " + std::to_string(choice.root) + ", " + std::to_string(blob.size()) + " bytes, crc32c " +
      std::to_string(choice.crc));
  (void)stats;
  return Status::Ok();
}

void ElasticDriver::MaybeCheckpoint(const runtime::Runtime& rt) {
  if (!writer_ || options_.checkpoint_every <= 0 || rt.rank() != 0) return;
  ReportSaves();
  if (state_->agreed_step() % options_.checkpoint_every != 0) return;
  Status queued = QueueCheckpoint(rt.size());
  if (!queued.ok())
    Log("checkpoint at step " + std::to_string(state_->agreed_step()) + " refused: " + queued.ToString());
}

Status ElasticDriver::QueueCheckpoint(int world_size) {
  std::string blob = state_->Encode();
  checkpoint::BlobRef ref{"state", std::as_bytes(std::span(blob.data(), blob.size()))};
  const int64_t step = state_->agreed_step();
  RINGMASTER_RETURN_IF_ERROR(writer_->Save(step, static_cast<uint32_t>(std::max(1, world_size)), std::span(&ref, 1)));
  queued_checkpoint_step_ = step;
  return Status::Ok();
}

void ElasticDriver::SaveFinalCheckpoint(const api::Membership& next) {
  // Only rank 0 of the running build saves (as it saves the periodic ones), and only when nobody stays
  // to hold the state: a survivor carries it into the next generation.
  const api::Member* me = built_record_.Find(options_.worker_id);
  if (built_record_.generation == 0 || me == nullptr || me->rank != 0) return;
  for (const auto& m : built_record_.members)
    if (next.Find(m.id()) != nullptr) return;
  const int64_t step = state_->agreed_step();
  const std::string at = (next.reason == api::reason::kSuspended
                              ? "suspended at step "
                              : "generation " + std::to_string(next.generation) + " keeps no member of generation " +
                                    std::to_string(built_record_.generation) + ": leaving at step ") +
                         std::to_string(step);
  if (options_.checkpoints == nullptr || !writer_) {
    ::ringmaster::Log(options_.log, LogLevel::kWarning,
                      at + ": no checkpoint store is configured, so the job will restart from its initial state "
                           "when it resumes (set RINGMASTER_CHECKPOINT_DIR, a TrainingJob's spec.checkpoint, "
                           "or ringmaster-run --checkpoint-dir, to resume where it stopped)");
    return;
  }
  const auto t = Clock::now();
  // The periodic save of this very step is queued or done already: wait for it rather than save twice.
  const bool periodic = queued_checkpoint_step_ == step;
  if (!periodic && loaded_checkpoint_step_ == step) {
    Log(at + ": the checkpoint of that step, loaded at start, is the final one");
    return;
  }
  if (!periodic) {
    Status queued = QueueCheckpoint(built_record_.world_size());
    if (!queued.ok()) {
      if (options_.metrics) options_.metrics->CheckpointFailed("save");
      ::ringmaster::Log(options_.log, LogLevel::kWarning,
                        at + ": the final checkpoint was refused (" + queued.ToString() +
                            "); the job will resume from its newest earlier checkpoint");
      return;
    }
  }
  Status saved = writer_->Wait();
  ReportSaves();
  const auto result = writer_->last_result();
  if (!saved.ok() || !result || result->step != step) {
    ::ringmaster::Log(options_.log, LogLevel::kWarning,
                      at + ": the final checkpoint failed (" + (saved.ok() ? "not written" : saved.ToString()) +
                          "); the job will resume from its newest earlier checkpoint");
    return;
  }
  char figures[128];
  std::snprintf(figures, sizeof figures, " (%llu bytes, %.3f s%s)", static_cast<unsigned long long>(result->bytes),
                Seconds(t), periodic ? ": the periodic checkpoint of that step" : "");
  Log(at + ": final checkpoint saved" + figures);
}

void ElasticDriver::ReportSaves() {
  const auto stats = writer_->stats();
  if (stats.committed + stats.failed == reported_saves_) return;
  reported_saves_ = stats.committed + stats.failed;
  Status last = writer_->last_status();
  if (!last.ok()) {
    if (options_.metrics) options_.metrics->CheckpointFailed("save");
    Log("checkpoint save failed: " + last.ToString());
    return;
  }
  auto result = writer_->last_result();
  if (result && options_.metrics) options_.metrics->CheckpointSaved(result->seconds, result->bytes);
}

StatusOr<api::Membership> ElasticDriver::NextRecord(const api::Membership& current) {
  {
    // Rank 0 of the failed build moves its store to the next attempt at once, so a rank that still
    // joins the failed attempt is refused (Aborted) and follows, instead of reading stale addresses.
    std::lock_guard lock(mu_);
    const uint64_t failed = StoreGeneration(attempt_generation_, attempt_);
    if (server_ && attempt_generation_ == current.generation && server_->generation() == failed &&
        attempt_ + 1 < kAttempts) {
      (void)server_->AdvanceGeneration(failed + 1);
    }
  }
  AnnounceNextAttempt(current);
  if (source_->Latest().generation <= current.generation) ReportUnreachablePeers(current);
  // Workers report, they never decide membership: wait for the launcher/operator's next record; when
  // none comes (a hung peer that came back, a transient timeout), build the same generation again.
  // Half the rebuild deadline: a rank that retries late still finds the others inside their rendezvous.
  const auto wait = std::max<std::chrono::milliseconds>(options_.rebuild_timeout / 2, 1ms);
  auto next = source_->WaitNewer(current.generation, wait);
  if (next.ok()) return next;
  if (next.status().code() != StatusCode::kDeadlineExceeded) return next.status();
  Log("no newer membership than generation " + std::to_string(current.generation) + " after " +
      std::to_string(wait.count()) + " ms: building it again");
  return current;
}

void ElasticDriver::PrepareProgress(Clock::time_point seen, const RebuildStats& stats) {
  // The generation just left hands its step times over as the previous generation's.
  if (generation_steps_ > 0) previous_step_seconds_ = generation_step_seconds_ / static_cast<double>(generation_steps_);
  generation_steps_ = 0;
  generation_step_seconds_ = 0;
  generation_started_ = Clock::now();
  generation_committed_ = false;
  progress_.reset();
  hang_.Reset(state_->committed_step());  // the joined generation's steps only
  {
    std::lock_guard lock(mu_);
    hang_armed_ = runtime_;
  }
  const api::Member* me = record_.Find(options_.worker_id);
  if (me == nullptr || me->rank != 0) return;
  api::ProgressReport r;
  r.generation = record_.generation;
  r.reporter = me->pod;
  r.world_size = record_.world_size();
  r.resumed_from = state_->committed_step();
  r.restored_from = restored_from_;
  // The new world restores the newest step any member committed; the steps nobody in it saw (every holder of
  // newer state was lost) cannot be counted here (api/progress_report.h).
  r.replayed_steps = 0;
  r.restore_seconds = stats.restore;
  r.rebuild_seconds = std::max(0.0, Seconds(seen) - stats.restore);  // restore is the build's last phase
  progress_ = std::move(r);
}

void ElasticDriver::NoteCommit() {
  if (generation_started_ == Clock::time_point{}) return;  // no generation joined
  hang_.Committed(state_->committed_step());
  const auto now = Clock::now();
  const double step = std::chrono::duration<double>(now - generation_started_).count();
  generation_started_ = now;
  if (generation_committed_) {  // the first step after a build (its warm-up) is not in the mean
    ++generation_steps_;
    generation_step_seconds_ += step;
  } else {
    first_step_seconds_ = step;
  }
  generation_committed_ = true;
}

void ElasticDriver::SendProgress() {
  if (!progress_) return;
  api::ProgressReport r = std::move(*progress_);
  progress_.reset();
  r.first_step = state_->agreed_step();
  r.first_step_at = FormatRfc3339(std::chrono::system_clock::now(), TimePrecision::kMillis);
  r.step_seconds = previous_step_seconds_ > 0 ? previous_step_seconds_ : first_step_seconds_;
  // After the previous report, on a thread of its own: the step goes on at once.
  progress_send_ = std::async(std::launch::async, [previous = std::move(progress_send_), source = source_,
                                                   log = options_.log, r = std::move(r)]() mutable {
    if (previous.valid()) previous.wait();
    Status sent = source->ReportProgress(r);
    if (!sent.ok()) {
      ::ringmaster::Log(log, LogLevel::kWarning,
                        "the progress report of generation " + std::to_string(r.generation) + " was not written (" +
                            sent.ToString() + "); training goes on");
    }
  });
}

void ElasticDriver::WaitProgress() {
  if (progress_send_.valid()) progress_send_.wait();
  if (peer_report_.valid()) peer_report_.wait();
}

void ElasticDriver::AnnounceNextAttempt(const api::Membership& current) {
  const api::Member* self = current.Find(options_.worker_id);
  if (self == nullptr || self->rank == 0 || attempt_generation_ != current.generation || attempt_ + 1 >= kAttempts)
    return;
  auto hp = SplitHostPort(current.coordinator);
  if (!hp.ok()) return;
  store::StoreClientOptions co;
  co.host = hp->first;
  co.port = hp->second;
  co.secret = options_.secret;
  co.generation = StoreGeneration(current.generation, attempt_ + 1);
  co.rank = static_cast<uint32_t>(self->rank);
  co.connect_timeout = 300ms;
  co.io_timeout = std::min<std::chrono::milliseconds>(options_.rebuild_timeout, 1000ms);
  // The handshake is the announcement (StoreServer::newest_requested); the connection is closed at once. A
  // refusal (rank 0 is past that attempt already) or no answer (rank 0 is gone) leaves nothing to do.
  (void)store::StoreClient::Connect(co);
}

void ElasticDriver::ReportUnreachablePeers(const api::Membership& record) {
  // A pod's processes share its network: its process 0 speaks for it (the report is keyed by pod).
  const api::Member* self = record.Find(options_.worker_id);
  if (record.world_size() < 2 || self == nullptr || self->process != 0) return;
  const std::vector<std::string> unreachable =
      UnreachablePeers(record, options_.worker_id, options_.store_port, options_.peer_probe_timeout);
  if (unreachable.empty()) return;
  std::string names;
  for (const auto& pod : unreachable) names += (names.empty() ? "" : ", ") + pod;
  const std::string what = "cannot reach " + names + " of generation " + std::to_string(record.generation) +
                           " (no answer within " + std::to_string(options_.peer_probe_timeout.count()) + " ms): ";
  // On a thread of its own, after the previous report: the rebuild goes on at once. Sent inline, a report to an
  // apiserver that could not write (etcd away) held this worker ~12 s in one e2e run, long enough for a newcomer
  // that joined meanwhile to give up the rendezvous it was waiting for this worker in.
  peer_report_ =
      std::async(std::launch::async, [previous = std::move(peer_report_), source = source_, log = options_.log,
                                      generation = record.generation, unreachable, what]() mutable {
        if (previous.valid()) previous.wait();
        Status reported = source->ReportUnreachable(generation, unreachable);
        ::ringmaster::Log(log, LogLevel::kInfo,
                          what + (reported.ok() ? "reported" : "not reported: " + reported.ToString()));
      });
}

void ElasticDriver::OpenTimeline(int rank) {
  if (timeline_ || timeline_failed_ || options_.runtime.timeline_path.empty()) return;
  auto opened = timeline::OpenTimelineForRank(options_.runtime.timeline_path, rank);
  if (opened.ok()) {
    timeline_ = std::move(opened).value();
    return;
  }
  // Telemetry never stops training (Horovod, too, trains on without the timeline it cannot write).
  timeline_failed_ = true;
  ::ringmaster::Log(options_.log, LogLevel::kWarning,
                    "RINGMASTER_TIMELINE: " + opened.status().ToString() + "; training goes on without a timeline");
}

Status ElasticDriver::CheckOptions() const {
  if (options_.worker_id.empty()) return InvalidArgumentError("elastic: empty worker id");
  if (options_.secret.empty()) return InvalidArgumentError("elastic: empty job secret");
  if (options_.min_size < 1) return InvalidArgumentError("elastic: min size must be >= 1");
  return Status::Ok();
}

void ElasticDriver::LoadNewestCheckpoint() {
  if (options_.checkpoints == nullptr) return;
  auto loaded = options_.checkpoints->LoadLatest();
  if (loaded.ok() && loaded->blobs.count("state")) {
    const auto& b = loaded->blobs.find("state")->second;
    Status s = state_->Adopt(std::string_view(reinterpret_cast<const char*>(b.data.get()), b.size));
    if (s.ok()) {
      if (options_.metrics) options_.metrics->CheckpointRestored(loaded->stats.seconds, loaded->stats.bytes);
      loaded_checkpoint_step_ = state_->committed_step();
      Log("loaded checkpoint step " + std::to_string(state_->committed_step()) + " from " + loaded->path);
    } else {
      if (options_.metrics) options_.metrics->CheckpointFailed("restore");
      Log("checkpoint " + loaded->path + " unusable: " + s.ToString());
    }
  }
  if (!writer_) writer_ = std::make_unique<checkpoint::AsyncCheckpointWriter>(options_.checkpoints);
}

// Binds the store port now and keeps it for the worker's lifetime, so nothing else takes it before this
// worker becomes rank 0 (the server refuses every generation until it is advanced to one).
Status ElasticDriver::ServeStore() {
  std::lock_guard lock(mu_);
  if (server_) return Status::Ok();
  store::StoreServerOptions so;
  so.host = options_.store_host;
  so.port = options_.store_port;
  so.secret = options_.secret;
  so.generation = 0;
  auto server = store::StoreServer::Start(so);
  if (!server.ok())
    return server.status().WithContext("serving the store on port " + std::to_string(options_.store_port));
  server_ = std::move(server).value();
  return Status::Ok();
}

StatusOr<bool> ElasticDriver::ChooseRecord(api::Membership& record) {
  for (;;) {
    api::Membership latest = source_->Latest();
    if (latest.generation > record.generation) record = latest;
    RINGMASTER_RETURN_IF_ERROR(Quiesce("rebuilding"));
    const bool member = record.Find(options_.worker_id) != nullptr;
    listed_ |= member;
    // A worker dropped from the membership leaves, also one dropped before it ever finished joining (a
    // disruption right after the join that listed it): it is not wanted any more.
    if (!member && (joined_generation_.load() != 0 || listed_)) {
      Log("not in generation " + std::to_string(record.generation) + ": leaving with step " +
          std::to_string(state_->agreed_step()) + " committed");
      SaveFinalCheckpoint(record);  // before Join returns false: the program exits once it has
      return false;
    }
    if (member && record.world_size() >= min_size()) return true;
    if (member) {
      Log("generation " + std::to_string(record.generation) + " has " + std::to_string(record.world_size()) +
          " workers, below the minimum " + std::to_string(min_size()) + ": paused until the next generation");
    }
    // A newcomer started before the record that adds it was published, or the job is paused: wait.
    auto next = source_->WaitNewer(record.generation, std::chrono::hours(24));
    if (!next.ok()) return next.status();
    record = std::move(next).value();
  }
}

void ElasticDriver::ReportRebuild(const api::Membership& record, RebuildStats& stats) {
  stats.steps_lost = std::max<int64_t>(0, local_step_.load() - state_->committed_step());
  local_step_.store(state_->committed_step());
  joined_generation_.store(record.generation);
  if (options_.metrics) {
    options_.metrics->Joined(record.generation, record.world_size());
    options_.metrics->Rebuilt(stats);
  }
  {
    std::lock_guard lock(mu_);
    last_rebuild_ = stats;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "generation %lld ready: detect %.3fs rendezvous %.3fs communicator %.3fs (%s) restore %.3fs, "
                "resuming at step %lld (%lld local steps rolled back)",
                static_cast<long long>(record.generation), stats.detect, stats.rendezvous, stats.communicator,
                stats.shrunk ? "shrunk" : "new", stats.restore, static_cast<long long>(state_->committed_step()),
                static_cast<long long>(stats.steps_lost));
  Log(line);
}

StepContext ElasticDriver::Context() const {
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard lock(mu_);
    rt = runtime_;
  }
  return StepContext{rt.get(),
                     record_.generation,
                     static_cast<int64_t>(StoreGeneration(record_.generation, attempt_)),
                     state_->committed_step(),
                     state_->cursor(),
                     options_.metrics,
                     &process_sets_};
}

Status ElasticDriver::Commit(const data::SampleCursor& next) {
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard lock(mu_);
    rt = runtime_;
  }
  if (!rt) return AbortedError("no runtime: the generation is being rebuilt");
  const int64_t step = state_->committed_step() + 1;
  // 1. The step before this one must be agreed before its snapshot is replaced. Its vote was negotiated while
  //    this step ran (usually fused with this step's first collectives), so this rarely waits.
  RINGMASTER_RETURN_IF_ERROR(AwaitAgreement(*rt, step - 1));
  // 2. This step: its work has drained (the program's collectives returned, its snapshot waited for the device),
  //    so a communicator aborted or failed meanwhile means its results cannot be trusted: no vote.
  Status healthy = rt->Health();
  if (!healthy.ok()) return healthy.WithContext("step " + std::to_string(step) + " cannot be confirmed");
  state_->Commit(step, next);
  rt->Vote(step);
  vote_ = rt->AgreeAsync(step);  // every rank, at the same position: the contract of a collective
  vote_step_ = step;
  NoteCommit();
  std::shared_ptr<runtime::Runtime> retired;
  {
    std::lock_guard lock(mu_);
    retired.swap(retired_);  // every member has left the previous generation: destroyed below
  }
  local_step_.store(std::max(local_step_.load(), state_->committed_step()));  // a loop of the program's own counts here
  const auto now = Clock::now().time_since_epoch().count();
  const auto before = last_commit_.exchange(now);
  if (before != 0) last_step_time_.store(now - before);
  return Status::Ok();
}

Status ElasticDriver::AwaitAgreement(runtime::Runtime& rt, int64_t step) {
  if (!state_->tentative() || state_->agreed_step() >= step) return Status::Ok();
  if (rt.Agreed() < step) {
    if (vote_step_ != step) {
      return InternalError("no vote in flight for step " + std::to_string(step) + " (the newest is for step " +
                           std::to_string(vote_step_) + ")");
    }
    Status voted = vote_.Wait();
    if (!voted.ok()) return voted.WithContext("agreeing on step " + std::to_string(step));
    if (rt.Agreed() < step) {
      return InternalError("step " + std::to_string(step) + "'s vote finished below it (" +
                           std::to_string(rt.Agreed()) + ")");
    }
  }
  state_->Agree(step);
  OnAgreed(rt);
  return Status::Ok();
}

void ElasticDriver::OnAgreed(const runtime::Runtime& rt) {
  if (options_.on_agreed) options_.on_agreed(state_->agreed_step(), state_->AgreedChecksum());
  SendProgress();
  MaybeCheckpoint(rt);
}

Status ElasticDriver::AgreeOnLast() {
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard lock(mu_);
    rt = runtime_;
  }
  if (!state_->tentative()) return Status::Ok();
  if (!rt) return AbortedError("no runtime to agree on step " + std::to_string(state_->committed_step()) + " with");
  return AwaitAgreement(*rt, state_->committed_step());
}

Status ElasticDriver::TrainUntil(int64_t total_steps, const StepFn& step) {
  while (state_->committed_step() < total_steps) {
    if (SwitchDue()) return AbortedError("membership generation " + std::to_string(newest_seen_.load()));
    const StepContext ctx = Context();
    local_step_.fetch_add(1);
    const auto step_start = Clock::now();
    auto next = step(ctx);
    if (!next.ok()) return next.status();
    if (options_.metrics) options_.metrics->Step(Seconds(step_start));
    RINGMASTER_RETURN_IF_ERROR(Commit(*next));
  }
  return Status::Ok();
}

void ElasticDriver::StopWatcher() {
  stop_watch_ = true;
  if (watcher_.joinable()) watcher_.join();
}

void ElasticDriver::Finish() {
  StopWatcher();
  WaitProgress();
  if (!writer_) return;
  Status saved = writer_->Wait();  // the final step's checkpoint is on disk before we report success
  ReportSaves();
  if (!saved.ok()) Log("the last checkpoint failed: " + saved.ToString());
}

Status ElasticDriver::Start() {
  RINGMASTER_RETURN_IF_ERROR(CheckOptions());
  LoadNewestCheckpoint();
  RINGMASTER_RETURN_IF_ERROR(ServeStore());
  // Ready for the operator (the pod's readiness probe): only Ready pods are admitted to a membership.
  if (options_.metrics) options_.metrics->Available();
  // Nothing committed and no checkpoint: the program's initial bytes are step 0.
  if (!state_->has_state()) state_->Commit(0, {});

  // The first record this worker is part of.
  auto first = source_->WaitNewer(0, std::chrono::hours(24));
  if (!first.ok()) return first.status();
  record_ = std::move(first).value();
  newest_seen_.store(record_.generation);
  failure_time_ = Clock::now();
  local_step_.store(state_->committed_step());
  last_commit_.store(Clock::now().time_since_epoch().count());
  StopWatcher();
  stop_watch_ = false;
  watcher_ = std::thread([this] { Watch(); });
  return Status::Ok();
}

void ElasticDriver::Interrupted(const Status& why) {
  failure_time_ = Clock::now();
  interrupted_ = true;
  Log("step " + std::to_string(state_->committed_step()) + " interrupted: " + why.ToString() +
      "; waiting for the next generation");
  (void)Quiesce("quiesce");  // an error is kept in quiesce_error_: the next Join returns it
}

StatusOr<bool> ElasticDriver::Join(const RestoreFn& on_restore) {
  RINGMASTER_RETURN_IF_ERROR(quiesce_error_);
  if (interrupted_) {
    interrupted_ = false;
    RINGMASTER_ASSIGN_OR_RETURN(record_, NextRecord(record_));
  }
  for (;;) {
    RINGMASTER_ASSIGN_OR_RETURN(bool member, ChooseRecord(record_));
    if (!member) return false;
    Clock::time_point seen = Clock::now();
    {
      std::lock_guard lock(mu_);
      if (seen_generation_ == record_.generation) seen = std::min(seen, seen_at_);
    }
    RebuildStats stats;
    stats.generation = record_.generation;
    stats.detect = Seconds(failure_time_);
    Log("rebuilding at generation " + std::to_string(record_.generation) + ": rank " +
        std::to_string(record_.Find(options_.worker_id)->rank) + " of " + std::to_string(record_.world_size()) +
        ", local rank " + std::to_string(LocalRank(record_, options_.worker_id)) + " of " +
        std::to_string(LocalSize(record_, options_.worker_id)));
    Status built = Build(record_, &stats);
    if (!built.ok()) {
      if (options_.metrics) options_.metrics->RebuildFailed();
      // Only a membership failure is worth another build: a sticky CUDA error, a GPU library that cannot be
      // loaded or a refused configuration fails every build the same way (failure_class.h).
      if (!IsMembershipFailure(built.code())) {
        Log("generation " + std::to_string(record_.generation) + " failed: " + built.ToString() + ": " +
            std::string(Describe(ClassifyFailure(built))) + "; this worker stops");
        return built;
      }
      Log("generation " + std::to_string(record_.generation) + " abandoned: " + built.ToString());
      RINGMASTER_ASSIGN_OR_RETURN(record_, NextRecord(record_));
      continue;
    }
    ReportRebuild(record_, stats);
    PrepareProgress(seen, stats);
    if (on_restore)
      on_restore(static_cast<int64_t>(StoreGeneration(record_.generation, attempt_)), state_->committed_step());
    return true;
  }
}

StatusOr<ElasticResult> ElasticDriver::Run(int64_t total_steps, const StepFn& step, const RestoreFn& on_restore) {
  RINGMASTER_RETURN_IF_ERROR(Start());
  struct Stopper {
    ElasticDriver* d;
    ~Stopper() { d->StopWatcher(); }
  } stopper{this};
  for (;;) {
    RINGMASTER_ASSIGN_OR_RETURN(bool member, Join(on_restore));
    if (!member) return ElasticResult::kLeft;
    Status failed = TrainUntil(total_steps, step);
    if (failed.ok()) failed = AgreeOnLast();  // the last step counts once every member confirmed it
    if (failed.ok()) {
      Finish();
      return ElasticResult::kFinished;
    }
    if (!IsMembershipFailure(failed.code())) return failed;
    Interrupted(failed);
  }
}

}  // namespace ringmaster::elastic
