// The per-process-set execution engine (Horovod's background loop without its
// globals): callers submit collectives from any thread and get a Handle; one
// background thread, every cycle, negotiates with the peers (negotiation.h),
// fuses small allreduces into the fusion buffer (fusion_planner.h), runs the
// collectives on the data communicator and completes the handles. An engine
// with Ordering::kSubmissionOrder skips the cycle, the negotiation and the
// fusion and runs each request as it comes (torch.distributed's contract).
//
// Errors reported through handles: those of the communicator (Aborted makes
// the engine fail every queued and later request with Aborted until the
// runtime is rebuilt), FailedPrecondition when ranks give one name to
// different collectives (the engine stays usable).
//
// Note: a rank that never submits a collective its peers submitted makes the
// peers' negotiation time out after the communicator's timeout (Aborted).
//
// The cycle: a negotiated engine lets requests accumulate for cycle_time after
// the first is queued (to fuse them), unless the fusion buffer fills first or a
// caller starts to Wait() for a queued request: a caller blocked on a result
// submits nothing more before it returns, so the cycle starts then (a
// synchronous allreduce, the elastic restore's task). This needs the engine to
// be owned by a shared_ptr (the runtime's are); otherwise only the timer ends
// the wait. Completion::OnDone callers (TensorFlow's kernels) never cut it short.
//
// Thread-safety: Submit, Abort and Stop are safe from any thread. The
// destructor fails whatever is still queued and joins the thread (if a
// collective is in flight it waits for it, at most the communicator's timeout).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "worker-runtime/comm/communicator.h"
#include "worker-runtime/fusion/fusion_planner.h"
#include "worker-runtime/fusion/request.h"
#include "worker-runtime/timeline/timeline.h"

namespace ringmaster::fusion {

// How an engine agrees with its peers on what to run next.
enum class Ordering {
  // Horovod's: every cycle the ranks negotiate which requests all of them have, verify they are the same,
  // and fuse small allreduces. Callers may submit in different orders: requests are
  // matched by name (negotiation.h).
  kNegotiated,
  // torch.distributed's and NCCL's contract: every rank submits the same collectives in the same order, so
  // each runs as soon as it is submitted, in submission order — no cycle wait, no negotiation, no fusion
  // (a caller like DDP buckets by itself). A rank that breaks the contract gets the communicator's errors.
  kSubmissionOrder,
};

struct EngineOptions {
  std::string name = "world";  // process set name, for messages
  int id = 0;                  // process set id, the timeline track
  Ordering ordering = Ordering::kNegotiated;
  size_t fusion_threshold = 64u << 20;  // 0 disables fusion
  std::chrono::microseconds cycle_time{3500};
  timeline::Timeline* timeline = nullptr;  // not owned; may be null; must outlive the engine
};

// What an engine has run so far: launches are calls into the data communicator
// (a fused batch is one launch, an unfused collective one each).
struct EngineStats {
  uint64_t launches = 0;
  uint64_t fused_launches = 0;  // launches that carried more than one request
  uint64_t fused_requests = 0;  // requests carried by those
};

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  // data runs the collectives; control (host memory) runs the negotiation.
  // They may be the same communicator. Both must outlive nothing: shared.
  Engine(std::shared_ptr<comm::Communicator> data, std::shared_ptr<comm::Communicator> control, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues the request. Never blocks on the network.
  Handle Submit(Request request);

  // Runs fn on the engine thread, ordered with (and negotiated like) the
  // collectives: every rank must submit it at the same position. Used for
  // process-set creation, which must not race the world's collectives.
  Handle SubmitTask(std::string name, std::function<Status(comm::Communicator& data, comm::Communicator& control)> fn);

  // The commit agreement (worker-runtime/README.md, "Commit agreement"): Vote records the newest step whose
  // collectives completed without error on this rank (monotone: a smaller mark is ignored); every negotiation
  // carries it, and agreed() is the smallest vote of all ranks at the newest negotiation that succeeded (-1
  // before any). SubmitVote(want) is a negotiated task (every rank submits it at the same position, after
  // voting at least `want`). When other requests were queued since the last vote (a program whose steps
  // negotiate collectives on this engine: Horovod's), it starts no cycle of its own but rides on the negotiation
  // of the next cycle anything else starts (the next step's first collective) or a caller's Wait for it starts;
  // otherwise (DDP's steps run on a set in submission order) its cycle starts as any request's, behind the next
  // step's compute. Once its handle is OK, agreed() >= want. Only when that cycle's negotiation could not carry
  // the votes (requests matched by name) does it allreduce them itself: the same choice on every rank.
  // Thread-safe.
  void Vote(int64_t mark);
  int64_t agreed() const { return agreed_.load(); }
  Handle SubmitVote(int64_t want);

  // Aborts both communicators (a flag for some backends: the engine thread, if inside a call, fails
  // out of it and may still act on the communicator on its way out). Later requests fail with Aborted.
  void Abort(const std::string& reason);
  // Stops the engine thread and waits, at most `timeout`, until it has returned from its last call
  // into the communicators: once Stop returns OK the engine never calls them again, so their state
  // (Communicator::can_shrink) is final and another thread may use them alone (Shrink). Queued and
  // later requests fail with Aborted. Call after Abort() so that a call in flight ends. Idempotent.
  // Errors: DeadlineExceeded naming the process set when the thread is still inside a call after
  // `timeout` (the engine stays stopping; a later Stop, or the destructor, waits for it again).
  Status Stop(std::chrono::milliseconds timeout);
  Ordering ordering() const { return options_.ordering; }
  EngineStats stats() const;
  int rank() const { return data_->rank(); }
  int size() const { return data_->size(); }
  const std::shared_ptr<comm::Communicator>& data() const { return data_; }
  const std::shared_ptr<comm::Communicator>& control() const { return control_; }

 private:
  struct Item {
    Request request;
    std::function<Status(comm::Communicator&, comm::Communicator&)> task;  // set for SubmitTask
    bool vote = false;                                                     // SubmitVote's
    // Rides along: starts no cycle of its own, but runs in the next cycle something else starts -- another
    // request's, or a caller's waiting for it. Negotiated engines only.
    bool rides_along = false;
  };
  // Stamps, queues and wakes the loop; fails the item at once when the engine is stopping or broken.
  Handle Enqueue(std::unique_ptr<Item> item);
  // Under mu_: the bookkeeping of an item leaving the queue.
  void Dequeued(const Item& item);
  // What a cycle starts from: how many requests this rank has queued, and whether the engine is broken.
  struct Pending {
    size_t count = 0;
    Status broken;
  };
  using Clock = std::chrono::steady_clock;

  // The engine thread's steps (engine.cc): Loop runs WaitForCycle, then RunCycle (submission order) or
  // NegotiateAndRunCycle, until stopping; then FailQueuedAndExit.
  void Loop();
  std::optional<Pending> WaitForCycle();  // nullopt: stopping
  void NegotiateAndRunCycle(const Pending& pending);
  std::vector<std::unique_ptr<Item>> TakeQueued(size_t count);  // the first `count` queued, in order
  std::vector<Request*> PeekQueued(size_t count);               // the first `count` queued, left queued
  // The queued items whose requests are queued[i] for i in `matched`, in that order.
  std::vector<std::unique_ptr<Item>> TakeMatched(const std::vector<Request*>& queued,
                                                 const std::vector<size_t>& matched);
  void WaitForMoreThan(size_t queued);  // until more than `queued` are queued, stopping, or a cycle time
  void WakeForWaiter();                 // a caller waits for a queued request (Completion::OnFirstWait)
  bool AwaitedQueued();                 // under mu_: whether a queued request is awaited (clears waiter_woke_ if not)
  void RecordNegotiation(const std::vector<Request*>& requests, Clock::time_point start, Clock::time_point end);
  void FailQueuedAndExit();
  void RunCycle(std::vector<std::unique_ptr<Item>> items);
  static Status AsAborted(const Status& status);  // a failure of the negotiation, as every later request sees it
  void MarkBroken(const Status& status);          // the first reason sticks
  Status Broken() const;
  Status RunBatch(const Batch& batch);
  void FailAll(std::vector<std::unique_ptr<Item>>& items, const Status& status);
  void RecordAgreed(int64_t mark);  // agreed_ = max(agreed_, mark)

  // Constant after construction.
  const std::shared_ptr<comm::Communicator> data_;
  const std::shared_ptr<comm::Communicator> control_;
  const EngineOptions options_;
  const bool can_fuse_;  // host memory only: the fusion buffer lives on the host

  // Used only by the engine thread.
  std::vector<uint8_t> fusion_buffer_;

  int64_t cycle_vote_ = -1;          // the votes' minimum at the running cycle's negotiation
  std::atomic<int64_t> vote_{-1};    // Vote's newest mark
  std::atomic<int64_t> agreed_{-1};  // agreed()

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  EngineStats stats_;
  bool stopping_ = false;
  bool exited_ = false;  // Loop has returned: no call into the communicators will follow
  std::deque<std::unique_ptr<Item>> queue_;
  size_t queued_bytes_ = 0;
  size_t eager_ = 0;              // queued items that start a cycle (not Item::rides_along)
  bool eager_since_vote_ = true;  // an item other than a vote was queued since the last vote
  bool waiter_woke_ = false;      // WakeForWaiter ran: look for awaited requests (AwaitedQueued clears it when none is)
  Status broken_;

  std::condition_variable exited_cv_;  // with mu_: signalled when exited_ becomes true
  std::mutex join_mu_;                 // serializes joining thread_ (Stop and the destructor)
  std::thread thread_;                 // last: starts after everything above is initialized
};

}  // namespace ringmaster::fusion
