"""DistributedOptimizer: a tf.compat.v1.train.Optimizer whose compute_gradients returns gradients reduced
over the process set (Keras optimizers are handed to ringmaster.keras.DistributedOptimizer)."""

import tensorflow as tf

from ringmaster.process_sets import global_process_set

from . import _ops
from ._grad_reduce import GradientReducer, check_options, scale_local, var_key
from .compression import Compression
from .gradient_aggregation import LocalGradientAggregationHelper


class _DistributedOptimizer(tf.compat.v1.train.Optimizer):
    """Wraps a TF1 optimizer: compute_gradients reduces, everything else is the wrapped optimizer's."""

    def __init__(
        self,
        optimizer,
        name,
        use_locking,
        reducer,
        backward_passes_per_step,
        sparse_as_dense,
        average_aggregated_gradients,
        process_set,
        scale_local_gradients,
    ):
        name = name or f"Distributed{type(optimizer).__name__}"
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._reducer = reducer
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._local_vars = set()
        self._agg_helper = None
        if backward_passes_per_step > 1:
            if tf.executing_eagerly():
                raise ValueError(
                    "backward_passes_per_step > 1 needs graph mode with a tf.compat.v1 optimizer: build the "
                    "training op in a graph, or use a Keras optimizer (ringmaster.keras)"
                )
            self._agg_helper = LocalGradientAggregationHelper(
                backward_passes_per_step, self._reduce, sparse_as_dense, average_aggregated_gradients, name
            )

    def register_local_var(self, var):
        """Keeps `var`'s gradient local: not reduced (divided by the set's size when scale_local_gradients)."""
        self._local_vars.add(var_key(var))

    def _reduce(self, grads, variables):
        shared = [i for i, v in enumerate(variables) if var_key(v) not in self._local_vars]
        reduced = self._reducer([grads[i] for i in shared], [variables[i] for i in shared])
        out = list(grads)
        for i, g in zip(shared, reduced):
            out[i] = g
        if self.scale_local_gradients and self._local_vars:
            for i, v in enumerate(variables):
                if var_key(v) in self._local_vars and out[i] is not None:
                    out[i] = scale_local(out[i], self.process_set)
        return out

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients, reduced over the process set (every backward_passes_per_step
        steps when aggregating locally)."""
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        grads, variables = [g for g, _ in pairs], [v for _, v in pairs]
        if self._agg_helper is not None:
            reduced = self._agg_helper.compute_gradients(grads, variables)
        else:
            reduced = self._reduce(grads, variables)
        return list(zip(reduced, variables))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        if self._agg_helper is not None:
            return self._agg_helper.apply_gradients(
                lambda: self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name),
                self._optimizer,
                grads_and_vars,
                global_step=global_step,
            )
        return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(
    optimizer,
    name=None,
    use_locking=False,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    sparse_as_dense=False,
    backward_passes_per_step=1,
    op=_ops.Average,
    gradient_predivide_factor=1.0,
    average_aggregated_gradients=False,
    num_groups=0,
    groups=None,
    process_set=global_process_set,
    scale_local_gradients=True,
):
    """Wraps a tf.compat.v1.train.Optimizer so that its gradients are reduced (op, Average by default) over
    the process set before they are applied, all in one grouped allreduce (one per group with `groups`).
    `backward_passes_per_step` > 1 accumulates that many steps' gradients locally and reduces and applies
    them once (graph mode). A Keras optimizer is wrapped by ringmaster.keras.DistributedOptimizer."""
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        groups = check_options(op, gradient_predivide_factor, num_groups, groups)
        reducer = GradientReducer(
            name or f"Distributed{type(optimizer).__name__}",
            device_dense,
            device_sparse,
            compression,
            sparse_as_dense,
            op,
            gradient_predivide_factor,
            groups,
            process_set,
        )
        return _DistributedOptimizer(
            optimizer,
            name,
            use_locking,
            reducer,
            backward_passes_per_step,
            sparse_as_dense,
            average_aggregated_gradients,
            process_set,
            scale_local_gradients,
        )
    from ringmaster import keras as hvd_keras  # here: Keras is imported only by Keras users

    return hvd_keras.DistributedOptimizer(
        optimizer=optimizer,
        name=name,
        device_dense=device_dense,
        device_sparse=device_sparse,
        compression=compression,
        sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor,
        op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        num_groups=num_groups,
        groups=groups,
        process_set=process_set,
        scale_local_gradients=scale_local_gradients,
    )
