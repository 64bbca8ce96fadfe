// The per-job secret that authenticates a job's workers to each other (the rendezvous store checks it):
// 32 random bytes from the kernel's CSPRNG, hex-encoded. The reconciler creates it once per job, in an
// immutable Secret owned by the job (worker_objects.h, BuildWorkerSecret); it is never rotated while
// the job exists. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace ringmaster::controller {

inline constexpr size_t kJobSecretBytes = 32;

// 2 * kJobSecretBytes lowercase hex digits. Internal when the kernel's random source fails (getrandom).
StatusOr<std::string> NewJobSecret();

}  // namespace ringmaster::controller
