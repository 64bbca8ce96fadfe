"""The gradients of the op library's collectives, as Horovod defines them for its TensorFlow ops.

Horovod treats the job's loss as the ranks' losses together, with these conventions (kept as they are, so
a model trained with Horovod trains the same here):
    allreduce(op)          -> allreduce(grad, op)           (pre/postscale are TF multiplies around the op,
                                                              so autodiff scales the gradient alike)
    grouped_allreduce(op)  -> grouped_allreduce(grads, op)
    allgather              -> allreduce(grad, Average), then this rank's rows
    broadcast              -> allreduce(grad, Average) on the root, zeros elsewhere
    reducescatter(op)      -> allgather(grad x set size) for Sum, allgather(grad) otherwise
    alltoall               -> alltoall(grad) (equal chunks: the exchange is its own inverse; the uneven
                              alltoall of ops.py is TF ops around it, differentiated by TensorFlow)
Each op's last input is its collective name (a string): no gradient.
"""

import tensorflow as tf

from . import _ops


def _rank(op):
    return _ops.rank_op(op.get_attr("process_set"))


@tf.RegisterGradient("RingmasterAllreduce")
def _allreduce_grad(op, grad):
    return [_ops.allreduce(grad, op.get_attr("reduce_op"), op.get_attr("process_set")), None]


@tf.RegisterGradient("RingmasterGroupedAllreduce")
def _grouped_allreduce_grad(op, *grads):
    # Outputs that did not reach the loss have no gradient: every rank still reduces a zero in their place.
    grads = [g if g is not None else tf.zeros_like(out) for g, out in zip(grads, op.outputs)]
    reduced = _ops.grouped_allreduce(grads, op.get_attr("reduce_op"), op.get_attr("process_set"))
    return list(reduced) + [None]


def _average(op, grad):
    return _ops.allreduce(grad, _ops.Average, op.get_attr("process_set"))


@tf.RegisterGradient("RingmasterAllgather")
def _allgather_grad(op, grad):
    rows = tf.shape(op.inputs[0], out_type=tf.int32)[0]
    start = _rank(op) * rows
    return [_average(op, grad)[start : start + rows], None]


@tf.RegisterGradient("RingmasterAllgatherv")
def _allgatherv_grad(op, grad):
    first_dims = op.inputs[1]
    rank = _rank(op)
    start = tf.reduce_sum(first_dims[:rank])
    return [_average(op, grad)[start : start + first_dims[rank]], None, None]


@tf.RegisterGradient("RingmasterBroadcast")
def _broadcast_grad(op, grad):
    reduced = _average(op, grad)
    is_root = tf.equal(_rank(op), op.get_attr("root_rank"))
    return [tf.where(is_root, reduced, tf.zeros_like(reduced)), None]


@tf.RegisterGradient("RingmasterReducescatter")
def _reducescatter_grad(op, grad):
    set_id = op.get_attr("process_set")
    if op.get_attr("reduce_op") == _ops.Sum:
        grad = grad * tf.cast(_ops.size_op(set_id), grad.dtype)
    return [_ops.allgather(grad, set_id), None]


@tf.RegisterGradient("RingmasterAlltoall")
def _alltoall_grad(op, grad):
    return [_ops.alltoall(grad, op.get_attr("process_set")), None]


tf.no_gradient("RingmasterSize")
tf.no_gradient("RingmasterRank")
