// Whether this process may run the GPU suite, decided without touching CUDA: the suite forks its
// ranks, and a CUDA context does not survive a fork, so the parent must not load CUDA first.
// The suite runs on NVIDIA GPUs (ctest label `gpu`) or on the CPU emulation of NCCL and CUDA
// (label `gpu-emulated`: RINGMASTER_EMULATED_GPUS=N, tests/gpu_emulation).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace ringmaster::runtime_testing {

inline bool EmulatedGpus() {
  const char* n = ::getenv("RINGMASTER_EMULATED_GPUS");
  return n != nullptr && ::atoi(n) > 0;
}

// Empty when the suite can run here; otherwise why not, for a test to fail with (never to skip:
// a GPU test that cannot run is a failure where it was asked to run).
inline std::string WhyNoGpuSuite() {
  if (EmulatedGpus()) return "";
  if (::access("/dev/nvidiactl", F_OK) == 0 || ::access("/dev/nvidia0", F_OK) == 0) return "";
  return "no NVIDIA GPU on this machine and RINGMASTER_EMULATED_GPUS is unset: run the `gpu` label on a GPU "
         "machine (make test-gpu, or build/gpu-kit/run.sh), or the `gpu-emulated` label (make test-gpu-emulated)";
}

}  // namespace ringmaster::runtime_testing
