"""Horovod's Keras callbacks for Keras 3: the initial broadcast, metric averaging and the learning-rate
warmup and schedule (Goyal et al., "Accurate, Large Minibatch SGD", 2017).

The learning rate is `model.optimizer.learning_rate`, a variable in Keras 3 (an optimizer made with a
LearningRateSchedule has none to set: the schedule callbacks refuse it); momentum, where the optimizer has
one, is a plain float attribute read when the train function is traced, so momentum correction changes it
only where the next trace would see it (Keras retraces nothing by itself: it is effectively off inside a
compiled fit; use run_eagerly=True to have it).
"""

import keras
import numpy as np


def _hvd():
    import ringmaster.tensorflow as hvd

    return hvd


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from `root_rank` to every rank at the end of the
    first batch (once the optimizer has built its slots), so every rank trains the same weights; or at the
    start of training when the optimizer is already built."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.broadcast_done = False
        self._local_vars = set()
        for var in local_variables or ():
            self.register_local_var(var)

    def register_local_var(self, var):
        """`var` is worker-local: it is not broadcast."""
        self._local_vars.add(id(var))

    def _broadcast(self):
        hvd = _hvd()
        model_vars = [v for v in self.model.variables if id(v) not in self._local_vars]
        hvd.broadcast_variables(model_vars, root_rank=self.root_rank)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and optimizer.built:
            opt_vars = [v for v in optimizer.variables if id(v) not in self._local_vars]
            hvd.broadcast_variables(opt_vars, root_rank=self.root_rank)
        self.broadcast_done = True

    def on_train_begin(self, logs=None):
        # Keras 3 builds the optimizer before the first batch (fit's symbolic build): broadcasting here
        # means the first step already starts from the root's weights. Horovod broadcasts after the first
        # batch because TF1/Keras 2 built slots lazily; that path stays below for an unbuilt optimizer.
        optimizer = getattr(self.model, "optimizer", None)
        if not self.broadcast_done and (optimizer is None or optimizer.built):
            self._broadcast()

    def on_train_batch_end(self, batch, logs=None):
        if not self.broadcast_done:
            self._broadcast()


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the epoch's metrics (the `logs` of on_epoch_end) over the ranks, in name order, so the
    callbacks after it (checkpoints, early stopping) see the same values on every rank."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def _average_metrics_in_place(self, logs):
        if not logs:
            return
        hvd = _hvd()
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.number))
        if not names:
            return
        values = np.array([float(logs[k]) for k in names], dtype=np.float64)
        averaged = np.asarray(hvd.allreduce(values, op=hvd.Average, name="keras.metric_average"))
        for k, v in zip(names, averaged):
            logs[k] = float(v)

    def on_epoch_end(self, epoch, logs=None):
        self._average_metrics_in_place(logs)


def _lr_variable(optimizer):
    lr = getattr(optimizer, "_learning_rate", None)
    if not isinstance(lr, keras.Variable):
        raise ValueError(
            "the learning-rate callbacks set optimizer.learning_rate, which needs a float learning rate: this "
            "optimizer was made with a LearningRateSchedule or a callable (give it a float, or drop the callback)"
        )
    return lr


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to `initial_lr * multiplier(epoch)` from `start_epoch` to `end_epoch`: once per
    epoch (staircase=True) or at every batch with a fractional epoch (staircase=False). A constant
    `multiplier` means `multiplier ** (epoch - start_epoch)`. With `momentum_correction`, an optimizer's
    momentum is scaled by new_lr / old_lr for the batch of a change and restored after it (Horovod's rule).
    """

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):  # fmt: skip
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.initial_lr = initial_lr
        self.restore_momentum = None
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if not callable(multiplier):
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)
        else:
            self.multiplier = multiplier

    def _autodetect_steps_per_epoch(self):
        steps = (self.params or {}).get("steps")
        if steps:
            return steps
        raise ValueError(
            f"Could not autodetect the number of steps per epoch (the data has no known length): pass "
            f"steps_per_epoch to {type(self).__name__}()"
        )

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        lr = _lr_variable(optimizer)
        old_lr = float(lr.numpy())
        new_lr = self.initial_lr * self.multiplier(epoch)
        lr.assign(new_lr)
        if self.momentum_correction and old_lr and isinstance(getattr(optimizer, "momentum", None), (int, float)):
            self.restore_momentum = optimizer.momentum
            optimizer.momentum = self.restore_momentum * new_lr / old_lr

    def _restore_momentum_if_needed(self):
        if self.restore_momentum:
            self.model.optimizer.momentum = self.restore_momentum
            self.restore_momentum = None

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.current_epoch < self.start_epoch or (
            self.end_epoch is not None and self.current_epoch >= self.end_epoch
        ):
            return  # outside the adjustment's epochs
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_train_batch_end(self, batch, logs=None):
        self._restore_momentum_if_needed()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(_lr_variable(self.model.optimizer).numpy())


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Ramps the learning rate from `initial_lr / size` to `initial_lr` over `warmup_epochs` epochs, batch by
    batch (Goyal et al.): at fractional epoch e the rate is initial_lr / size * (e' * (size - 1) /
    warmup_epochs + 1), e' = e + 1 / steps_per_epoch, so the last batch of the warmup reaches initial_lr.
    `size` is read at every batch: after a membership change the ramp follows the new world."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            size = _hvd().size()
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(
            initial_lr,
            multiplier,
            start_epoch=0,
            end_epoch=warmup_epochs,
            staircase=False,
            momentum_correction=momentum_correction,
            steps_per_epoch=steps_per_epoch,
        )
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and _hvd().rank() == 0:
            lr = float(_lr_variable(self.model.optimizer).numpy())
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {lr:g}.")


__all__ = [
    "BroadcastGlobalVariablesCallback",
    "MetricAverageCallback",
    "LearningRateScheduleCallback",
    "LearningRateWarmupCallback",
]
