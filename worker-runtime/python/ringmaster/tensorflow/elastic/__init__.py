"""Elastic training for TensorFlow 2 and Keras, Horovod's API on Ringmaster's in-place rebuild.

    state = hvd.elastic.TensorFlowKerasState(model, sampler=sampler, epoch=0)

    @hvd.elastic.run
    def train(state):
        ...  # model.fit(...) with CommitStateCallback(state), or a loop that calls state.commit()

    train(state)

When a worker dies, one is added or the job is scaled, the collective in flight fails (a tf.errors.OpError
from a ringmaster op, HorovodInternalError) or the next commit sees the new generation
(HostsUpdatedInterrupt); `run` then rebuilds the communicators in place (no process restarts), restores the
newest committed state on every worker, calls the state's reset callbacks and calls the function again. A
worker that is no longer a member exits with status 0 (WorkerRemoved). The graphs already traced (Keras's
train function) keep working: the ops look up the current generation's communicator when they run.

ElasticSampler (sampler.py) is the exactly-once data path: a tf.data.Dataset of this rank's share of each
step of a fixed global batch, its cursor committed with the state.
"""

from ringmaster import _context, _elastic
from ringmaster.exceptions import HostsUpdatedInterrupt, WorkerRemoved

from .sampler import ElasticSampler
from .state import ObjectState, State, TensorFlowKerasState, TensorFlowState

# How a failed collective shows, whoever raised it: the TensorFlow ops raise tf.errors.OpError whose message
# starts with this; the native module raises CollectiveAborted.
_COLLECTIVE_PREFIX = "ringmaster collective '"


def _is_collective_failure(exc):
    """Whether `exc` is a collective that failed because a peer died or the membership changed."""
    import ringmaster.tensorflow as hvd
    from ringmaster import _native

    internal = getattr(hvd, "HorovodInternalError", None)
    if isinstance(internal, type) and isinstance(exc, internal):
        return True
    aborted = getattr(_native, "CollectiveAborted", None)
    if isinstance(aborted, type) and isinstance(exc, aborted):
        return True
    import tensorflow as tf

    # Searched, not matched at the start: TensorFlow prefixes a function's errors with where they happened.
    return isinstance(exc, tf.errors.OpError) and _COLLECTIVE_PREFIX in str(getattr(exc, "message", exc))


def _init():
    import ringmaster.tensorflow as hvd

    hvd.init()  # joins the job and binds the op library to the session (idempotent)
    return _context.context()


def run(func):
    """Decorates `func(state, ...)`: runs it, and after every membership change rebuilds, restores `state`
    and runs it again, until it returns."""
    return _elastic.run_fn(func, _init, _is_collective_failure)


__all__ = [
    "run",
    "State",
    "ObjectState",
    "TensorFlowState",
    "TensorFlowKerasState",
    "ElasticSampler",
    "HostsUpdatedInterrupt",
    "WorkerRemoved",
]
