// NCCL's WARN lines (debug.cc, ncclDebugLog): "host:pid:tid [cudaDev] NCCL WARN message" on stderr,
// and the last one kept for ncclGetLastError. The emulation prints them by default (real NCCL only
// under NCCL_DEBUG=WARN or more); NCCL_DEBUG=NONE silences them.
//
// Thread-safety: safe from any thread.
#pragma once

namespace gpuemu {

// `device` is the CUDA device the line is about (-1: the calling thread's current one).
void Warn(int device, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The text of the last WARN of this process (ncclGetLastError); "" before any.
const char* LastWarning();

}  // namespace gpuemu
