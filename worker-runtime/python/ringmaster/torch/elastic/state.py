"""What an elastic job keeps across membership changes (Horovod's State, ObjectState and TorchState).

`commit()` hands the state's bytes to the runtime as the newest committed step — kept in memory on every
worker, sent by a survivor to the others after a change, and written by rank 0 into the job's atomic
checkpoint every RINGMASTER checkpoint interval, so a job that loses every worker resumes from it — then
raises HostsUpdatedInterrupt when the membership changed. `restore()` loads the newest committed state
back (after a rebuild it is the newest any worker held), rolling back whatever happened since.
"""

import io
import pickle

import torch

from ringmaster import _elastic

from ..functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .sampler import ElasticSampler, ShardSampler


class State(_elastic.State):
    """Base class: reset callbacks, commit, restore and the host-update check (ringmaster/_elastic.py's cycle),
    the bytes written with torch.save. Its samplers take part: an ElasticSampler among the attributes does what
    it does at a commit, and a Horovod-form one unites every rank's processed samples at a sync."""

    # -- what torch does its own way ------------------------------------------------------------------
    @staticmethod
    def _dumps(state):
        buf = io.BytesIO()
        torch.save(state, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
        return buf.getvalue()

    @staticmethod
    def _loads(data):
        return torch.load(io.BytesIO(data), weights_only=False)

    def _committing(self):
        """A sampler among the attributes first does what it does at a commit (the global-batch form: its
        last step is done)."""
        for sampler in self._samplers():
            sampler._committing()

    def _broadcast_object(self, obj):
        return broadcast_object(obj, root_rank=0, name="elastic.sync")

    def _samplers(self, kind=ElasticSampler):
        return [getattr(self, name) for name in self._attrs if isinstance(getattr(self, name), kind)]

    def _gather_sampler_records(self):
        """Every rank's Horovod-form samplers' states, gathered before a sync overwrites them with rank
        0's (Horovod's SamplerStateHandler: the ranks' processed samples are united at sync)."""
        samplers = self._samplers(ShardSampler)
        if not samplers:
            return []
        gathered = allgather_object([s.state_dict() for s in samplers], name="elastic.sync.samplers")
        return [(sampler, [states[i] for states in gathered]) for i, sampler in enumerate(samplers)]

    @staticmethod
    def _unite_sampler_records(records):
        for sampler, states in records:
            sampler._unite(states)

    # -- Horovod's API --------------------------------------------------------------------------------
    def sync(self):
        """Makes every worker's state rank 0's (Horovod: after a reset, before training), the processed
        samples of a Horovod-form sampler being every rank's."""
        records = self._gather_sampler_records()
        super().sync()
        self._unite_sampler_records(records)


class ObjectState(State):
    """Picklable attributes (`epoch=0, batch=0`, ...)."""


class TorchState(ObjectState):
    """A model, its optimizer and any other attributes (samplers and anything with state_dict /
    load_state_dict are saved through those). An ElasticSampler may have any name
    (`TorchState(model, optimizer, train_sampler=sampler, epoch=1)`, Horovod's)."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.optimizer = optimizer

    def _state(self):
        state = super()._state()
        if self.model is not None:
            state["model"] = self.model.state_dict()
        if self.optimizer is not None:
            state["optimizer"] = self.optimizer.state_dict()
        return state

    def _load(self, state):
        if self.model is not None and "model" in state:
            self.model.load_state_dict(state["model"])
        if self.optimizer is not None and "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        super()._load(state)

    def sync(self):
        records = self._gather_sampler_records()
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0)
        ObjectState._load(self, broadcast_object(ObjectState._state(self), root_rank=0, name="elastic.sync.attrs"))
        self._unite_sampler_records(records)
