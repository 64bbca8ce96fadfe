"""The framework-neutral elastic core: the state's commit/restore cycle and the run loop.

ringmaster.torch.elastic, ringmaster.tensorflow.elastic and ringmaster.keras.elastic build on it:

- `commit()` hands the state's bytes to the session as the newest committed step (kept in memory on every
  worker, sent by a survivor to the others after a change, written by rank 0 into the job's checkpoint),
  then raises HostsUpdatedInterrupt when the membership changed.
- `restore()` loads the newest committed state back (after a rebuild: the newest any worker held).
- `run(func)` calls `func(state)` until it returns; a failed collective or a membership change rejoins the
  newest generation in place (no process restart), restores, calls the reset callbacks and calls it again.

Subclasses say what their bytes hold (`_state` / `_load`), how rank 0's state reaches everyone before the
first commit (`_broadcast_object`, or `sync` itself) and, where the framework has its own, how the state becomes
bytes (`_dumps` / `_loads`: pickle here, torch.save in ringmaster.torch) and what runs just before a commit
(`_committing`).
"""

import functools
import pickle

from ringmaster import _context
from ringmaster._membership import rejoin
from ringmaster.exceptions import HostsUpdatedInterrupt


class State:
    """Base class: attributes given as keywords, reset callbacks, commit, restore and the host-update check.
    An attribute with `state_dict()` / `load_state_dict()` (a sampler) is saved through those."""

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

    # -- what subclasses extend -----------------------------------------------------------------------
    def _state(self):
        """The picklable values this state commits."""
        out = {}
        for name in self._attrs:
            value = getattr(self, name)
            out[name] = value.state_dict() if _has_state_dict(value) else value
        return {"attrs": out}

    def _load(self, state):
        for name, value in state["attrs"].items():
            current = getattr(self, name, None)
            if _has_state_dict(current):
                current.load_state_dict(value)
            else:
                setattr(self, name, value)

    def _broadcast_object(self, obj):
        """Rank 0's `obj` on every rank (the framework's broadcast_object)."""
        raise NotImplementedError

    @staticmethod
    def _dumps(state):
        """The bytes a commit holds for `_state()`'s values."""
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def _loads(data):
        return pickle.loads(data)

    def _cursor(self):
        """The data cursor (epoch, samples committed) logged with a commit: the first attribute's that has one."""
        for name in self._attrs:
            value = getattr(self, name)
            if hasattr(value, "cursor"):
                return value.cursor()
        return (0, 0)

    def _committing(self):
        """Called just before the bytes are taken: an attribute's `_committing()` runs (a sampler marks the
        steps it handed out as done)."""
        for name in self._attrs:
            hook = getattr(getattr(self, name), "_committing", None)
            if callable(hook):
                hook()

    # -- Horovod's API --------------------------------------------------------------------------------
    def save(self):
        """Commits the state without checking for a membership change."""
        self._committing()
        data = self._dumps(self._state())
        epoch, committed = self._cursor()
        _context.context().session.commit(data, epoch, committed)

    def check_host_updates(self):
        if _context.context().session.superseded():
            raise HostsUpdatedInterrupt()

    def commit(self):
        self.save()
        self.check_host_updates()

    def restore(self):
        """Loads the newest committed state; False (and nothing changes) before the first commit."""
        _, _, _, data = _context.context().session.committed()
        if not data:
            return False
        self._load(self._loads(data))
        return True

    def sync(self):
        """Makes every worker's state rank 0's."""
        self._load(self._broadcast_object(self._state()))


class ObjectState(State):
    """Picklable attributes (`epoch=0, batch=0`, ...)."""


def _has_state_dict(value):
    return hasattr(value, "state_dict") and hasattr(value, "load_state_dict")


def run_fn(func, init, is_failure, describe=None):
    """`func(state, ...)` run until it returns, rejoining after every membership change.

    `init()` returns the process's Context (joining the job first when needed); `is_failure(exc)` says
    whether an exception is a failed collective (the framework's HorovodInternalError and its own forms);
    `describe(exc)` is how such a failure is reported at the rejoin (default: its message's first line)."""
    describe = describe or _first_line

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        ctx = init()
        reset = False
        while True:
            try:
                if not state.restore():
                    # Nothing committed anywhere yet: everyone starts from rank 0's initial state.
                    state.sync()
                    state.save()
                if reset:
                    state.on_reset()
                result = func(state, *args, **kwargs)
                # The last step counts once every member confirmed it (a failure here rolls it back and the
                # rejoined world runs it again); then its checkpoint is on disk before the job reports success.
                ctx.session.agree()
                ctx.session.finish()
                return result
            except HostsUpdatedInterrupt:
                rejoin(ctx, "membership changed")
            except Exception as e:
                if not is_failure(e):
                    raise
                rejoin(ctx, f"collective failed: {describe(e)}")
            reset = True

    return wrapper


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
