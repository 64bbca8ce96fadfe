"""DistributedGradientTape (and PartialDistributedGradientTape): a tf.GradientTape whose gradient()
returns gradients reduced over the process set, all of them in one grouped allreduce."""

import tensorflow as tf

from ringmaster.process_sets import global_process_set

from . import _ops
from ._grad_reduce import GradientReducer, check_options, scale_local, var_key
from .compression import Compression


class _DistributedGradientTape(tf.GradientTape):
    """Shares the wrapped tape's recording (so it can wrap a tape after its `with` block, as Horovod's
    examples do) and reduces what gradient() returns."""

    def __init__(self, tape, reducer, process_set, scale_local_gradients):
        super().__init__(persistent=tape._persistent, watch_accessed_variables=tape._watch_accessed_variables)
        self._tape = tape._tape
        self._reducer = reducer
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._local_sources = set()

    def register_local_source(self, source):
        """Keeps `source`'s gradient local: not reduced (divided by the set's size when
        scale_local_gradients)."""
        self._local_sources.add(var_key(source))

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=None, use_generic_names=False):
        kwargs = {} if unconnected_gradients is None else {"unconnected_gradients": unconnected_gradients}
        grads = super().gradient(target, sources, output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads)
        shared = [i for i, s in enumerate(flat_sources) if var_key(s) not in self._local_sources]
        reduced = self._reducer([flat_grads[i] for i in shared], [flat_sources[i] for i in shared])
        out = list(flat_grads)
        for i, g in zip(shared, reduced):
            out[i] = g
        if self.scale_local_gradients and self._local_sources:
            for i, s in enumerate(flat_sources):
                if var_key(s) in self._local_sources and out[i] is not None:
                    out[i] = scale_local(out[i], self.process_set)
        return tf.nest.pack_sequence_as(grads, out)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None, use_generic_names=False):
        """(local, global): lists of (source, gradient) pairs, the registered local sources first."""
        grads = self.gradient(target, sources, output_gradients)
        local, shared = [], []
        for s, g in zip(tf.nest.flatten(sources), tf.nest.flatten(grads)):
            (local if var_key(s) in self._local_sources else shared).append((s, g))
        return local, shared


def DistributedGradientTape(
    gradtape,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    sparse_as_dense=False,
    op=_ops.Average,
    gradient_predivide_factor=1.0,
    num_groups=0,
    groups=None,
    process_set=global_process_set,
    scale_local_gradients=True,
):
    """Wraps a tf.GradientTape: gradient() averages (op) the gradients over the process set with one
    grouped allreduce (one per group when `groups` is an int or a list of lists of variables).
    `sparse_as_dense` densifies tf.IndexedSlices (else they are gathered); `gradient_predivide_factor` f
    divides by f before the sum and by size / f after it (op=Average only)."""
    groups = check_options(op, gradient_predivide_factor, num_groups, groups)
    reducer = GradientReducer(
        "DistributedGradientTape",
        device_dense,
        device_sparse,
        compression,
        sparse_as_dense,
        op,
        gradient_predivide_factor,
        groups,
        process_set,
    )
    return _DistributedGradientTape(gradtape, reducer, process_set, scale_local_gradients)


def PartialDistributedGradientTape(
    gradtape,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    sparse_as_dense=False,
    op=_ops.Average,
    gradient_predivide_factor=1.0,
    num_groups=0,
    groups=None,
    process_set=global_process_set,
    local_layers=None,
    scale_local_gradients=True,
):
    """DistributedGradientTape whose `local_layers` (Keras layers) keep their gradients local."""
    if local_layers is None:
        local_layers = []
    elif not isinstance(local_layers, (list, tuple)):
        local_layers = [local_layers]
    tape = DistributedGradientTape(
        gradtape,
        device_dense,
        device_sparse,
        compression,
        sparse_as_dense,
        op,
        gradient_predivide_factor,
        num_groups,
        groups,
        process_set,
        scale_local_gradients,
    )
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
