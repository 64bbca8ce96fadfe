"""Horovod's PyTorch API on Ringmaster: a Horovod script runs after `import ringmaster.torch as hvd`.

    import ringmaster.torch as hvd
    hvd.init()
    model = ...; optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

Under `ringmaster-run` or in a TrainingJob's pod the world comes from the launcher or the operator (the
RINGMASTER_* environment); started by hand it is a world of one. Elastic training: `ringmaster.torch.elastic`.
"""

from ringmaster import _context
from ringmaster._basics import (
    cross_rank,
    cross_size,
    gloo_built,
    gloo_enabled,
    init,
    is_homogeneous,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    nccl_built,
    nccl_enabled,
    rank,
    shutdown,
    size,
)
from ringmaster.exceptions import HostsUpdatedInterrupt

from . import elastic
from .compression import Compression
from .functions import allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .ops import (
    Adasum,
    Average,
    HorovodInternalError,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allgather_async,
    allreduce,
    allreduce_,
    allreduce_async,
    allreduce_async_,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    grouped_allreduce,
    grouped_allreduce_,
    grouped_allreduce_async,
    grouped_allreduce_async_,
    poll,
    reducescatter,
    reducescatter_async,
    synchronize,
)
from .optimizer import DistributedOptimizer
from .process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set, static_sets_variable


def device():
    """The torch.device this process's collectives run on, the same for its whole life: under NCCL the GPU
    RINGMASTER_DEVICE names (the operator gives a one-process pod its first GPU; ringmaster-run gives each worker
    its own), else the first generation's local rank, modulo the visible GPUs; the CPU under Gloo. Put the model
    there: `torch.cuda.set_device(hvd.device())` when it is a GPU, or simply `model.to(hvd.device())`."""
    import torch  # here, not at the top: a module-level `torch` would be an attribute of ringmaster.torch

    index = _context.context().session.device()
    return torch.device("cuda", index) if index >= 0 else torch.device("cpu")


# Every public name of the module, its submodules included (what `from ringmaster.torch import *` gives).
__all__ = [
    "Adasum",
    "Average",
    "Compression",
    "DistributedOptimizer",
    "HorovodInternalError",
    "HostsUpdatedInterrupt",
    "Max",
    "Min",
    "ProcessSet",
    "Product",
    "Sum",
    "add_process_set",
    "allgather",
    "allgather_async",
    "allgather_object",
    "allreduce",
    "allreduce_",
    "allreduce_async",
    "allreduce_async_",
    "alltoall",
    "alltoall_async",
    "barrier",
    "broadcast",
    "broadcast_",
    "broadcast_async",
    "broadcast_async_",
    "broadcast_object",
    "broadcast_optimizer_state",
    "broadcast_parameters",
    "compression",
    "cross_rank",
    "cross_size",
    "device",
    "elastic",
    "functions",
    "global_process_set",
    "gloo_built",
    "gloo_enabled",
    "grouped_allreduce",
    "grouped_allreduce_",
    "grouped_allreduce_async",
    "grouped_allreduce_async_",
    "init",
    "is_homogeneous",
    "is_initialized",
    "local_rank",
    "local_size",
    "mpi_built",
    "mpi_enabled",
    "nccl_built",
    "nccl_enabled",
    "ops",
    "optimizer",
    "poll",
    "process_sets",
    "rank",
    "reducescatter",
    "reducescatter_async",
    "remove_process_set",
    "shutdown",
    "size",
    "static_sets_variable",
    "synchronize",
]
