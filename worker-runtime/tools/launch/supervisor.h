// The supervision loop of ringmaster-launch for K > 1 processes: starts them (pod_processes.h), relays
// their output (output_relay.h) and treats the pod as the unit of failure.
//
//  - A process that exits non-zero or by a signal stops the pod: one line says which, the others get
//    SIGTERM, then SIGKILL --grace-s later; the launcher exits with that process's code (128+signal for a
//    signal). A process exiting 0 while others run is normal: the launcher waits for the rest.
//  - SIGTERM or SIGINT to the launcher is passed to every running process, then the same grace and
//    SIGKILL.
//  - Exit status: the first non-zero code of a process, in the order they ended (143 when they all die of
//    a forwarded SIGTERM); 0 when all exit 0, also after a forwarded signal they handled; 1 when a process
//    cannot be started (fork failed; a missing program is that process exiting 127).
//  - As PID 1 of a container (and, being a child subreaper, elsewhere too) it reaps orphans it never
//    started, ignoring their exits.
//
// Signals are taken through a signalfd (blocked while the loop runs, so PID 1 gets them too and none is
// lost between two polls); the children start with default dispositions and nothing blocked.
// Errors: reported as lines on stderr and in the exit status; nothing is returned.
// Ownership: RunPod owns the processes and their pipes until it returns (all reaped by then).
// Thread-safety: call from a single-threaded program (signal masks and the parent-death signal are
// per-thread).
#pragma once

#include "worker-runtime/tools/launch/launch_options.h"
#include "worker-runtime/tools/launch/pod_processes.h"

namespace ringmaster::launch {

// Runs options.processes copies of options.command for `pod` until all have ended; returns the
// launcher's exit status.
int RunPod(const LaunchOptions& options, const PodEnvironment& pod);

}  // namespace ringmaster::launch
