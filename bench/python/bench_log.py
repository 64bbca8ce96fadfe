"""What every recovery-bench worker shares: the per-worker record file and the step pacing.

Each worker appends one line per COMPLETED allreduce to <dir>/worker.<pid>.log:

    <time.time()> <step> <rank> <world size> <generation>

(generation: Ringmaster's membership generation, torchrun's TORCHELASTIC_RESTART_COUNT, torchft's quorum id).
The first line is "# pid <pid> <system> <script start> <imports done>" (time.time() values). Lines are written
with one os.write each, so the harness can read the file while the worker runs and never sees half a line except
the last one, which it ignores.
"""

import ctypes
import os
import signal
import time


def die_with_parent():
    """A worker whose launcher dies is killed too (Linux), so no run of the bench leaves workers behind.
    Called first thing in every worker script, before torch is imported."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the launcher died before prctl
        os._exit(1)


class Recorder:
    def __init__(self, system, t_start):
        """t_start: time.time() at the top of the worker script, before it imports torch."""
        directory = os.environ["RECOVERY_BENCH_DIR"]
        os.makedirs(directory, exist_ok=True)
        self._fd = os.open(
            os.path.join(directory, f"worker.{os.getpid()}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )
        os.write(self._fd, f"# pid {os.getpid()} {system} {t_start:.6f} {time.time():.6f}\n".encode())
        self.step_s = float(os.environ.get("RECOVERY_BENCH_STEP_MS", "10")) / 1000.0
        self.max_steps = int(os.environ.get("RECOVERY_BENCH_MAX_STEPS", "1000000"))
        self.numel = int(os.environ.get("RECOVERY_BENCH_NUMEL", "1024"))

    def completed(self, step, rank, size, generation):
        os.write(self._fd, f"{time.time():.6f} {step} {rank} {size} {generation}\n".encode())

    def pace(self):
        if self.step_s > 0:
            time.sleep(self.step_s)
