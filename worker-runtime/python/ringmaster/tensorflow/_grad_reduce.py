"""How DistributedGradientTape and DistributedOptimizer reduce a list of gradients: one grouped allreduce
(or one per group when `groups` is given), Horovod's options applied."""

import tensorflow as tf

from ringmaster.process_sets import global_process_set

from . import _ops
from .compression import Compression
from .ops import grouped_allreduce


def check_options(op, gradient_predivide_factor, num_groups, groups):
    """Validates Horovod's options; returns `groups` (num_groups is its deprecated spelling)."""
    if op == _ops.Adasum:
        raise NotImplementedError(
            "the Adasum reduction is not supported by ringmaster: use op=hvd.Average (or hvd.Sum) instead"
        )
    if gradient_predivide_factor != 1.0 and op != _ops.Average:
        raise ValueError("gradient_predivide_factor is supported only with op=hvd.Average")
    if num_groups:
        groups = groups if groups is not None else num_groups
    if groups is not None and not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError("groups must be a positive integer or a list of lists of tf.Variable")
    return groups


def var_key(variable):
    """A hashable identity for a variable: tf.Variable.ref(), or id() for variables without one
    (Keras 3's keras.Variable)."""
    return variable.ref() if hasattr(variable, "ref") else id(variable)


def _split(items, n):
    """Horovod's split of a list into n consecutive parts whose sizes differ by at most one."""
    d, r = divmod(len(items), n)
    return [items[i * d + min(i, r) : (i + 1) * d + min(i + 1, r)] for i in range(n)]


class GradientReducer:
    """Reduces gradients over a process set; `__call__(grads, variables)` returns the reduced list
    (None stays None)."""

    def __init__(
        self,
        name,
        device_dense="",
        device_sparse="",
        compression=Compression.none,
        sparse_as_dense=False,
        op=_ops.Average,
        gradient_predivide_factor=1.0,
        groups=None,
        process_set=global_process_set,
    ):
        self.name = name
        self.device_dense = device_dense
        self.device_sparse = device_sparse
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.groups = groups
        self.process_set = process_set
        # Average with a predivide factor f: scaled by 1/f before the sum and by f / size after it.
        self.prescale = 1.0 / gradient_predivide_factor if op == _ops.Average else 1.0
        self.postscale = gradient_predivide_factor if op == _ops.Average else 1.0

    def _partition(self, present, variables):
        """Lists of indices into the gradients, one list per grouped allreduce."""
        if self.groups is None:
            return [present]
        if isinstance(self.groups, int):
            return [g for g in _split(present, self.groups) if g]
        by_var = {var_key(variables[i]): i for i in present}
        parts = []
        for group in self.groups:
            part = [by_var.pop(var_key(v)) for v in group if var_key(v) in by_var]
            if part:
                parts.append(part)
        return parts + [[i] for i in present if var_key(variables[i]) in by_var]

    def __call__(self, grads, variables=None):
        grads = list(grads)
        # Horovod skips the reduction on ranks outside the set.
        if not self.process_set.included():
            return grads
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        present = [i for i, g in enumerate(grads) if g is not None]
        if not present:
            return grads
        out = list(grads)
        with tf.name_scope(self.name + "_Allreduce"):
            for part in self._partition(present, variables):
                reduced = grouped_allreduce(
                    [grads[i] for i in part],
                    device_dense=self.device_dense,
                    device_sparse=self.device_sparse,
                    compression=self.compression,
                    op=self.op,
                    prescale_factor=self.prescale,
                    postscale_factor=self.postscale,
                    process_set=self.process_set,
                )
                for i, r in zip(part, reduced):
                    out[i] = r
        return out


def scale_local(grad, process_set):
    """A worker-local gradient divided by the set's size (Horovod's scale_local_gradients)."""
    size = tf.cast(_ops.size_op(_ops.set_id(process_set)), grad.dtype)
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / size, grad.indices, grad.dense_shape)
    return grad / size
