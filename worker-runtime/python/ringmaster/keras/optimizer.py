"""DistributedOptimizer for Keras 3 optimizers (TensorFlow backend).

`DistributedOptimizer(opt)` returns an optimizer of a class made on the fly from `opt`'s class, with the
same name and module (a saved model loads without Ringmaster), configured like `opt`. Its `apply` (which
`apply_gradients`, `minimize` and Keras's compiled train step all go through) reduces the gradients across
the ranks before the wrapped optimizer's own update: dense gradients in one grouped allreduce (or one per
group with `groups`), sparse ones (tf.IndexedSlices) by allgather unless `sparse_as_dense`. It works eagerly
and inside tf.function; the collectives read the current generation's communicator when they run, so a
traced train function keeps working after a membership change.

`backward_passes_per_step=n` accumulates n steps' gradients locally (in variables the optimizer keeps
outside its `variables`, so checkpoints keep the wrapped optimizer's layout) and reduces and applies them
on every n-th step; the other steps only count `iterations`, as Horovod's.
"""

import tensorflow as tf

from ringmaster.process_sets import global_process_set


class _Accumulation:
    """backward_passes_per_step's local accumulators: a plain holder, so neither Keras's tracker nor
    TensorFlow's checkpoint dependency tracking counts them among the optimizer's variables."""

    def __init__(self, variables, key):
        with tf.init_scope():
            self.counter = tf.Variable(0, dtype=tf.int64, trainable=False, name="hvd_backward_passes")
            self.grads = [
                tf.Variable(tf.zeros(v.shape, dtype=v.dtype), trainable=False, name="hvd_accumulated_grad")
                for v in variables
            ]
        self.index = {key(v): i for i, v in enumerate(variables)}

    def reset(self):
        self.counter.assign(0)
        for g in self.grads:
            g.assign(tf.zeros_like(g))


class _DistributedOptimizer:
    """The methods added to the wrapped optimizer's class (see the module docstring)."""

    def _hvd_configure(self, name, compression, sparse_as_dense, gradient_predivide_factor, op, passes, average, groups,
                       process_set, scale_local):  # fmt: skip
        # object.__setattr__: plain settings, kept away from Keras's variable tracker.
        settings = dict(
            _hvd_name=name or f"Distributed{type(self).__name__}",
            _hvd_sparse_as_dense=sparse_as_dense,
            _hvd_passes=int(passes),
            _hvd_average_aggregated=bool(average),
            process_set=process_set,
            _hvd_local_vars=set(),
            _hvd_scale_local=bool(scale_local),
            _hvd_accumulation=None,
        )
        for key, value in settings.items():
            object.__setattr__(self, key, value)
        from ringmaster.tensorflow._grad_reduce import GradientReducer

        if isinstance(groups, list):
            groups = [[_tf_variable(v) for v in group] for group in groups]
        reducer = GradientReducer(
            settings["_hvd_name"],
            compression=compression,
            sparse_as_dense=sparse_as_dense,
            op=op,
            gradient_predivide_factor=gradient_predivide_factor,
            groups=groups,
            process_set=process_set,
        )
        object.__setattr__(self, "_hvd_reducer", reducer)

    # -- Horovod's API ---------------------------------------------------------------------------------
    def register_local_var(self, var):
        """`var` is worker-local: its gradient is not reduced (with scale_local_gradients, the default, it is
        divided by the set's size, as Horovod's)."""
        self._hvd_local_vars.add(self._var_key(var))

    # -- Keras's hooks ---------------------------------------------------------------------------------
    def build(self, variables):
        super().build(variables)
        if self._hvd_passes > 1:
            object.__setattr__(self, "_hvd_accumulation", _Accumulation(list(variables), self._var_key))

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                return super().apply(grads, trainable_variables)  # Keras's own error message
            variables = list(self._trainable_variables)
        else:
            variables = list(trainable_variables)
            if not self.built:
                with tf.init_scope():
                    self.build(variables)
        if not grads:
            return super().apply(grads, trainable_variables)
        if self._hvd_accumulation is None:
            return super().apply(self._reduce(grads, variables), variables)
        return self._apply_accumulated(grads, variables)

    def _apply_accumulated(self, grads, variables):
        acc = self._hvd_accumulation
        slots = []
        for g, v in zip(grads, variables):
            if g is None:
                slots.append(None)
                continue
            if isinstance(g, tf.IndexedSlices):
                if not self._hvd_sparse_as_dense:
                    raise ValueError(
                        "IndexedSlices are not supported when `backward_passes_per_step` > 1 and "
                        "`sparse_as_dense` is False: pass sparse_as_dense=True"
                    )
                g = tf.convert_to_tensor(g)
            slot = acc.grads[acc.index[self._var_key(v)]]
            slot.assign_add(tf.cast(g, slot.dtype))
            slots.append(slot)
        count = acc.counter.assign_add(1)

        def reduce_and_apply():
            summed = [None if s is None else s.read_value() for s in slots]
            reduced = self._reduce(summed, variables)
            if self._hvd_average_aggregated:
                reduced = [None if r is None else r / self._hvd_passes for r in reduced]
            super(_DistributedOptimizer, self).apply(reduced, variables)
            acc.reset()
            return tf.constant(True)

        def count_only():
            self._iterations.assign_add(1)
            return tf.constant(False)

        # Every rank counts the same steps, so every rank takes the same branch (the collective's).
        tf.cond(tf.equal(count, self._hvd_passes), reduce_and_apply, count_only)

    def _reset_local_accumulation(self):
        """Drops gradients accumulated since the last allreduce (the elastic state's restore calls this)."""
        if self._hvd_accumulation is not None:
            self._hvd_accumulation.reset()

    # -- the reduction ---------------------------------------------------------------------------------
    def _reduce(self, grads, variables):
        """The gradients reduced across the ranks (None stays None); a registered local variable's gradient
        is divided by the set's size instead (Horovod's scale_local_gradients)."""
        from ringmaster.tensorflow._grad_reduce import scale_local

        local = [g is not None and self._var_key(v) in self._hvd_local_vars for g, v in zip(grads, variables)]
        shared = [None if is_local else g for g, is_local in zip(grads, local)]
        out = self._hvd_reducer(shared, [_tf_variable(v) for v in variables])
        if not self._hvd_scale_local:
            return [g if is_local else r for g, r, is_local in zip(grads, out, local)]
        return [scale_local(g, self.process_set) if is_local else r for g, r, is_local in zip(grads, out, local)]


def _tf_variable(variable):
    """The tf.Variable behind a keras.Variable (TensorFlow backend), which the gradient reducer keys by."""
    return variable if isinstance(variable, tf.Variable) else getattr(variable, "value", variable)


_classes = {}


def _distributed_class(base):
    """The wrapped class for optimizer class `base` (made once per class)."""
    cls = _classes.get(base)
    if cls is None:
        # Named and placed as the wrapped class, so a saved model serialises it as that class and loads
        # without Ringmaster (Horovod does the same).
        members = {"__module__": base.__module__, "__qualname__": base.__qualname__}
        cls = type(base.__name__, (_DistributedOptimizer, base), members)
        _classes[base] = cls
    return cls


def create_distributed_optimizer(optimizer, name, compression, sparse_as_dense, gradient_predivide_factor, op,
                                 backward_passes_per_step, average_aggregated_gradients, groups,
                                 process_set=global_process_set, scale_local_gradients=True):  # fmt: skip
    """The DistributedOptimizer of `optimizer` (a keras.optimizers.Optimizer); its configuration is copied,
    its state (slot variables) is not: wrap the optimizer before training, as in Horovod."""
    import keras

    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError(
            f"DistributedOptimizer wraps a keras.optimizers.Optimizer (Keras 3), not {type(optimizer).__name__}; "
            "for a TensorFlow 1 optimizer use ringmaster.tensorflow.DistributedOptimizer"
        )
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be > 0")
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("this optimizer is already a DistributedOptimizer")
    cls = _distributed_class(type(optimizer))
    wrapped = cls.from_config(optimizer.get_config())
    wrapped._hvd_configure(
        name,
        compression,
        sparse_as_dense,
        gradient_predivide_factor,
        op,
        backward_passes_per_step,
        average_aggregated_gradients,
        groups,
        process_set,
        scale_local_gradients,
    )
    return wrapped
