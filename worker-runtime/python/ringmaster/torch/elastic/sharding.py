"""The sharding rule of the Horovod-form ElasticSampler, as plain arithmetic (no runtime, no torch state).

A *plan* is one pass of a world over the rest of an epoch: the epoch's samples not yet processed (in the
epoch's order), followed by `borrowed` samples taken from the front of the next epoch's order, dealt out
by stride (rank k gets items[k::size], Horovod's subsampling). A DataLoader cuts each rank's share into
consecutive local batches of b, so step j trains items[j*size*b:(j+1)*size*b]: the plan's order is also the
order of the global batches.

Why borrowing: every rank must run the same number of batches (a rank with one batch more waits forever
in an allreduce the others never start). With R samples left, shares whose sizes differ by at most one
(R = size*q + r) give ceil(q/b) and ceil((q+1)/b) batches; they differ only when 0 < r and b divides q,
i.e. when 0 < R mod (size*b) < size. Then no split at all gives equal batch counts: K batches on every
rank need shares in [(K-1)*b + 1, K*b], i.e. size*((K-1)*b + 1) <= R <= size*K*b; with
K = ceil(R / (size*b)) (a smaller K holds fewer than R samples) R is below size*((K-1)*b + 1), and a larger
K needs even more. Horovod pads the epoch with repeats of its own samples; this rule pads it with the next
epoch's first size - (R mod size*b) samples instead (then the total T has T mod size*b = size, or 0 when
b = 1: q = T div size is no multiple of b, and the counts are equal), which the next epoch then skips.
Every epoch the loop runs trains
each of its samples exactly once (none repeated, none lost); the epoch boundary moves forward by fewer
than `size` samples. (Deferring the r leftovers to the next epoch instead would also work between
epochs, but loses them for good after the last epoch of the run: borrowing never loses a sample, at
the price of training fewer than `size` samples of the epoch after the last one.)

When b is not known, the shares are made equal (R + borrowed a multiple of size), which gives equal batch
counts for every b. With drop_last the plan keeps whole global batches only: the tail a DataLoader with
drop_last would drop on some ranks is dropped on every rank (what drop_last asks for).
"""

import torch


def epoch_order(num_samples, seed, epoch, shuffle):
    """The epoch's sample order: a torch.randperm seeded with seed + epoch (Horovod's), or 0..N-1."""
    if not shuffle:
        return list(range(num_samples))
    g = torch.Generator()
    g.manual_seed(int(seed) + int(epoch))
    return torch.randperm(num_samples, generator=g).tolist()


def borrow_count(remaining, size, batch):
    """How many samples of the next epoch a plan over `remaining` samples takes (see the module docstring)."""
    if remaining == 0:
        return 0
    if batch is None:
        return -remaining % size
    tail = remaining % (size * batch)
    return size - tail if 0 < tail < size else 0


class Plan:
    """`items`: the planned sample ids in order; the first `own` are the epoch's, the rest borrowed from
    the next epoch; rank k's share is items[k::size]."""

    def __init__(self, items, own, size, batch):
        self.items, self.own, self.size, self.batch = items, own, size, batch
        self._shares, self._positions = {}, {}

    @property
    def borrowed(self):
        return len(self.items) - self.own

    def share(self, rank):
        if rank not in self._shares:
            self._shares[rank] = self.items[rank :: self.size]
        return self._shares[rank]

    def share_length(self, rank):
        return len(range(rank, len(self.items), self.size))

    def positions(self, rank):
        """{sample id: its positions in rank `rank`'s share}."""
        if rank not in self._positions:
            where = {}
            for position, sample in enumerate(self.share(rank)):
                where.setdefault(sample, []).append(position)
            self._positions[rank] = where
        return self._positions[rank]

    def index(self, rank, position):
        """Where position `position` of rank `rank`'s share is in `items`."""
        return rank + self.size * position

    def num_batches(self, rank, batch):
        return -(-self.share_length(rank) // batch)


def make_plan(rest, following, size, batch=None, drop_last=False):
    """Plans `rest` (the epoch's unprocessed ids, in order) for `size` ranks of local batch `batch` (None:
    unknown). `following()`: the next epoch's unprocessed ids in order, asked for only when some are
    borrowed. Raises ValueError when the next epoch has too few samples to borrow (a data set smaller
    than about twice the world)."""
    if size < 1:
        raise ValueError(f"a world of {size} ranks has no shares")
    if batch is not None and batch < 1:
        raise ValueError(f"the local batch must be >= 1, not {batch}")
    if drop_last and batch is not None:
        keep = len(rest) - len(rest) % (size * batch)
        return Plan(list(rest[:keep]), keep, size, batch)
    need = borrow_count(len(rest), size, batch)
    borrowed = []
    if need:
        borrowed = list(following()[:need])
        if len(borrowed) < need:
            raise ValueError(
                f"ElasticSampler: {len(rest)} samples left for {size} ranks need {need} samples of the "
                f"next epoch to give every rank the same number of batches, and it has {len(borrowed)} "
                f"left: use a data set of at least twice as many samples as workers"
            )
    return Plan(list(rest) + borrowed, len(rest), size, batch)
