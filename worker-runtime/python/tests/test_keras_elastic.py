"""Elastic Keras under chaos: examples/keras_elastic.py (model.fit under hvd.elastic.run, float64) on 3 workers
under ringmaster-run with a worker killed, a worker added and rank 0 killed. Every survivor's final weights
equal a one-process run's of the same example within 1e-9 relative, every sample is trained exactly once
per epoch (samples.log, from the sample journal), and the recovery after each kill is reported."""

import collections
import re

import numpy as np
import pytest

from conftest import EXAMPLES

EXAMPLE = EXAMPLES / "keras_elastic.py"
EPOCHS = 2
NUM_SAMPLES = 1797  # sklearn's digits
ARGS = ["--epochs", EPOCHS, "--step-delay-ms", 40]
ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}
# 29 steps an epoch (global batch 64): a kill in epoch 0 (world 3 -> 2), a worker added (2 -> 3), rank 0
# killed in epoch 1 (3 -> 2).
CHAOS = "kill@6:2,add@20:1,kill@40:0"


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
    assert {e for e, _ in seen} == set(range(EPOCHS)), "samples of an epoch that never ran"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One process, no chaos: the weights every elastic run must reproduce."""
    from conftest import run_ranks

    tmp = tmp_path_factory.mktemp("reference")
    code, output, out = run_ranks(tmp, 1, EXAMPLE, "--epochs", EPOCHS, env=ENV)
    assert code == 0, output[-4000:]
    assert_every_sample_once_per_epoch(out)
    return np.loadtxt(out / "weights.txt")


def recovery_figures(output):
    """{generation: [seconds from detection to ready, per worker]} from the workers' "generation N ready"
    lines, and the first steps after a reset (seconds, including any retrace and the step's commit)."""
    ready = collections.defaultdict(list)
    pattern = (
        r"generation (\d+) ready: detect ([\d.]+)s rendezvous ([\d.]+)s communicator ([\d.]+)s \(\w+\) "
        r"restore ([\d.]+)s"
    )
    for m in re.finditer(pattern, output):
        ready[int(m.group(1))].append(round(sum(float(m.group(i)) for i in range(2, 6)), 3))
    first_steps = [float(s) for s in re.findall(r"first step after the reset: ([\d.]+)s", output)]
    return dict(ready), first_steps


def test_keras_fit_under_two_kills_and_a_scale_up_matches_one_process(ranks, reference):
    output, out = ranks(3, EXAMPLE, *ARGS, min_workers=2, max_workers=4, chaos=CHAOS, env=ENV, timeout=420)
    assert output.count("chaos: SIGKILL") == 2, output[-4000:]
    assert "WorkerJoined" in output, output[-4000:]
    survivors = sorted(out.glob("weights.w*.txt"))  # a worker writes its weights when it finishes
    assert len(survivors) == 2, f"expected the two survivors' weights, got {survivors}:\n{output[-4000:]}"

    for path in survivors:
        got = np.loadtxt(path)
        assert got.shape == reference.shape
        np.testing.assert_allclose(got, reference, rtol=1e-9, atol=1e-12, err_msg=path.name)
    assert_every_sample_once_per_epoch(out)

    ready, first_steps = recovery_figures(output)
    assert len(ready) >= 4, f"expected 4 generations, got {sorted(ready)}"
    print(f"\nrecovery (detect + rendezvous + communicator + restore), s, per generation: {ready}")
    print(f"first step after each reset, s: {first_steps}")
    assert all(max(times) < 30 for g, times in ready.items() if g > 1)
