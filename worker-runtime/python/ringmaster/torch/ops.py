"""Horovod's collective operations on torch tensors, over the runtime's current generation.

Each `*_async*` call submits the collective and returns an integer handle; `synchronize(handle)` waits
(without the GIL) and returns the result, `poll(handle)` says whether it is done. The in-place forms
(`allreduce_`, `broadcast_`) write into the given tensor and refuse one they would have to copy (not
contiguous) with a ValueError; the out-of-place forms take any tensor (a non-contiguous one is made
contiguous explicitly first) and return a new one. Input and output dtypes must match; CPU tensors run on
Gloo and CUDA tensors on NCCL, after the work queued on torch's current stream.

A failed collective (a peer died, the membership changed, a timeout) raises HorovodInternalError: inside
`ringmaster.torch.elastic.run` that rolls back to the last commit and continues in the next generation.
"""

import torch

from ringmaster import _context, _native

from .compression import Compression
from .process_sets import global_process_set

HorovodInternalError = _native.CollectiveAborted

Average = _native.AVERAGE
Sum = _native.SUM
Min = _native.MIN
Max = _native.MAX
Product = _native.PRODUCT
Adasum = -1  # named for scripts that import it; refused when used


def _op(average, op):
    if op is None:
        op = Average if average is None or average else Sum
    elif average is not None:
        raise ValueError("give either op= or the deprecated average=, not both")
    if op == Adasum:
        raise ValueError("Adasum is not supported by ringmaster; use Average or Sum")
    if op not in (Average, Sum, Min, Max, Product):
        raise ValueError(f"unknown reduce op {op!r}: use Average, Sum, Min, Max or Product")
    return op


def _stream(tensor):
    return torch.cuda.current_stream(tensor.device).cuda_stream if tensor.is_cuda else 0


def _set(ctx, process_set):
    return process_set._check(ctx)


def _name(ctx, name, op, process_set):
    """The collective's name: the caller's, or one counted per (operation, process set) — every member of
    a set submits the same sequence, whatever other sets it belongs to."""
    return name if name is not None else ctx.auto_name(f"{op}.{process_set.process_set_id}")


def _handle(ctx, natives, finish):
    return ctx.add_handle(natives if isinstance(natives, list) else [natives], finish)


def synchronize(handle):
    """Waits for an async operation and returns its result (a tensor, or a tuple for alltoall with splits)."""
    natives, finish = _context.context().take_handle(handle)
    for native in natives:
        native.wait()
    return finish()


def poll(handle):
    """True when the async operation behind `handle` has finished."""
    natives, _ = _context.context().peek_handle(handle)
    return all(n.poll() for n in natives)


# -- allreduce ------------------------------------------------------------------------------------------


def _allreduce_into(ctx, name, inp, out, op, process_set):
    return ctx.session.allreduce(name, inp.detach(), out.detach(), op, _set(ctx, process_set), _stream(inp))


def allreduce_async_(
    tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set
):
    """In place: `tensor` receives the reduction. Returns a handle."""
    ctx = _context.context()
    op = _op(average, op)
    if prescale_factor != 1.0:
        tensor.data.mul_(prescale_factor)
    native = _allreduce_into(ctx, _name(ctx, name, "allreduce", process_set), tensor, tensor, op, process_set)

    def finish():
        if postscale_factor != 1.0:
            tensor.data.mul_(postscale_factor)
        return tensor

    return _handle(ctx, native, finish)


def allreduce_(
    tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set
):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set))


def allreduce_async(
    tensor,
    average=None,
    name=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    process_set=global_process_set,
    compression=Compression.none,
):
    """Out of place: returns a handle whose result is a new tensor."""
    ctx = _context.context()
    op = _op(average, op)
    sent, cctx = compression.compress(tensor.detach().contiguous())
    if prescale_factor != 1.0:
        sent = sent * prescale_factor
    out = torch.empty_like(sent)
    native = _allreduce_into(ctx, _name(ctx, name, "allreduce", process_set), sent, out, op, process_set)

    def finish():
        result = compression.decompress(out, cctx)
        if postscale_factor != 1.0:
            result = result * postscale_factor
        return result

    return _handle(ctx, native, finish)


def allreduce(
    tensor,
    average=None,
    name=None,
    compression=Compression.none,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    process_set=global_process_set,
):
    return synchronize(
        allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor, process_set, compression)
    )


def grouped_allreduce_async_(
    tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set
):
    """Reduces a list of tensors in place as one group (the runtime fuses them into few launches)."""
    ctx = _context.context()
    op = _op(average, op)
    base = _name(ctx, name, "grouped_allreduce", process_set)
    natives = []
    for i, t in enumerate(tensors):
        if prescale_factor != 1.0:
            t.data.mul_(prescale_factor)
        natives.append(_allreduce_into(ctx, f"{base}.{i}", t, t, op, process_set))

    def finish():
        if postscale_factor != 1.0:
            for t in tensors:
                t.data.mul_(postscale_factor)
        return list(tensors)

    return _handle(ctx, natives, finish)


def grouped_allreduce_(
    tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set
):
    return synchronize(
        grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor, process_set)
    )


def grouped_allreduce_async(
    tensors,
    average=None,
    name=None,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    process_set=global_process_set,
    compression=Compression.none,
):
    ctx = _context.context()
    op = _op(average, op)
    base = _name(ctx, name, "grouped_allreduce", process_set)
    natives, outs = [], []
    for i, t in enumerate(tensors):
        sent, cctx = compression.compress(t.detach().contiguous())
        if prescale_factor != 1.0:
            sent = sent * prescale_factor
        out = torch.empty_like(sent)
        natives.append(_allreduce_into(ctx, f"{base}.{i}", sent, out, op, process_set))
        outs.append((out, cctx))

    def finish():
        results = [compression.decompress(o, c) for o, c in outs]
        return [r * postscale_factor for r in results] if postscale_factor != 1.0 else results

    return _handle(ctx, natives, finish)


def grouped_allreduce(
    tensors,
    average=None,
    name=None,
    compression=Compression.none,
    op=None,
    prescale_factor=1.0,
    postscale_factor=1.0,
    process_set=global_process_set,
):
    return synchronize(
        grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor, process_set, compression)
    )


# -- allgather ------------------------------------------------------------------------------------------


def _rows(tensor):
    return tensor.shape[0] if tensor.dim() > 0 else 1


def _gather_rows(ctx, name, tensor, process_set):
    """Every member's first-dimension size, in set-rank order (a small blocking allgather)."""
    set_id = _set(ctx, process_set)
    n = len(process_set.ranks)
    mine = torch.tensor([_rows(tensor)], dtype=torch.int64, device=tensor.device)
    all_rows = torch.empty(n, dtype=torch.int64, device=tensor.device)
    ctx.session.allgather(f"{name}.rows", mine, all_rows, [1] * n, set_id, _stream(mine)).wait()
    return [int(r) for r in all_rows.cpu().tolist()]


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Concatenates every member's tensor along the first dimension (sizes may differ there)."""
    ctx = _context.context()
    name = _name(ctx, name, "allgather", process_set)
    inp = tensor.detach().contiguous()
    if inp.dim() == 0:
        inp = inp.reshape(1)
    rows = _gather_rows(ctx, name, inp, process_set)
    per_row = inp[0].numel() if inp.shape[0] > 0 else int(torch.tensor(inp.shape[1:]).prod().item())
    out = torch.empty((sum(rows),) + tuple(inp.shape[1:]), dtype=inp.dtype, device=inp.device)
    native = ctx.session.allgather(name, inp, out, [r * per_row for r in rows], _set(ctx, process_set), _stream(inp))
    return _handle(ctx, native, lambda: out)


def allgather(tensor, name=None, process_set=global_process_set):
    return synchronize(allgather_async(tensor, name, process_set))


# -- broadcast ------------------------------------------------------------------------------------------


def _set_root(process_set, root_rank):
    ranks = process_set.ranks
    if root_rank not in ranks:
        raise ValueError(f"root_rank {root_rank} is not a member of {process_set!r}")
    return ranks.index(root_rank)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """In place: every member's `tensor` becomes root_rank's (a world rank)."""
    ctx = _context.context()
    root = _set_root(process_set, root_rank)
    native = ctx.session.broadcast(
        _name(ctx, name, "broadcast", process_set),
        tensor.detach(),
        tensor.detach(),
        root,
        _set(ctx, process_set),
        _stream(tensor),
    )
    return _handle(ctx, native, lambda: tensor)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    ctx = _context.context()
    root = _set_root(process_set, root_rank)
    out = tensor.detach().clone(memory_format=torch.contiguous_format)
    native = ctx.session.broadcast(
        _name(ctx, name, "broadcast", process_set), out, out, root, _set(ctx, process_set), _stream(out)
    )
    return _handle(ctx, native, lambda: out)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async(tensor, root_rank, name, process_set))


# -- reducescatter ---------------------------------------------------------------------------------------


def _split_rows(rows, n):
    """Horovod's split of `rows` over n members: the first rows % n get one more."""
    base, extra = divmod(rows, n)
    sizes = [base + (1 if i < extra else 0) for i in range(n)]
    starts = [sum(sizes[:i]) for i in range(n)]
    return sizes, starts


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set):
    """Reduces across members and gives each its block of the first dimension (uneven: the first get one
    more row, as in Horovod)."""
    ctx = _context.context()
    op = _op(None, op)
    name = _name(ctx, name, "reducescatter", process_set)
    inp = tensor.detach().contiguous()
    if inp.dim() == 0:
        raise ValueError("reducescatter needs a tensor with at least one dimension")
    n = len(process_set.ranks)
    me = process_set.ranks.index(ctx.topology["rank"])
    if inp.shape[0] % n == 0:
        out = torch.empty((inp.shape[0] // n,) + tuple(inp.shape[1:]), dtype=inp.dtype, device=inp.device)
        native = ctx.session.reducescatter(name, inp, out, op, _set(ctx, process_set), _stream(inp))
        return _handle(ctx, native, lambda: out)
    # Uneven blocks: reduce everything, keep this member's rows (correct, more traffic).
    full = torch.empty_like(inp)
    native = _allreduce_into(ctx, name, inp, full, op, process_set)
    sizes, starts = _split_rows(inp.shape[0], n)
    return _handle(ctx, native, lambda: full[starts[me] : starts[me] + sizes[me]].clone())


def reducescatter(tensor, name=None, op=Average, process_set=global_process_set):
    return synchronize(reducescatter_async(tensor, name, op, process_set))


# -- alltoall --------------------------------------------------------------------------------------------


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends block i of the first dimension to member i. `splits` (rows per member) may be uneven; the
    result is then (output, received_splits), as in Horovod."""
    ctx = _context.context()
    name = _name(ctx, name, "alltoall", process_set)
    inp = tensor.detach().contiguous()
    if inp.dim() == 0:
        raise ValueError("alltoall needs a tensor with at least one dimension")
    n = len(process_set.ranks)
    if splits is None:
        if inp.shape[0] % n != 0:
            raise ValueError(f"alltoall: {inp.shape[0]} rows do not split evenly over {n} members; give splits=")
        out = torch.empty_like(inp)
        native = ctx.session.alltoall(name, inp, out, _set(ctx, process_set), _stream(inp))
        return _handle(ctx, native, lambda: out)
    splits = [int(s) for s in (splits.tolist() if torch.is_tensor(splits) else splits)]
    if len(splits) != n or any(s < 0 for s in splits) or sum(splits) != inp.shape[0]:
        raise ValueError(f"alltoall: splits {splits} must give {n} non-negative row counts summing to {inp.shape[0]}")
    # Uneven splits: every member learns every split, gathers every tensor, keeps the blocks sent to it.
    matrix = allgather(
        torch.tensor([splits], dtype=torch.int64, device=inp.device), name=f"{name}.splits", process_set=process_set
    ).cpu()
    gathered = allgather(inp, name=f"{name}.data", process_set=process_set)
    me = process_set.ranks.index(ctx.topology["rank"])
    blocks, offset = [], 0
    for src in range(n):
        row = matrix[src].tolist()
        start = offset + sum(row[:me])
        blocks.append(gathered[start : start + row[me]])
        offset += sum(row)
    out = torch.cat(blocks) if blocks else inp[:0].clone()
    received = matrix[:, me].clone()
    return _handle(ctx, [], lambda: (out, received))


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    return synchronize(alltoall_async(tensor, splits, name, process_set))


def barrier(process_set=global_process_set):
    ctx = _context.context()
    ctx.session.barrier(_set(ctx, process_set)).wait()
