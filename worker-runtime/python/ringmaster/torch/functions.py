"""Horovod's helpers for model state and Python objects: broadcast_parameters, broadcast_optimizer_state,
broadcast_object, allgather_object."""

import io
import pickle

import torch

from ringmaster import _context

from .ops import allgather, broadcast_
from .process_sets import global_process_set


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites every member's parameters with root_rank's, in place. `params` is a state_dict, a
    `named_parameters()` iterable or a list of (name, tensor) pairs."""
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = list(params)
        if items and not isinstance(items[0], tuple):
            items = [(str(i), p) for i, p in enumerate(items)]
    for name, p in items:
        if p is None:
            continue
        target = p.data if isinstance(p, torch.nn.Parameter) else p
        if not torch.is_tensor(target):
            raise ValueError(f"broadcast_parameters: {name} is a {type(p).__name__}, not a tensor")
        broadcast_(target, root_rank, name=f"broadcast_parameters.{name}", process_set=process_set)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns root_rank's `obj` on every member (pickled; anything torch.save can write)."""
    name = name or "broadcast_object"
    ctx = _context.context()
    if ctx.topology["rank"] == root_rank:
        buf = io.BytesIO()
        torch.save(obj, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
        payload = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        payload = None
        length = torch.zeros(1, dtype=torch.int64)
    broadcast_(length, root_rank, name=f"{name}.length", process_set=process_set)
    if payload is None:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    broadcast_(payload, root_rank, name=f"{name}.data", process_set=process_set)
    if ctx.topology["rank"] == root_rank:
        return obj
    return torch.load(io.BytesIO(payload.numpy().tobytes()), weights_only=False)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every member's `obj`, in set-rank order."""
    name = name or "allgather_object"
    buf = io.BytesIO()
    torch.save(obj, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    payload = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
    sizes = allgather(
        torch.tensor([payload.numel()], dtype=torch.int64), name=f"{name}.sizes", process_set=process_set
    ).tolist()
    data = allgather(payload, name=f"{name}.data", process_set=process_set).numpy().tobytes()
    out, offset = [], 0
    for size in sizes:
        out.append(torch.load(io.BytesIO(data[offset : offset + size]), weights_only=False))
        offset += size
    return out


def broadcast_optimizer_state(optimizer, root_rank, process_set=global_process_set):
    """Makes every member's optimizer state (per-parameter buffers and hyper-parameters) root_rank's.
    Members whose optimizer has no state yet (before the first step) receive root_rank's as well."""
    state = broadcast_object(
        optimizer.state_dict(), root_rank, name="broadcast_optimizer_state", process_set=process_set
    )
    if _context.context().topology["rank"] != root_rank:
        optimizer.load_state_dict(state)
