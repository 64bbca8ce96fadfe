"""Shared by the package's tests: where the built programs are, and running a script on N ranks under
ringmaster-run (the same launcher, membership file and runtime a user gets)."""

import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BIN = pathlib.Path(os.environ.get("RINGMASTER_BIN_DIR", ROOT / "build" / "bin"))
EXAMPLES = HERE.parent / "examples"
WORKERS = HERE / "workers"


def _require(path):
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make build` first", pytrace=False)
    return path


def run_ranks(
    tmp_path,
    np,
    script,
    *args,
    chaos=None,
    min_workers=1,
    max_workers=None,
    extra=(),
    timeout=240,
    env=None,
    heartbeat_ms=30000,
    startup_s=120,
):
    """Runs `python script args` on `np` workers under ringmaster-run; returns (exit code, output, out dir).
    `startup_s`: how long a worker may take to send its first heartbeat (the interpreter and torch take
    seconds to start, over 30 s on a loaded machine); `heartbeat_ms`: how long it may stay silent after
    that before the launcher drops it. The run ends 30 s before `timeout` (--deadline-s): the launcher's
    own defaults (no deadline, 10 min to start) are a user's, not a test's."""
    out = tmp_path / f"run-np{np}"
    cmd = [
        str(_require(BIN / "ringmaster-run")),
        "--np",
        str(np),
        "--min",
        str(min_workers),
        "--max",
        str(max_workers or np),
        "--out",
        str(out),
        "--startup-timeout-s",
        str(startup_s),
        "--heartbeat-timeout-ms",
        str(heartbeat_ms),
        "--deadline-s",
        str(timeout - 30),
        *extra,
    ]
    if chaos:
        cmd += ["--chaos", chaos]
    cmd += ["--", sys.executable, str(script), *[str(a) for a in args]]
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    full_env.update(env or {})
    proc = subprocess.run(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=full_env
    )
    return proc.returncode, proc.stdout, out


@pytest.fixture
def ranks(tmp_path):
    def run(np, script, *args, **kwargs):
        code, output, out = run_ranks(tmp_path, np, script, *args, **kwargs)
        if code != 0:
            pytest.fail(f"ringmaster-run --np {np} {script.name} exited {code}:\n{output[-6000:]}", pytrace=False)
        return output, out

    return run
