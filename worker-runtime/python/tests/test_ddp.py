"""DistributedDataParallel over the "ringmaster" backend gives bit-identical weights to DDP over torch's own
Gloo backend, on the same seed and world size (unmodified DDP; only the backend name differs)."""
import pytest

from conftest import WORKERS


@pytest.mark.parametrize("np_", [2, 4])
def test_ddp_over_ringmaster_is_bit_identical_to_gloo(ranks, tmp_path, np_):
    results = {}
    for backend in ("gloo", "ringmaster"):
        out = tmp_path / backend
        ranks(np_, WORKERS / "ddp_compare_worker.py", backend, out, env={"GLOO_SOCKET_IFNAME": "lo"})
        results[backend] = [(out / f"ddp.{backend}.{r}.txt").read_text() for r in range(np_)]
    for r in range(np_):
        assert results["ringmaster"][r] == results["gloo"][r], f"rank {r}: weights differ from DDP over Gloo"
    assert len(set(results["ringmaster"])) == 1, "ranks ended with different weights"
