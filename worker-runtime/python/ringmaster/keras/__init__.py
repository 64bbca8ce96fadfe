"""Horovod's Keras API (horovod.tensorflow.keras) for Keras 3 on the TensorFlow backend.

    import ringmaster.keras as hvd

    hvd.init()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size()))
    model.compile(optimizer=opt, loss=...)
    model.fit(data, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])

The process-level calls and collectives are ringmaster.tensorflow's; this package adds the optimizer
wrapper (optimizer.py), the callbacks (callbacks.py) and elastic training (elastic.py). The module-level
allreduce / allgather / broadcast take tensor-like values and return numpy values, as Horovod's Keras ones.
"""

import keras
import numpy as np
import tensorflow as tf

import ringmaster.tensorflow as _tf
from ringmaster.process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from ringmaster.tensorflow import (
    Average,
    Compression,
    HorovodInternalError,
    HostsUpdatedInterrupt,
    Sum,
    init,
    is_initialized,
    local_rank,
    local_size,
    rank,
    shutdown,
    size,
)

from . import callbacks, elastic
from .optimizer import create_distributed_optimizer

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"ringmaster.keras runs Keras on the TensorFlow backend, but KERAS_BACKEND is {keras.backend.backend()!r}: "
        "set KERAS_BACKEND=tensorflow (or use ringmaster.torch for the torch backend)"
    )


def DistributedOptimizer(
    optimizer,
    name=None,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    sparse_as_dense=False,
    gradient_predivide_factor=1.0,
    op=Average,
    backward_passes_per_step=1,
    average_aggregated_gradients=False,
    num_groups=0,
    groups=None,
    process_set=global_process_set,
    scale_local_gradients=True,
):
    """`optimizer` (a keras.optimizers.Optimizer) with its gradients reduced over the ranks before every
    update: Average (the default) or Sum, in one grouped allreduce (`groups`: that many groups, or a list of
    lists of variables, each a group). `gradient_predivide_factor` f splits the average: 1/f before the
    sum, f/size after it. `backward_passes_per_step` n accumulates n steps locally before one reduction
    (divided by n with `average_aggregated_gradients`). Gradients of variables given to
    `register_local_var` are not reduced; with `scale_local_gradients` they are divided by the set's size.
    `device_dense` / `device_sparse` are accepted for Horovod's signature (the op library places the
    collectives itself)."""
    if op != Average and op != Sum:
        raise ValueError("op currently only supports Average and Sum")
    if num_groups != 0:
        import warnings

        warnings.warn("Parameter `num_groups` has been replaced by `groups`", DeprecationWarning, stacklevel=2)
        if groups is None:
            groups = num_groups
    if groups is not None and not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError("groups should be a non-negative integer or a list of list of variables.")
    if groups == 0:
        groups = None
    return create_distributed_optimizer(
        optimizer,
        name=name,
        compression=compression,
        sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor,
        op=op,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients,
        groups=groups,
        process_set=process_set,
        scale_local_gradients=scale_local_gradients,
    )


def broadcast_global_variables(root_rank, model=None):
    """Broadcasts `model`'s variables and its optimizer's from `root_rank` (Horovod's broadcasts TF1's global
    variable collection, which TensorFlow 2 does not have: pass the model, or use
    callbacks.BroadcastGlobalVariablesCallback)."""
    if model is None:
        raise ValueError(
            "broadcast_global_variables(root_rank, model): TensorFlow 2 keeps no global variables; pass the "
            "Keras model whose (and whose optimizer's) variables to broadcast"
        )
    _tf.broadcast_variables(model.variables, root_rank=root_rank)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and optimizer.built:
        _tf.broadcast_variables(optimizer.variables, root_rank=root_rank)


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):  # fmt: skip
    """The reduction of a tensor-like value over the ranks, as numpy."""
    reduced = _tf.allreduce(
        tf.constant(value),
        average=average,
        op=op,
        prescale_factor=prescale_factor,
        postscale_factor=postscale_factor,
        compression=compression,
        name=name,
    )
    return np.asarray(reduced)


def allgather(value, name=None):
    """Every rank's value concatenated along the first dimension, as numpy."""
    return np.asarray(_tf.allgather(tf.constant(value), name=name))


def broadcast(value, root_rank, name=None):
    """`root_rank`'s value, as numpy."""
    return np.asarray(_tf.broadcast(tf.constant(value), root_rank, name=name))


def reducescatter(value, name=None, op=Average):
    """This rank's part of the reduction, as numpy."""
    return np.asarray(_tf.reducescatter(tf.constant(value), name=name, op=op))


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=Compression.none):
    """Loads a saved Keras model and wraps its optimizer in a DistributedOptimizer, optimizer state (slot
    variables, iterations) included. `custom_optimizers`: optimizer classes outside keras.optimizers that the
    file names."""
    objects = {cls.__name__: cls for cls in custom_optimizers or ()}
    objects.update(custom_objects or {})
    model = keras.models.load_model(filepath, custom_objects=objects or None)
    loaded = getattr(model, "optimizer", None)
    if loaded is None:
        return model
    wrapped = DistributedOptimizer(loaded, compression=compression)
    if loaded.built:
        # The wrapper keeps the wrapped class's variable layout, so the loaded state maps one to one.
        wrapped.build(model.trainable_variables)
        for mine, theirs in zip(wrapped.variables, loaded.variables):
            mine.assign(theirs)
    model.optimizer = wrapped
    return model


__all__ = [
    "init",
    "shutdown",
    "is_initialized",
    "size",
    "rank",
    "local_size",
    "local_rank",
    "Average",
    "Sum",
    "Compression",
    "HorovodInternalError",
    "HostsUpdatedInterrupt",
    "ProcessSet",
    "global_process_set",
    "add_process_set",
    "remove_process_set",
    "DistributedOptimizer",
    "broadcast_global_variables",
    "allreduce",
    "allgather",
    "broadcast",
    "reducescatter",
    "load_model",
    "callbacks",
    "elastic",
]
