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

How the collectives run, and why:

* One runtime collective per torch call, run in submission order on the group's own process set, which never
  fuses: each of DDP's buckets is reduced by exactly the call torch's Gloo backend makes (`gloo::allreduce`,
  ring algorithm, over that bucket alone). Gloo's ring adds each segment's values rank after rank, starting at
  a rank that depends on the segment's place in the buffer, so sums over 3 or more ranks are bit-identical to
  Gloo's only when the buffers are the same (tests/test_ddp.py).
* Collectives are asynchronous (`_pg_work.py`): a call submits and returns; the group's completer thread
  completes its Work and Future when the runtime is done. DDP's bucket allreduces therefore overlap the rest of
  the backward pass, and FSDP2's all-gathers and reduce-scatters its compute. A collective that must read or
  write its tensors when called (a non-contiguous tensor's staging copy, a flattened buffer, the synchronous
  gather/scatter/list collectives) first waits for the group's earlier ones, so it sees their results.
* Failures: a collective that failed (a peer died, the membership changed) raises HorovodInternalError from
  `wait()`; during a backward pass it is raised to `loss.backward()` by an autograd final callback, where
  `elastic.run` catches it, and never put in a Future that C++ reads (`_pg_work.py` says why).
"""

import importlib
import os
import sys
import weakref

import torch
import torch.distributed as dist

from ringmaster import _context
from ringmaster._pg_work import CollectiveWork, Completer, TransferWork
from ringmaster.torch import ops
from ringmaster.torch.process_sets import ProcessSet

_REDUCE_OPS = {
    dist.ReduceOp.SUM: ops.Sum,
    dist.ReduceOp.AVG: ops.Average,
    dist.ReduceOp.MIN: ops.Min,
    dist.ReduceOp.MAX: ops.Max,
    dist.ReduceOp.PRODUCT: ops.Product,
}


def _reduce_op(opts):
    op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
    for key, value in _REDUCE_OPS.items():
        if op == key:
            return value
    raise ValueError(f"the ringmaster backend does not support reduce op {op}: use SUM, AVG, MIN, MAX or PRODUCT")


def _one_tensor(tensors, what):
    """torch.distributed passes one tensor per process to allreduce and broadcast; several would mean
    several devices per process, which this backend does not do."""
    if len(tensors) != 1:
        raise ValueError(
            f"the ringmaster backend's {what} takes exactly one tensor per process, got {len(tensors)}: "
            f"use one call per tensor (or allreduce_coalesced)"
        )
    return tensors[0]


def _bytes(tensor):
    """A contiguous tensor's memory as bytes (point-to-point moves bytes, whatever the dtype)."""
    return tensor.reshape(-1).view(torch.uint8)


def _tag(tag):
    if not 0 <= int(tag) < 2**32:
        raise ValueError(f"the ringmaster backend's tags are 32-bit unsigned integers, got {tag}")
    return int(tag)


class ProcessGroupRingmaster(dist.ProcessGroup):
    """One generation's process group. Collectives on a group from an older generation fail with
    HorovodInternalError (the runtime has moved on); on a destroyed group with a RuntimeError."""

    # What torch's split_group and batch_isend_irecv ask of a group's backend (see _get_backend).
    supports_splitting = True
    supports_coalescing = False

    def __init__(self, rank, size, global_ranks=None, key=None):
        super().__init__(rank, size)
        ctx = _context.context()
        self._generation = ctx.topology["generation"]
        self._shut_down = False
        self._outstanding = []  # works with runtime handles, until completed (pruned as they complete)
        self._key = key or "world"
        if global_ranks is None:
            if (rank, size) != (ctx.topology["rank"], ctx.topology["size"]):
                raise ValueError(
                    f"init_process_group asked for rank {rank} of {size}, but this worker is rank "
                    f"{ctx.topology['rank']} of {ctx.topology['size']} in generation {self._generation}"
                )
            # The group's own process set over the world, in submission order: torch.distributed's contract
            # (every rank issues the same collectives in the same order) makes the runtime's negotiation and
            # its cycle wait unnecessary, and DDP buckets by itself. Made collectively, as every rank creates
            # the group in init_process_group.
            self._set = ProcessSet(range(size))
            self._set.process_set_id = ctx.session.add_process_set(list(range(size)), submission_order=True)
        else:
            # A subgroup (new_group, split_group, a DeviceMesh dimension): its members alone build its
            # communicator, through the runtime's store, under torch's group name.
            global_ranks = [int(r) for r in global_ranks]
            if global_ranks != sorted(global_ranks):
                raise ValueError(
                    f"the ringmaster backend's subgroups keep their ranks in ascending order; got "
                    f"{global_ranks} (torch's new_group sorts them unless told not to)"
                )
            self._set = ProcessSet(global_ranks)
            self._set.process_set_id = ctx.session.add_group(global_ranks, key.replace("/", "_"))
        self._set._generation = self._generation
        self._completer = Completer(f"pg-{self._key}-g{self._generation}")

    def getBackendName(self):
        return "ringmaster"

    def name(self):
        return "ringmaster"

    # torch asks a group for its per-device backend (split_group, batch_isend_irecv); this group is its own.
    def _get_backend(self, device=None):
        return self

    @property
    def _device_types(self):
        """The devices this group serves, for torch.distributed.split_group alone. Everywhere else the
        answer stays what torch knows a Python process group by: none, so that torch does not attach
        its flight recorder, which files entries under a name only a C++ backend can hold."""
        if sys._getframe(1).f_code.co_name != "split_group":
            return []
        return [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])

    # torch keeps a group's name in its C++ backends, which a Python process group has none of: kept here.
    def _set_group_name(self, name):
        self._group_name = name

    @property
    def group_name(self):
        return getattr(self, "_group_name", "")

    def _world_rank(self, group_rank):
        return self._set.ranks[group_rank]

    def _check(self):
        """The runtime context, if this group may still run collectives."""
        if self._shut_down:
            raise RuntimeError(
                f"the ringmaster process group of generation {self._generation} was destroyed: "
                f"make a new one (ringmaster.distributed.init_process_group or rebuild)"
            )
        return self._check_generation()

    def _check_generation(self):
        ctx = _context.context()
        if ctx.topology["generation"] != self._generation:
            raise ops.HorovodInternalError(
                f"process group of generation {self._generation} used in generation "
                f"{ctx.topology['generation']}: make a new one "
                f"(ringmaster.distributed.rebuild)"
            )
        return ctx

    def _begin(self):
        """Before a collective that reads or writes its tensors when it is called (a staging copy, a
        flattened buffer, the synchronous ones): the group is usable, and every collective submitted before
        has completed, its copies back included — so this one sees their results, as it would over torch's
        Gloo, which runs a group's collectives one after the other."""
        self._check()
        for work in self._outstanding:
            work._done.wait()
        self._outstanding = []

    def _begin_async(self):
        """Before a collective that the runtime runs on the caller's own buffers: nothing to wait for (the
        runtime runs the group's collectives in submission order)."""
        self._check()
        self._outstanding = [w for w in self._outstanding if not w._done.is_set()]

    def _submit(self, handles, finish=None, result=None):
        work = CollectiveWork(self, handles, finish, result)
        if not work._done.is_set():
            self._outstanding.append(work)
        return work

    def _in_place(self, tensor, submit, finish=None):
        """Runs `submit(buffer) -> handle` on `tensor` itself, or, when it is not contiguous (the runtime's
        in-place ops refuse to copy silently), on a contiguous copy that is copied back afterwards."""
        if tensor.is_contiguous():
            self._begin_async()
            return self._submit([submit(tensor)], finish, [tensor])
        self._begin()
        staging = tensor.contiguous()

        def copy_back():
            tensor.copy_(staging)
            if finish is not None:
                finish()

        return self._submit([submit(staging)], copy_back, [tensor])

    # -- torch.distributed's collectives ------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        op = _reduce_op(opts)
        tensor = _one_tensor(tensors, "allreduce")
        return self._in_place(tensor, lambda t: ops.allreduce_async_(t, op=op, process_set=self._set))

    def allreduce_coalesced(self, tensors, opts=None):
        """Gloo's way: the tensors flattened into one buffer, one allreduce, the results copied back."""
        self._begin()
        op = _reduce_op(opts)
        if not tensors:
            return CollectiveWork(self, result=tensors)
        flat = torch.cat([t.detach().reshape(-1) for t in tensors])

        def unflatten():
            offset = 0
            for t in tensors:
                t.copy_(flat[offset : offset + t.numel()].view_as(t))
                offset += t.numel()

        return self._submit([ops.allreduce_async_(flat, op=op, process_set=self._set)], unflatten, tensors)

    def broadcast(self, tensors, opts=None):
        self._check()
        root = self._world_rank(opts.rootRank if opts is not None else 0)
        tensor = _one_tensor(tensors, "broadcast")
        return self._in_place(tensor, lambda t: ops.broadcast_async_(t, root, process_set=self._set))

    def reduce(self, tensors, opts=None):
        """The reduction lands in the root's tensor; the others' tensors are left as they were."""
        self._begin()
        op = _reduce_op(opts)
        tensor = _one_tensor(tensors, "reduce")
        result = tensor.detach().clone(memory_format=torch.contiguous_format)

        def land():
            if self.rank() == opts.rootRank:
                tensor.copy_(result)

        return self._submit([ops.allreduce_async_(result, op=op, process_set=self._set)], land, [tensor])

    def gather(self, output_lists, input_tensors, opts=None):
        self._begin()
        inp = _one_tensor(input_tensors, "gather")
        root = opts.rootRank if opts is not None else 0
        gathered = ops.allgather(inp.detach().reshape((1,) + tuple(inp.shape)), process_set=self._set)
        if self.rank() == root:
            outputs = _one_tensor(output_lists, "gather")
            if len(outputs) != self.size():
                raise ValueError(f"gather: {len(outputs)} output tensors for a group of {self.size()}")
            for i, out in enumerate(outputs):
                out.copy_(gathered[i])
        return CollectiveWork(self, result=output_lists)

    def scatter(self, output_tensors, input_lists, opts=None):
        """The root's list, stacked and broadcast; every member keeps its own block."""
        self._begin()
        out = _one_tensor(output_tensors, "scatter")
        root = opts.rootRank if opts is not None else 0
        if self.rank() == root:
            inputs = _one_tensor(input_lists, "scatter")
            if len(inputs) != self.size():
                raise ValueError(f"scatter: {len(inputs)} input tensors for a group of {self.size()}")
            stacked = torch.stack([t.detach() for t in inputs]).contiguous()
        else:
            stacked = torch.empty((self.size(),) + tuple(out.shape), dtype=out.dtype, device=out.device)
        ops.broadcast_(stacked, self._world_rank(root), process_set=self._set)
        out.copy_(stacked[self.rank()])
        return CollectiveWork(self, result=output_tensors)

    # -- point-to-point: posted at once, beside the collectives (never queued behind one) --------------
    def send(self, tensors, dst, tag=0):
        self._check()
        tensor = _one_tensor(tensors, "send")
        staged = tensor.detach().contiguous()
        if staged.is_cuda:  # the runtime's point-to-point runs over host memory (runtime.h)
            staged = staged.cpu()
        ctx = _context.context()
        transfer = ctx.session.send(_bytes(staged), int(dst), _tag(tag), self._set.process_set_id)
        return TransferWork(self, transfer, keep=staged)

    def recv(self, tensors, src, tag=0):
        self._check()
        tensor = _one_tensor(tensors, "recv")
        direct = tensor.is_contiguous() and not tensor.is_cuda
        staged = tensor.detach() if direct else torch.empty(tensor.shape, dtype=tensor.dtype)
        ctx = _context.context()
        transfer = ctx.session.recv(_bytes(staged), int(src), _tag(tag), self._set.process_set_id)
        return TransferWork(self, transfer, keep=staged, finish=None if direct else lambda: tensor.copy_(staged))

    def recv_anysource(self, tensors, tag=0):
        raise ValueError(
            "the ringmaster backend needs the source rank of a recv (recv from any source is not supported)"
        )

    def allgather(self, output_lists, input_tensors, opts=None):
        self._begin()
        for outputs, inp in zip(output_lists, input_tensors):
            if len(outputs) != self.size():
                raise ValueError(f"allgather: {len(outputs)} output tensors for a world of {self.size()}")
            gathered = ops.allgather(inp.reshape((1,) + tuple(inp.shape)), process_set=self._set)
            for i, out in enumerate(outputs):
                out.copy_(gathered[i])
        return CollectiveWork(self, result=output_lists)

    def _allgather_base(self, output, input, opts=None):
        """Asynchronous when both tensors are contiguous (FSDP2's all-gathers): the runtime gathers straight
        into `output`."""
        if output.numel() != input.numel() * self.size():
            raise ValueError(
                f"_allgather_base: the output has {output.numel()} elements, not {self.size()} x {input.numel()}"
            )
        if input.is_contiguous() and output.is_contiguous():
            self._begin_async()
            src, dst, finish = input.detach(), output.detach(), None
        else:
            self._begin()
            src, dst = input.detach().contiguous(), torch.empty_like(output, memory_format=torch.contiguous_format)
            finish = lambda: output.copy_(dst)  # noqa: E731
        ctx = self._check()
        name = ops._name(ctx, None, "allgather", self._set)
        native = ctx.session.allgather(
            name,
            src.reshape(-1),
            dst.reshape(-1),
            [src.numel()] * self.size(),
            ops._set(ctx, self._set),
            ops._stream(src),
        )
        return self._submit([ops._handle(ctx, native, lambda: None)], finish, output)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        works = [self._allgather_base(out, inp, opts) for out, inp in zip(outputs, inputs)]
        return self._submit([], lambda: [w.wait() for w in works], outputs) if works else CollectiveWork(self)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        self._begin()
        op = _reduce_op(opts)
        for out, inputs in zip(outputs, input_lists):
            out.copy_(ops.reducescatter(torch.stack(inputs), op=op, process_set=self._set).reshape(out.shape))
        return CollectiveWork(self, result=outputs)

    def _reduce_scatter_base(self, output, input, opts=None):
        """torch's Gloo way, asynchronously (FSDP2's reduce-scatters): the input copied, the copy allreduced
        whole (Gloo's ring), this rank's block copied into `output`. Gloo's ring adds each segment's values in
        an order that depends on the segment's place in the whole buffer, so a reduce-scatter of its own would
        differ from Gloo's in the last bits (FSDP2's weights too, tests/test_async_work.py)."""
        op = _reduce_op(opts)
        if input.numel() != output.numel() * self.size():
            raise ValueError(
                f"_reduce_scatter_base: the input has {input.numel()} elements, not {self.size()} x {output.numel()}"
            )
        self._begin_async()
        buffer = input.detach().clone(memory_format=torch.contiguous_format).reshape(-1)
        block = buffer[self.rank() * output.numel() : (self.rank() + 1) * output.numel()]
        handle = ops.allreduce_async_(buffer, op=op, process_set=self._set)
        return self._submit([handle], lambda: output.copy_(block.view(output.shape)), output)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        self._begin()
        if input_split_sizes or output_split_sizes:
            splits = list(input_split_sizes) or [input.shape[0] // self.size()] * self.size()
            result, _ = ops.alltoall(input, splits=splits, process_set=self._set)
        else:
            result = ops.alltoall(input, process_set=self._set)
        output.copy_(result.reshape(output.shape))
        return CollectiveWork(self, result=output)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        works = [self._reduce_scatter_base(out, inp, opts) for out, inp in zip(outputs, inputs)]
        return self._submit([], lambda: [w.wait() for w in works], outputs) if works else CollectiveWork(self)

    # torch 2.15's Python API calls the single-tensor collectives by these names (C++ callers by the ones above).
    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    all_to_all_single = alltoall_base

    def barrier(self, opts=None):
        self._begin()
        ops.barrier(process_set=self._set)
        return CollectiveWork(self)

    def split_group(self, ranks, timeout=None, opts=None, group_name=None, group_desc=None, device_types=None):
        """torch.distributed.split_group: the split this rank is in, as a new group (None outside it)."""
        ranks = [int(r) for r in ranks]
        if self.rank() not in ranks:
            return None
        group = ProcessGroupRingmaster(
            ranks.index(self.rank()), len(ranks), [self._world_rank(r) for r in ranks], key=group_name
        )
        group._set_group_name(group_name)
        if group_desc is not None:
            group._set_group_desc(group_desc)
        return group

    def get_group_store(self):
        return dist.HashStore()  # the runtime has its own rendezvous; torch only keeps this one

    def shutdown(self):
        """`destroy_process_group()`: no collective, so it cannot hang on a group whose peers are gone.
        Work still in flight belongs to the runtime, which fails it when its generation ends."""
        self._shut_down = True
        self._outstanding = []
        self._completer.stop()
        ctx = _context.context() if _context.is_initialized() else None
        if ctx is not None and ctx.topology["generation"] == self._generation:
            try:
                ctx.session.remove_process_set(self._set.process_set_id)  # local: stops the set's engine
            except ValueError:
                # Already gone: a rebuild of this same generation (a collective timed out and no newer membership
                # came) dropped the runtime's dynamic sets with its communicators. Shutting down must not raise:
                # ringmaster.torch.elastic's mesh destroys its groups after every reset, that one included.
                pass
        super().shutdown()


class WorldOfRanks:
    """`pg_options` of `init_process_group("ringmaster")` whose world is some of the workers, not all: torch's
    rank r is worker `ranks[r]` (ascending). The others stay out of torch.distributed altogether — e.g. the
    standbys of ringmaster.torch.elastic's MeshRule when the world does not fill a whole mesh."""

    def __init__(self, ranks):
        self.ranks = [int(r) for r in ranks]
        if not self.ranks or self.ranks != sorted(set(self.ranks)):
            raise ValueError(f"WorldOfRanks needs distinct worker ranks in ascending order, got {ranks}")


def _torch_world_ranks():
    """Worker ranks by torch rank of the default group, when that group is a WorldOfRanks (None otherwise)."""
    if not dist.is_initialized():
        return None
    default = dist.distributed_c10d._get_default_group()
    return getattr(default, "_world_of_ranks", None)


def _create(opts, backend_options=None):
    """torch's extended backend API: the default group over the world (no global ranks given; a
    WorldOfRanks as pg_options makes it a part of the world), or a subgroup of the given torch ranks named
    by torch's group name (the same on every member)."""
    _context.init()
    if isinstance(backend_options, WorldOfRanks):
        ranks = backend_options.ranks
        me = _context.context().topology["rank"]
        if me not in ranks or (opts.group_rank, opts.group_size) != (ranks.index(me), len(ranks)):
            raise ValueError(
                f"init_process_group asked for rank {opts.group_rank} of {opts.group_size} in the world "
                f"of workers {ranks}, but this is worker rank {me}"
            )
        group = ProcessGroupRingmaster(
            opts.group_rank, opts.group_size, ranks, key="world-of-" + "-".join(map(str, ranks))
        )
        group._world_of_ranks = ranks
    elif not opts.global_ranks_in_group:
        group = ProcessGroupRingmaster(opts.group_rank, opts.group_size)
    else:
        # torch numbers a subgroup's members by their rank in its default group: the workers' own ranks,
        # unless that group is a WorldOfRanks.
        world = _torch_world_ranks()
        members = [int(r) for r in opts.global_ranks_in_group]
        if world is not None:
            members = [world[r] for r in members]
        group = ProcessGroupRingmaster(opts.group_rank, opts.group_size, members, key=f"{opts.group_id}")
    group._set_group_name(opts.group_id)  # torch's hooks (the flight recorder) look groups up by name
    return group


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


def init_process_group(ranks=None, **kwargs):
    """`torch.distributed.init_process_group("ringmaster")` for this generation's rank and size; with
    `ranks` (worker ranks, ascending, this worker's among them) a world of those workers alone."""
    ctx = _context.init()
    if ranks is None:
        dist.init_process_group(
            "ringmaster", store=dist.HashStore(), rank=ctx.topology["rank"], world_size=ctx.topology["size"], **kwargs
        )
        return
    world = WorldOfRanks(ranks)
    if ctx.topology["rank"] not in world.ranks:
        raise ValueError(
            f"init_process_group(ranks={world.ranks}): this worker (rank {ctx.topology['rank']}) is not among them"
        )
    dist.init_process_group(
        "ringmaster",
        store=dist.HashStore(),
        rank=world.ranks.index(ctx.topology["rank"]),
        world_size=len(world.ranks),
        pg_options=world,
        **kwargs,
    )


_last_ddp = None  # weak reference to the wrapper rebuild() made last


def _retire(ddp):
    """Takes an older generation's DDP wrapper off the model: its reducer's hooks sit on the parameters'
    gradient accumulators and would otherwise run in the next backward pass — and, after a failure in
    the middle of one, still expect it — calling the old group, whose collectives all fail. Normally
    the wrapper is freed (and its hooks removed) when the failed frame goes, but a lingering reference
    (a traceback kept by a logger, a reference cycle) must not break the next generation."""
    if ddp is not None and getattr(ddp, "reducer", None) is not None:
        ddp._remove_autograd_hooks()


def rebuild(model, **ddp_kwargs):
    """The current generation's process group and a DDP wrapper of `model` on it (the previous group and
    wrapper, from an older generation, are retired). Call it at the top of the function `elastic.run`
    decorates; one model per job (the group is the default one)."""
    global _last_ddp
    _retire(_last_ddp() if _last_ddp is not None else None)
    if dist.is_initialized():
        dist.destroy_process_group()
    init_process_group()
    ddp = torch.nn.parallel.DistributedDataParallel(model, **ddp_kwargs)
    _last_ddp = weakref.ref(ddp)
    return ddp


if "ringmaster" not in dist.Backend.backend_list:
    dist.Backend.register_backend("ringmaster", _create, extended_api=True, devices=["cpu", "cuda"])
    dist.register_rendezvous_handler("ringmaster", _ringmaster_rendezvous)
_install_env_fallback()
