"""The exactly-once data path for TensorFlow: a sampler over a fixed global batch, as a tf.data.Dataset.

    sampler = hvd.elastic.ElasticSampler(num_samples=len(x), batch_size=64, seed=1)   # 64: the global batch
    dataset = sampler.dataset(lambda ids: (x[ids], y[ids]), output_signature=(...))
    state = hvd.elastic.KerasState(model, sampler=sampler, epoch=0)

Each step takes the next `batch_size` positions of the epoch's seeded permutation and cuts them into
contiguous shares for the ranks of the current generation (`_native.Sampler.plan`, the arithmetic
ringmaster.torch.elastic's global-batch sampler uses). The sampler's cursor (epoch, samples committed) is
committed with the state; after a membership change the rest of the epoch is cut over the new world from
the committed cursor. So every sample is trained exactly once per epoch whatever happens to the membership,
and the training arithmetic does not depend on the world size.

Iterating the dataset yields this rank's share of every step left in the cursor's epoch, then ends; the
next iteration (Keras's next epoch) starts the epoch the cursor moved to. A step handed out counts as done
at the state's next commit. The data is read only when the train function asks for the next element, so:
do not add `.prefetch()`, `.cache()` or `.repeat()` (a prefetched step would count at the wrong commit),
and commit after every step (CommitStateCallback(state), the default) so a step's samples go into the sample
journal under the step that commits them. Every step's ids are journalled before they are trained on
(RINGMASTER_OUT/samples.log under ringmaster-run proves once-per-epoch).
"""

import numpy as np

from ringmaster import _context, _native


class ElasticSampler:
    """This rank's sample ids for every step of a fixed global batch (the module docstring)."""

    def __init__(self, num_samples, batch_size, seed=0):
        self.num_samples = int(num_samples)
        self.batch_size = int(batch_size)
        if self.num_samples < 1 or self.batch_size < 1:
            raise ValueError(
                f"ElasticSampler(num_samples={num_samples}, batch_size={batch_size}): both must be >= 1 "
                "(batch_size is the global batch, fixed whatever the world size)"
            )
        self.seed = int(seed)
        self._plan = _native.Sampler(self.num_samples, self.batch_size, self.seed)
        self.epoch = 0
        self.committed = 0  # samples of `epoch` committed
        self._handed_out = []  # (next epoch, next committed, samples) of each step handed out since the commit

    # -- cursor -------------------------------------------------------------------------------------
    def cursor(self):
        """(epoch, samples of it committed): where the next iteration starts."""
        return (self.epoch, self.committed)

    def steps_left(self):
        """Steps left in the cursor's epoch (one global batch each)."""
        return -(-(self.num_samples - self.committed) // self.batch_size)

    def record_batch(self, batch_idx=None, batch_size=None):
        """Every step handed out so far is done (the arguments are accepted and ignored, as Horovod's
        record_batch takes them); the state's commit calls this."""
        if not self._handed_out:
            return
        self.epoch, self.committed, _ = self._handed_out[-1]
        samples = sum(n for _, _, n in self._handed_out)
        self._handed_out = []
        if _context.is_initialized():
            _context.context().session.count_samples(samples)

    def _committing(self):
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
        mine = (self.num_samples, self.batch_size, self.seed)
        theirs = (state["num_samples"], state["batch_size"], state["seed"])
        if theirs != mine:
            raise ValueError(
                f"sampler state for (samples, global batch, seed) {theirs} does not fit this sampler {mine}: "
                "restore it into a sampler made with the same data set, batch and seed"
            )
        self.epoch, self.committed = int(state["epoch"]), int(state["committed"])
        self._handed_out = []

    # -- iteration ----------------------------------------------------------------------------------
    def __iter__(self):
        """This rank's ids (an int64 array) for every step left in the cursor's epoch, from the cursor."""
        ctx = _context.context()
        epoch, committed = self.epoch, self.committed
        this_epoch = epoch
        self._handed_out = []  # a new pass: steps handed out and not committed were not trained
        while True:
            topo = ctx.topology
            plan_epoch, ids, next_epoch, next_committed = self._plan.plan(epoch, committed, topo["size"], topo["rank"])
            if plan_epoch != this_epoch:
                return
            if ctx.session.journaling():
                # Under the step that commits it: the next commit's (a step is committed after it is trained).
                ctx.session.journal(ctx.session.committed_step(), plan_epoch, ids)
            self._handed_out.append((next_epoch, next_committed, len(ids)))
            yield np.asarray(ids, dtype=np.int64)
            epoch, committed = next_epoch, next_committed

    def dataset(self, fetch, output_signature):
        """A tf.data.Dataset of `fetch(ids)` for this rank's ids of every step left in the cursor's epoch.

        `fetch(ids)` returns the step's share (e.g. `(x[ids], y[ids])`, numpy arrays, possibly empty when the
        world has more ranks than a step has samples); `output_signature` is its tf.TensorSpec structure
        with a None first dimension."""
        import tensorflow as tf

        def generate():
            for ids in self:
                yield fetch(ids)

        dataset = tf.data.Dataset.from_generator(generate, output_signature=output_signature)
        # tf.data injects a prefetch after a synchronous last stage by default: the next step would be handed
        # out (and counted at this step's commit) before this one is trained. One step at a time, on demand.
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        options.autotune.enabled = False
        return dataset.with_options(options)
