// DeviceTraffic: the bytes a process's GPU communicators have moved, per CUDA device ordinal (the device
// number the process uses, as CUDA_VISIBLE_DEVICES renumbers them). One object outlives the generations:
// the program creates it, every generation's NCCL communicators (their splits and shrinks too) add to it,
// and the worker's metrics read it at scrape time (ringmaster_worker_gpu_nccl_bytes_total).
//
// What is counted: each successful collective's payload on this rank — the bytes of its input buffer
// (allreduce, allgather, broadcast: count x element size; allgatherv: this rank's count; reduce-scatter and
// alltoall: size x count x element size). Not wire traffic, which depends on NCCL's algorithm.
//
// Thread-safety: every method is thread-safe. Errors: none.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace ringmaster::comm {

class DeviceTraffic {
 public:
  // A negative device is ignored.
  void Add(int device, uint64_t bytes);
  // Bytes per device so far; devices nothing was added for are absent.
  std::map<int, uint64_t> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<int, uint64_t> bytes_;  // guarded by mu_
};

}  // namespace ringmaster::comm
