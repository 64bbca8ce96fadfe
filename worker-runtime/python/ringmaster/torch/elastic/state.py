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

from ringmaster import _context
from ringmaster.exceptions import HostsUpdatedInterrupt

from ..functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .sampler import ElasticSampler, ShardSampler


def _has_state_dict(value):
    return hasattr(value, "state_dict") and hasattr(value, "load_state_dict")


class State:
    """Base class: reset callbacks, commit, restore and the host-update check."""

    def __init__(self, **kwargs):
        self._reset_callbacks = []
        self._attrs = list(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def register_reset_callbacks(self, callbacks):
        """Functions called after every membership change (e.g. to rescale the learning rate)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    # -- what subclasses define -----------------------------------------------------------------------
    def _state(self):
        return {
            "attrs": {
                name: (
                    getattr(self, name).state_dict() if _has_state_dict(getattr(self, name)) else getattr(self, name)
                )
                for name in self._attrs
            }
        }

    def _load(self, state):
        for name, value in state["attrs"].items():
            current = getattr(self, name, None)
            if _has_state_dict(current):
                current.load_state_dict(value)
            else:
                setattr(self, name, value)

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

    def _cursor(self):
        """The data cursor (epoch, samples committed) of the first sampler among the attributes."""
        for name in self._attrs:
            value = getattr(self, name)
            if hasattr(value, "cursor"):
                return value.cursor()
        return (0, 0)

    # -- Horovod's API --------------------------------------------------------------------------------
    def save(self):
        """Commits the state without checking for a membership change. A sampler among the attributes
        first does what it does at a commit (the global-batch form: its last step is done)."""
        for sampler in self._samplers():
            sampler._committing()
        buf = io.BytesIO()
        torch.save(self._state(), buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
        epoch, committed = self._cursor()
        _context.context().session.commit(buf.getvalue(), epoch, committed)

    def check_host_updates(self):
        if _context.context().session.superseded():
            raise HostsUpdatedInterrupt()

    def commit(self):
        self.save()
        self.check_host_updates()

    def restore(self):
        """Loads the newest committed state (a no-op before the first commit)."""
        _, _, _, data = _context.context().session.committed()
        if data:
            self._load(torch.load(io.BytesIO(data), weights_only=False))
            return True
        return False

    def sync(self):
        """Makes every worker's state rank 0's (Horovod: after a reset, before training), the processed
        samples of a Horovod-form sampler being every rank's."""
        records = self._gather_sampler_records()
        self._load(broadcast_object(self._state(), root_rank=0, name="elastic.sync"))
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
