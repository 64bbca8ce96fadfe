// NCCL's WARN lines (debug.cc, ncclDebugLog): "host:pid:tid [cudaDev] NCCL WARN message" on stderr,
// and the last one kept for ncclGetLastError. The emulation prints them by default (real NCCL only
// under NCCL_DEBUG=WARN or more); NCCL_DEBUG=NONE silences them.
//
// Thread-safety: safe from any thread.
#pragma once

namespace gpuemu {

// `device` is the CUDA device the line is about (-1: the calling thread's current one).
void Warn(int device, const char* format, ...) __attribute__((format(printf, 2, 3)));

// An INFO line (debug.cc, ncclDebugLog at NCCL_DEBUG=INFO): "host:pid:tid [cudaDev] NCCL INFO message",
// printed only under NCCL_DEBUG=INFO (or TRACE), to NCCL_DEBUG_FILE (appended; no %h/%p expansion) when it
// is set, else to stderr. Both variables are read at every line (INFO lines here are rare: teardown), so a
// test may set them in a process that already loaded the library.
void Info(int device, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The text of the last WARN of this process (ncclGetLastError); "" before any.
const char* LastWarning();

}  // namespace gpuemu
