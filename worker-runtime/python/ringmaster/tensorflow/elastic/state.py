"""What a TensorFlow elastic job keeps across membership changes (Horovod's TensorFlowState and
TensorFlowKerasState) on the session's commit path (ringmaster/_elastic.py).

A commit pickles the variables' values (numpy arrays, in the variables' order) with the other attributes
and hands the bytes to the session; a restore assigns them back, on every worker from the newest commit
any worker held. Before the first commit every worker takes rank 0's values (broadcast_variables). Eager
execution only (TensorFlow 2), as Horovod's TF2 path.
"""

import numpy as np

from ringmaster import _elastic


def _tf():
    import ringmaster.tensorflow as hvd

    return hvd


class State(_elastic.State):
    """Base class (reset callbacks, commit, restore, check_host_updates), synced through TensorFlow's
    broadcast_object."""

    def _broadcast_object(self, obj):
        return _tf().broadcast_object(obj, root_rank=0, name="elastic.sync.attrs")


class ObjectState(State):
    """Picklable attributes (`epoch=0, batch=0`, ...)."""


def _values(variables):
    return [np.array(v.numpy(), copy=True) for v in variables]


def _assign(variables, values, what):
    variables = list(variables)
    if len(variables) != len(values):
        raise ValueError(
            f"the committed state holds {len(values)} {what} variables but this process has {len(variables)}: "
            "every worker must build the same model and optimizer before training (build the optimizer "
            "before making the state, e.g. optimizer.build(model.trainable_variables))"
        )
    for var, value in zip(variables, values):
        if tuple(var.shape) != tuple(value.shape):
            raise ValueError(f"committed {what} variable {var.name} has shape {value.shape}, this one {var.shape}")
        var.assign(value)


class TensorFlowState(ObjectState):
    """A list of tf.Variables (or keras.Variables) and any other attributes.

    Horovod's `session` argument (TensorFlow 1) is not supported: TensorFlow 2 runs eagerly."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None:
            raise ValueError("TensorFlowState(session=...) is TensorFlow 1's; Ringmaster supports eager TensorFlow 2")
        if variables is None:
            raise ValueError("TensorFlowState needs variables=[...] (TensorFlow 2 has no global variable collection)")
        self.variables = list(variables)
        super().__init__(**kwargs)

    def _state(self):
        state = super()._state()
        state["variables"] = _values(self.variables)
        return state

    def _load(self, state):
        _assign(self.variables, state["variables"], "")
        super()._load(state)

    def sync(self):
        _tf().broadcast_variables(self.variables, root_rank=0)
        super().sync()


def _model_built(model):
    return getattr(model, "built", True)


class TensorFlowKerasState(ObjectState):
    """A Keras model, its optimizer (default: the compiled one) and any other attributes; `backend` is
    accepted for Horovod's signature and unused (TensorFlow 2)."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        if not _model_built(model):
            raise ValueError("Model must be built first. Run `model.build(input_shape)`.")
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        self.backend = backend
        if self.optimizer is not None and not self.optimizer.built:
            # Its slot variables exist only once built: build it now so that every commit holds them and a
            # worker restoring before its first step has somewhere to put them.
            self.optimizer.build(model.trainable_variables)
        super().__init__(**kwargs)

    def _optimizer_variables(self):
        return list(self.optimizer.variables) if self.optimizer is not None else []

    def _state(self):
        state = super()._state()
        state["model"] = _values(self.model.variables)
        state["optimizer"] = _values(self._optimizer_variables())
        return state

    def _load(self, state):
        _assign(self.model.variables, state["model"], "model")
        _assign(self._optimizer_variables(), state["optimizer"], "optimizer")
        reset = getattr(self.optimizer, "_reset_local_accumulation", None)
        if reset is not None:
            reset()  # gradients accumulated locally since the last allreduce belong to steps rolled back
        super()._load(state)

    def sync(self):
        hvd = _tf()
        hvd.broadcast_variables(self.model.variables, root_rank=0)
        if self.optimizer is not None:
            hvd.broadcast_variables(self._optimizer_variables(), root_rank=0)
        super().sync()
