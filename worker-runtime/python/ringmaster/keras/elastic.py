"""Elastic Keras (Horovod's horovod.tensorflow.keras.elastic): the state of a Keras model and the callbacks
that keep it current during model.fit.

    state = hvd.elastic.KerasState(model, sampler=sampler, epoch=0)
    callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateEpochStateCallback(state)]

    @hvd.elastic.run
    def train(state):
        model.fit(dataset, epochs=epochs - state.epoch, callbacks=callbacks)

A commit raises HostsUpdatedInterrupt out of model.fit when the membership changed, and a failed collective
raises out of the train function; `run` rejoins, restores the newest commit and calls `train` again.
"""

import keras

from ringmaster.tensorflow.elastic import ElasticSampler, ObjectState, State, TensorFlowKerasState, run


class KerasState(TensorFlowKerasState):
    """A Keras model, its optimizer (default: the compiled one) and any other attributes (Horovod's)."""

    def __init__(self, model, optimizer=None, **kwargs):
        super().__init__(model, optimizer=optimizer, backend=None, **kwargs)


class CommitStateCallback(keras.callbacks.Callback):
    """Commits `state` every `batches_per_commit` batches and at the end of every epoch."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        # Reset at every (re)start so that every rank commits at the same batches.
        self.batches_remaining = self.batches_per_commit

    def on_train_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.commit()

    def commit(self):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps `state.batch` at the last finished batch (0 after an epoch). With a known `steps` per epoch, the
    first epoch after a reset is shortened by the batches already done (Horovod's)."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = self.params.get("steps")
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_train_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps `state.epoch` at the number of epochs finished, counted across resets: fit's epochs start at 0
    every call (call fit with epochs=total - state.epoch, as Horovod's examples do)."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        # +1: a reset after this point must not repeat the finished epoch.
        self.state.epoch = self.initial_epoch + epoch + 1


__all__ = [
    "KerasState",
    "CommitStateCallback",
    "UpdateBatchStateCallback",
    "UpdateEpochStateCallback",
    "ElasticSampler",
    "ObjectState",
    "State",
    "run",
]
