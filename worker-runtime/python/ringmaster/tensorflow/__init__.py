"""Horovod's TensorFlow API on Ringmaster: a Horovod script runs after `import ringmaster.tensorflow as hvd`.

    import ringmaster.tensorflow as hvd
    hvd.init()
    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)          # TF2: gradients averaged over the ranks
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(lr * hvd.size()))  # TF1
    hvd.broadcast_variables(model.variables, root_rank=0)

Every op works eagerly and inside tf.function / TF1 graphs and is differentiable (ops.py); they run in the
TensorFlow op library (_library.py), bound to this process's worker session by init(). Under
`ringmaster-run` or in a TrainingJob's pod the world comes from the launcher or the operator; started by
hand it is a world of one. Keras: `ringmaster.keras`; elastic training: `ringmaster.tensorflow.elastic`.

A failed collective raises HorovodInternalError — `ringmaster._native.CollectiveAborted`, which the
TensorFlow errors of failed collectives also become (errors.py): `except hvd.HorovodInternalError` catches
it from an eager op, a tf.function, Session.run or model.fit alike.
"""

import tensorflow as tf

from ringmaster import _basics, _context
from ringmaster._basics import (
    cross_rank,
    cross_size,
    gloo_built,
    gloo_enabled,
    is_homogeneous,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    nccl_built,
    nccl_enabled,
    rank,
    size,
)
from ringmaster.exceptions import HostsUpdatedInterrupt
from ringmaster.process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

from . import _library, _ops, errors

errors.install()

from . import elastic  # noqa: E402  (after the error hook: elastic catches HorovodInternalError)
from .compression import Compression  # noqa: E402
from .errors import HorovodInternalError  # noqa: E402
from .functions import (  # noqa: E402
    allgather_object,
    broadcast_global_variables,
    broadcast_object,
    broadcast_variables,
)
from .gradient_tape import DistributedGradientTape, PartialDistributedGradientTape  # noqa: E402
from .hooks import BroadcastGlobalVariablesHook  # noqa: E402
from .ops import (  # noqa: E402
    Adasum,
    Average,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allreduce,
    alltoall,
    broadcast,
    broadcast_,
    grouped_allgather,
    grouped_allreduce,
    grouped_reducescatter,
    reducescatter,
)
from .optimizer import DistributedOptimizer  # noqa: E402


def init(process_sets=None):
    """Joins the job (ringmaster._basics.init, as ringmaster.torch.init) and binds the TensorFlow op library to
    the session. `process_sets`: ProcessSet objects that exist in every generation. Idempotent."""
    _basics.init(process_sets)
    _library.attach(_context.context().session)


def shutdown():
    """Leaves the job; the op library's kernels fail (they no longer reach a session) until init()."""
    if is_initialized():
        _library.attach(None)
    _basics.shutdown()


def size_op(process_set_id=0, name=None):
    """An op whose value is the process set's size when it runs (not when the graph is built)."""
    return _ops.size_op(process_set_id, name)


def rank_op(name=None, process_set_id=0):
    """An op whose value is this worker's rank (in the process set) when it runs."""
    return _ops.rank_op(process_set_id, name)


def process_set_included_op(process_set_id=0, name=None):
    """1 when this worker is in the process set (decided when the graph is built), else 0."""
    ps = next((p for p in _context.context().process_sets if p.process_set_id == process_set_id), None)
    included = process_set_id == 0 or (ps is not None and ps.included())
    return tf.constant(int(included), name=name)


__all__ = [
    "Adasum",
    "Average",
    "BroadcastGlobalVariablesHook",
    "Compression",
    "DistributedGradientTape",
    "DistributedOptimizer",
    "HorovodInternalError",
    "HostsUpdatedInterrupt",
    "Max",
    "Min",
    "PartialDistributedGradientTape",
    "ProcessSet",
    "Product",
    "Sum",
    "add_process_set",
    "allgather",
    "allgather_object",
    "allreduce",
    "alltoall",
    "broadcast",
    "broadcast_",
    "broadcast_global_variables",
    "broadcast_object",
    "broadcast_variables",
    "cross_rank",
    "cross_size",
    "elastic",
    "global_process_set",
    "gloo_built",
    "gloo_enabled",
    "grouped_allgather",
    "grouped_allreduce",
    "grouped_reducescatter",
    "init",
    "is_homogeneous",
    "is_initialized",
    "local_rank",
    "local_size",
    "mpi_built",
    "mpi_enabled",
    "nccl_built",
    "nccl_enabled",
    "process_set_included_op",
    "rank",
    "rank_op",
    "reducescatter",
    "remove_process_set",
    "shutdown",
    "size",
    "size_op",
]
