"""Elastic training on a DeviceMesh (ringmaster.torch.elastic.MeshRule, run_mesh, MeshState): the digits MLP
under FSDP2 on dp and tensor parallel on tp (examples/digits_fsdp_mesh_elastic.py, tp=2) under ringmaster-run
loses a worker, goes on with the mesh rebuilt over the survivors (resharded from its DCP checkpoint) and
ends with float64 weights equal to a one-process run's within 1e-9 relative, every sample once per epoch."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLES, run_ranks
from test_elastic import EPOCHS, assert_every_sample_once_per_epoch, weights

EXAMPLE = EXAMPLES / "digits_fsdp_mesh_elastic.py"
ARGS = ["--epochs", EPOCHS, "--step-delay-ms", 40, "--tp", 2]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One process, no mesh, no chaos: the plain digits run every mesh run must reproduce."""
    tmp = tmp_path_factory.mktemp("reference")
    code, output, out = run_ranks(tmp, 1, EXAMPLES / "digits_horovod_elastic.py", "--epochs", EPOCHS)
    assert code == 0, output[-4000:]
    return weights(out)


def _figures(output, capsys):
    lines = [line[line.index("FIGURE") :] for line in output.splitlines() if "FIGURE mesh-rebuild" in line]
    with capsys.disabled():
        for line in lines:
            print("\n" + line, flush=True)
    return lines


def test_fsdp_mesh_of_four_loses_a_worker_and_equals_one_process(tmp_path, reference, capsys):
    """4 workers, tp=2: a (2 x 2) mesh; worker rank 2 killed at step 6 leaves 3, so the mesh is rebuilt as
    (1 x 2) over ranks 0-1 and the third worker stands by to the end."""
    code, output, out = run_ranks(
        tmp_path,
        4,
        EXAMPLE,
        *ARGS,
        min_workers=2,
        chaos="kill@6:2",
        timeout=400,
        heartbeat_ms=90000,
        extra=["--checkpoint-dir", str(tmp_path / "ckpt")],
    )
    assert code == 0, output[-6000:]
    assert "mesh dp=2 x tp=2 over 4 of 4 workers" in output, output[-4000:]
    assert "mesh dp=1 x tp=2 over 2 of 3 workers (1 standing by)" in output, output[-4000:]
    got = weights(out)
    assert got.shape == reference.shape
    np.testing.assert_allclose(got, reference, rtol=1e-9, atol=1e-12)
    assert_every_sample_once_per_epoch(out)
    assert _figures(output, capsys), "no FIGURE line after the rebuild:\n" + output[-4000:]


def test_a_replacement_worker_takes_its_place_in_the_mesh_from_the_dcp_checkpoint(tmp_path, reference):
    """2 workers, tp=2, --min 1: one killed and a replacement added back to back; the world of one in between
    has no mesh (the survivor pauses below 2), and the newcomer loads its shards from the DCP checkpoint."""
    code, output, out = run_ranks(
        tmp_path,
        2,
        EXAMPLE,
        *ARGS,
        min_workers=1,
        max_workers=3,
        chaos="killadd@6:1",
        timeout=400,
        heartbeat_ms=90000,
        extra=["--checkpoint-dir", str(tmp_path / "ckpt")],
    )
    assert code == 0, output[-6000:]
    assert "replacement added" in output, output[-4000:]
    np.testing.assert_allclose(weights(out), reference, rtol=1e-9, atol=1e-12)
    assert_every_sample_once_per_epoch(out)


def test_a_worker_joining_a_mesh_with_a_standby_switches_at_the_step_boundary(tmp_path, reference):
    """3 workers, tp=2: a (1 x 2) mesh and a standby; a fourth worker added at step 6 is an orderly change
    (WorkerJoined): every member, the standby included, switches at rank 0's step boundary. The standby takes
    rank 0's commits by broadcast, and checks for the switch at each of them as the mesh workers do; before,
    it waited for a commit past the boundary that never came, until the runtime gave up waiting (10 s)."""
    code, output, out = run_ranks(
        tmp_path,
        3,
        EXAMPLE,
        *ARGS,
        min_workers=2,
        max_workers=4,
        chaos="add@6:1",
        timeout=400,
        heartbeat_ms=90000,
        extra=["--checkpoint-dir", str(tmp_path / "ckpt")],
    )
    assert code == 0, output[-6000:]
    assert "mesh dp=1 x tp=2 over 2 of 3 workers (1 standing by)" in output, output[-4000:]
    assert "mesh dp=2 x tp=2 over 4 of 4 workers" in output, output[-4000:]
    assert "while waiting for the boundary" not in output, output[-6000:]
    np.testing.assert_allclose(weights(out), reference, rtol=1e-9, atol=1e-12)
    assert_every_sample_once_per_epoch(out)


def test_workers_whose_ranks_moved_take_their_new_places_in_a_mesh_of_the_same_shape(tmp_path, reference):
    """4 workers, tp=2: rank 1 killed and a replacement added back to back, so the (2 x 2) mesh comes back with
    the old rank 2 as rank 1. A DeviceMesh equals any other of its shape, so DTensor's caches would hand that
    worker the first generation's mesh and a tp group it is not in: every worker must train to the end."""
    code, output, out = run_ranks(
        tmp_path,
        4,
        EXAMPLE,
        *ARGS,
        min_workers=2,
        chaos="killadd@6:1",
        timeout=400,
        heartbeat_ms=90000,
        extra=["--checkpoint-dir", str(tmp_path / "ckpt")],
    )
    assert code == 0, output[-6000:]
    assert "exited with status" not in output, output[-6000:]
    assert output.count("mesh dp=2 x tp=2 over 4 of 4 workers") >= 2, output[-4000:]
    np.testing.assert_allclose(weights(out), reference, rtol=1e-9, atol=1e-12)
    assert_every_sample_once_per_epoch(out)


def test_a_mesh_job_without_a_checkpoint_directory_is_refused(tmp_path):
    code, output, _ = run_ranks(tmp_path, 2, EXAMPLE, *ARGS, min_workers=2, timeout=120)
    assert code != 0
    assert "needs RINGMASTER_CHECKPOINT_DIR" in output, output[-3000:]


def test_a_world_of_one_cannot_hold_a_tp2_mesh(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--tp", "2", "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "MeshRule(tp=2) needs at least 2 workers" in proc.stdout, proc.stdout[-3000:]
