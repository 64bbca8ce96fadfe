"""Horovod's own elastic script shape (ElasticSampler(dataset, shuffle=True, seed=42) with
DataLoader(batch_size=b, sampler=...), op=Average, record_batch, a commit every 2 batches) under
ringmaster-run on 4 workers with two kills (rank 1, then rank 0): every sample once per epoch, and the
weights equal to one process training the same sequence of steps within 1e-9.

The choice: 529 samples, local batch 8, 3 epochs, the kills at committed steps 3 and 6 (both in epoch 1:
worlds of 4, 3, then 2). With op=Average a step averages the ranks' mean losses, so it equals one process's
mean over the step's global batch when the world size divides it into equal local batches -- every step
but an epoch's last, partial one, which the reference averages the same way. 529 = 33*16 + 1 = 22*24 + 1
is the impossible case for a world of 2 and of 3 with all samples left (0 < 529 mod size*8 < size), so
some pass borrows samples of the next epoch: epoch 3 runs in the world of 2 and borrows 1 unless epoch 2's
last pass borrowed (then epoch 3 starts with fewer than 529).
"""

import collections
import importlib.util
import json

import numpy as np

from conftest import WORKERS

SAMPLES, BATCH, EPOCHS = 529, 8, 3
WORKER = WORKERS / "horovod_sampler_worker.py"
ARGS = ["--samples", SAMPLES, "--batch-size", BATCH, "--epochs", EPOCHS, "--commit-every", 2, "--step-delay-ms", 30]


def worker_module():
    spec = importlib.util.spec_from_file_location("horovod_sampler_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def samples_by_epoch(out):
    seen = collections.defaultdict(list)
    for line in (out / "samples.log").read_text().splitlines():
        if line.strip():
            epoch, sample = line.split()
            seen[int(epoch)].append(int(sample))
    return seen


def test_horovods_script_with_two_kills_trains_every_sample_once_and_matches_one_process(ranks):
    output, out = ranks(4, WORKER, *ARGS, min_workers=2, chaos="kill@3:1,kill@6:0", timeout=420)
    assert output.count("chaos: SIGKILL") == 2, output[-4000:]
    # rank 0 writes the history when it finishes; a rank left with batches the others lack never does
    assert (out / "history.json").exists(), "rank 0 did not finish:\n" + output[-4000:]
    history = json.loads((out / "history.json").read_text())
    sizes = [len(step) for step in history]
    assert sizes[0] == 4 and 3 in sizes and sizes[-1] == 2, f"the worlds were not 4, 3, 2: {sorted(set(sizes))}"
    assert all(0 < len(ids) <= BATCH for step in history for ids in step), "a rank ran an empty or oversized batch"

    # every sample once per epoch, from the sample journal, which holds the history's samples
    seen = samples_by_epoch(out)
    trained = collections.Counter(i for step in history for ids in step for i in ids)
    assert trained == collections.Counter(i for samples in seen.values() for i in samples)
    for epoch in range(1, EPOCHS + 1):
        got = seen.pop(epoch, [])
        assert len(got) == len(set(got)), f"epoch {epoch}: samples trained twice"
        assert sorted(got) == list(range(SAMPLES)), f"epoch {epoch}: {SAMPLES - len(set(got))} samples missing"
    borrowed = seen.pop(EPOCHS + 1, [])
    assert len(borrowed) <= 1 and not seen, f"samples of epochs never run: {dict(seen)}, {borrowed}"
    assert "this pass also trains the first" in output, "no pass borrowed from the next epoch"

    # the weights: one process training the same steps
    got = np.loadtxt(out / "weights.txt")
    want = worker_module().replay(history, SAMPLES).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
