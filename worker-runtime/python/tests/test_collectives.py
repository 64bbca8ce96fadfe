"""Every collective and process-set call against NumPy on 1, 2 and 4 ranks (workers/collectives_worker.py)."""

import pytest

from conftest import WORKERS


@pytest.mark.parametrize("np_", [1, 2, 4])
def test_collectives_match_numpy(ranks, np_):
    output, _ = ranks(np_, WORKERS / "collectives_worker.py", np_)
    assert output.count("every collective matches NumPy") == np_, output[-3000:]
