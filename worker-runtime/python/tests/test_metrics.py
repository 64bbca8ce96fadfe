"""In one process (a world of one, no launcher): what a PyTorch script's worker exports on /metrics. The
ElasticSampler counts this rank's samples of every committed step into ringmaster_worker_samples_total (the
dashboard's samples per second); a step handed out but not committed is not counted."""

import re
import urllib.request

import pytest
import torch

import ringmaster.torch as hvd
from ringmaster.torch import _context


@pytest.fixture(scope="module", autouse=True)
def world_of_one():
    hvd.init()
    yield
    hvd.shutdown()


def scrape():
    port = _context.context().session.metrics_port()
    assert port > 0, "the session serves no /metrics"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


def value(text, family):
    match = re.search(rf"^{family} ([0-9.e+]+)$", text, re.MULTILINE)
    assert match, f"{family} is not exported:\n{text}"
    return float(match.group(1))


def test_committed_steps_count_their_samples():
    data = list(range(20))
    net = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    sampler = hvd.elastic.ElasticSampler(data, batch_size=8, seed=1)
    state = hvd.elastic.TorchState(net, optimizer, sampler=sampler, epoch=0)
    before = value(scrape(), "ringmaster_worker_samples_total")

    steps = iter(sampler)
    for _ in range(2):  # two committed steps of 8
        next(steps)
        state.commit()
    assert value(scrape(), "ringmaster_worker_samples_total") == before + 16

    next(steps)  # handed out (the last 4 of the epoch), never committed
    assert value(scrape(), "ringmaster_worker_samples_total") == before + 16
