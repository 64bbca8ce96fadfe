"""Local gradient aggregation for TF1's DistributedOptimizer (backward_passes_per_step > 1), as Horovod's
LocalGradientAggregationHelper does it: gradients accumulate in local variables and are reduced (and
applied) once every backward_passes_per_step steps. Graph mode only.

Per step: when the counter is 0 the accumulators are cleared; the step's gradients are added; the counter
goes up; when it reaches backward_passes_per_step the accumulated gradients are reduced (divided by
backward_passes_per_step when average_aggregated_gradients) and the counter returns to 0. apply_gradients
applies them only on that step (the counter is 0 again); the other steps only advance global_step.
"""

import tensorflow as tf


class LocalGradientAggregationHelper:
    def __init__(self, backward_passes_per_step, reduce_grads, sparse_as_dense, average_aggregated_gradients, name):
        if backward_passes_per_step <= 0:
            raise ValueError("backward_passes_per_step must be > 0")
        self.backward_passes_per_step = backward_passes_per_step
        self._reduce_grads = reduce_grads  # (grads, variables) -> reduced grads
        self.sparse_as_dense = sparse_as_dense
        self.average_aggregated_gradients = average_aggregated_gradients
        self.name = name
        self.counter = None
        self._accumulators = []  # one local variable per gradient that is not None

    def _dense(self, grad):
        if isinstance(grad, tf.IndexedSlices):
            if not self.sparse_as_dense:
                raise ValueError(
                    "tf.IndexedSlices gradients are not supported with backward_passes_per_step > 1 unless "
                    "sparse_as_dense=True"
                )
            return tf.convert_to_tensor(grad)
        return grad

    def _local_variable(self, name, initial):
        return tf.compat.v1.Variable(
            initial, trainable=False, name=name, collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES]
        )

    def compute_gradients(self, grads, variables):
        grads = [self._dense(g) if g is not None else None for g in grads]
        present = [i for i, g in enumerate(grads) if g is not None]
        with tf.compat.v1.variable_scope(None, default_name=f"{self.name}_aggregation"):
            self.counter = self._local_variable("counter", tf.constant(0, tf.int32))
            self._accumulators = [
                self._local_variable(f"grad_{i}", tf.zeros(grads[i].shape, grads[i].dtype)) for i in present
            ]
        clear = tf.cond(
            tf.equal(self.counter, 0),
            lambda: tf.group(*[a.assign(tf.zeros_like(a)) for a in self._accumulators]),
            tf.no_op,
        )
        with tf.control_dependencies([clear]):
            added = tf.group(*[a.assign_add(grads[i]) for a, i in zip(self._accumulators, present)])
        with tf.control_dependencies([added]):
            counted = self.counter.assign_add(1)
        with tf.control_dependencies([counted]):
            result = tf.cond(
                tf.equal(self.counter, self.backward_passes_per_step),
                lambda: self._reduce_accumulated([variables[i] for i in present]),
                lambda: [tf.identity(grads[i]) for i in present],
            )
        result = result if isinstance(result, (list, tuple)) else [result]
        out = [None] * len(grads)
        for i, r in zip(present, result):
            out[i] = r
        return out

    def _reduce_accumulated(self, variables):
        values = [a.read_value() for a in self._accumulators]
        reduced = self._reduce_grads(values, variables)
        with tf.control_dependencies(reduced):
            reset = self.counter.assign(0)
        divisor = self.backward_passes_per_step if self.average_aggregated_gradients else 1
        with tf.control_dependencies([reset]):
            return [r / tf.cast(divisor, r.dtype) for r in reduced]

    def apply_gradients(self, apply_closure, optimizer, grads_and_vars, global_step=None):
        """Applies on the reducing step; on the others only advances global_step (and the optimizer's
        iterations, when it has some)."""
        ready = [g for g, _ in grads_and_vars if g is not None]

        def skip():
            ops = []
            if getattr(optimizer, "iterations", None) is not None:
                ops.append(optimizer.iterations.assign_add(1).op)
            if global_step is not None:
                ops.append(tf.compat.v1.assign_add(global_step, tf.constant(1, global_step.dtype.base_dtype)).op)
            return tf.group(*ops)

        with tf.control_dependencies(ready):
            return tf.cond(tf.equal(self.counter, 0), lambda: tf.group(apply_closure()), skip)
