#include "worker-runtime/fusion/engine.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "worker-runtime/fusion/negotiation.h"

namespace ringmaster::fusion {

using Clock = std::chrono::steady_clock;

Engine::Engine(std::shared_ptr<comm::Communicator> data, std::shared_ptr<comm::Communicator> control,
               EngineOptions options)
    : data_(std::move(data)),
      control_(std::move(control)),
      options_(std::move(options)),
      can_fuse_(data_->memory() == comm::MemoryKind::kHost && options_.fusion_threshold > 0 &&
                options_.ordering == Ordering::kNegotiated),
      thread_([this] { Loop(); }) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> join(join_mu_);
  if (thread_.joinable()) thread_.join();
}

Status Engine::Stop(std::chrono::milliseconds timeout) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    if (!exited_cv_.wait_for(lock, timeout, [&] { return exited_; })) {
      return DeadlineExceededError("the engine of process set '" + options_.name +
                                   "' is still inside a call into its communicator");
    }
  }
  std::lock_guard<std::mutex> join(join_mu_);  // the thread has left Loop: this join is immediate
  if (thread_.joinable()) thread_.join();
  return Status::Ok();
}

Handle Engine::Submit(Request request) {
  auto item = std::make_unique<Item>();
  item->request = std::move(request);
  return Enqueue(std::move(item));
}

Handle Engine::SubmitTask(std::string name, std::function<Status(comm::Communicator&, comm::Communicator&)> fn) {
  auto item = std::make_unique<Item>();
  item->request.name = std::move(name);
  item->request.kind = CollectiveKind::kBarrier;  // counts as a control step in the fingerprint
  item->request.count = 0;
  item->task = std::move(fn);
  return Enqueue(std::move(item));
}

Handle Engine::Enqueue(std::unique_ptr<Item> item) {
  item->request.submitted = Clock::now();
  if (options_.ordering == Ordering::kNegotiated) {
    // Weak: a handle may outlive the engine (its request then fails with Aborted and nobody is woken).
    item->request.completion->OnFirstWait([engine = weak_from_this()] {
      if (auto e = engine.lock()) e->WakeForWaiter();
    });
  }
  Handle handle(item->request.completion);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || !broken_.ok()) {
    Status s = broken_.ok() ? AbortedError("process set '" + options_.name + "' is shutting down") : broken_;
    lock.unlock();
    item->request.completion->Finish(s);
    return handle;
  }
  queued_bytes_ += item->request.bytes();
  if (item->vote) {
    // Rides along only where something else will start the cycle it needs: the next step's own negotiation.
    item->rides_along = eager_since_vote_;
    eager_since_vote_ = false;
  } else {
    eager_since_vote_ = true;
  }
  if (!item->rides_along || options_.ordering != Ordering::kNegotiated) ++eager_;
  queue_.push_back(std::move(item));
  // An item that rides along cannot end the engine's wait: no wakeup (a context switch per commit otherwise).
  const bool wake = !queue_.back()->rides_along || options_.ordering != Ordering::kNegotiated;
  lock.unlock();
  if (wake) cv_.notify_all();
  return handle;
}

void Engine::Vote(int64_t mark) {
  int64_t current = vote_.load();
  while (mark > current && !vote_.compare_exchange_weak(current, mark)) {}
}

void Engine::RecordAgreed(int64_t mark) {
  int64_t current = agreed_.load();
  while (mark > current && !agreed_.compare_exchange_weak(current, mark)) {}
}

Handle Engine::SubmitVote(int64_t want) {
  // Run in a cycle every rank negotiated with this task queued (the common case), that negotiation carried every
  // rank's vote >= want. Matched by name, the task may have been queued after it: then ask again. The cycle's
  // minimum is the same on every rank, so every rank makes the same choice.
  auto vote = [this, want](comm::Communicator&, comm::Communicator& control) -> Status {
    int64_t mark = cycle_vote_;
    if (mark < want) {
      mark = vote_.load();
      RINGMASTER_RETURN_IF_ERROR(control.Allreduce(&mark, &mark, 1, common::DataType::kInt64, common::ReduceOp::kMin));
    }
    RecordAgreed(mark);
    return Status::Ok();
  };
  auto item = std::make_unique<Item>();
  item->request.name = "engine.vote." + std::to_string(want);
  item->request.kind = CollectiveKind::kBarrier;  // counts as a control step in the fingerprint
  item->request.count = 0;
  item->task = std::move(vote);
  item->vote = true;
  return Enqueue(std::move(item));
}

void Engine::Abort(const std::string& reason) {
  data_->Abort(reason);
  if (control_ != data_) control_->Abort(reason);
  MarkBroken(AbortedError("process set '" + options_.name + "' aborted: " + reason));
}

void Engine::FailAll(std::vector<std::unique_ptr<Item>>& items, const Status& status) {
  for (auto& item : items) item->request.completion->Finish(status);
  items.clear();
}

// The engine thread: one cycle per pass until Stop. A cycle is what every rank runs next: in submission
// order, whatever is queued; negotiated, the requests all ranks agreed on (negotiation.h), checked to be the same
// everywhere. On the way out, whatever is still queued fails.
void Engine::Loop() {
  while (std::optional<Pending> pending = WaitForCycle()) {
    if (options_.ordering == Ordering::kSubmissionOrder) {
      RunCycle(TakeQueued(pending->count));
    } else {
      NegotiateAndRunCycle(*pending);
    }
  }
  FailQueuedAndExit();
}

void Engine::Dequeued(const Item& item) {
  queued_bytes_ -= item.request.bytes();
  if (!item.rides_along || options_.ordering != Ordering::kNegotiated) --eager_;
}

std::optional<Engine::Pending> Engine::WaitForCycle() {
  std::unique_lock<std::mutex> lock(mu_);
  // Items that ride along (votes) wait for something else to start a cycle, or for a caller to wait for them.
  cv_.wait(lock, [&] { return stopping_ || eager_ > 0 || (!queue_.empty() && waiter_woke_ && AwaitedQueued()); });
  if (stopping_) return std::nullopt;
  if (options_.ordering == Ordering::kNegotiated && eager_ > 0) {
    // Let a cycle's worth of requests accumulate, unless the fusion buffer is already full or a caller waits
    // for one of them (it submits nothing more until it has the result).
    auto first = std::find_if(queue_.begin(), queue_.end(), [](const auto& item) { return !item->rides_along; });
    auto until = (first != queue_.end() ? *first : queue_.front())->request.submitted + options_.cycle_time;
    cv_.wait_until(lock, until, [&] {
      return stopping_ || queued_bytes_ >= options_.fusion_threshold || (waiter_woke_ && AwaitedQueued());
    });
    if (stopping_) return std::nullopt;
  }
  return Pending{queue_.size(), broken_};
}

void Engine::WakeForWaiter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiter_woke_ = true;
  }
  cv_.notify_all();
}

bool Engine::AwaitedQueued() {
  for (const auto& item : queue_) {
    if (item->request.completion->awaited()) return true;
  }
  waiter_woke_ = false;  // the awaited request already ran (or ran in the cycle that just ended)
  return false;
}

void Engine::NegotiateAndRunCycle(const Pending& pending) {
  auto negotiate_start = Clock::now();
  // A rank that cannot agree cannot run anything again: everything queued fails with the reason.
  auto fail_everything = [&](const Status& why) {
    Status aborted = AsAborted(why);
    MarkBroken(aborted);
    std::vector<std::unique_ptr<Item>> items = TakeQueued(std::numeric_limits<size_t>::max());
    FailAll(items, aborted);
  };
  if (!pending.broken.ok()) return fail_everything(pending.broken);
  // How many run, and the common case: the first that many queued requests are the same on every rank, in the
  // same order (one allreduce for a few requests: negotiation.h).
  StatusOr<Agreement> agreed = Agree(*control_, PeekQueued(pending.count), vote_.load());
  if (!agreed.ok()) return fail_everything(agreed.status());
  cycle_vote_ = agreed->vote;
  RecordAgreed(agreed->vote);
  const bool same = agreed->same;
  std::vector<std::unique_ptr<Item>> items;
  if (same) {
    items = TakeQueued(agreed->count);
  } else {
    // Submitted in different orders: run what every rank has, matched by name, in rank 0's order.
    std::vector<Request*> queued = PeekQueued(std::numeric_limits<size_t>::max());
    StatusOr<std::vector<size_t>> matched = MatchByName(*control_, queued);
    if (!matched.ok()) return fail_everything(matched.status());
    if (matched->empty()) {
      // Nothing in common yet: the peers' next submissions will bring it; do not spin on the control
      // communicator meanwhile.
      WaitForMoreThan(queued.size());
      return;
    }
    items = TakeMatched(queued, *matched);
  }
  std::vector<Request*> requests;
  for (auto& item : items) requests.push_back(&item->request);
  // Matched by name, the same name may still be a different tensor on some rank: an error everywhere.
  Status verified = same ? Status::Ok() : VerifySameRequests(*control_, requests, options_.name);
  RecordNegotiation(requests, negotiate_start, Clock::now());
  if (!verified.ok()) {
    if (verified.code() == StatusCode::kAborted) MarkBroken(verified);
    FailAll(items, verified);
    return;
  }
  RunCycle(std::move(items));
}

std::vector<Request*> Engine::PeekQueued(size_t count) {
  std::vector<Request*> requests;
  std::lock_guard<std::mutex> lock(mu_);
  // Only this (the engine) thread removes items, and a deque keeps its elements in place on push_back, so
  // the pointers stay valid until this thread takes the items.
  for (size_t i = 0; i < queue_.size() && i < count; ++i) requests.push_back(&queue_[i]->request);
  return requests;
}

std::vector<std::unique_ptr<Engine::Item>> Engine::TakeMatched(const std::vector<Request*>& queued,
                                                               const std::vector<size_t>& matched) {
  std::vector<std::unique_ptr<Item>> items;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t index : matched) {
    auto it = std::find_if(queue_.begin(), queue_.end(),
                           [&](const std::unique_ptr<Item>& item) { return &item->request == queued[index]; });
    if (it == queue_.end()) continue;  // cannot happen: only this thread removes items
    Dequeued(**it);
    items.push_back(std::move(*it));
    queue_.erase(it);
  }
  return items;
}

void Engine::WaitForMoreThan(size_t queued) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, options_.cycle_time, [&] { return stopping_ || queue_.size() > queued; });
}

std::vector<std::unique_ptr<Engine::Item>> Engine::TakeQueued(size_t count) {
  std::vector<std::unique_ptr<Item>> items;
  std::lock_guard<std::mutex> lock(mu_);
  while (items.size() < count && !queue_.empty()) {
    Dequeued(*queue_.front());
    items.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return items;
}

void Engine::RecordNegotiation(const std::vector<Request*>& requests, Clock::time_point start, Clock::time_point end) {
  if (!options_.timeline) return;
  for (const Request* r : requests) {
    options_.timeline->Record(r->name, "QUEUE", options_.id, r->submitted, start);
    options_.timeline->Record(r->name, "NEGOTIATE", options_.id, start, end);
  }
}

Status Engine::AsAborted(const Status& status) {
  return status.code() == StatusCode::kAborted ? status : AbortedError(status.ToString());
}

void Engine::MarkBroken(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.ok()) broken_ = status;
}

Status Engine::Broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

void Engine::FailQueuedAndExit() {
  std::deque<std::unique_ptr<Item>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
    queued_bytes_ = 0;
    eager_ = 0;
  }
  for (auto& item : left) {
    item->request.completion->Finish(AbortedError("process set '" + options_.name + "' was shut down"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  exited_ = true;
  exited_cv_.notify_all();
}

void Engine::RunCycle(std::vector<std::unique_ptr<Item>> items) {
  // Tasks split the stream: plan and run the collectives between them in order.
  std::vector<Request*> run;
  auto flush = [&] {
    for (const Batch& batch : PlanBatches(run, can_fuse_ ? options_.fusion_threshold : 0)) {
      Status s = Broken();
      if (s.ok()) s = RunBatch(batch);
      if (s.code() == StatusCode::kAborted) {
        MarkBroken(s);
      } else if (!s.ok()) {
        // A failure of this rank alone (a buffer on the wrong device, a sticky CUDA error) after every rank
        // agreed to run the batch: the peers are inside it or past it, and their next collective would pair
        // with a different one of ours. Abort, so that every rank fails out and the generation rebuilds; the
        // batch's callers see this rank's own error.
        Abort("rank " + std::to_string(data_->rank()) + " failed a collective its peers ran: " + s.ToString());
      }
      for (Request* r : batch.requests) r->completion->Finish(s);
    }
    run.clear();
  };
  for (auto& item : items) {
    if (!item->task) {
      run.push_back(&item->request);
      continue;
    }
    flush();
    Status s = Broken();
    if (s.ok()) s = item->task(*data_, *control_);
    item->request.completion->Finish(s);
  }
  flush();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Status Engine::RunBatch(const Batch& batch) {
  timeline::Timeline* tl = options_.timeline;
  Request& first = *batch.requests.front();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.launches;
    if (batch.fused()) {
      ++stats_.fused_launches;
      stats_.fused_requests += batch.requests.size();
    }
  }
  if (batch.fused()) {
    // Fused batches are host memory (can_fuse_): a fence is waited for on this thread before packing.
    for (Request* r : batch.requests) {
      if (r->ready) RINGMASTER_RETURN_IF_ERROR(data_->OrderAfter(*r->ready));
    }
    auto t0 = Clock::now();
    PackBatch(batch, fusion_buffer_);
    auto t1 = Clock::now();
    size_t count = batch.bytes() / common::DataTypeSize(first.type);
    Status s = data_->Allreduce(fusion_buffer_.data(), fusion_buffer_.data(), count, first.type, first.op);
    auto t2 = Clock::now();
    if (s.ok()) UnpackBatch(batch, fusion_buffer_);
    auto t3 = Clock::now();
    if (tl) {
      std::string detail =
          "fused " + std::to_string(batch.requests.size()) + " tensors, " + std::to_string(batch.bytes()) + " bytes";
      for (Request* r : batch.requests) {
        tl->Record(r->name, "FUSE", options_.id, t0, t1, detail);
        tl->Record(r->name, "RUN", options_.id, t1, t2, detail);
        tl->Record(r->name, "UNFUSE", options_.id, t2, t3, detail);
      }
    }
    return s;
  }
  auto t0 = Clock::now();
  Status s;
  // Host memory beside a GPU data communicator runs on the host one (the negotiation's), on this thread.
  comm::Communicator& comm = first.host ? *control_ : *data_;
  if (first.ready) RINGMASTER_RETURN_IF_ERROR(comm.OrderAfter(*first.ready));
  switch (first.kind) {
    case CollectiveKind::kAllreduce: s = comm.Allreduce(first.in, first.out, first.count, first.type, first.op); break;
    case CollectiveKind::kAllgather: s = comm.Allgather(first.in, first.out, first.count, first.type); break;
    case CollectiveKind::kAllgatherv: s = comm.Allgatherv(first.in, first.out, first.counts, first.type); break;
    case CollectiveKind::kBroadcast:
      s = comm.Broadcast(first.in, first.out, first.count, first.type, first.root);
      break;
    case CollectiveKind::kReduceScatter:
      s = comm.ReduceScatter(first.in, first.out, first.count, first.type, first.op);
      break;
    case CollectiveKind::kAlltoall: s = comm.Alltoall(first.in, first.out, first.count, first.type); break;
    case CollectiveKind::kBarrier: s = comm.Barrier(); break;
  }
  if (tl) tl->Record(first.name, "RUN", options_.id, t0, Clock::now(), std::string(CollectiveKindName(first.kind)));
  return s;
}

}  // namespace ringmaster::fusion
