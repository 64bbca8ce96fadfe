"""The "ringmaster" backend's asynchronous collectives (ringmaster/_pg_work.py): FSDP2 over it stays
bit-identical to FSDP2 over torch's Gloo (DDP's comparison is test_ddp.py), and a collective that fails in the
background reaches its caller as HorovodInternalError — from wait(), from its Future, and from loss.backward()
when it was one of DDP's bucket allreduces — without hanging or crashing the process."""

import pytest

from conftest import WORKERS, run_ranks


def _read(output, out, prefix, backend, np_):
    files = [out / f"{prefix}.{backend}.{r}.txt" for r in range(np_)]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        pytest.fail(f"{backend}: no {missing}; launcher output:\n{output[-4000:]}", pytrace=False)
    return [f.read_text() for f in files]


@pytest.mark.parametrize("np_", [2, 4])
def test_fsdp2_over_ringmaster_is_bit_identical_to_gloo(ranks, tmp_path, np_):
    results = {}
    for backend in ("gloo", "ringmaster"):
        out = tmp_path / backend
        output, _ = ranks(np_, WORKERS / "fsdp_compare_worker.py", backend, out, np_, env={"GLOO_SOCKET_IFNAME": "lo"})
        results[backend] = _read(output, out, "fsdp", backend, np_)
    for r in range(np_):
        assert results["ringmaster"][r] == results["gloo"][r], f"rank {r}: weights differ from FSDP2 over Gloo"
    assert len(set(results["ringmaster"])) == 1, "ranks ended with different weights"


@pytest.mark.parametrize("mode,parts", [("wait", ("wait", "wait_again", "future")), ("backward", ("backward",))])
def test_a_failed_async_collective_raises_horovod_internal_error_where_it_is_waited_for(tmp_path, mode, parts):
    out = tmp_path / "async"
    code, output, _ = run_ranks(tmp_path, 2, WORKERS / "async_failure_worker.py", mode, out, min_workers=1, timeout=180)
    got = {}
    for part in parts:
        f = out / f"async.{part}.txt"
        if not f.exists():
            pytest.fail(f"rank 0 wrote no {f.name} (exit {code}); launcher output:\n{output[-4000:]}", pytrace=False)
        got[part] = f.read_text()
    assert got == {p: "HorovodInternalError" for p in parts}, f"{got}; launcher output:\n{output[-3000:]}"
