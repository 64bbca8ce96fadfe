"""Horovod's helpers for model state and Python objects: broadcast_variables,
broadcast_global_variables (TF1), broadcast_object and allgather_object."""

import io

import cloudpickle
import numpy as np
import tensorflow as tf

from ringmaster import _context
from ringmaster.process_sets import global_process_set

from .ops import allgather, broadcast


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Assigns root_rank's values to `variables` on every rank of the set (every rank passes its own
    variables in the same order). Eagerly this runs one tf.function, so the broadcasts go out together;
    in a graph it returns the op that does it. `inplace` is accepted for Horovod's signature."""
    variables = list(variables)

    def assign_all():
        return [v.assign(broadcast(v, root_rank, process_set=process_set)) for v in variables]

    if tf.executing_eagerly():
        if variables:
            tf.function(assign_all, autograph=False)()
        return None
    return tf.group(*assign_all())


def broadcast_global_variables(root_rank):
    """TF1: the op that assigns root_rank's values to every global variable."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager execution: use "
            "hvd.broadcast_variables(<model and optimizer variables>, root_rank) instead"
        )
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


def _to_numpy(value, session):
    if tf.executing_eagerly():
        return value.numpy()
    session = session or tf.compat.v1.get_default_session()
    if session is None:
        raise ValueError("in graph mode broadcast_object/allgather_object need session= (or a default session)")
    return session.run(value)


def _pickled(obj):
    buf = io.BytesIO()
    cloudpickle.dump(obj, buf)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """Returns root_rank's `obj` (anything cloudpickle can serialize) on every rank of the set. In a TF1
    graph, `session` (or the default session) runs the broadcasts."""
    name = name or "broadcast_object"
    is_root = _context.context().topology["rank"] == root_rank
    payload = _pickled(obj) if is_root else np.zeros(0, dtype=np.uint8)
    length = np.array([payload.size], dtype=np.int64)
    length = _to_numpy(broadcast(length, root_rank, name=f"{name}.sz", process_set=process_set), session)
    if not is_root:
        payload = np.zeros(int(length[0]), dtype=np.uint8)
    data = _to_numpy(broadcast(payload, root_rank, name=f"{name}.t", process_set=process_set), session)
    return obj if is_root else cloudpickle.loads(data.tobytes())


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Returns the list of every set member's `obj`, in rank order."""
    name = name or "allgather_object"
    payload = _pickled(obj)
    sizes = _to_numpy(
        allgather(np.array([payload.size], dtype=np.int64), name=f"{name}.sz", process_set=process_set), session
    )
    data = _to_numpy(allgather(payload, name=f"{name}.t", process_set=process_set), session).tobytes()
    out, offset = [], 0
    for size in sizes.tolist():
        out.append(cloudpickle.loads(data[offset : offset + size]))
        offset += size
    return out
