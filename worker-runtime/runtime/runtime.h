// The worker runtime's front door, Horovod style but without globals: one
// Runtime object per membership generation owns the world communicator, the
// process sets and their engines, and the optional timeline.
//
//   auto rt = Runtime::Create(config, store, rank, size);     // collective
//   rt->Allreduce("grad.0", in, out, n, DataType::kFloat32, ReduceOp::kAvg);
//   Handle h = rt->AllreduceAsync("grad.1", ...); h.Wait();
//   int evens = rt->AddProcessSet({0, 2}).value();             // collective over the world
//   rt->Allreduce("x", in, out, n, t, op, evens);              // members only
//
// Collectives take an optional process set id (0 = world). A rank outside the
// set gets FailedPrecondition naming the set; an unknown id InvalidArgument.
// After Aborted (a peer died, a timeout) the runtime is unusable: destroy it
// and create the next generation's.
//
// Thread-safety: every method may be called from any thread; collectives are
// ordered per process set in submission order, which must match across ranks.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "worker-runtime/fusion/engine.h"
#include "worker-runtime/process_sets/process_set_table.h"
#include "worker-runtime/runtime/config.h"
#include "worker-runtime/store/store.h"
#include "worker-runtime/timeline/timeline.h"

namespace ringmaster::runtime {

inline constexpr int kWorldSet = 0;

class Runtime {
 public:
  // Builds the world communicator and the static process sets of config, with
  // config's fusion threshold, cycle time and timeline. `timeline`, when given,
  // is written instead of opening config.timeline_path (a program that builds a
  // runtime per generation keeps one timeline across them); shared ownership.
  // Errors: those of the backend's rendezvous (Aborted, DeadlineExceeded),
  // Unavailable (timeline file), InvalidArgument (bad static sets).
  static StatusOr<std::unique_ptr<Runtime>> Create(const RuntimeConfig& config, std::shared_ptr<store::Store> store,
                                                   int rank, int size,
                                                   std::shared_ptr<timeline::Timeline> timeline = nullptr);
  // The next generation's runtime from this one's world communicator when only
  // ranks left (`excluded`: sorted world ranks of `parent` that are gone), e.g.
  // NCCL's ncclCommShrink: no new unique id, no full init. Called by the
  // survivors only, after parent.Quiesce() returned OK (so no other thread is
  // inside the parent's communicator, as Shrink requires); the process sets are
  // not carried over (re-create them). The shrunk communicator stays on the
  // parent's device: config must select the same one (SameDevice).
  // Errors: FailedPrecondition (the parent is not quiesced, config selects
  // another device, or the parent's communicator is released),
  // Unimplemented (the backend cannot shrink; use Create), those of the control
  // channel's rendezvous, Aborted.
  static StatusOr<std::unique_ptr<Runtime>> CreateByShrinking(const RuntimeConfig& config,
                                                              std::shared_ptr<store::Store> store, Runtime& parent,
                                                              const std::vector<int>& excluded,
                                                              std::shared_ptr<timeline::Timeline> timeline = nullptr);
  ~Runtime();

  // Whether CreateByShrinking can work on this runtime now: it is quiesced and its world communicator
  // can shrink. Final once Quiesce() returned OK.
  bool CanShrink() const;

  int rank() const { return rank_; }
  int size() const { return size_; }
  comm::Backend backend() const { return backend_; }
  // Whether a runtime built with `config` would run its NCCL communicators on the same CUDA device as
  // this one (RuntimeConfig::device); always true for a backend other than NCCL.
  bool SameDevice(const RuntimeConfig& config) const;
  // The CUDA device of its NCCL communicators; -1 for a backend other than NCCL.
  int device() const { return device_; }

  fusion::Handle AllreduceAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                common::ReduceOp op, int set = kWorldSet,
                                std::shared_ptr<comm::ReadyFence> ready = nullptr);
  fusion::Handle AllgatherAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                int set = kWorldSet);
  // counts: elements contributed by each rank of the set (in set-rank order); in holds counts[my set rank].
  fusion::Handle AllgathervAsync(std::string name, const void* in, void* out, std::vector<size_t> counts,
                                 common::DataType type, int set = kWorldSet,
                                 std::shared_ptr<comm::ReadyFence> ready = nullptr);
  fusion::Handle BroadcastAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                int root, int set = kWorldSet, std::shared_ptr<comm::ReadyFence> ready = nullptr);
  fusion::Handle ReduceScatterAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                                    common::ReduceOp op, int set = kWorldSet,
                                    std::shared_ptr<comm::ReadyFence> ready = nullptr);
  fusion::Handle AlltoallAsync(std::string name, const void* in, void* out, size_t count, common::DataType type,
                               int set = kWorldSet, std::shared_ptr<comm::ReadyFence> ready = nullptr);
  fusion::Handle BarrierAsync(int set = kWorldSet);

  // Blocking forms: submit and wait.
  Status Allreduce(std::string name, const void* in, void* out, size_t count, common::DataType type,
                   common::ReduceOp op, int set = kWorldSet) {
    return AllreduceAsync(std::move(name), in, out, count, type, op, set).Wait();
  }
  Status Barrier(int set = kWorldSet) { return BarrierAsync(set).Wait(); }

  // Adds a process set of the given world ranks; every world rank must call it
  // in the same order with the same ranks. Returns its id (>0). With
  // Ordering::kSubmissionOrder its collectives run in submission order without
  // negotiation or fusion (a torch.distributed process group over the set).
  // Errors: InvalidArgument (bad ranks), Aborted.
  StatusOr<int> AddProcessSet(std::vector<int> ranks, fusion::Ordering ordering = fusion::Ordering::kNegotiated);
  // Adds a process set of the given world ranks (sorted) over a communicator of
  // its own, built by the members alone through the generation's store (a
  // torch.distributed subgroup: non-members never hear of it). Every member
  // calls it with the same ranks and `key` (unique among the groups that ranks
  // create in this generation; the same key again makes a second group). The id
  // it returns is local to this rank. Errors: InvalidArgument (bad ranks or
  // key), FailedPrecondition (this rank is not in `ranks`), those of the
  // backend's rendezvous (Aborted, DeadlineExceeded).
  StatusOr<int> AddGroup(std::vector<int> ranks, const std::string& key,
                         fusion::Ordering ordering = fusion::Ordering::kSubmissionOrder);
  // Removes a set (every rank should call it). Errors: InvalidArgument.
  Status RemoveProcessSet(int id);
  // Errors: InvalidArgument (no such set).
  StatusOr<std::vector<int>> ProcessSetRanks(int id) const { return sets_.Ranks(id); }
  // This rank's rank inside the set. Errors: InvalidArgument, FailedPrecondition.
  StatusOr<int> ProcessSetRank(int id) const;

  // Point-to-point with `peer`, a rank of set `set` (numbered inside the set):
  // not collective and not ordered with the set's collectives; see
  // Communicator::PostSend. Runs on the set's host communicator (the data
  // communicator under Gloo, the control one under NCCL), so `buf` is host
  // memory: a caller with CUDA memory stages it. Errors: InvalidArgument,
  // FailedPrecondition (not a member), Aborted.
  StatusOr<std::unique_ptr<comm::Transfer>> SendAsync(const void* buf, size_t bytes, int peer, uint32_t tag,
                                                      int set = kWorldSet);
  StatusOr<std::unique_ptr<comm::Transfer>> RecvAsync(void* buf, size_t bytes, int peer, uint32_t tag,
                                                      int set = kWorldSet);

  // Runs fn on the world engine's thread with the world's host communicator (the data communicator
  // under Gloo, the control one under NCCL), ordered with the world's collectives and negotiated like
  // one: every rank calls it at the same position with the same `name`. One engine cycle however many
  // collectives fn runs (the elastic driver's restore). Blocks until fn returns; fn's error is
  // returned. Errors: also Aborted (the runtime was aborted), FailedPrecondition (order mismatch).
  Status RunOnHost(std::string name, const std::function<Status(comm::Communicator& host)>& fn);

  // The commit agreement (worker-runtime/README.md, "Commit agreement"), carried by the world's negotiation
  // (fusion::Engine::Vote): Vote(step) says this rank's collectives up to `step` completed without error;
  // Agreed() is the smallest step every rank had voted at the newest world negotiation (-1 before any).
  // AgreeAsync(step), submitted by every rank at the same position after Vote(step), is a negotiated task on
  // the world engine that rides along with the next cycle something else starts (the next step's first world
  // collective: no extra message) or a Wait for it starts: when its handle is OK, Agreed() >= step.
  void Vote(int64_t step);
  int64_t Agreed() const;
  fusion::Handle AgreeAsync(int64_t step);
  // OK while every communicator of this runtime (the world's, the control channel, every process set's) is
  // usable and reports no asynchronous error; otherwise the first error. Called after a step's work drained, it
  // says whether that work may be trusted: a collective that returned OK on a communicator aborted meanwhile may
  // hold partial results (NCCL). Safe from any thread.
  Status Health() const;

  // What the engine of a set has run so far. Errors: InvalidArgument, FailedPrecondition.
  StatusOr<fusion::EngineStats> Stats(int set = kWorldSet) const;

  // Aborts every communicator (e.g. on a membership change). Later calls fail with Aborted. A flag for
  // some backends (NCCL): an engine thread inside a call acts on the communicator on its way out.
  void Abort(const std::string& reason);
  // Abort(reason), then waits, at most `timeout` in all, until every engine thread has left its
  // communicators for good (Engine::Stop): after an OK return no thread of this runtime calls them
  // again, CanShrink() is final and CreateByShrinking may use the world communicator. Idempotent.
  // Errors: DeadlineExceeded naming the process set whose engine is still inside a call (the runtime
  // then stays unshrinkable; destroying it waits for that thread).
  Status Quiesce(const std::string& reason, std::chrono::milliseconds timeout);

 private:
  Runtime(const RuntimeConfig& config, int rank, int size, comm::Backend backend,
          std::shared_ptr<timeline::Timeline> timeline);
  // The runtime around a world communicator: control channel, world engine, static sets.
  static StatusOr<std::unique_ptr<Runtime>> Assemble(const RuntimeConfig& config, std::shared_ptr<store::Store> store,
                                                     std::unique_ptr<comm::Communicator> world,
                                                     std::shared_ptr<timeline::Timeline> timeline);
  // The host communicator that negotiates for `data`: data itself when it is host memory, else a Gloo
  // side channel of the same ranks under `prefix`. Errors: those of Gloo's rendezvous.
  static StatusOr<std::shared_ptr<comm::Communicator>> ControlChannel(const RuntimeConfig& config,
                                                                      const std::shared_ptr<store::Store>& store,
                                                                      const std::shared_ptr<comm::Communicator>& data,
                                                                      const std::string& prefix);
  // A communicator of `rank` of `size` under `prefix`: config.communicator_factory's, else
  // CreateWorldCommunicator's with config's options and `backend`. Errors: those of the factory.
  static StatusOr<std::unique_ptr<comm::Communicator>> NewCommunicator(const RuntimeConfig& config,
                                                                       comm::Backend backend,
                                                                       std::shared_ptr<store::Store> store, int rank,
                                                                       int size, const std::string& prefix);
  fusion::Handle Submit(int set, fusion::Request request);
  fusion::EngineOptions EngineOptionsFor(int id, const std::string& name,
                                         fusion::Ordering ordering = fusion::Ordering::kNegotiated) const;

  // Constant after construction.
  const RuntimeConfig config_;
  const int rank_;
  const int size_;
  const comm::Backend backend_;
  const int device_;                                    // device(): DeviceIndex(config_) modulo the visible GPUs
  const std::shared_ptr<timeline::Timeline> timeline_;  // may be null; outlives the engines (declared first)

  process_sets::ProcessSetTable sets_;   // thread-safe itself
  std::shared_ptr<store::Store> store_;  // set by Assemble; for AddGroup's rendezvous

  std::atomic<bool> quiesced_{false};  // Quiesce() returned OK: no engine thread is left

  std::mutex mu_;
  // Guarded by mu_.
  int next_set_id_ = 1;
  std::map<std::string, int> group_keys_;  // AddGroup: how often each key was used
};

}  // namespace ringmaster::runtime
