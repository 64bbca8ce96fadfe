"""The "ringmaster" torch.distributed backend against torch's own Gloo backend, call by call, on 2 and 4
ranks: point-to-point (send/recv, isend/irecv with tags, batch_isend_irecv), broadcast, all_reduce (four
ops, two dtypes), reduce, all_gather, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single
(even and uneven splits), gather, scatter, barrier; on the world, on new_group subgroups, on split_group
splits and on a (dp x tp) DeviceMesh's dimension groups. The same script (tests/workers/dist_calls_worker.py)
runs once per backend; every rank's results must be equal, dtype, shape and value."""

import pytest
import torch

from conftest import WORKERS


def _results(output, out, backend, np_):
    files = [out / f"calls.{backend}.{r}.pt" for r in range(np_)]
    missing = [f.name for f in files if not f.exists()]
    if missing:
        pytest.fail(f"{backend}: no {missing}; launcher output:\n{output[-4000:]}", pytrace=False)
    return [torch.load(f) for f in files]


@pytest.mark.parametrize("np_", [2, 4])
def test_every_call_equals_gloo(ranks, tmp_path, np_):
    results = {}
    for backend in ("gloo", "ringmaster"):
        out = tmp_path / backend
        output, _ = ranks(np_, WORKERS / "dist_calls_worker.py", backend, out, np_, env={"GLOO_SOCKET_IFNAME": "lo"})
        results[backend] = _results(output, out, backend, np_)
    for r in range(np_):
        gloo, ours = results["gloo"][r], results["ringmaster"][r]
        assert len(gloo) > 90, f"rank {r}: only {len(gloo)} results: the script stopped covering the calls"
        assert sorted(ours) == sorted(gloo), f"rank {r}: different calls ran"
        for key, want in gloo.items():
            got = ours[key]
            assert (got.dtype, tuple(got.shape)) == (want.dtype, tuple(want.shape)), f"rank {r}: {key}"
            assert torch.equal(got, want), f"rank {r}: {key}: {got.flatten()[:6]} != gloo's {want.flatten()[:6]}"
