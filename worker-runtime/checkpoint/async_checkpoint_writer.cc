#include "worker-runtime/checkpoint/async_checkpoint_writer.h"

#include <chrono>
#include <cstring>
#include <set>

namespace ringmaster::checkpoint {

AsyncCheckpointWriter::AsyncCheckpointWriter(CheckpointStore* store) : store_(store) {
  thread_ = std::thread([this] { Run(); });
}

AsyncCheckpointWriter::~AsyncCheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status AsyncCheckpointWriter::Save(int64_t step, uint32_t world_size, std::span<const BlobRef> blobs) {
  // Reject what the store would reject, now, while the caller can act on it.
  RINGMASTER_RETURN_IF_ERROR(ValidateSave(step, world_size, blobs));

  // Copy outside the lock: the writer thread keeps writing meanwhile.
  const auto start = std::chrono::steady_clock::now();
  auto snapshot = std::make_unique<Snapshot>();
  snapshot->step = step;
  snapshot->world_size = world_size;
  for (const BlobRef& blob : blobs) {
    // Aligned, so the store writes it to the disk directly, without a staging copy.
    RINGMASTER_ASSIGN_OR_RETURN(ByteBuffer buffer, ByteBuffer::Allocate(blob.data.size()));
    if (buffer.size > 0) std::memcpy(buffer.data.get(), blob.data.data(), buffer.size);
    snapshot->names.emplace_back(blob.name);
    snapshot->buffers.push_back(std::move(buffer));
  }
  snapshot->snapshot_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return FailedPreconditionError("checkpoint writer is shutting down");
    if (pending_ != nullptr) ++stats_.superseded;  // the newest snapshot wins
    pending_ = std::move(snapshot);
    ++stats_.accepted;
  }
  cv_.notify_all();
  return Status::Ok();
}

void AsyncCheckpointWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return pending_ != nullptr || stopping_; });
    if (pending_ == nullptr) return;  // stopping, nothing left to persist
    std::unique_ptr<Snapshot> snapshot = std::move(pending_);
    busy_ = true;
    lock.unlock();

    std::vector<BlobRef> refs;
    refs.reserve(snapshot->names.size());
    for (size_t i = 0; i < snapshot->names.size(); ++i) {
      refs.push_back(BlobRef{snapshot->names[i], snapshot->buffers[i].span()});
    }
    StatusOr<SaveResult> result = store_->Save(snapshot->step, snapshot->world_size, refs);
    const double snapshot_seconds = snapshot->snapshot_seconds;
    snapshot.reset();  // free the snapshot before taking the lock

    lock.lock();
    busy_ = false;
    if (result.ok()) {
      result->snapshot_seconds = snapshot_seconds;
      ++stats_.committed;
      last_status_ = Status::Ok();
      last_result_ = std::move(result).value();
    } else {
      ++stats_.failed;
      last_status_ = result.status();
    }
    cv_.notify_all();
  }
}

Status AsyncCheckpointWriter::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return pending_ == nullptr && !busy_; });
  return last_status_;
}

Status AsyncCheckpointWriter::last_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_status_;
}

std::optional<SaveResult> AsyncCheckpointWriter::last_result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_result_;
}

AsyncCheckpointWriter::Stats AsyncCheckpointWriter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace ringmaster::checkpoint
