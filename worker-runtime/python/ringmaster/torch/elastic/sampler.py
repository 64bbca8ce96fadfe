"""The exactly-once elastic sampler (the C++ runtime's, through the native module).

Unlike Horovod's ElasticSampler, which gives every rank a fixed *local* batch and pads the epoch (so
samples repeat), this one is a batch sampler over a fixed *global* batch: each step takes the next
`batch_size` positions of the epoch's seeded permutation and cuts them into contiguous shares for the
ranks of the current generation. After a membership change the rest of the epoch is re-strided over the
new world from the committed cursor: every sample once per epoch, none lost, none repeated, no padding —
and the global batch, hence the training arithmetic, does not depend on the world size.

    sampler = ElasticSampler(dataset, batch_size=64, seed=0)          # 64 = the global batch
    loader = DataLoader(dataset, batch_sampler=sampler)
    state = TorchState(model, optimizer, sampler=sampler, epoch=0)
    ... for batch in loader: ...; state.commit()                       # the step's samples are done

Under a DeviceMesh the data is split over the data-parallel replicas, not over every worker:
`shard(dp_rank, dp_size, journal)` (ringmaster.torch.elastic.MeshRule calls it in every generation) makes
the replicas the ranks the steps are cut for; the workers of one replica get the same share, and only one
of them (`journal=True`) writes it to the sample journal and counts it.

`record_batch(batch_idx, batch_size)` marks the last yielded step as done (Horovod's name; the arguments
are accepted and ignored, a step is always one global batch); `commit()` of a TorchState holding the
sampler does it too.
"""
import torch

from ringmaster import _native

from .. import _context


class ElasticSampler(torch.utils.data.Sampler):
    def __init__(self, dataset, batch_size=None, shuffle=True, seed=0):
        if batch_size is None:
            raise ValueError("ringmaster's ElasticSampler is a batch sampler over a fixed global batch: pass "
                             "batch_size=<the global batch> and use DataLoader(dataset, batch_sampler=sampler) "
                             "(Horovod's pads each rank's local batch; this one trains every sample once per epoch)")
        self.num_samples = len(dataset)
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size (the global batch) must be >= 1")
        if not shuffle:
            raise ValueError("ElasticSampler always draws a seeded permutation per epoch; shuffle=False is not supported")
        self.seed = int(seed)
        self._plan = _native.Sampler(self.num_samples, self.batch_size, self.seed)
        self.epoch = 0
        self.committed = 0        # samples of `epoch` committed
        self._yielded = None      # (epoch, committed, this rank's samples) after the last step handed out
        self._shard = None        # (rank, size, journal) set by shard(); None: this worker's rank in the world

    def shard(self, rank, size, journal=True):
        """Cuts the steps for `size` data-parallel replicas, this worker's being `rank`; `journal`: whether
        this worker records the replica's share (one worker per replica). shard(None, None) undoes it."""
        if rank is None:
            self._shard = None
            return
        rank, size = int(rank), int(size)
        if not 0 <= rank < size:
            raise ValueError(f"ElasticSampler.shard: replica {rank} of {size} is out of range")
        self._shard = (rank, size, bool(journal))

    def _where(self, topo):
        """(rank, size, journal) this worker's steps are cut for."""
        return self._shard if self._shard is not None else (topo["rank"], topo["size"], True)

    # -- cursor -------------------------------------------------------------------------------------
    def set_epoch(self, epoch):
        """Moves to `epoch` (from its start, unless the committed cursor is already inside it)."""
        if epoch != self.epoch:
            self.epoch, self.committed = int(epoch), 0
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
        return {"epoch": self.epoch, "committed": self.committed, "num_samples": self.num_samples,
                "batch_size": self.batch_size, "seed": self.seed}

    def load_state_dict(self, state):
        if (state["num_samples"], state["batch_size"], state["seed"]) != (self.num_samples, self.batch_size, self.seed):
            raise ValueError(f"sampler state for {state['num_samples']} samples, batch {state['batch_size']}, seed "
                             f"{state['seed']} does not fit this sampler ({self.num_samples}, {self.batch_size}, "
                             f"{self.seed})")
        self.epoch, self.committed = int(state["epoch"]), int(state["committed"])
        self._yielded = None

    # -- iteration ----------------------------------------------------------------------------------
    def __iter__(self):
        """This rank's sample ids, one list per step, for the rest of the epoch from the committed cursor.
        Each step's ids go into the sample journal (RINGMASTER_OUT) before they are trained on."""
        ctx = _context.context()
        epoch, committed = self.epoch, self.committed
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
