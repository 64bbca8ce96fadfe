"""One NCCL per process, found at run time (worker-runtime/nccl/gpu_libraries.h): the native module links no
libnccl, so it imports in a process whose NCCL is old (the cu12 2.21 wheel: no ncclCommShrink, no
ncclCommRevoke) and falls back to full rebuilds with one warning line -- where a module linking NCCL fails
at import with "undefined symbol: ncclCommShrink" -- and after `import torch` it uses torch's NCCL, the one
copy in the process. The old NCCL is build/deps/nccl-old/libnccl.so.2 (make deps: NCCL_OLD_WHEEL)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, WORKERS

OLD_NCCL = ROOT / "build" / "deps" / "nccl-old" / "libnccl.so.2"
FALLBACK = "lacks ncclCommShrink (2.27.3) ncclCommRevoke (2.28.7): a lost peer rebuilds the communicator from scratch"

# Prints what the native module reports, the libnccl files mapped into the process, and whether torch is loaded.
PROBE = """
import ctypes, json, os, sys
if sys.argv[1] == "preload":
    ctypes.CDLL(sys.argv[2], mode=os.RTLD_GLOBAL)
elif sys.argv[1] == "torch":
    import torch
from ringmaster import _native
info = _native.nccl_info()
maps = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libnccl.so" in line})
print("PROBE " + json.dumps({"info": info, "maps": maps, "torch": "torch" in sys.modules}))
"""


@pytest.fixture(scope="module")
def old_nccl():
    if not OLD_NCCL.exists():
        pytest.fail(f"{OLD_NCCL} is missing: run `make deps` (it unpacks NCCL_OLD_WHEEL there)", pytrace=False)
    return str(OLD_NCCL.resolve())


def clean_env(**extra):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RINGMASTER_EMULATED_GPUS", "RINGMASTER_NCCL_LIBRARY", "LD_PRELOAD")
    }
    env.update(extra)
    return env


def probe(mode, arg="", **env):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode, arg], capture_output=True, text=True, timeout=120, env=clean_env(**env)
    )
    assert proc.returncode == 0, f"the probe ({mode}) failed:\n{proc.stdout}\n{proc.stderr}"
    line = next(x for x in proc.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line[len("PROBE ") :]), proc.stderr


def check_old(result, stderr, path):
    info = result["info"]
    assert "error" not in info, info
    assert (info["version"], info["version_code"]) == ("2.21.5", 22105), info
    assert os.path.realpath(info["path"]) == path, info
    assert (info["shrink"], info["revoke"], info["grow"], info["emulated"]) == (False, False, False, False), info
    assert [os.path.realpath(m) for m in result["maps"]] == [path], result["maps"]  # one NCCL in the process
    assert not result["torch"]
    warnings = [line for line in stderr.splitlines() if "ncclCommShrink" in line]
    assert len(warnings) == 1 and FALLBACK in warnings[0] and "NCCL 2.21.5" in warnings[0], stderr


def test_the_already_loaded_old_nccl_serves_the_module_with_one_warning(old_nccl):
    result, stderr = probe("preload", old_nccl)
    check_old(result, stderr, old_nccl)


def test_a_configured_old_nccl_serves_the_module_with_one_warning(old_nccl):
    result, stderr = probe("none", RINGMASTER_NCCL_LIBRARY=old_nccl)
    check_old(result, stderr, old_nccl)


def test_a_configured_nccl_wins_when_only_torchs_cuda_runtime_is_loaded(old_nccl):
    # A library from torch's site-packages in the process (its CUDA runtime, as the GPU kit hands the programs)
    # used to make the search guess torch's wheel NCCL ahead of the configured one: on an H200 its 2.28.9 served
    # instead of the configured 2.30.7. A configured path wins now; only an NCCL already loaded beats it.
    import torch

    cudart = os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cu13", "lib", "libcudart.so.13")
    assert os.path.exists(cudart), f"{cudart} is missing: torch's CUDA wheels (make deps) bring it"
    result, stderr = probe("preload", os.path.realpath(cudart), RINGMASTER_NCCL_LIBRARY=old_nccl)
    check_old(result, stderr, old_nccl)


def test_after_import_torch_the_module_uses_torchs_nccl():
    import torch

    result, stderr = probe("torch")
    info = result["info"]
    assert "error" not in info, info
    want = os.path.realpath(
        os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "nccl", "lib", "libnccl.so.2")
    )
    assert os.path.realpath(info["path"]) == want, info
    assert [os.path.realpath(m) for m in result["maps"]] == [want], result["maps"]
    assert info["shrink"] and info["revoke"], info  # torch 2.15's NCCL (2.30.7) has them
    assert "ncclCommShrink" not in stderr, stderr


def test_a_two_rank_cpu_job_runs_beside_the_old_nccl(ranks, old_nccl):
    output, _ = ranks(2, WORKERS / "old_nccl_worker.py", old_nccl)
    assert output.count("NCCL 2.21.5 without Shrink/Revoke, backend gloo, allreduce correct") == 2, output[-3000:]


def test_a_missing_nccl_or_cuda_runtime_is_reported_never_a_crash(tmp_path):
    # Emulation asked for with its library missing: nothing else is tried, on any machine.
    missing = str(tmp_path / "libringmaster_emulated_gpu.so")
    code = (
        "import json; from ringmaster import _native; "
        "print('PROBE ' + json.dumps({'nccl': _native.nccl_info(), 'cuda': _native.cuda_info()}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(RINGMASTER_EMULATED_GPUS="2", RINGMASTER_GPU_EMULATION_LIBRARY=missing),
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("PROBE "))[len("PROBE ") :])
    for kind in ("nccl", "cuda"):
        assert list(result[kind]) == ["error"], result
        assert missing in result[kind]["error"] and "RINGMASTER_GPU_EMULATION_LIBRARY" in result[kind]["error"], result
