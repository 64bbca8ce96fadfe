// Where the process finds libnccl and the CUDA runtime. Nothing links them: the runtime loads them
// with dlopen at first use, so one binary (and one Python wheel) serves every NCCL and CUDA that a
// machine or a torch install brings, and a process never holds two NCCLs (one SONAME,
// `libnccl.so.2`: whichever loads first serves the whole process, torch included).
//
// The order, for each library (the first that loads wins):
//   1. RINGMASTER_EMULATED_GPUS=N (N > 0): the CPU emulation of libnccl and libcudart
//      (tests/gpu_emulation, test infrastructure): RINGMASTER_GPU_EMULATION_LIBRARY, else
//      libringmaster_emulated_gpu.so in ../lib beside the executable or beside this library.
//      Nothing else is tried: a process told to emulate never reaches for a real GPU.
//   2. the copy already loaded in this process (torch's, typically: dlopen RTLD_NOLOAD of the SONAME);
//   3. a configured path: RINGMASTER_NCCL_LIBRARY, RINGMASTER_CUDART_LIBRARY;
//   4. the copy torch's wheels installed (site-packages/nvidia/nccl/lib, nvidia/cu13/lib,
//      nvidia/cuda_runtime/lib), found from any loaded library under a site-packages that holds torch;
//   5. the SONAME through the dynamic linker's search (LD_LIBRARY_PATH, the system).
//
// Thread-safety: everything here is safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace ringmaster::nccl {

// What the environment says about the search, read once by GpuLibrarySearch::FromEnvironment.
struct GpuLibrarySearch {
  int emulated_gpus = 0;          // RINGMASTER_EMULATED_GPUS
  std::string emulation_library;  // RINGMASTER_GPU_EMULATION_LIBRARY (empty: the default places)
  std::string nccl_library;       // RINGMASTER_NCCL_LIBRARY
  std::string cudart_library;     // RINGMASTER_CUDART_LIBRARY

  static GpuLibrarySearch FromEnvironment();
};

// A library that dlopen accepted: its handle (never closed: NCCL and CUDA keep threads and
// state for the life of the process) and the path it was found at.
struct LoadedLibrary {
  void* handle = nullptr;
  std::string path;
  bool emulated = false;
};

// The libnccl (kind "nccl") or CUDA runtime (kind "cudart") of this process, searched as above.
// Errors: NotFound listing every place tried with dlerror's text (no NVIDIA libraries here),
// FailedPrecondition when emulation was asked for and its library is missing.
StatusOr<LoadedLibrary> OpenNccl(const GpuLibrarySearch& search);
StatusOr<LoadedLibrary> OpenCudaRuntime(const GpuLibrarySearch& search);

// The candidate paths that torch's wheels give for `relative` ("nvidia/nccl/lib/libnccl.so.2"),
// from the directories of the loaded libraries of this process that live under a site-packages
// (or dist-packages) folder. Empty when torch is not loaded.
std::vector<std::string> TorchWheelCandidates(const std::string& relative);

}  // namespace ringmaster::nccl
