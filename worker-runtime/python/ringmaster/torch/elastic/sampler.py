"""The elastic sampler, in Horovod's form and in a global-batch form. Both train every sample exactly once
per epoch across membership changes: none lost, none repeated, no padding.

Horovod's form, ElasticSampler(dataset, shuffle=True, seed=0) (a ShardSampler), takes the lines every
Horovod elastic script has, unchanged:

    train_sampler = hvd.elastic.ElasticSampler(train_dataset, shuffle=True, seed=42)
    train_loader = DataLoader(train_dataset, batch_size=b, sampler=train_sampler)   # b: the local batch
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, train_sampler=train_sampler, epoch=1)
    ... state.train_sampler.set_epoch(state.epoch)
        for batch_idx, (data, target) in enumerate(train_loader):
            ...; state.train_sampler.record_batch(batch_idx, b); state.commit()

Each rank iterates its share of the epoch's samples not yet processed; every pass over the loader (an
epoch, or an epoch resumed after a membership change) re-shards them over the current world. The rule
(sharding.py has the proof):
1. A pass's samples are the epoch's unprocessed ones in the epoch's order (torch.randperm seeded with
   seed + epoch; 0 .. N-1 when shuffle=False), dealt out by stride: rank k gets items k, k + size, ...
   So step j trains the next size*b samples of that order.
2. Every rank must run the same number of batches (a rank with one more waits in an allreduce the others
   never start). With R samples left the stride shares, whose sizes differ by at most one, give that
   unless 0 < R mod (size*b) < size -- exactly the cases where no split can. Then the pass also takes the
   first size - (R mod size*b) samples (fewer than size) of the next epoch's order, which the next epoch
   skips, and rank 0 logs one line saying so. Every epoch the loop runs trains each of its samples once;
   the epoch boundary moves by fewer than `size` samples. Deferring the R mod size*b leftovers to the next
   epoch instead would lose them after the run's last epoch; borrowing loses none, at the price of
   training fewer than `size` samples of the epoch after the last. (Horovod pads with repeats.)
3. b is learned from the DataLoader's BatchSampler when it asks for the sampler's iterator or length (the
   only place it shows before the first record_batch; see _calling_batch_sampler), else from record_batch.
   Unknown (a plain loop over the sampler), the shares are made equal, which suits any b. With drop_last
   a pass keeps whole global batches only (the tail drop_last drops on some ranks is dropped on all).
Differences from Horovod, for exactness:
- record_batch(batch_idx, b) records batch `batch_idx` of *every* rank's share: the ranks train in lockstep
  (a step's allreduce takes every rank's batch), so every rank's committed state holds every rank's
  processed samples, without communication. Horovod records this rank's only and unites the ranks' sets
  at sync, so a dead rank's processed samples were trained again. record_indices(ids) is Horovod's: this
  rank's record, united with the other ranks' when the state syncs.
- set_epoch(e) of the epoch it is in keeps the epoch's progress (Horovod clears it, which in a script that
  calls set_epoch at the top of every epoch would train a resumed epoch's committed samples again).
With a fixed local batch the global batch is size*b and, with op=Average, each step averages the ranks'
mean losses: the training arithmetic follows the world size, as in Horovod.

The global-batch form (a GlobalBatchSampler), the choice that also keeps the weights exact across resizes:
a batch sampler over a fixed *global* batch. Each step takes the next `batch_size` positions of the epoch's
seeded permutation and cuts them into contiguous shares for the ranks of the current generation; after a
membership change the rest of the epoch is re-strided over the new world from the committed cursor, and
the global batch, hence the training arithmetic, does not depend on the world size.

    sampler = ElasticSampler(dataset, batch_size=64, seed=0)          # 64 = the global batch
    loader = DataLoader(dataset, batch_sampler=sampler)
    state = TorchState(model, optimizer, sampler=sampler, epoch=0)
    ... for batch in loader: ...; state.commit()                       # the step's samples are done

Its `record_batch(batch_idx, batch_size)` marks the last yielded step as done (the arguments are accepted
and ignored, a step is always one global batch); `commit()` of a TorchState holding the sampler does it too.

Under a DeviceMesh the data is split over the data-parallel replicas, not over every worker:
`shard(dp_rank, dp_size, journal)` (ringmaster.torch.elastic.MeshRule calls it in every generation) makes
the replicas the ranks the data is cut for; the workers of one replica get the same share, and only one
of them (`journal=True`) writes it to the sample journal and counts it. Both forms write every local batch
into the sample journal (RINGMASTER_OUT) when the loader asks for it, i.e. before it is trained on with a
loader that does not prefetch (num_workers=0).
"""

import sys

import torch

from ringmaster import _context, _native

from .sharding import epoch_order, make_plan


class ElasticSampler(torch.utils.data.Sampler):
    """ElasticSampler(dataset, shuffle=True, seed=0): Horovod's form, a ShardSampler.
    ElasticSampler(dataset, batch_size=GLOBAL, seed=0): the global-batch form, a GlobalBatchSampler."""

    def __new__(cls, *args, **kwargs):
        # One public name for both forms, as Horovod has one: the arguments pick the class (pathlib.Path
        # does the same). A subclass constructed by its own name is itself.
        if cls is ElasticSampler:
            batch_size = kwargs.get("batch_size", args[3] if len(args) > 3 else None)
            cls = ShardSampler if batch_size is None else GlobalBatchSampler
        return super().__new__(cls)

    def shard(self, rank, size, journal=True):
        """Cuts the data for `size` data-parallel replicas, this worker's being `rank`; `journal`: whether
        this worker records the replica's share (one worker per replica). shard(None, None) undoes it."""
        if rank is None:
            self._shard = None
        else:
            rank, size = int(rank), int(size)
            if not 0 <= rank < size:
                raise ValueError(f"ElasticSampler.shard: replica {rank} of {size} is out of range")
            self._shard = (rank, size, bool(journal))
        self._resharded()

    def _resharded(self):
        """Called after shard(): a sampler that caches a plan drops it."""

    def _committing(self):
        """Called by the elastic state just before it commits."""
        raise NotImplementedError


class GlobalBatchSampler(ElasticSampler):
    """A batch sampler over a fixed global batch (the module docstring)."""

    def __init__(self, dataset, shuffle=True, seed=0, batch_size=None):
        if batch_size is None:
            raise ValueError(
                "GlobalBatchSampler is a batch sampler over a fixed global batch: pass "
                "batch_size=<the global batch> and use DataLoader(dataset, batch_sampler=sampler) "
                "(or ElasticSampler(dataset, shuffle=True, seed=0), Horovod's form, with "
                "DataLoader(dataset, batch_size=<the local batch>, sampler=sampler))"
            )
        self.num_samples = len(dataset)
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size (the global batch) must be >= 1")
        if not shuffle:
            raise ValueError(
                "the global-batch ElasticSampler always draws a seeded permutation per epoch; "
                "shuffle=False is not supported (Horovod's form, without batch_size, supports it)"
            )
        self.seed = int(seed)
        self._plan = _native.Sampler(self.num_samples, self.batch_size, self.seed)
        self.epoch = 0
        self.committed = 0  # samples of `epoch` committed
        self._yielded = None  # (epoch, committed, this rank's samples) after the last step handed out
        self._shard = None  # (rank, size, journal) set by shard(); None: this worker's rank in the world
        self._asked = None  # the epoch set_epoch last named (None: never called)

    def _where(self, topo):
        """(rank, size, journal) this worker's steps are cut for."""
        return self._shard if self._shard is not None else (topo["rank"], topo["size"], True)

    def _committing(self):
        self.record_batch()

    # -- cursor -------------------------------------------------------------------------------------
    def set_epoch(self, epoch):
        """Moves to `epoch` (from its start, unless the committed cursor is already inside it). A cursor already
        past `epoch` stays where it is: the commit of an epoch's last step holds the next epoch's start, while
        the script's own epoch counter (`for state.epoch in ...`) still names the finished epoch, so a run
        resumed from that commit asks for the finished epoch again -- which then has nothing left to yield."""
        epoch = int(epoch)
        if epoch > self.epoch:
            self.epoch, self.committed = epoch, 0
        self._asked = epoch
        self._yielded = None

    def cursor(self):
        return (self.epoch, self.committed)

    def record_batch(self, batch_idx=None, batch_size=None):
        """The last step handed out is done."""
        if self._yielded is not None:
            self.epoch, self.committed, samples = self._yielded
            self._yielded = None
            if _context.is_initialized() and (self._shard is None or self._shard[2]):
                _context.context().session.count_samples(samples)

    def record_indices(self, indices):
        self.record_batch()

    def state_dict(self):
        return {
            "epoch": self.epoch,
            "committed": self.committed,
            "num_samples": self.num_samples,
            "batch_size": self.batch_size,
            "seed": self.seed,
        }

    def load_state_dict(self, state):
        if (state["num_samples"], state["batch_size"], state["seed"]) != (self.num_samples, self.batch_size, self.seed):
            raise ValueError(
                f"sampler state for {state['num_samples']} samples, batch {state['batch_size']}, seed "
                f"{state['seed']} does not fit this sampler ({self.num_samples}, {self.batch_size}, "
                f"{self.seed})"
            )
        self.epoch, self.committed = int(state["epoch"]), int(state["committed"])
        self._yielded = None

    # -- iteration ----------------------------------------------------------------------------------
    def __iter__(self):
        """This rank's sample ids, one list per step, for the rest of the epoch from the committed cursor.
        Each step's ids go into the sample journal (RINGMASTER_OUT) before they are trained on."""
        ctx = _context.context()
        epoch, committed = self.epoch, self.committed
        if self._asked is not None and self._asked != epoch:
            return  # the epoch asked for is finished (set_epoch)
        this_epoch = epoch
        while True:
            rank, size, journal = self._where(ctx.topology)
            plan_epoch, indices, next_epoch, next_committed = self._plan.plan(epoch, committed, size, rank)
            if plan_epoch != this_epoch:
                return
            if journal and ctx.session.journaling():
                ctx.session.journal(ctx.session.committed_step(), plan_epoch, indices)
            self._yielded = (next_epoch, next_committed, len(indices))
            yield indices
            epoch, committed = self._yielded[:2] if self._yielded is not None else (self.epoch, self.committed)

    def __len__(self):
        """Steps left in the epoch."""
        left = max(0, self.num_samples - self.committed)
        return (left + self.batch_size - 1) // self.batch_size


def _calling_batch_sampler(sampler):
    """The torch BatchSampler asking `sampler` for its iterator or length, if the caller is one.

    DataLoader(dataset, batch_size=b, sampler=s) wraps s in BatchSampler(s, b, drop_last), which calls
    iter(s) and len(s) itself and tells s nothing: the local batch b shows nowhere else before the first
    record_batch. So the sampler looks one frame up its caller (frame 0 is this function, 1 the sampler's
    __iter__ or __len__, 2 their caller) and takes the BatchSampler found there only if it wraps this very
    sampler; any other caller (a custom batch sampler, a plain loop) gives None."""
    try:
        caller = sys._getframe(2).f_locals.get("self")
    except ValueError:  # no frame above (called from outside Python)
        return None
    if isinstance(caller, torch.utils.data.BatchSampler) and caller.sampler is sampler:
        return caller
    return None


class ShardSampler(ElasticSampler):
    """Horovod's ElasticSampler: a Sampler of this rank's sample ids (the module docstring)."""

    def __init__(self, dataset, shuffle=True, seed=0, batch_size=None):
        if batch_size is not None:
            raise ValueError(
                "ShardSampler takes no batch_size: the local batch is the DataLoader's (batch_size=b, "
                "sampler=sampler); ElasticSampler(dataset, batch_size=...) is the global-batch form"
            )
        if not isinstance(shuffle, bool) and shuffle not in (0, 1):
            raise TypeError(
                f"ElasticSampler(dataset, shuffle=True, seed=0): shuffle is {shuffle!r}, not a bool; for "
                f"the global-batch form pass batch_size=<the global batch> by keyword"
            )
        self.dataset = dataset
        self.num_samples = len(dataset)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.epoch = 0
        self.processed_indices = set()  # Horovod's: the ids of `epoch` processed
        self.ahead_indices = set()  # the ids of epoch + 1 processed early (borrowed by a plan of `epoch`)
        self.batch_size = None  # the local batch, once known (the loader's BatchSampler, record_batch)
        self.drop_last = False  # the loader's BatchSampler's
        self._loader_batch = None  # the local batch as the loader's BatchSampler cuts it, when seen
        self._shard = None  # (rank, size, journal) set by shard(); None: the world's rank and size
        self._plan = None  # the current pass's plan (sharding.Plan), made by reset()
        self._rank, self._journal = 0, True
        self._uncounted = 0  # this rank's samples recorded since the last commit (the metric)

    # -- Horovod's API ------------------------------------------------------------------------------
    def set_epoch(self, epoch):
        """Moves to `epoch`: the next epoch starts with the samples a pass borrowed from it already
        processed; the epoch it is in keeps its progress (a resumed epoch goes on); any other starts fresh."""
        epoch = int(epoch)
        if epoch == self.epoch + 1:
            self.processed_indices, self.ahead_indices = self.ahead_indices, set()
        elif epoch != self.epoch:
            self.processed_indices, self.ahead_indices = set(), set()
        self.epoch = epoch
        self._plan = None

    def reset(self):
        """Re-shards the epoch's unprocessed samples over the current world (Horovod's reset)."""
        rank, size, journal = self._world()
        self._rank, self._journal = rank, journal
        self._plan = make_plan(
            self._rest(self.epoch, self.processed_indices),
            lambda: self._rest(self.epoch + 1, self.ahead_indices),
            size,
            self.batch_size,
            self.drop_last,
        )

    @property
    def indices(self):
        """This rank's share of the current pass (Horovod's attribute)."""
        return self._current().share(self._rank)

    def get_indices(self, batch_idx, batch_size):
        start = batch_idx * batch_size
        return self.indices[start : start + batch_size]

    def record_batch(self, batch_idx, batch_size):
        """Batch `batch_idx` of `batch_size` of this pass is processed, on every rank (the module docstring)."""
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"record_batch: batch_size must be >= 1, not {batch_size}")
        if self.batch_size is None:
            self.batch_size = batch_size
        self._record_run(int(batch_idx) * batch_size, batch_size)

    def record_indices(self, indices):
        """These ids, of this rank's share, are processed -- on this rank only, as in Horovod: the ranks'
        records are united at the next sync, and a failure before it loses the other ranks' (use
        record_batch for a record every rank's committed state holds)."""
        plan = self._current()
        for sample in indices:
            item = self._item_of(plan, int(sample))
            if item is None:
                self.processed_indices.add(int(sample))
            else:
                self._mark(plan, item)
        if self._journal:
            self._uncounted += len(indices)

    def state_dict(self):
        return {
            "epoch": self.epoch,
            "processed_indices": set(self.processed_indices),
            "ahead_indices": set(self.ahead_indices),
            "batch_size": self.batch_size,
            "num_samples": self.num_samples,
            "seed": self.seed,
            "shuffle": self.shuffle,
        }

    def load_state_dict(self, state):
        """Takes a state of this form (or Horovod's: epoch and processed_indices)."""
        theirs = tuple(
            state.get(k, mine)
            for k, mine in (("num_samples", self.num_samples), ("seed", self.seed), ("shuffle", self.shuffle))
        )
        if theirs != (self.num_samples, self.seed, self.shuffle):
            raise ValueError(
                f"sampler state for (samples, seed, shuffle) {theirs} does not fit this sampler "
                f"{(self.num_samples, self.seed, self.shuffle)}: restore it into a sampler made "
                f"with the same data set, seed and shuffle"
            )
        self.epoch = int(state["epoch"])
        self.processed_indices = set(state["processed_indices"])
        self.ahead_indices = set(state.get("ahead_indices", ()))
        self.batch_size = state.get("batch_size") or self.batch_size
        self._plan = None

    def __iter__(self):
        """This rank's share of the epoch's unprocessed samples, re-sharded now over the current world."""
        self._learn_batch(_calling_batch_sampler(self))
        self.reset()
        self._log_borrowing(self._plan)
        return self._walk(self._plan, self._rank, self._journal)

    def __len__(self):
        """The size of this rank's share of the current pass."""
        if self._learn_batch(_calling_batch_sampler(self)):
            self._plan = None
        return len(self.indices)

    # -- what the elastic state calls ---------------------------------------------------------------
    def cursor(self):
        """(epoch, samples of it processed): the data cursor the runtime logs with a commit."""
        return (self.epoch, len(self.processed_indices))

    def _committing(self):
        """Counts this rank's samples recorded since the last commit (ringmaster_worker_samples_total)."""
        if self._uncounted and _context.is_initialized():
            _context.context().session.count_samples(self._uncounted)
        self._uncounted = 0

    def _unite(self, states):
        """Adds every rank's processed samples (their state_dicts, for this epoch) to this one's (sync)."""
        for state in states:
            if int(state["epoch"]) == self.epoch:
                self.processed_indices |= set(state["processed_indices"])
                self.ahead_indices |= set(state.get("ahead_indices", ()))
        self._plan = None

    # -- the plan -----------------------------------------------------------------------------------
    def _resharded(self):
        self._plan = None

    def _world(self):
        """(rank, size, journal) the data is cut for: shard()'s, else this worker's in the world."""
        if self._shard is not None:
            return self._shard
        topo = _context.context().topology
        return topo["rank"], topo["size"], True

    def _rest(self, epoch, done):
        return [i for i in epoch_order(self.num_samples, self.seed, epoch, self.shuffle) if i not in done]

    def _current(self):
        if self._plan is None:
            self.reset()
        return self._plan

    def _learn_batch(self, batch_sampler):
        """Takes the local batch and drop_last from the loader's BatchSampler; True when they changed."""
        if batch_sampler is None:
            return False
        seen = (int(batch_sampler.batch_size), bool(batch_sampler.drop_last))
        changed = seen != (self.batch_size, self.drop_last)
        self.batch_size, self.drop_last = seen
        self._loader_batch = seen[0]
        return changed

    def _log_borrowing(self, plan):
        if plan.borrowed and self._rank == 0 and self._journal:
            who = f"[{_context.context().session.worker_id()}] " if _context.is_initialized() else ""
            batch = f"local batches of {plan.batch}" if plan.batch else "an unknown local batch (equal shares)"
            print(
                f"{who}ElasticSampler: epoch {self.epoch}: {plan.own} samples left cannot give {plan.size} ranks "
                f"of {batch} the same number of batches; this pass also trains the first {plan.borrowed} "
                f"samples of epoch {self.epoch + 1}, which that epoch skips",
                file=sys.stderr,
                flush=True,
            )

    # -- recording ----------------------------------------------------------------------------------
    def _mark(self, plan, item):
        """Item `item` of the plan (an index into plan.items) is processed."""
        (self.processed_indices if item < plan.own else self.ahead_indices).add(plan.items[item])

    def _record_run(self, start, count):
        """Positions [start, start + count) of every rank's share are processed. A run that reaches the end
        of this rank's share is the pass's last batch: it ends every rank's share (a share may be one longer)."""
        plan = self._current()
        mine = plan.share_length(self._rank)
        if start >= mine:
            return  # past this rank's last batch: in lockstep, past every rank's
        end = start + count
        for rank in range(plan.size):
            length = plan.share_length(rank)
            for position in range(start, length if end >= mine else min(end, length)):
                self._mark(plan, plan.index(rank, position))
        if self._journal:
            self._uncounted += min(end, mine) - start

    def _item_of(self, plan, sample):
        """The item of this rank's share that is `sample`: its first unprocessed occurrence (an id occurs
        twice when the pass borrowed it from the next epoch too); None when the share does not have it."""
        found = None
        for position in plan.positions(self._rank).get(sample, ()):
            item = plan.index(self._rank, position)
            if plan.items[item] not in (self.processed_indices if item < plan.own else self.ahead_indices):
                return item
            found = item if found is None else found
        return found

    # -- iteration ----------------------------------------------------------------------------------
    def _walk(self, plan, rank, journal):
        """Yields rank `rank`'s share; each local batch goes into the sample journal when its first id is
        asked for, i.e. before it is trained on (one id at a time when the loader's batch is not known)."""
        share = plan.share(rank)
        chunk = self._loader_batch or 1
        for start in range(0, len(share), chunk):
            if journal:
                self._journal_run(plan, rank, start, min(start + chunk, len(share)))
            yield from share[start : start + chunk]

    def _journal_run(self, plan, rank, start, end):
        if not _context.is_initialized():
            return
        session = _context.context().session
        if not session.journaling():
            return
        step = session.committed_step()
        items = [plan.index(rank, p) for p in range(start, end)]
        own = [plan.items[i] for i in items if i < plan.own]
        borrowed = [plan.items[i] for i in items if i >= plan.own]
        if own:
            session.journal(step, self.epoch, own)
        if borrowed:
            session.journal(step, self.epoch + 1, borrowed)
