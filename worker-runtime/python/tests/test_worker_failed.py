"""A Python worker that cannot go on (elastic/failure_class.h: here a GPU library that cannot be loaded) ends:
the session's start() writes the worker's termination message (naming its node, its GPU and the error) and raises
WorkerFailed, so the script exits non-zero within seconds -- it must not build the same generation again every
few seconds, forever ("generation 1 abandoned: FailedPrecondition ... building it again")."""

import os
import subprocess
import sys
import time

SCRIPT = """
from ringmaster import _native
session = _native.Session()
try:
    session.start()
except _native.WorkerFailed as e:
    print("RAISED WorkerFailed:", e, flush=True)
    raise
print("STARTED", flush=True)
"""


def test_a_gpu_library_that_cannot_be_loaded_ends_the_script_with_a_termination_message(tmp_path):
    log = tmp_path / "termination-log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGMASTER_")}
    env.update(
        RINGMASTER_BACKEND="nccl",
        RINGMASTER_EMULATED_GPUS="1",
        RINGMASTER_GPU_EMULATION_LIBRARY=str(tmp_path / "no-such-emulation.so"),
        RINGMASTER_DEVICE="0",
        RINGMASTER_NODE_NAME="node-7",
        RINGMASTER_WORKER_ID="w0",
        RINGMASTER_TERMINATION_LOG=str(log),
    )
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env)
    took = time.monotonic() - t0
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "RAISED WorkerFailed" in proc.stdout, output
    assert "STARTED" not in proc.stdout, output
    assert "building it again" not in output, output
    assert took < 60, f"took {took:.1f} s:\n{output}"
    said = log.read_text()
    assert said.startswith("worker w0 on node node-7, GPU 0: FailedPrecondition"), said
    assert "no-such-emulation.so" in said, said
