// The environment the emulation obeys, read once per process (the first call that needs it).
//
//   RINGMASTER_EMULATED_GPUS=N            the number of emulated GPUs of this host (unset, 0: none)
//   CUDA_VISIBLE_DEVICES=i,j,...          as CUDA: the visible devices, renumbered 0..; the list ends at
//                                         the first entry that is not an index below N (UUIDs unsupported)
//   RINGMASTER_EMULATED_NCCL_VERSION=code what ncclGetVersion reports (default: the header's NCCL_VERSION_CODE)
//   RINGMASTER_EMULATED_NCCL_LATENCY_MS=t delays the end of every management job (init, split, shrink,
//                                         grow, revoke) by t ms
//   RINGMASTER_EMULATED_NCCL_ADDR=ip      where bootstrap roots listen (default 127.0.0.1)
//   RINGMASTER_EMULATED_NCCL_FAIL=op:n   the n-th enqueue (1-based, counted per process) of the collective or
//                                         point-to-point `op` (NCCL's name: AllReduce, Send, Recv, ...) fails
//                                         with ncclSystemError; read at every enqueue (InjectedFault)
//   RINGMASTER_EMULATED_NCCL_ASYNC_ERROR=op:n  the n-th enqueue of `op` moves its data, then its communicator's
//                                         async state turns ncclRemoteError before the kernel ends (a proxy's
//                                         connection failing as the operation completes); read at every enqueue
//   RINGMASTER_EMULATED_NCCL_VANISH=op:n  at the n-th enqueue of `op` this rank vanishes: that kernel and every
//                                         later one of the communicator send nothing and wait, without error,
//                                         until the communicator is aborted/revoked; read at every enqueue
//   RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS=n  the n-th kernel (NCCL launch) of this process faults with
//                                         cudaErrorIllegalAddress, sticky on its device; read at every launch
//   RINGMASTER_EMULATED_CUDA_ASYNC_PAGEABLE=t  a copy from pageable host memory to the device returns before
//                                         its destination is written (t ms later, on the stream)
//   NCCL_DEBUG=INFO, NCCL_DEBUG_FILE=path  the teardown INFO lines ("Destroy COMPLETE", "Abort COMPLETE"), to
//                                         the file (appended; no %h/%p) or stderr; read at every such line
//   NCCL_MULTI_RANK_GPU_ENABLE=1          allows two ranks of one communicator on one GPU (init.cc)
//   NCCL_COMM_BLOCKING=0|1                overrides ncclConfig_t.blocking (init.cc, envConfigOverride)
//   NCCL_HOSTID                           the host's identity (utils.cc, getHostHash); else hostname + boot id
//   NCCL_DEBUG=NONE|VERSION               silences the WARN lines (printed by default)
//
// Thread-safety: GetSettings() is safe from any thread; the object is immutable and never freed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuemu {

struct Settings {
  int emulated_gpus = 0;
  std::vector<int> visible;  // logical device index -> emulated GPU index ("physical")
  int nccl_version = 0;
  int latency_ms = 0;
  std::string bind_address = "127.0.0.1";
  bool multi_rank_gpu = false;
  int comm_blocking = -1;  // -1: unset
  uint64_t host_hash = 0;  // hash of NCCL_HOSTID, else of hostname + /proc/sys/kernel/random/boot_id
  std::string hostname;
  bool quiet = false;
  int async_pageable_ms = 0;  // RINGMASTER_EMULATED_CUDA_ASYNC_PAGEABLE; 0: copies from pageable memory are synchronous
};

const Settings& GetSettings();

// Whether this enqueue of `op_name` is the one RINGMASTER_EMULATED_NCCL_FAIL names. Unlike the Settings
// it reads the variable at every call, so a test can set it in a rank after the library was loaded; the
// per-op call counts are the process's (as NCCL's own state is), under a lock.
bool InjectedFault(const char* op_name);

// The same for any knob of the form `op:n` in the environment variable `knob` (each knob counts its own
// calls): RINGMASTER_EMULATED_NCCL_ASYNC_ERROR, RINGMASTER_EMULATED_NCCL_VANISH.
bool InjectedAt(const char* knob, const char* op_name);

// Whether this kernel launch is the n-th of the process that RINGMASTER_EMULATED_CUDA_ILLEGAL_ADDRESS names
// (read at every call; counted under a lock).
bool InjectedIllegalAddress();

// NCCL's string hash (utils.h getHash), used for host and communicator identities.
uint64_t HashBytes(const void* data, size_t bytes, uint64_t seed = 0);
uint64_t HashCombine(uint64_t a, uint64_t b);

}  // namespace gpuemu
