"""Elastic training under chaos, through the Horovod API and through DDP on the "ringmaster" backend: the
digits example under ringmaster-run (a worker killed, rank 0 killed, a scale-up, two changes back to
back) ends with float64 weights equal to a one-process run's within 1e-9 relative, and every sample id
once per epoch. A suspended job (the operator's empty generation) stops at one commit after rank 0's final
checkpoint and resumes from exactly that step."""

import collections
import json
import os
import re
import socket
import subprocess
import sys
import time

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


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _publish(path, generation, reason, workers):
    """Writes the membership record the operator would publish (status.membership's shape) atomically:
    `workers` is [(worker id, store port)] in rank order; rank 0's store coordinates."""
    doc = {
        "generation": generation,
        "worldSize": len(workers),
        "pods": len(workers),
        "coordinator": f"127.0.0.1:{workers[0][1]}" if workers else "",
        "members": [
            {"pod": w, "uid": f"uid-{w}-{generation}", "rank": r, "address": "127.0.0.1", "node": "local"}
            for r, (w, _) in enumerate(workers)
        ],
        "reason": reason,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def _start(tmp_path, run, workers, membership, ckpt, out):
    """The digits example on each of `workers`, as a pod runs it (the membership from a record, not a launcher);
    {worker id: (process, log path)}."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RINGMASTER_")}
    out.mkdir(parents=True, exist_ok=True)
    procs = {}
    for wid, port in workers:
        env = dict(
            base,
            PYTHONUNBUFFERED="1",
            OMP_NUM_THREADS="1",
            RINGMASTER_MEMBERSHIP_FILE=str(membership),
            RINGMASTER_WORKER_ID=wid,
            RINGMASTER_SECRET="suspend-test",
            RINGMASTER_STORE_PORT=str(port),
            RINGMASTER_HEALTH_PORT="0",
            RINGMASTER_CHECKPOINT_DIR=str(ckpt),
            RINGMASTER_OUT=str(out),
        )
        log = tmp_path / f"{run}.{wid}.log"
        with open(log, "w") as f:
            cmd = [sys.executable, str(EXAMPLES / "digits_horovod_elastic.py"), *map(str, ARGS)]
            procs[wid] = (subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env), log)
    return procs


def _finish(procs, timeout=180):
    """{worker id: (exit code, output)} once every process has exited (killed after `timeout` s)."""
    ended = {}
    for wid, (proc, log) in procs.items():
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        ended[wid] = (code, log.read_text())
    return ended


def _checkpoint_steps(ckpt):
    return sorted(int(d.name[len("step-") :]) for d in ckpt.glob("step-*")) if ckpt.exists() else []


def test_a_suspended_job_resumes_at_the_step_it_stopped(tmp_path, reference):
    """The operator suspends a running job (spec.runPolicy.suspend, or Kueue evicting it): it publishes a
    generation with no members, reason Suspended. Both workers commit up to one step boundary and exit 0 (the
    Python path: state.commit() -> superseded() -> join() False -> WorkerRemoved), rank 0 only once its final
    checkpoint of that step is saved. Admitted again (generation 3, new processes on the same checkpoint
    directory), the job loads that very step and ends with the weights of an uninterrupted run."""
    membership, ckpt = tmp_path / "membership.json", tmp_path / "ckpt"
    first = [("w0", _free_port()), ("w1", _free_port())]
    _publish(membership, 1, "JobStarted", first)
    procs = _start(tmp_path, "first", first, membership, ckpt, tmp_path / "out-first")
    deadline = time.monotonic() + 150
    # Rank 0 offers every commit to its checkpoint writer: a step directory says how far training is.
    while not any(s >= 8 for s in _checkpoint_steps(ckpt)):
        exited = {w: p.poll() for w, (p, _) in procs.items() if p.poll() is not None}
        if exited or time.monotonic() > deadline:
            ended = _finish(procs, timeout=1)
            pytest.fail(f"the job did not reach step 8 (exited: {exited}):\n" + ended["w0"][1][-3000:])
        time.sleep(0.02)
    _publish(membership, 2, "Suspended", [])
    ended = _finish(procs)
    for wid, (code, output) in ended.items():
        assert code == 0, f"{wid} exited {code}:\n{output[-3000:]}"
    saved = re.search(r"suspended at step (\d+): final checkpoint saved \((\d+) bytes", ended["w0"][1])
    assert saved, "rank 0 did not save a final checkpoint:\n" + ended["w0"][1][-3000:]
    step = int(saved.group(1))
    assert f"not in generation 2: leaving with step {step} committed" in ended["w1"][1], ended["w1"][1][-3000:]
    assert "final checkpoint" not in ended["w1"][1]
    assert "FINISHED" not in ended["w0"][1], "the job finished before it was suspended: suspend it earlier"
    assert _checkpoint_steps(ckpt)[-1] == step

    second = [("w0", _free_port()), ("w1", _free_port())]
    _publish(membership, 3, "JobStarted", second)
    out = tmp_path / "out-second"
    ended = _finish(_start(tmp_path, "second", second, membership, ckpt, out))
    for wid, (code, output) in ended.items():
        assert code == 0, f"{wid} exited {code}:\n{output[-3000:]}"
        assert f"loaded checkpoint step {step} " in output, output[-3000:]
        assert re.search(rf"restored step {step} \(", output), output[-3000:]
    np.testing.assert_allclose(np.loadtxt(out / "weights.w0.txt"), reference, rtol=1e-9, atol=1e-12)
