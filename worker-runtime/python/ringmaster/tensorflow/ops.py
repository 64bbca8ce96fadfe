"""Horovod's collective operations on TensorFlow tensors: allreduce, grouped_allreduce, allgather,
broadcast, reducescatter and alltoall, eager or in a graph (tf.function, TF1), each differentiable.

What the op library does not (compression, pre/postscale, tf.IndexedSlices, uneven allgather, alltoall
and reducescatter) is TensorFlow ops around it, so it runs in the graph and TensorFlow differentiates it.
Ranks are world ranks (root_rank too) and `process_set` a ProcessSet, as in Horovod. A failed collective
raises HorovodInternalError (errors.py).
"""

import tensorflow as tf

from ringmaster.process_sets import global_process_set

from . import (
    _gradients,  # noqa: F401  (registers the ops' gradients)
    _ops,
)
from ._ops import Adasum, Average, Max, Min, Product, Sum, rank_op, size_op  # noqa: F401
from .compression import Compression


def _scale(tensor, factor, what):
    if factor == 1.0:
        return tensor
    if not tensor.dtype.is_floating:
        raise ValueError(f"{what} applies to floating-point tensors, not {tensor.dtype.name}: scale it yourself")
    return tensor * tf.cast(factor, tensor.dtype)


def _set_size(process_set):
    """The set's size as a graph value (follows membership changes; a constant eagerly)."""
    return _ops.size_op(_ops.set_id(process_set))


def _set_root(process_set, root_rank):
    ranks = process_set.ranks
    if root_rank not in ranks:
        raise ValueError(f"root_rank {root_rank} is not a member of {process_set!r}: give a world rank in the set")
    return ranks.index(root_rank)


def _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name, process_set):
    """Horovod's allreduce of a tf.IndexedSlices: every rank's values and indices, gathered."""
    if op not in (Sum, Average):
        raise NotImplementedError("only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("prescale_factor and postscale_factor are not supported with tf.IndexedSlices")
    values = allgather(tensor.values, name=_ops.derived_name(name, "values"), process_set=process_set)
    indices = allgather(tensor.indices, name=_ops.derived_name(name, "indices"), process_set=process_set)
    if op == Average:
        values = values / tf.cast(_set_size(process_set), values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)


def allreduce(
    tensor,
    average=None,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    name=None,
    process_set=global_process_set,
    ignore_name_scope=False,
):
    """Reduces `tensor` (a tf.Tensor, tf.Variable or tf.IndexedSlices) over the process set; `op` Average
    (the default), Sum, Min, Max or Product. A tf.IndexedSlices is gathered (values and indices of every
    rank; Sum or Average only). `ignore_name_scope` is accepted for Horovod's signature (names here never
    carry a name scope)."""
    op = _ops.resolve_op(average, op)
    if isinstance(tensor, tf.IndexedSlices):
        with tf.device(device_sparse):
            return _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name, process_set)
    with tf.device(device_dense):
        sent, ctx = compression.compress(tf.convert_to_tensor(tensor))
        sent = _scale(sent, prescale_factor, "prescale_factor")
        reduced = _ops.allreduce(sent, op, _ops.set_id(process_set), name)
        reduced = _scale(reduced, postscale_factor, "postscale_factor")
        return compression.decompress(reduced, ctx)


def grouped_allreduce(
    tensors,
    average=None,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    process_set=global_process_set,
    ignore_name_scope=False,
    name=None,
):
    """Reduces a list of tensors as one group (one fused submission for the dense ones); returns a list.
    tf.IndexedSlices in the list are gathered as `allreduce` does."""
    if not tensors:
        return tensors
    op = _ops.resolve_op(average, op)
    out = [None] * len(tensors)
    dense = []
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            with tf.device(device_sparse):
                sparse_name = _ops.derived_name(name, f"sparse.{i}")
                out[i] = _sparse_allreduce(t, op, prescale_factor, postscale_factor, sparse_name, process_set)
        else:
            dense.append(i)
    if dense:
        with tf.device(device_dense):
            sent, ctxs = [], []
            for i in dense:
                s, c = compression.compress(tf.convert_to_tensor(tensors[i]))
                sent.append(_scale(s, prescale_factor, "prescale_factor"))
                ctxs.append(c)
            reduced = _ops.grouped_allreduce(sent, op, _ops.set_id(process_set), name)
            for i, r, c in zip(dense, reduced, ctxs):
                out[i] = compression.decompress(_scale(r, postscale_factor, "postscale_factor"), c)
    return out


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates every rank's tensor along the first dimension, in rank order; the first dimension may
    differ between ranks (a scalar counts as one row). Two collectives: the first dimensions, then the data."""
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        tensor = tf.reshape(tensor, [1])
    sid = _ops.set_id(process_set)
    name = _ops.collective_name(name, "allgather", sid) or None
    mine = tf.reshape(tf.shape(tensor, out_type=tf.int64)[0], [1])
    first_dims = _ops.allgather(mine, sid, _ops.derived_name(name, "first_dims"))
    return _ops.allgatherv(tensor, first_dims, sid, name)


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=global_process_set):
    """`allgather` of each tensor of a list."""
    return [allgather(t, name=_ops.derived_name(name, str(i)), process_set=process_set) for i, t in enumerate(tensors)]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=global_process_set):
    """root_rank's `tensor` (root_rank: a world rank in the set) on every rank of the set."""
    return _ops.broadcast(
        tf.convert_to_tensor(tensor), _set_root(process_set, root_rank), _ops.set_id(process_set), name
    )


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Assigns root_rank's values to `variables` (a list); returns their new values."""
    return [
        v.assign(broadcast(v, root_rank, name=_ops.derived_name(name, str(i)), process_set=process_set))
        for i, v in enumerate(variables)
    ]


def _pad_chunks(tensor, sizes, starts, width):
    """Lays out chunk j of `tensor` (sizes[j] rows from starts[j]) in rows [j*width, j*width + sizes[j])
    of a zero tensor of len(sizes) x width rows. scatter_nd, not a gather: its gradient is dense."""
    chunk = tf.repeat(tf.range(tf.size(sizes, out_type=tf.int64)), sizes)
    row = tf.range(tf.shape(tensor, out_type=tf.int64)[0])
    target = chunk * width + row - tf.gather(starts, chunk)
    shape = tf.concat([[tf.size(sizes, out_type=tf.int64) * width], tf.shape(tensor, out_type=tf.int64)[1:]], 0)
    return tf.scatter_nd(target[:, tf.newaxis], tensor, shape)


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Sends rows to every rank of the set: `splits[j]` rows (in order) to rank j, equal chunks without
    `splits`. Returns the rows received, in rank order, and with `splits` also `received_splits` (int32:
    how many rows came from each rank), as Horovod does.

    Uneven splits: every rank's splits are gathered (an n x n matrix), each chunk is padded to the largest
    split in the job, an equal alltoall moves them and the padding is dropped."""
    tensor = tf.convert_to_tensor(tensor)
    if tensor.shape.rank == 0:
        raise ValueError("alltoall needs a tensor with at least one dimension")
    sid = _ops.set_id(process_set)
    n = process_set.size()
    if splits is None:
        rows = tensor.shape[0]
        if rows is not None and rows % n != 0:
            raise ValueError(f"alltoall: {rows} rows do not split evenly over {n} ranks; give splits=")
        return _ops.alltoall(tensor, sid, name)
    name = _ops.collective_name(name, "alltoall", sid) or None
    splits = tf.cast(tf.reshape(tf.convert_to_tensor(splits), [n]), tf.int64)
    rows = tf.shape(tensor, out_type=tf.int64)[0]
    checks = [
        tf.debugging.assert_equal(
            tf.reduce_sum(splits), rows, message=f"alltoall: splits must sum to the tensor's {tensor.shape[0]} rows"
        ),
        tf.debugging.assert_non_negative(splits, message="alltoall: negative splits"),
    ]
    with tf.control_dependencies(checks):
        matrix = _ops.allgather(tf.reshape(splits, [1, n]), sid, _ops.derived_name(name, "splits"))
    me = tf.cast(_ops.rank_op(sid), tf.int64)
    received_splits = matrix[:, me]
    width = tf.reduce_max(matrix)
    padded = _pad_chunks(tensor, splits, tf.cumsum(splits, exclusive=True), width)
    exchanged = _ops.alltoall(padded, sid, name)
    keep = tf.reshape(tf.range(width)[tf.newaxis, :] < received_splits[:, tf.newaxis], [-1])
    return tf.boolean_mask(exchanged, keep), tf.cast(received_splits, tf.int32)


def reducescatter(
    tensor,
    device_dense="",
    compression=Compression.none,
    op=Average,
    name=None,
    process_set=global_process_set,
    ignore_name_scope=False,
    prescale_factor=1.0,
    postscale_factor=1.0,
):
    """Reduces across the set and gives each rank its block of the first dimension. The first dimension
    need not divide by the set's size: as in Horovod, the first (rows % size) ranks get one row more (the
    blocks are padded to equal size with TF ops around the op and the padding dropped)."""
    op = _ops.resolve_op(None, op)
    with tf.device(device_dense):
        sent, ctx = compression.compress(tf.convert_to_tensor(tensor))
        if sent.shape.rank == 0:
            raise ValueError("reducescatter needs a tensor with at least one dimension")
        sent = _scale(sent, prescale_factor, "prescale_factor")
        sid = _ops.set_id(process_set)
        n = process_set.size()
        if sent.shape[0] is not None and sent.shape[0] % n == 0:
            reduced = _ops.reducescatter(sent, op, sid, name)
        else:
            rows = tf.shape(sent, out_type=tf.int64)[0]
            base, extra = rows // n, rows % n
            j = tf.range(n, dtype=tf.int64)
            sizes = base + tf.cast(j < extra, tf.int64)
            starts = j * base + tf.minimum(j, extra)
            width = base + tf.cast(extra > 0, tf.int64)
            padded = _pad_chunks(sent, sizes, starts, width)
            block = _ops.reducescatter(padded, op, sid, name)
            reduced = block[: sizes[tf.cast(_ops.rank_op(sid), tf.int64)]]
        reduced = _scale(reduced, postscale_factor, "postscale_factor")
        return compression.decompress(reduced, ctx)


def grouped_reducescatter(
    tensors,
    device_dense="",
    compression=Compression.none,
    op=Average,
    process_set=global_process_set,
    prescale_factor=1.0,
    postscale_factor=1.0,
):
    """`reducescatter` of each tensor of a list."""
    return [
        reducescatter(t, device_dense, compression, op, None, process_set, False, prescale_factor, postscale_factor)
        for t in tensors
    ]
