"""The op library's collectives as plain TensorFlow calls: reduce ops, collective names and process sets
resolved, nothing else (no compression, scaling or uneven shapes: ops.py builds those on top).

Every function takes a process set *id* (what the ops carry as their `process_set` attribute), so the
gradient functions, which only see an op's attributes, call the same functions as the public API.

Names. A collective is matched across ranks by name. Inside a graph (tf.function, a TF1 graph) an unnamed
collective passes "" and the kernel uses its node's name, which is the same on every rank that built the
same graph. Run eagerly, a node has no stable name: an unnamed collective is named here, "<op>.<set>.noname.<n>"
counting that op's calls per process set in this generation (the same sequence on every rank of the set).
"""

import tensorflow as tf

from ringmaster import _context, _native

from . import _library

Average = _native.AVERAGE
Sum = _native.SUM
Min = _native.MIN
Max = _native.MAX
Product = _native.PRODUCT
Adasum = -1  # named for scripts that import it; refused when used (as in ringmaster.torch)

_OP_NAMES = {Average: "Average", Sum: "Sum", Min: "Min", Max: "Max", Product: "Product"}


def resolve_op(average, op, default=Average):
    """Horovod's `op=` / deprecated `average=` pair resolved to a reduce op code."""
    if op is not None and average is not None:
        raise ValueError("give either op= or the deprecated average=, not both")
    if op is None:
        op = default if average is None else (Average if average else Sum)
    if op == Adasum:
        raise NotImplementedError(
            "the Adasum reduction is not supported by ringmaster: use op=hvd.Average (or hvd.Sum) instead"
        )
    if op not in _OP_NAMES:
        raise ValueError(f"unknown reduce op {op!r}: use hvd.Average, hvd.Sum, hvd.Min, hvd.Max or hvd.Product")
    return op


def set_id(process_set):
    """The id of `process_set` in the current generation (ValueError when it was removed or never added)."""
    return process_set._check(_context.context())


def collective_name(name, kind, set_id_):
    """The tensor_name input: the caller's name, "" in a graph (the node's name), an auto name eagerly."""
    if name is not None:
        return name
    if not tf.executing_eagerly():
        return ""
    return _context.context().auto_name(f"{kind}.{set_id_}")


def derived_name(name, suffix):
    """The name of a helper collective of a named one (the sizes exchanged before an uneven allgather...)."""
    return f"{name}.{suffix}" if name else name


def size_op(process_set_id=0, name=None):
    """An int32 scalar: the process set's size when the op runs (follows membership changes)."""
    return _library.ops().ringmaster_size(process_set=process_set_id, name=name)


def rank_op(process_set_id=0, name=None):
    """An int32 scalar: this worker's rank in the process set when the op runs."""
    return _library.ops().ringmaster_rank(process_set=process_set_id, name=name)


def allreduce(tensor, reduce_op, set_id_, name=None):
    return _library.ops().ringmaster_allreduce(
        tensor,
        tensor_name=collective_name(name, "allreduce", set_id_),
        reduce_op=reduce_op,
        process_set=set_id_,
    )


def grouped_allreduce(tensors, reduce_op, set_id_, name=None):
    return _library.ops().ringmaster_grouped_allreduce(
        list(tensors),
        tensor_name=collective_name(name, "grouped_allreduce", set_id_),
        reduce_op=reduce_op,
        process_set=set_id_,
    )


def allgather(tensor, set_id_, name=None):
    """Equal first dimensions on every rank."""
    return _library.ops().ringmaster_allgather(
        tensor, tensor_name=collective_name(name, "allgather", set_id_), process_set=set_id_
    )


def allgatherv(tensor, first_dims, set_id_, name=None):
    return _library.ops().ringmaster_allgatherv(
        tensor, first_dims, tensor_name=collective_name(name, "allgather", set_id_), process_set=set_id_
    )


def broadcast(tensor, set_root, set_id_, name=None):
    """`set_root`: the root's rank *in the set*."""
    return _library.ops().ringmaster_broadcast(
        tensor, tensor_name=collective_name(name, "broadcast", set_id_), root_rank=set_root, process_set=set_id_
    )


def reducescatter(tensor, reduce_op, set_id_, name=None):
    """First dimension divisible by the set's size."""
    return _library.ops().ringmaster_reducescatter(
        tensor, tensor_name=collective_name(name, "reducescatter", set_id_), reduce_op=reduce_op, process_set=set_id_
    )


def alltoall(tensor, set_id_, name=None):
    """First dimension divisible by the set's size: equal chunks."""
    return _library.ops().ringmaster_alltoall(
        tensor, tensor_name=collective_name(name, "alltoall", set_id_), process_set=set_id_
    )
