#include "worker-runtime/comm/communicator.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "worker-runtime/comm/validate.h"

namespace ringmaster::comm {

std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kGloo: return "gloo";
    case Backend::kNccl: return "nccl";
  }
  return "?";
}

StatusOr<Backend> ParseBackend(std::string_view name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "gloo") return Backend::kGloo;
  if (name == "nccl") return Backend::kNccl;
  return InvalidArgumentError("unknown backend '" + std::string(name) + "' (want auto, gloo or nccl)");
}

// Each public method: arguments, then health, then the zero-data shortcut, then the backend.

Status Communicator::Allreduce(const void* in, void* out, size_t count, common::DataType type, common::ReduceOp op) {
  RINGMASTER_RETURN_IF_ERROR(CheckDataType(type, "allreduce"));
  RINGMASTER_RETURN_IF_ERROR(CheckReduceOp(op, "allreduce"));
  RINGMASTER_ASSIGN_OR_RETURN(size_t bytes, CheckedBytes(count, type, 1, "allreduce"));
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(in, out, count, "allreduce"));
  RINGMASTER_RETURN_IF_ERROR(CheckAliasing(in, bytes, out, bytes, 0, "allreduce"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (count == 0) return Status::Ok();
  return DoAllreduce(in, out, count, type, op);
}

Status Communicator::Allgather(const void* in, void* out, size_t count, common::DataType type) {
  RINGMASTER_RETURN_IF_ERROR(CheckDataType(type, "allgather"));
  RINGMASTER_ASSIGN_OR_RETURN(size_t bytes, CheckedBytes(count, type, 1, "allgather"));
  RINGMASTER_ASSIGN_OR_RETURN(size_t out_bytes, CheckedBytes(count, type, static_cast<size_t>(size()), "allgather"));
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(in, out, count, "allgather"));
  RINGMASTER_RETURN_IF_ERROR(
      CheckAliasing(in, bytes, out, out_bytes, bytes * static_cast<size_t>(rank()), "allgather"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (count == 0) return Status::Ok();
  return DoAllgather(in, out, count, type);
}

Status Communicator::Allgatherv(const void* in, void* out, const std::vector<size_t>& counts, common::DataType type) {
  RINGMASTER_RETURN_IF_ERROR(CheckDataType(type, "allgatherv"));
  if (counts.size() != static_cast<size_t>(size())) {
    return InvalidArgumentError("allgatherv: " + std::to_string(counts.size()) + " counts for " +
                                std::to_string(size()) + " ranks");
  }
  size_t total = 0, below = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (__builtin_add_overflow(total, counts[r], &total)) return InvalidArgumentError("allgatherv: counts overflow");
    if (static_cast<int>(r) < rank()) below = total;
  }
  const size_t mine = counts[static_cast<size_t>(rank())];
  RINGMASTER_ASSIGN_OR_RETURN(size_t out_bytes, CheckedBytes(total, type, 1, "allgatherv"));
  const size_t esize = common::DataTypeSize(type);
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(in, in, mine, "allgatherv input"));
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(out, out, total, "allgatherv output"));
  RINGMASTER_RETURN_IF_ERROR(CheckAliasing(in, mine * esize, out, out_bytes, below * esize, "allgatherv"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (total == 0) return Status::Ok();
  return DoAllgatherv(in, out, counts, type);
}

Status Communicator::Broadcast(const void* in, void* out, size_t count, common::DataType type, int root) {
  RINGMASTER_RETURN_IF_ERROR(CheckDataType(type, "broadcast"));
  RINGMASTER_RETURN_IF_ERROR(CheckRoot(root, size()));
  RINGMASTER_ASSIGN_OR_RETURN(size_t bytes, CheckedBytes(count, type, 1, "broadcast"));
  const bool is_root = rank() == root;
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(is_root ? in : out, out, count, "broadcast"));
  if (is_root) RINGMASTER_RETURN_IF_ERROR(CheckAliasing(in, bytes, out, bytes, 0, "broadcast"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (count == 0) return Status::Ok();
  return DoBroadcast(in, out, count, type, root);
}

Status Communicator::ReduceScatter(const void* in, void* out, size_t count, common::DataType type,
                                   common::ReduceOp op) {
  RINGMASTER_RETURN_IF_ERROR(CheckDataType(type, "reduce-scatter"));
  RINGMASTER_RETURN_IF_ERROR(CheckReduceOp(op, "reduce-scatter"));
  RINGMASTER_ASSIGN_OR_RETURN(size_t bytes, CheckedBytes(count, type, 1, "reduce-scatter"));
  RINGMASTER_ASSIGN_OR_RETURN(size_t in_bytes,
                              CheckedBytes(count, type, static_cast<size_t>(size()), "reduce-scatter"));
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(in, out, count, "reduce-scatter"));
  RINGMASTER_RETURN_IF_ERROR(CheckAliasing(in, in_bytes, out, bytes, 0, "reduce-scatter"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (count == 0) return Status::Ok();
  return DoReduceScatter(in, out, count, type, op);
}

Status Communicator::Alltoall(const void* in, void* out, size_t count, common::DataType type) {
  RINGMASTER_RETURN_IF_ERROR(CheckDataType(type, "alltoall"));
  RINGMASTER_ASSIGN_OR_RETURN(size_t bytes, CheckedBytes(count, type, static_cast<size_t>(size()), "alltoall"));
  RINGMASTER_RETURN_IF_ERROR(CheckBuffers(in, out, count, "alltoall"));
  RINGMASTER_RETURN_IF_ERROR(CheckAliasing(in, bytes, out, bytes, 0, "alltoall"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (count == 0) return Status::Ok();
  return DoAlltoall(in, out, count, type);
}

Status Communicator::Barrier() {
  RINGMASTER_RETURN_IF_ERROR(health());
  return DoBarrier();
}

Status Communicator::OrderAfter(ReadyFence& fence) {
  RINGMASTER_RETURN_IF_ERROR(health());
  return DoOrderAfter(fence);
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Split(const std::vector<int>& ranks, const std::string& name) {
  RINGMASTER_RETURN_IF_ERROR(CheckSubset(ranks, size()));
  RINGMASTER_RETURN_IF_ERROR(health());
  return DoSplit(ranks, name);
}

namespace {

// A transfer of nothing: done when posted, on both sides alike.
class DoneTransfer : public Transfer {
 public:
  Status Wait() override { return Status::Ok(); }
};

Status CheckPeer(int peer, int rank, int size, const void* buf, size_t bytes, const char* op) {
  if (peer < 0 || peer >= size || peer == rank) {
    return InvalidArgumentError(std::string(op) + ": peer " + std::to_string(peer) + " is not another rank of " +
                                std::to_string(size) + " (this is rank " + std::to_string(rank) + ")");
  }
  return CheckBuffers(buf, buf, bytes, op);
}

}  // namespace

StatusOr<std::unique_ptr<Transfer>> Communicator::PostSend(const void* buf, size_t bytes, int peer, uint32_t tag) {
  RINGMASTER_RETURN_IF_ERROR(CheckPeer(peer, rank(), size(), buf, bytes, "send"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (bytes == 0) return std::unique_ptr<Transfer>(new DoneTransfer);
  return DoPostSend(buf, bytes, peer, tag);
}

StatusOr<std::unique_ptr<Transfer>> Communicator::PostRecv(void* buf, size_t bytes, int peer, uint32_t tag) {
  RINGMASTER_RETURN_IF_ERROR(CheckPeer(peer, rank(), size(), buf, bytes, "recv"));
  RINGMASTER_RETURN_IF_ERROR(health());
  if (bytes == 0) return std::unique_ptr<Transfer>(new DoneTransfer);
  return DoPostRecv(buf, bytes, peer, tag);
}

StatusOr<std::unique_ptr<Transfer>> Communicator::DoPostSend(const void*, size_t, int, uint32_t) {
  return UnimplementedError("backend " + std::string(BackendName(backend())) + " has no point-to-point send");
}

StatusOr<std::unique_ptr<Transfer>> Communicator::DoPostRecv(void*, size_t, int, uint32_t) {
  return UnimplementedError("backend " + std::string(BackendName(backend())) + " has no point-to-point receive");
}

StatusOr<std::unique_ptr<Communicator>> Communicator::Shrink(const std::vector<int>& excluded,
                                                             const std::string& name) {
  // No health check: shrinking an aborted communicator is the point.
  const bool bad = excluded.empty() || !std::is_sorted(excluded.begin(), excluded.end()) ||
                   std::adjacent_find(excluded.begin(), excluded.end()) != excluded.end() || excluded.front() < 0 ||
                   excluded.back() >= size() || std::binary_search(excluded.begin(), excluded.end(), rank());
  if (bad) {
    return InvalidArgumentError("shrink of '" + name + "': excluded ranks must be sorted, unique ranks of the " +
                                std::to_string(size()) + " other than this rank " + std::to_string(rank()));
  }
  return DoShrink(excluded, name);
}

StatusOr<std::unique_ptr<Communicator>> Communicator::DoShrink(const std::vector<int>& excluded,
                                                               const std::string& name) {
  (void)excluded;
  return UnimplementedError("backend " + std::string(BackendName(backend())) + " cannot shrink communicator '" + name +
                            "': build a new one");
}

}  // namespace ringmaster::comm
