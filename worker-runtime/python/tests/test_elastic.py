"""Elastic training under chaos, through the Horovod API and through DDP on the "ringmaster" backend: the
digits example under ringmaster-run (a worker killed, rank 0 killed, a scale-up, two changes back to
back) ends with float64 weights equal to a one-process run's within 1e-9 relative, and every sample id
once per epoch."""

import collections

import numpy as np
import pytest

from conftest import EXAMPLES

EPOCHS = 2
ARGS = ["--epochs", EPOCHS, "--step-delay-ms", 40]
NUM_SAMPLES = 1797  # sklearn's digits


def weights(out):
    return np.loadtxt(out / "weights.txt")


def assert_every_sample_once_per_epoch(out):
    seen = collections.Counter()
    for line in (out / "samples.log").read_text().split("\n"):
        if line.strip():
            epoch, sample = line.split()
            seen[(int(epoch), int(sample))] += 1
    repeated = [k for k, c in seen.items() if c > 1]
    assert not repeated, f"samples trained twice: {repeated[:10]}"
    for epoch in range(EPOCHS):
        have = {s for (e, s) in seen if e == epoch}
        assert have == set(range(NUM_SAMPLES)), f"epoch {epoch}: {NUM_SAMPLES - len(have)} samples missing"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One process, no chaos: the weights every elastic run must reproduce."""
    from conftest import run_ranks

    tmp = tmp_path_factory.mktemp("reference")
    code, output, out = run_ranks(tmp, 1, EXAMPLES / "digits_horovod_elastic.py", "--epochs", EPOCHS)
    assert code == 0, output[-4000:]
    assert_every_sample_once_per_epoch(out)
    return weights(out)


SCENARIOS = {
    "worker_killed": dict(np=4, min_workers=2, chaos="kill@6:2"),
    "rank0_killed": dict(np=3, min_workers=2, chaos="kill@6:0"),
    "scale_up": dict(np=2, max_workers=4, chaos="add@6:2"),
    "two_changes_back_to_back": dict(np=3, min_workers=2, max_workers=4, chaos="killadd@6:1"),
}


@pytest.mark.parametrize("example", ["digits_horovod_elastic.py", "digits_ddp_elastic.py"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_elastic_run_matches_one_process(ranks, reference, example, scenario):
    s = dict(SCENARIOS[scenario])
    np_ = s.pop("np")
    output, out = ranks(np_, EXAMPLES / example, *ARGS, **s)
    assert "generation" in output
    got = weights(out)
    assert got.shape == reference.shape
    np.testing.assert_allclose(got, reference, rtol=1e-9, atol=1e-12)
    assert_every_sample_once_per_epoch(out)


def test_a_job_that_loses_every_worker_resumes_from_its_checkpoint(tmp_path, reference):
    """Every worker killed: the launcher gives up; a new launch with the same checkpoint directory loads the
    newest complete checkpoint (the commits rank 0 offered to the runtime's writer) and ends with the same
    weights as an uninterrupted run."""
    from conftest import run_ranks

    ckpt = tmp_path / "ckpt"
    extra = ["--checkpoint-dir", str(ckpt), "--chaos-gap-ms", "300"]
    code, output, _ = run_ranks(
        tmp_path / "first",
        2,
        EXAMPLES / "digits_horovod_elastic.py",
        *ARGS,
        min_workers=1,
        chaos="kill@15:0,kill@15:0",
        extra=extra,
    )
    assert code != 0, "the first launch should have lost every worker:\n" + output[-3000:]
    assert any(ckpt.iterdir()), "no checkpoint was written"
    code, output, out = run_ranks(
        tmp_path / "second", 2, EXAMPLES / "digits_horovod_elastic.py", *ARGS, extra=["--checkpoint-dir", str(ckpt)]
    )
    assert code == 0, output[-4000:]
    resumed = [line for line in output.splitlines() if "loaded checkpoint step" in line]
    assert resumed, "the second launch did not load the checkpoint:\n" + output[-3000:]
    assert int(resumed[0].split("loaded checkpoint step ")[1].split()[0]) >= 10
    np.testing.assert_allclose(weights(out), reference, rtol=1e-9, atol=1e-12)
