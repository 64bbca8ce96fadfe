"""Horovod's form of the ElasticSampler in one process: the sharding rule (sharding.py) for many
(samples, world, local batch, processed) combinations, and the sampler's bookkeeping with simulated ranks
(shard(rank, size) stands in for the world) through resizes and rollbacks -- every sample once per epoch,
every rank the same number of batches. Then the stock script in a world of one."""

import itertools
import random

import pytest
import torch

import ringmaster.torch as hvd
from ringmaster.torch.elastic import ElasticSampler
from ringmaster.torch.elastic.sampler import GlobalBatchSampler, ShardSampler
from ringmaster.torch.elastic.sharding import borrow_count, epoch_order, make_plan


def batches(n, b):
    return -(-n // b)


def equal_counts_possible(remaining, size, batch):
    """Whether some split of `remaining` samples over `size` ranks gives every rank K batches of `batch`:
    each share in [(K-1)*batch + 1, K*batch], so the sum anywhere in size times that range."""
    return remaining == 0 or any(
        size * ((k - 1) * batch + 1) <= remaining <= size * k * batch for k in range(1, remaining + 1)
    )


def test_the_impossibility_condition_by_enumeration():
    """The rule borrows exactly when no split at all gives equal batch counts (every split enumerated)."""
    for size, batch in itertools.product(range(1, 4), range(1, 5)):
        for remaining in range(0, 13):
            exists = any(
                sum(split) == remaining and len({batches(n, batch) for n in split}) == 1
                for split in itertools.product(range(remaining + 1), repeat=size)
            )
            assert exists == equal_counts_possible(remaining, size, batch), (remaining, size, batch)
            assert (borrow_count(remaining, size, batch) > 0) == (not exists), (remaining, size, batch)


def check_plan(rest, following, size, batch, drop_last=False):
    plan = make_plan(rest, lambda: following, size, batch, drop_last)
    where = (len(rest), size, batch, drop_last)
    shares = [plan.share(k) for k in range(size)]
    # the shares are the plan, each item once (disjoint), and the plan is the rest in order, then borrowed
    assert sorted(itertools.chain(*shares)) == sorted(plan.items), where
    assert plan.items[: plan.own] == rest[: plan.own], where
    assert plan.items[plan.own :] == following[: plan.borrowed], where
    counts = {batches(len(s), batch or 1) for s in shares}
    assert len(counts) == 1, f"{where}: batch counts {[batches(len(s), batch or 1) for s in shares]}"
    if drop_last:
        assert plan.borrowed == 0 and plan.own == len(rest) - len(rest) % (size * batch), where
        assert all(len(s) % batch == 0 for s in shares), where
    elif batch is None:
        assert len({len(s) for s in shares}) == 1 and plan.borrowed < size, where
    else:
        assert plan.own == len(rest), f"{where}: samples left out"
        assert plan.borrowed == (
            0 if equal_counts_possible(len(rest), size, batch) else size - len(rest) % (size * batch)
        ), where
        # step j trains the next size*batch items of the plan: the plan's order is the global batches' order
        for j in range(batches(len(shares[0]), batch)):
            step = set(itertools.chain(*(s[j * batch : (j + 1) * batch] for s in shares)))
            assert step == set(plan.items[j * size * batch : (j + 1) * size * batch]), (where, j)
    return plan


@pytest.mark.parametrize("num_samples", [0, 1, 2, 5, 7, 8, 15, 16, 17, 23, 31, 33, 64, 97])
def test_the_sharding_rule(num_samples):
    rng = random.Random(num_samples)
    borrowed = 0
    for size, batch in itertools.product(range(1, 7), list(range(1, 10)) + [None]):
        order = epoch_order(num_samples, seed=5, epoch=1, shuffle=True)
        following = epoch_order(num_samples, seed=5, epoch=2, shuffle=True) * 6  # room to borrow (tiny N)
        for done in (0, num_samples // 3, num_samples - 1, num_samples):
            processed = set(rng.sample(order, max(0, done)))
            rest = [i for i in order if i not in processed]
            borrowed += check_plan(rest, following, size, batch).borrowed > 0
            if batch is not None:
                check_plan(rest, following, size, batch, drop_last=True)
    assert num_samples < 2 or borrowed, "no combination borrowed: the test does not reach the rule"


def test_too_small_a_next_epoch_is_a_clear_error():
    with pytest.raises(ValueError, match="twice as many samples as workers"):
        make_plan([0], lambda: [1], size=4, batch=2)


# -- the sampler, ranks simulated with shard() ---------------------------------------------------------


def tagged(sampler, batch_idx, batch):
    """(epoch, id) of this rank's batch `batch_idx` (the plan says which ids it borrowed from the next epoch)."""
    plan, rank = sampler._plan, sampler._rank
    start = batch_idx * batch
    items = [plan.index(rank, p) for p in range(start, min(start + batch, plan.share_length(rank)))]
    return [(sampler.epoch if i < plan.own else sampler.epoch + 1, plan.items[i]) for i in items]


def generation(dataset, size, state):
    samplers = [ElasticSampler(dataset, shuffle=True, seed=7) for _ in range(size)]
    for rank, sampler in enumerate(samplers):
        sampler.shard(rank, size, journal=False)
        if state is not None:
            sampler.load_state_dict(state)
    return samplers


def simulate(num_samples, batch, epochs, commit_every, rng, fail_p):
    """Trains `epochs` epochs the way Horovod's script does, every rank in lockstep; at random batches a
    failure rolls every rank back to the last commit and the rest goes on in a world of another size.
    Returns (the committed (epoch, id) trained, in order, the sizes of the worlds)."""
    dataset = list(range(num_samples))
    committed, pending, state, epoch = [], [], None, 1
    sizes = [rng.randint(1, 6)]
    while True:
        samplers = generation(dataset, sizes[-1], state)
        try:
            for epoch in range(epoch, epochs + 1):
                for s in samplers:
                    s.set_epoch(epoch)
                loaders = [torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=s) for s in samplers]
                assert len({len(loader) for loader in loaders}) == 1, "the ranks' loaders differ in length"
                for batch_idx, step in enumerate(itertools.zip_longest(*loaders)):
                    assert all(b is not None for b in step), f"batch {batch_idx}: some ranks have no batch"
                    for s, b in zip(samplers, step):
                        assert [i for _, i in tagged(s, batch_idx, batch)] == b.tolist()
                        pending += tagged(s, batch_idx, batch)
                    if rng.random() < fail_p:
                        raise RuntimeError("a worker died")
                    for s in samplers:
                        s.record_batch(batch_idx, batch)
                    if batch_idx % commit_every == 0:
                        states = [s.state_dict() for s in samplers]
                        assert all(st == states[0] for st in states), "the ranks' records differ"
                        state, committed, pending = states[0], committed + pending, []
            return committed + pending, sizes
        except RuntimeError:
            pending = []
            epoch = state["epoch"] if state is not None else 1
            sizes.append(rng.randint(1, 6))


def assert_every_sample_once_per_epoch(trained, num_samples, epochs, last_size):
    per_epoch = {}
    for epoch, sample in trained:
        per_epoch.setdefault(epoch, []).append(sample)
    for epoch in range(1, epochs + 1):
        assert sorted(per_epoch.pop(epoch, [])) == list(range(num_samples)), f"epoch {epoch}"
    extra = per_epoch.pop(epochs + 1, [])
    assert len(extra) == len(set(extra)) < last_size, f"the last pass borrowed {extra}"
    assert not per_epoch, f"samples of epochs never run: {sorted(per_epoch)}"


@pytest.mark.parametrize("seed", range(60))
def test_resizes_and_rollbacks_train_every_sample_once_per_epoch(seed):
    rng = random.Random(seed)
    num_samples, batch = rng.randint(12, 90), rng.randint(1, 8)
    epochs, commit_every = rng.randint(1, 3), rng.randint(1, 3)
    trained, sizes = simulate(num_samples, batch, epochs, commit_every, rng, fail_p=0.08)
    assert_every_sample_once_per_epoch(trained, num_samples, epochs, sizes[-1])


def test_the_local_batch_is_learned_from_the_loader():
    """Before any record_batch: len() and iter() through DataLoader(batch_size=b) learn b, so a world of 4
    with 17 samples and b=2 (17 = 4*4 + 1, b divides 4) borrows 3 and every rank runs 3 batches."""
    dataset = list(range(17))
    samplers = generation(dataset, 4, None)
    loaders = [torch.utils.data.DataLoader(dataset, batch_size=2, sampler=s) for s in samplers]
    assert [len(loader) for loader in loaders] == [3, 3, 3, 3]
    assert all(s.batch_size == 2 and not s.drop_last for s in samplers)
    assert [len(list(loader)) for loader in loaders] == [3, 3, 3, 3]
    assert samplers[0]._plan.borrowed == 3


def test_a_plain_loop_without_the_loader_gets_equal_shares():
    samplers = generation(list(range(10)), 4, None)
    assert [len(list(iter(s))) for s in samplers] == [3, 3, 3, 3]  # 10 + 2 borrowed
    assert all(s.batch_size is None for s in samplers)


def test_shuffle_false_deals_the_samples_in_order():
    samplers = [ElasticSampler(list(range(10)), shuffle=False) for _ in range(2)]
    for rank, s in enumerate(samplers):
        s.shard(rank, 2, journal=False)
    assert [list(s) for s in samplers] == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]


def test_set_epoch_keeps_a_resumed_epoch_and_takes_the_borrowed_into_the_next():
    s = generation(list(range(17)), 4, None)[0]
    s.set_epoch(1)
    s.processed_indices, s.ahead_indices = {1, 2}, {3}
    s.set_epoch(1)  # the top of a resumed epoch: progress kept
    assert (s.processed_indices, s.ahead_indices) == ({1, 2}, {3})
    s.set_epoch(2)  # the next epoch starts with what the last pass borrowed from it
    assert (s.processed_indices, s.ahead_indices) == ({3}, set())
    s.set_epoch(5)
    assert (s.processed_indices, s.ahead_indices) == (set(), set())


def test_state_dict_round_trips_and_takes_horovods():
    a, b = ElasticSampler(list(range(9)), seed=3), ElasticSampler(list(range(9)), seed=3)
    a.set_epoch(2)
    a.processed_indices, a.ahead_indices, a.batch_size = {1, 4}, {0}, 2
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict()
    b.load_state_dict({"epoch": 3, "processed_indices": {5}})  # Horovod's state
    assert (b.epoch, b.processed_indices, b.ahead_indices, b.batch_size) == (3, {5}, set(), 2)
    with pytest.raises(ValueError, match="same data set, seed and shuffle"):
        ElasticSampler(list(range(8)), seed=3).load_state_dict(a.state_dict())


def test_record_indices_is_this_ranks_and_sync_unites_them():
    samplers = generation(list(range(12)), 2, None)
    first, second = samplers[0].indices[:2], samplers[1].indices[:1]
    samplers[0].record_indices(first)
    samplers[1].record_indices(second)
    assert samplers[0].processed_indices == set(first) and samplers[1].processed_indices == set(second)
    states = [s.state_dict() for s in samplers]
    for s in samplers:
        s._unite(states)
    assert all(s.processed_indices == set(first + second) for s in samplers)
    plan = samplers[0]._current()  # the 9 left, and 1 borrowed (no local batch known: equal shares)
    assert sorted(plan.items[: plan.own]) == sorted(set(range(12)) - set(first + second)) and plan.borrowed == 1


def test_the_forms_and_their_errors():
    assert isinstance(ElasticSampler(list(range(4))), ShardSampler)
    assert isinstance(ElasticSampler(list(range(4)), True, 1), ShardSampler)  # Horovod's positional order
    assert isinstance(ElasticSampler(list(range(4)), batch_size=2), GlobalBatchSampler)
    assert all(
        isinstance(s, ElasticSampler)
        for s in (ShardSampler(list(range(4))), GlobalBatchSampler(list(range(4)), batch_size=2))
    )
    with pytest.raises(TypeError, match="batch_size=<the global batch> by keyword"):
        ElasticSampler(list(range(4)), 64)
    with pytest.raises(ValueError, match="shuffle=False is not supported"):
        ElasticSampler(list(range(4)), shuffle=False, batch_size=2)
    with pytest.raises(ValueError, match="out of range"):
        ElasticSampler(list(range(4))).shard(2, 2)


def test_a_run_resumed_at_an_epochs_last_commit_does_not_train_that_epoch_again():
    """The commit of an epoch's last step holds the next epoch's start as the cursor, while the script's own
    epoch counter still names the finished epoch: a run resumed from that commit (a membership change taken at
    that commit) calls set_epoch with the finished epoch, which must yield nothing -- not start it over."""
    hvd.init()
    try:
        data = list(range(10))
        s = GlobalBatchSampler(data, batch_size=4, seed=3)
        s.set_epoch(0)
        first = []
        for ids in s:
            first += ids
            s.record_batch()
        assert sorted(first) == data and s.cursor() == (1, 0)
        s.set_epoch(0)  # `for state.epoch in range(state.epoch, ...)` resumed with state.epoch == 0
        assert list(s) == [] and s.cursor() == (1, 0)
        s.set_epoch(1)
        second = []
        for ids in s:
            second += ids
            s.record_batch()
        assert sorted(second) == data and s.cursor() == (2, 0)
    finally:
        hvd.shutdown()


# -- the stock script in a world of one ----------------------------------------------------------------


def test_the_stock_script_in_a_world_of_one():
    """Horovod's lines with `import ringmaster.torch as hvd`: a TorchState keyword of any name holds the
    sampler; every sample once per epoch; commit and restore round-trip the sampler."""
    hvd.init()
    try:
        data = torch.utils.data.TensorDataset(torch.arange(21, dtype=torch.float64).reshape(21, 1))
        model = torch.nn.Linear(1, 1).to(torch.float64)
        optimizer = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.01), named_parameters=model.named_parameters()
        )
        train_sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=42)
        train_loader = torch.utils.data.DataLoader(data, batch_size=4, sampler=train_sampler)
        seen = {}

        @hvd.elastic.run
        def train(state):
            for state.epoch in range(state.epoch, 3):
                state.train_sampler.set_epoch(state.epoch)
                for batch_idx, (x,) in enumerate(train_loader):
                    optimizer.zero_grad()
                    model(x).sum().backward()
                    optimizer.step()
                    seen.setdefault(state.epoch, []).extend(int(v) for v in x.reshape(-1).tolist())
                    state.train_sampler.record_batch(batch_idx, 4)
                    if batch_idx % 2 == 0:
                        state.commit()
                state.batch = 0

        state = hvd.elastic.TorchState(model=model, optimizer=optimizer, train_sampler=train_sampler, epoch=1, batch=0)
        train(state)
        assert {e: sorted(v) for e, v in seen.items()} == {1: list(range(21)), 2: list(range(21))}
        saved = train_sampler.state_dict()
        state.commit()
        train_sampler.set_epoch(7)
        assert state.restore() and train_sampler.state_dict() == saved
    finally:
        hvd.shutdown()
