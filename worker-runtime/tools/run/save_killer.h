// The killsave chaos action: SIGKILL a worker while it is writing a checkpoint save.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"
#include "base/subprocess.h"

namespace ringmaster::run {

// SIGKILLs `worker` while it is writing a save into `checkpoint_dir` and returns the save's name (its
// ".tmp-step-<step>-<pid>-*" directory, CheckpointStore's). Between seeing the directory and the kill
// the save could finish, so the worker is frozen (SIGSTOP) first and the directory checked again; when
// the save got done meanwhile, it resumes and we wait for the next. The caller reaps the worker.
// Errors: DeadlineExceeded when no save is caught within `limit`; FailedPrecondition when the worker
// has ended. Blocks up to `limit`.
StatusOr<std::string> KillDuringSave(Subprocess& worker, const std::string& checkpoint_dir,
                                     std::chrono::milliseconds limit);

}  // namespace ringmaster::run
