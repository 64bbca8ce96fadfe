"""Model parallelism over the "ringmaster" backend equals one process (float64, within 1e-9):
FSDP2 (fully_shard) on the dp dimension of a (dp=2 x tp=2) DeviceMesh with tensor parallel layers on tp,
three SGD steps on 4 ranks; and a 2-stage pipeline (torch.distributed.pipelining, ScheduleGPipe, 4
microbatches), three steps on 2 ranks."""

import subprocess
import sys

import pytest
import torch

from conftest import WORKERS

TOLERANCE = 1e-9


def _reference(script, out, *args):
    proc = subprocess.run(
        [sys.executable, str(WORKERS / script), "none", str(out), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        pytest.fail(f"the one-process run of {script} failed:\n{proc.stdout[-4000:]}", pytrace=False)


def _load(output, path):
    if not path.exists():
        pytest.fail(f"no {path.name}; launcher output:\n{output[-4000:]}", pytrace=False)
    return torch.load(path)


def _assert_close(got, want, what):
    assert sorted(got) == sorted(want), f"{what}: parameters {sorted(got)} != {sorted(want)}"
    for k in want:
        diff = (got[k] - want[k]).abs().max().item()
        assert diff <= TOLERANCE, f"{what}: {k} differs from one process by {diff}"


def test_fsdp2_on_dp_of_a_dp_by_tp_mesh_equals_one_process(ranks, tmp_path):
    out = tmp_path / "fsdp"
    _reference("fsdp_mesh_worker.py", out, 1)
    want = torch.load(out / "fsdp.none.0.pt")["weights"]
    output, _ = ranks(4, WORKERS / "fsdp_mesh_worker.py", "ringmaster", out, 4)
    for r in range(4):
        _assert_close(_load(output, out / f"fsdp.ringmaster.{r}.pt")["weights"], want, f"rank {r}")


def test_two_stage_gpipe_pipeline_equals_one_process(ranks, tmp_path):
    out = tmp_path / "pipe"
    _reference("pipeline_worker.py", out)
    want = torch.load(out / "pipe.none.0.pt")
    output, _ = ranks(2, WORKERS / "pipeline_worker.py", "ringmaster", out)
    got = {}
    for r in range(2):
        got.update(_load(output, out / f"pipe.ringmaster.{r}.pt"))
    _assert_close(got, want, "pipeline")
