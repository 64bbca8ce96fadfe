// ElasticDriver: Horovod's hvd.elastic.run, but in place. It runs the program's training steps over a Runtime
// of the current membership generation. On a newer generation from the MembershipSource, or when a collective
// fails (Aborted, DeadlineExceeded, Unavailable: a peer died or hangs), every worker quiesces, aborts and
// destroys its generation-G Runtime and rebuilds at the newest generation (DESIGN.md, "Membership protocol").
//
// A rebuild has three steps:
//   1. Rendezvous. Rank 0 of the new membership serves the StoreServer on its own store port (the record's
//      coordinator); everyone connects with the generation (stale generations are refused) and the job secret.
//   2. Communicator. When the new membership only removes workers and the previous communicator can shrink
//      (NCCL >= 2.27), the survivors agree and shrink it (rebuild_plan.h). They shrink only once the aborted
//      runtime is quiesced (its engine threads are out of the communicator) and while its GPU is still the one
//      this generation's local rank picks. Otherwise Runtime::Create builds a fresh one, with "g<generation>"
//      as its key prefix. Either way every process set of options.process_sets is then split again from the
//      new world (process_set_rules.h: sets by worker id or placement, never by stale ranks).
//   3. Restore, in one engine cycle on the host communicator. An allgather of what every rank holds (its agreed
//      and tentative steps, each with its CRC32C); the newest agreed step whose holders' checksums agree is
//      chosen (restore_choice.h), the lowest rank holding it broadcasts it, and everyone Restore()s (work since
//      the last agreed step is rolled back). The data cursor comes with the state, so the sampler strides the
//      rest of the epoch over the new world.
//
// Commit agreement (worker-runtime/README.md): Commit snapshots a step as tentative only after its work drained and
// every communicator of the runtime is healthy, and votes it; the vote rides on the world engine's negotiations, and
// the step becomes the agreed one -- restored, checkpointed, reported -- once every member's vote has arrived
// (usually by the next commit). One rank's OK never commits a step: after a peer's failure NCCL promises nothing
// about a collective's result.
//
// What holds across generations: the runtime configuration (options.runtime, parsed once at start from
// RINGMASTER_*: backend, fusion threshold, cycle time) and one timeline file for the whole run
// (RINGMASTER_TIMELINE; "{rank}" is the rank of the first generation that writes it). What each generation
// sets: the local rank (this worker's index among the members on its host, which picks its GPU under NCCL)
// and the static process sets of RINGMASTER_PROCESS_SETS, which become the sets "static:<i>" of the ranks the
// generation has.
//
// Failures. Every step of a rebuild has a deadline (options.rebuild_timeout), and a newer generation abandons
// a half-built one. When a build or a collective fails and no newer record comes within rebuild_timeout, the
// same generation is built again under a new store generation (generation x 1024 + attempt; ranks that find
// rank 0's store ahead follow it, and rank 0's store holds the requests of ranks ahead of it until it gets
// there). Every member but rank 0 announces the attempt it builds next to rank 0's store as soon as one fails,
// and rank 0 starts a build at the newest attempt announced: a rank 0 that arrives after a member already gave up
// an attempt (a newcomer that rebuilt at once while the survivors were still busy) joins it at its next one
// instead of building the abandoned attempt. Before it waits for that record, the worker probes the other members
// (peer_probe.h) and reports those whose packets vanish to the membership's owner (on a thread of its own: a slow
// apiserver never holds up the rebuild), which may drop them: a
// partition would otherwise fail every rebuild of the same generation. A membership below options.min_size
// pauses until the next generation. A worker that has joined a generation and is missing from a newer one
// returns kLeft (its work is committed; the survivors continue); one that never joined waits for a record
// that has it.
//
// Checkpoints. Before the first generation the driver loads the newest complete checkpoint (when
// options.checkpoints is set) into the state, so a job whose peers all died restarts from it. Rank 0 saves
// one every options.checkpoint_every steps, asynchronously (AsyncCheckpointWriter: the step's committed bytes
// are copied and training goes on while they are written; a newer snapshot supersedes one still waiting).
// Run() waits for the last save before it returns. A final save: when this worker leaves for a generation
// that keeps none of the running build's members -- a suspended job (reason Suspended, no members: an orderly
// change, so every member first commits its steps up to the agreed boundary) or any other change that leaves
// no survivor to hold the state -- rank 0 of the running build saves the committed state synchronously before
// Join returns false (kLeft): it queues it on the writer, unless the periodic save of that very step is
// already queued or done, and waits for it ("suspended at step N: final checkpoint saved (X bytes, Y s)").
// The job, admitted again, resumes at exactly that step. Without options.checkpoints it warns once that the
// job will restart from its initial state (set RINGMASTER_CHECKPOINT_DIR); a failed save is logged, and the
// worker still leaves (the earlier checkpoints stay). The other members just leave.
//
// A program that owns its training loop (the Python package: Horovod's
// `elastic.run` around the user's function) drives the same steps one by one:
//
//   driver.Start();                        // checkpoint, store, first record, watcher
//   for (;;) {
//     if (!driver.Join(on_restore)) break;  // rebuilt and restored; false: left the job
//     ... steps: driver.Context().rt, then driver.Commit(next_cursor) ...
//     on a collective's failure, or driver.Superseded() at a commit: driver.Interrupted(why)
//   }
//   driver.Finish();
//
// Progress. Rank 0 of each generation reports, when the generation's first step commits, how it started
// (api/progress_report.h: the step it resumed from and where that state came from, its rebuild and restore time,
// the previous generation's mean step time) through MembershipSource::ReportProgress, on a thread of its own so
// that a slow apiserver never holds up a step; a failed report is one warning.
//
// Thread-safety: Run() (or Start/Join/Commit/Interrupted/Finish) is called
// from one thread; the driver runs one watcher thread of its own between
// Start() and Finish() (or destruction). joined_generation(), last_rebuild()
// and Superseded() may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "api/progress_report.h"
#include "base/log.h"
#include "worker-runtime/checkpoint/async_checkpoint_writer.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/elastic/boundary_switch.h"
#include "worker-runtime/elastic/elastic_state.h"
#include "worker-runtime/elastic/hang_watchdog.h"
#include "worker-runtime/elastic/process_set_rules.h"
#include "worker-runtime/membership/membership_source.h"
#include "worker-runtime/runtime/runtime.h"
#include "worker-runtime/store/store_client.h"
#include "worker-runtime/store/store_server.h"

namespace ringmaster::elastic {
class WorkerMetrics;
}

namespace ringmaster::elastic {

struct ElasticOptions {
  std::string worker_id;                             // this worker's pod/worker name in the membership
  std::string secret;                                // the job secret for the store
  std::string store_host = "127.0.0.1";              // where this worker serves the store when it is rank 0
  uint16_t store_port = 0;                           // its port (the coordinator's port in the records)
  int min_size = 1;                                  // below this the job pauses
  std::chrono::milliseconds rebuild_timeout{15000};  // each rendezvous/collective of a rebuild
  // After a failure with no newer record: how long each member's store port gets to answer before this
  // worker reports it unreachable to the membership's owner (peer_probe.h, MembershipSource).
  std::chrono::milliseconds peer_probe_timeout{1000};
  runtime::RuntimeConfig runtime;                      // parsed once at start; `name` and `local_rank` (LocalRank of
                                                       // the record) are set per generation, `timeout` capped at
                                                       // rebuild_timeout; `device`, when unset, pinned at the first
                                                       // generation's (the process's tensors stay on that GPU)
  checkpoint::CheckpointStore* checkpoints = nullptr;  // not owned; may be null
  int checkpoint_every = 0;                            // rank 0 saves every N committed steps; 0 = never
  LogSink log;                                         // progress lines for a person; may be empty
  WorkerMetrics* metrics = nullptr;                    // not owned; may be null
  std::vector<ProcessSetRule> process_sets;            // re-created in every generation, in this order
  // An orderly change (boundary_switch.h: joins, a scale-down, a disrupted worker leaving alive, a
  // suspension) waits for the agreed step boundary; a member that has not committed a step for this long
  // meanwhile (a peer died after all) aborts its step as on a failure. Twice the last step's duration when
  // that is longer.
  std::chrono::milliseconds boundary_wait{10000};
  // The hang watchdog (hang_watchdog.h): a member that has committed no step of its generation for hang_factor x
  // the median of its recent steps, and for at least hang_floor, aborts its step, reports the hang to the
  // membership's owner (MembershipSource::ReportHang) and rebuilds, long before the collective timeout. No verdict
  // before a few steps of a generation; hang_factor <= 0 turns it off.
  double hang_factor = 10;
  std::chrono::milliseconds hang_floor{30000};
  // Called on the training thread each time a step becomes agreed (every member confirmed it), with the step and
  // the CRC32C of its encoded state (ElasticState::AgreedChecksum): a test's or an audit's record that every
  // rank committed the same state at each step. May be empty; must be quick.
  std::function<void(int64_t step, uint32_t crc)> on_agreed;
};

// What the program sees in a step.
struct StepContext {
  runtime::Runtime* rt = nullptr;  // the current generation's runtime
  int64_t generation = 0;
  int64_t incarnation = 0;           // increases with every build (generation x 1024 + retry of it)
  int64_t step = 0;                  // the step being computed (committed steps so far)
  data::SampleCursor cursor;         // the committed cursor this step starts from
  WorkerMetrics* metrics = nullptr;  // for the step's collective figures; may be null
  const std::map<std::string, int>* process_sets = nullptr;  // name -> id in rt, this generation's

  // The id in `rt` of the process set `name` of this generation. Errors: NotFound when
  // no rule yields it (or it has no members) in this generation.
  StatusOr<int> ProcessSet(const std::string& name) const;
};

// Runs one training step on the program's working state and returns the cursor
// after it. Errors from collectives (Aborted, DeadlineExceeded, Unavailable)
// trigger a rebuild; any other error ends Run().
using StepFn = std::function<StatusOr<data::SampleCursor>(const StepContext&)>;

// Called after each rebuild's restore, with the build's incarnation (see
// StepContext) and the step every rank now stands at (e.g. to journal the rollback).
using RestoreFn = std::function<void(int64_t incarnation, int64_t step)>;

enum class ElasticResult { kFinished, kLeft };

// Figures of the last rebuild, in seconds (also logged).
struct RebuildStats {
  int64_t generation = 0;
  double detect = 0, rendezvous = 0, communicator = 0, restore = 0;
  bool shrunk = false;     // the communicator came from shrinking the previous one
  int64_t steps_lost = 0;  // locally computed steps rolled back
};

class ElasticDriver {
 public:
  // Neither pointer is owned; both must outlive the driver.
  ElasticDriver(ElasticOptions options, membership::MembershipSource* source, ElasticState* state);
  ~ElasticDriver();

  // Trains until `total_steps` steps are committed. Errors: InvalidArgument
  // (bad options), Cancelled (the source stopped), a StepFn's non-retryable
  // error, or Internal when the state cannot be restored.
  StatusOr<ElasticResult> Run(int64_t total_steps, const StepFn& step, const RestoreFn& on_restore = {});

  // Run's steps, for a program that owns its loop (see the top of this file).
  // Start: loads the newest checkpoint, serves the store, reports ready, waits for the first record and
  // starts the watcher. Errors: InvalidArgument (bad options), Cancelled (the source stopped), Unavailable.
  Status Start();
  // Rebuilds at the newest record and restores the newest committed state (after Interrupted(), first
  // waits for the record that follows the failed one). Returns false when this worker is no longer a
  // member (it has left the job). Errors: Internal (state, or the previous runtime's engine did not
  // leave its communicator within 2 x rebuild_timeout after the abort), Unauthenticated,
  // InvalidArgument, Cancelled; a build's failure that no rebuild repairs (failure_class.h: a sticky CUDA error,
  // a GPU library that cannot be loaded, a refused configuration) at once, never built again.
  StatusOr<bool> Join(const RestoreFn& on_restore = {});
  // The joined generation's step context (valid until the next Join).
  StepContext Context() const;
  // The joined generation's record (the calling thread of Join only).
  const api::Membership& record() const { return record_; }
  // Commits the step that Context() described, with the cursor after it, once the step's work has drained.
  // The step is tentative until every member confirmed it (worker-runtime/README.md, "Commit agreement"): its
  // vote rides on the negotiation of the next step's collectives, and Commit first waits for the previous
  // step's agreement (rarely: it was negotiated while this step ran). An agreed step is what a rebuild restores,
  // rank 0 checkpoints and the progress report counts. Collective: every member calls it once per step.
  // Errors: a membership failure (Aborted, DeadlineExceeded, Unavailable: a peer failed, or this runtime's
  // communicators report an error, so the step's results cannot be trusted): call Interrupted(), then Join()
  // (the unconfirmed steps are rolled back).
  Status Commit(const data::SampleCursor& next);
  // Agrees on the last committed step now, rather than with the next step's negotiation: at the end of
  // training (Run does it) and at an orderly switch's boundary (SwitchDue does it). Collective. Errors: as
  // Commit's.
  Status AgreeOnLast();
  // A newer generation than the joined one is known: the runtime is being aborted, or it is an orderly change
  // that waits for a step boundary (boundary_switch.h). Any thread.
  bool Superseded() const { return Superseded(joined_generation_.load()); }
  // At a step boundary (after Commit): whether to stop here and Join the newer generation -- at once after a
  // failure-like change, at the agreed boundary after an orderly one (every member stops at the same one).
  // The training thread only.
  bool SwitchDue();
  // A collective failed (or the program saw Superseded()): quiesces the runtime (aborts it and waits
  // until its engine threads have left its communicators, at most 2 x rebuild_timeout); the next Join
  // rebuilds, or returns the error when the wait failed.
  void Interrupted(const Status& why);
  // Waits for the last checkpoint save and stops the watcher. Idempotent.
  void Finish();

  // The generation this worker has joined (0 before the first); thread-safe.
  int64_t joined_generation() const { return joined_generation_.load(); }
  RebuildStats last_rebuild() const;
  // Raises the size below which the job pauses (ElasticOptions::min_size) to `n` for the builds that
  // follow, e.g. a program whose parallel layout needs at least n workers (ringmaster.torch.elastic's
  // MeshRule). Never lowers it. Thread-safe.
  void RequireMinSize(int n);
  // The size below which the job pauses: the larger of options.min_size and RequireMinSize's.
  int min_size() const { return std::max(options_.min_size, required_min_size_.load()); }

 private:
  void Log(const std::string& line) const;
  // The steps of Run.
  Status CheckOptions() const;
  void LoadNewestCheckpoint();
  Status ServeStore();
  // Settles on the record to build next (quiescing the current runtime): false when this
  // worker has left the job. Waits while it is not yet a member or the world is too small.
  StatusOr<bool> ChooseRecord(api::Membership& record);
  // This worker leaves for `next`: when it was rank 0 of the running build and `next` keeps none of that
  // build's members, saves the committed state as a checkpoint and waits for it (see "Checkpoints" above).
  // Never fails: a missing store or a failed save is a warning.
  void SaveFinalCheckpoint(const api::Membership& next);
  // Publishes a finished rebuild: metrics, last_rebuild(), the log line.
  void ReportRebuild(const api::Membership& record, RebuildStats& stats);
  // Runs steps until total_steps are committed (OK) or one fails (its error).
  Status TrainUntil(int64_t total_steps, const StepFn& step);
  // Opens the run's timeline once this worker's rank says it writes one; a timeline that cannot be opened is
  // one warning (timeline_failed_), never a failed build.
  void OpenTimeline(int rank);
  void Watch();
  // The watcher's answer to a newer record: an orderly change of the running build waits for a step
  // boundary; anything else aborts the running step now.
  void OnNewRecord(const api::Membership& next);
  // While an orderly switch is pending: abort instead when this member ran past the boundary, or has not
  // committed for boundary_wait (a peer died after all).
  void CheckPendingSwitch();
  // The watcher's hang check (hang_watchdog.h): while the generation armed in PrepareProgress trains, a verdict
  // aborts its runtime (the step fails Aborted and the training thread rebuilds), counts it in the metrics and
  // reports it to the membership's owner on a thread of its own (hang_report_).
  void CheckHang();
  // After a SIGTERM (termination_notice.h): ends the process when this worker never joined, or is still a
  // member TerminationNotice::kOperatorWait later; otherwise it is leaving at a boundary.
  void CheckTermination();
  // Aborts the running step for generation `generation` (mu_ held).
  void AbortFor(int64_t generation);
  void StopWatcher();
  Status Build(const api::Membership& record, RebuildStats* stats);
  // Build's first step: a client of rank 0's store at this build's store generation (following rank 0
  // to a later attempt). Rank 0 advances its own server first.
  StatusOr<std::shared_ptr<store::StoreClient>> Rendezvous(const api::Membership& record, int rank,
                                                           std::chrono::steady_clock::time_point deadline);
  Status Sync(runtime::Runtime& rt, RebuildStats* stats);
  // Splits options_.process_sets from rt's world for `record` into process_sets_.
  Status CreateProcessSets(runtime::Runtime& rt, const api::Membership& record);
  bool Superseded(int64_t generation) const { return newest_seen_.load() > generation; }
  // Takes runtime_ out, aborts it and waits (QuiesceTimeout) until its engine threads have left its
  // communicators; only then keeps it as parent_ when it can shrink (else as retired_). The one place
  // a runtime is quiesced. Errors: Internal when an engine thread is still inside a call after the
  // wait (kept in quiesce_error_ and returned by every later Quiesce and Join: the stuck communicator
  // must not be shrunk, and this worker should restart).
  Status Quiesce(const std::string& why);
  // How long Quiesce waits: every call of an engine honours the collective timeout (at most
  // rebuild_timeout) even when it ignores Abort, so twice that is generous.
  std::chrono::milliseconds QuiesceTimeout() const { return 2 * options_.rebuild_timeout; }
  // Builds the generation's world: by shrinking parent_ when every rank agrees, else afresh.
  StatusOr<std::unique_ptr<runtime::Runtime>> CreateWorld(const runtime::RuntimeConfig& config,
                                                          std::shared_ptr<store::Store> store,
                                                          const api::Membership& record, int rank, RebuildStats* stats);
  // Rank 0 queues a save of the committed state every options_.checkpoint_every steps.
  void MaybeCheckpoint(const runtime::Runtime& rt);
  // Hands the committed state to writer_ as the checkpoint of its step (world_size workers saved it) and records
  // it in queued_checkpoint_step_. Errors: the writer's refusal.
  Status QueueCheckpoint(int world_size);
  // Reports finished saves to the metrics and the log.
  void ReportSaves();
  // After a failure: the next record, or `current` again when none came within rebuild_timeout.
  StatusOr<api::Membership> NextRecord(const api::Membership& current);
  // After a failed build of `current` by a member other than rank 0: tells rank 0's store that this member will
  // build the next attempt (a handshake with that attempt's store generation), so that a rank 0 that has not even
  // begun the failed attempt starts at the next one (Rendezvous). Best effort: never fails, bounded by ~1 s.
  void AnnounceNextAttempt(const api::Membership& current);
  // Probes `record`'s other members (bounded by peer_probe_timeout) and reports the unreachable ones through the
  // source, on a thread of its own (peer_report_; logged there).
  void ReportUnreachablePeers(const api::Membership& record);
  // After a build of record_: arms the progress report (rank 0 only) with what the build measured.
  void PrepareProgress(std::chrono::steady_clock::time_point seen, const RebuildStats& stats);
  // At a commit: the step times of this generation.
  void NoteCommit();
  // The armed progress report, once the generation's first step is agreed (sent on progress_send_, after the
  // previous send finished).
  void SendProgress();
  // Waits until every member confirmed `step` (rt's agreement, or the vote Commit submitted for it), then makes
  // it the agreed state and runs OnAgreed. Errors: the vote's (Aborted: a member failed), Internal when no vote
  // was submitted for `step`.
  Status AwaitAgreement(runtime::Runtime& rt, int64_t step);
  // What waits for a step's agreement: the progress report and rank 0's checkpoint.
  void OnAgreed(const runtime::Runtime& rt);
  // Waits for the progress report and the peer report being sent, if any.
  void WaitProgress();

  const ElasticOptions options_;
  membership::MembershipSource* const source_;
  ElasticState* const state_;

  std::atomic<int64_t> newest_seen_{0};  // newest generation the watcher saw
  std::atomic<int64_t> joined_generation_{0};
  std::atomic<int> required_min_size_{0};  // RequireMinSize's
  std::atomic<bool> stop_watch_{false};

  std::thread watcher_;  // between Start() and Finish()

  // Run()'s thread only: which build of which generation this is.
  api::Membership record_;                              // the record being built or trained on
  bool interrupted_ = false;                            // Interrupted() since the last Join()
  bool listed_ = false;                                 // some record this worker chose had it as a member
  Status quiesce_error_;                                // Quiesce's failure: the driver cannot go on
  std::chrono::steady_clock::time_point failure_time_;  // when the last interruption happened
  // Steps computed locally (committed or not); read by the watcher (the step a switch counts from).
  std::atomic<int64_t> local_step_{0};
  std::atomic<std::chrono::steady_clock::rep> last_commit_{0};     // when the last step was committed
  std::atomic<std::chrono::steady_clock::rep> last_step_time_{0};  // how long it took (from the commit before)
  BoundarySwitch switch_;                                          // the orderly change being waited for
  int64_t attempt_generation_ = 0;
  int64_t attempt_ = 0;
  std::map<std::string, int> process_sets_;                    // of the current runtime
  std::unique_ptr<checkpoint::AsyncCheckpointWriter> writer_;  // when options_.checkpoints is set
  // The aborted runtime of the last build and its record, kept until the next build in case it can
  // be shrunk (only while its backend can shrink).
  std::shared_ptr<runtime::Runtime> parent_;
  api::Membership parent_record_;
  int64_t parent_incarnation_ = 0;
  int pinned_device_ = -1;                         // RuntimeConfig::device of every build after the first one
  api::Membership built_record_;                   // the record of runtime_
  uint64_t reported_saves_ = 0;                    // writer commits already reported to the metrics
  int64_t queued_checkpoint_step_ = -1;            // the newest step handed to writer_ (-1: none)
  int64_t loaded_checkpoint_step_ = -1;            // the step of the checkpoint loaded at start (-1: none)
  std::vector<ProcessSetRule> process_set_rules_;  // options_.process_sets and the static sets
  std::shared_ptr<timeline::Timeline> timeline_;   // of the whole run, once opened
  bool timeline_failed_ = false;                   // it could not be opened: warned, not tried again
  // Progress (the training thread only): where the build's state came from (Sync), the report waiting for the
  // generation's first commit, and the step times of the joined and of the previous generation.
  std::string restored_from_;
  std::optional<api::ProgressReport> progress_;
  std::chrono::steady_clock::time_point generation_started_{};  // the end of the build, then the last commit
  bool generation_committed_ = false;                           // a step committed since the build
  int64_t generation_steps_ = 0;                                // commit-to-commit intervals in this generation
  double generation_step_seconds_ = 0;                          // their sum
  double previous_step_seconds_ = 0;                            // the mean of the last generation that had any
  double first_step_seconds_ = 0;                               // the generation's first step (its warm-up)
  fusion::Handle vote_;                                         // the agreement Commit submitted last ...
  int64_t vote_step_ = -1;                                      // ... for this step
  std::future<void> progress_send_;                             // the report being sent
  std::future<void> peer_report_;  // the unreachable-peers report being sent (ReportUnreachablePeers)
  // The hang watchdog: fed by NoteCommit, reset by PrepareProgress, checked by the watcher (CheckHang), which alone
  // sends the hang report (hang_report_).
  HangWatchdog hang_{HangWatchdogOptions{
      .factor = options_.hang_factor, .floor = options_.hang_floor, .check_gap = std::chrono::milliseconds(1000)}};
  std::future<void> hang_report_;

  mutable std::mutex mu_;
  // Guarded by mu_ (the watcher aborts them when a newer generation appears).
  std::shared_ptr<runtime::Runtime> runtime_;
  std::shared_ptr<runtime::Runtime> retired_;  // the last aborted (unshrinkable) one, until the next Commit
  std::unique_ptr<store::StoreServer> server_;
  RebuildStats last_rebuild_;
  int64_t seen_generation_ = 0;                      // the newest generation the watcher saw ...
  std::chrono::steady_clock::time_point seen_at_{};  // ... and when
  std::weak_ptr<runtime::Runtime> hang_armed_;       // the runtime hang_ watches (armed by PrepareProgress)
};

}  // namespace ringmaster::elastic
