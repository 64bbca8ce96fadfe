// WorkerSession: one elastic worker for a program that owns its training loop — the Python package's
// native core (Horovod's `hvd.init()` and `elastic.run`). It reads the worker's options once from the
// environment (worker_options.h: the launcher's or the operator's RINGMASTER_* variables), opens the same
// membership source, checkpoints, heartbeat, /metrics + /readyz and sample journal as the C++ example, and
// drives an ElasticDriver step by step:
//
//   auto session = WorkerSession::Create(env, log);   // nothing started yet
//   session->Start();                                 // first generation joined and restored
//   ... collectives on session->runtime() ...
//   session->Commit(bytes, cursor);                   // after a step
//   if a collective failed, or session->Superseded():  session->Interrupted(why); session->Join();
//   session->Finish();
//
// Without any membership source in the environment (a script started by hand) the session is a world of
// one on 127.0.0.1: Horovod's `python train.py` behaviour.
//
// The committed state is opaque bytes the program serializes (ElasticState); after Join() they are the
// newest any surviving worker (or the newest checkpoint) held, for the program to load.
//
// Thread-safety: Start/Join/Interrupted/Commit/Finish from one thread at a time (the program's); runtime()
// and the collectives on it from any thread; topology() from any thread; Superseded() from the training thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "worker-runtime/checkpoint/checkpoint_store.h"
#include "worker-runtime/elastic/elastic_driver.h"
#include "worker-runtime/elastic/elastic_state.h"
#include "worker-runtime/elastic/sample_journal.h"
#include "worker-runtime/elastic/worker_metrics.h"
#include "worker-runtime/elastic/worker_options.h"
#include "worker-runtime/elastic/worker_setup.h"
#include "worker-runtime/membership/membership_source.h"
#include "worker-runtime/runtime/config.h"

namespace ringmaster::elastic {

// Where this worker stands in the joined generation. Horovod's names: local = the workers on this node,
// cross = the nodes (cross_rank: this node's index, nodes ordered by their lowest rank).
struct SessionTopology {
  int64_t generation = 0;
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int cross_rank = 0, cross_size = 1;
  std::vector<std::string> worker_ids;  // by rank
};

class WorkerSession {
 public:
  // Reads the options (worker_options.h) and the runtime configuration (RINGMASTER_BACKEND, fusion, ...)
  // from `env`. Errors: InvalidArgument naming the variable.
  static StatusOr<std::unique_ptr<WorkerSession>> Create(const std::map<std::string, std::string>& env, LogSink log);
  ~WorkerSession();

  // Opens the membership source, checkpoints, metrics and journal, starts the driver and joins the first
  // generation. Errors: those of the sources and of ElasticDriver::Start/Join; FailedPrecondition when
  // this worker left before it joined.
  Status Start();
  // Rebuilds at the newest generation and restores the newest committed state. Returns false when this
  // worker is no longer a member (it should exit 0). Errors: ElasticDriver::Join's.
  StatusOr<bool> Join();
  // A collective failed, or the program stopped at Superseded(): the next Join() rebuilds.
  void Interrupted(const Status& why);
  // This worker cannot go on: `why` is a failure no rebuild repairs (failure_class.h), e.g. Start's or Join's
  // (a GPU library that cannot be loaded, a refused configuration) or a collective's sticky CUDA error.
  // Writes the termination message naming the worker, its node, its GPU and `why` (termination_report.h:
  // RINGMASTER_TERMINATION_LOG, else /dev/termination-log), logs it, and returns `why`, for the program to
  // exit non-zero with (the Python package raises WorkerFailed). Never retries anything.
  Status EndWorker(const Status& why);
  // A newer membership generation than the joined one is known.
  // At a commit (the training thread): whether to stop here for a newer generation -- at once after a
  // failure, at the boundary every member agreed on after an orderly change (ElasticDriver::SwitchDue).
  bool Superseded() const { return driver_ && driver_->SwitchDue(); }
  // Commits one step: `bytes` is the program's state after it, `next` the data cursor after it. Errors:
  // ElasticDriver::Commit's (a membership failure: the step cannot be confirmed; call Interrupted and Join).
  Status Commit(std::string bytes, const data::SampleCursor& next);
  // Every member confirms the last committed step (ElasticDriver::AgreeOnLast): call it after the last step,
  // before Finish. Errors: as Commit's.
  Status AgreeOnLast() { return driver_ ? driver_->AgreeOnLast() : Status::Ok(); }
  // Waits for the last checkpoint and stops watching. Idempotent.
  void Finish();

  // The committed state (after Start/Join: the newest the world held).
  int64_t committed_step() const { return state_.committed_step(); }
  const data::SampleCursor& cursor() const { return state_.cursor(); }
  const std::string& committed_bytes() const { return state_.committed_bytes(); }
  bool has_committed_bytes() const { return state_.has_state() && !state_.committed_bytes().empty(); }

  // The joined generation's runtime (null before Start). Owned by the driver; valid until the next Join.
  runtime::Runtime* runtime() const;
  SessionTopology topology() const;
  // The id of a process set the driver re-creates by rule in every generation ("node:<n>", "node-leaders",
  // "static:<i>"). Errors: NotFound.
  StatusOr<int> RuleProcessSet(const std::string& name) const;
  // Appends this rank's samples of the step being computed to the sample journal (before its collective).
  // Errors: FailedPrecondition when no output directory was given (RINGMASTER_OUT), Unavailable.
  Status JournalAttempt(int64_t step, uint64_t epoch, const std::vector<uint64_t>& samples);

  // Counts `n` samples this rank trained on in a step that committed (ringmaster_worker_samples_total).
  // Thread-safe; a no-op before Start() opened the metrics.
  void CountSamples(uint64_t n);

  // The program's layout needs at least `n` workers: generations below that pause (ElasticDriver::
  // RequireMinSize) from the next Join on. Never lowers the minimum. Before Start it is remembered.
  void RequireMinSize(int n);
  // The size below which this worker pauses: the larger of RINGMASTER_MIN_WORKERS and RequireMinSize's.
  int min_size() const;
  // Figures of the last rebuild (zero before the first); thread-safe.
  RebuildStats last_rebuild() const { return driver_ ? driver_->last_rebuild() : RebuildStats{}; }
  // No membership source: a world of one that never changes.
  bool standalone() const { return standalone_; }

  // Whether JournalAttempt writes anywhere (RINGMASTER_OUT was given).
  bool journaling() const { return journal_.has_value(); }
  const WorkerOptions& options() const { return options_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }

 private:
  WorkerSession(WorkerOptions options, runtime::RuntimeConfig config, bool standalone, bool journal, LogSink log);
  // A world of one: a free store port, a random secret, a fixed record.
  Status MakeStandalone();
  void Restored(int64_t incarnation, int64_t step);

  // Constant after construction.
  WorkerOptions options_;
  const runtime::RuntimeConfig config_;
  const bool standalone_;
  const bool journal_wanted_;  // RINGMASTER_OUT was given: journal every step's samples there
  // Set by Create, from the environment: where EndWorker writes, and this worker's node (empty: unknown).
  std::string termination_log_;
  std::string node_;
  const LogSink log_;

  // Declared first, destroyed last: /readyz answers while the rest shuts down (stopping the membership
  // watch can take seconds), so the pod stays Ready, and a member, until its process exits.
  std::unique_ptr<WorkerMetrics> metrics_;
  std::string pending_;  // the bytes Commit() hands to the state
  ElasticState state_;
  std::unique_ptr<membership::MembershipSource> source_;
  std::unique_ptr<checkpoint::CheckpointStore> checkpoints_;
  std::unique_ptr<Heartbeat> heartbeat_;
  std::optional<SampleJournal> journal_;
  std::unique_ptr<ElasticDriver> driver_;

  mutable std::mutex mu_;
  SessionTopology topology_;   // guarded by mu_: the joined generation's
  int required_min_size_ = 0;  // guarded by mu_: RequireMinSize's, passed on to the driver
};

}  // namespace ringmaster::elastic
