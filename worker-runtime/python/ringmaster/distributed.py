"""torch.distributed on Ringmaster: the `"ringmaster"` backend.

    import ringmaster.distributed                    # registers the backend
    torch.distributed.init_process_group("ringmaster")
    model = torch.nn.parallel.DistributedDataParallel(model)

The process group runs its collectives on the runtime's communicators of the current membership
generation (Gloo for CPU tensors, NCCL for CUDA ones). Its rank and size are fixed when it is created, as
in every torch.distributed backend, so an elastic job makes a new group — and a new DDP wrapper — in every
generation; `rebuild()` does both inside `ringmaster.torch.elastic.run`:

    @ringmaster.torch.elastic.run
    def train(state):
        ddp = ringmaster.distributed.rebuild(model)   # this generation's group and DDP wrapper
        ...

Without RANK/WORLD_SIZE/MASTER_ADDR in the environment, `init_process_group("ringmaster")` takes the rank
and the world size from the Ringmaster worker environment (the launcher's or the operator's); the store
torch would otherwise build is not needed (the runtime has its own rendezvous).
"""
import importlib
import os

import torch
import torch.distributed as dist

from ringmaster.torch import _context, ops

_REDUCE_OPS = {
    dist.ReduceOp.SUM: ops.Sum,
    dist.ReduceOp.AVG: ops.Average,
    dist.ReduceOp.MIN: ops.Min,
    dist.ReduceOp.MAX: ops.Max,
    dist.ReduceOp.PRODUCT: ops.Product,
}


def _reduce_op(op):
    for key, value in _REDUCE_OPS.items():
        if op == key:
            return value
    raise ValueError(f"the ringmaster backend does not support reduce op {op}: use SUM, AVG, MIN, MAX or PRODUCT")


class _Work(dist._Work):
    """A collective in flight: its handles and the tensors it produces."""

    def __init__(self, handles, result):
        super().__init__()
        self._handles = handles
        self._result = result
        self._done = False

    def _finish(self):
        if not self._done:
            self._done = True
            for h in self._handles:
                ops.synchronize(h)
        return self._result

    def is_completed(self):
        return self._done or all(ops.poll(h) for h in self._handles)

    def wait(self, timeout=None):
        self._finish()
        return True

    def result(self):
        return self._finish()

    def get_future(self):
        future = torch.futures.Future()
        future.set_result(self._finish())
        return future


class ProcessGroupRingmaster(dist.ProcessGroup):
    """One generation's process group. Collectives on a group from an older generation fail with
    HorovodInternalError (the runtime has moved on)."""

    def __init__(self, rank, size):
        super().__init__(rank, size)
        ctx = _context.context()
        self._generation = ctx.topology["generation"]
        if (rank, size) != (ctx.topology["rank"], ctx.topology["size"]):
            raise ValueError(f"init_process_group asked for rank {rank} of {size}, but this worker is rank "
                             f"{ctx.topology['rank']} of {ctx.topology['size']} in generation {self._generation}")

    def getBackendName(self):
        return "ringmaster"

    def _ctx(self):
        ctx = _context.context()
        if ctx.topology["generation"] != self._generation:
            raise ops.HorovodInternalError(f"process group of generation {self._generation} used in generation "
                                           f"{ctx.topology['generation']}: make a new one (ringmaster.distributed.rebuild)")
        return ctx

    def allreduce(self, tensors, opts=None):
        self._ctx()
        op = _reduce_op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        return _Work([ops.allreduce_async_(t, op=op, name=None) for t in tensors], tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=None):
        self._ctx()
        root = opts.rootRank if opts is not None else 0
        return _Work([ops.broadcast_async_(t, root) for t in tensors], tensors)

    def allgather(self, output_lists, input_tensors, opts=None):
        self._ctx()
        for outputs, inp in zip(output_lists, input_tensors):
            gathered = ops.allgather(inp.reshape((1,) + tuple(inp.shape)))
            for i, out in enumerate(outputs):
                out.copy_(gathered[i])
        return _Work([], output_lists)

    def _allgather_base(self, output, input, opts=None):
        self._ctx()
        output.copy_(ops.allgather(input).reshape(output.shape))
        return _Work([], output)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for out, inp in zip(outputs, inputs):
            self._allgather_base(out, inp, opts)
        return _Work([], outputs)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        self._ctx()
        op = _reduce_op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for out, inputs in zip(outputs, input_lists):
            out.copy_(ops.reducescatter(torch.stack(inputs), op=op).reshape(out.shape))
        return _Work([], outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        self._ctx()
        op = _reduce_op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        output.copy_(ops.reducescatter(input.reshape((self.size(), -1)), op=op).reshape(output.shape))
        return _Work([], output)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        self._ctx()
        if input_split_sizes:
            result, _ = ops.alltoall(input, splits=input_split_sizes)
        else:
            result = ops.alltoall(input)
        output.copy_(result.reshape(output.shape))
        return _Work([], output)

    def barrier(self, opts=None):
        self._ctx()
        ops.barrier()
        return _Work([], None)


def _create(store, rank, size, timeout):
    _context.init()
    return ProcessGroupRingmaster(rank, size)


def _ringmaster_rendezvous(url, timeout=None, **kwargs):
    ctx = _context.init()
    yield dist.HashStore(), ctx.topology["rank"], ctx.topology["size"]


def _install_env_fallback():
    """env:// without RANK: in a Ringmaster worker (or once ringmaster is initialized) the rank and size are
    the runtime's; anywhere else torch's own env:// handler runs and reports what is missing."""
    rdzv = importlib.import_module("torch.distributed.rendezvous")  # the module, not dist.rendezvous()
    original = rdzv._rendezvous_handlers.get("env")
    if original is None or getattr(original, "_ringmaster", False):
        return

    def handler(url, timeout=None, **kwargs):
        ringmaster_worker = _context.is_initialized() or any(k.startswith("RINGMASTER_") for k in os.environ)
        if "RANK" not in os.environ and ringmaster_worker:
            return _ringmaster_rendezvous(url, timeout)
        return original(url, timeout=timeout, **kwargs) if timeout is not None else original(url, **kwargs)
    handler._ringmaster = True
    rdzv._rendezvous_handlers["env"] = handler


def init_process_group(**kwargs):
    """`torch.distributed.init_process_group("ringmaster")` for this generation's rank and size."""
    ctx = _context.init()
    dist.init_process_group("ringmaster", store=dist.HashStore(), rank=ctx.topology["rank"],
                            world_size=ctx.topology["size"], **kwargs)


def rebuild(model, **ddp_kwargs):
    """The current generation's process group and a DDP wrapper of `model` on it (the previous group, from
    an older generation, is destroyed). Call it at the top of the function `elastic.run` decorates."""
    if dist.is_initialized():
        dist.destroy_process_group()
    init_process_group()
    return torch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)


if "ringmaster" not in dist.Backend.backend_list:
    dist.Backend.register_backend("ringmaster", _create, devices=["cpu", "cuda"])
    dist.register_rendezvous_handler("ringmaster", _ringmaster_rendezvous)
_install_env_fallback()
