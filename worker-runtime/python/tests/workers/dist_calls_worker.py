"""Every torch.distributed call a large-model script uses, on whatever backend it is told: point-to-point
(send/recv, isend/irecv, tags out of order, batch_isend_irecv), the collectives, subgroups (new_group,
split_group) and a DeviceMesh's dimension groups. Writes this rank's results to OUT/calls.<backend>.<rank>.pt
for the test to compare with torch's Gloo backend exactly.

    python dist_calls_worker.py BACKEND OUT NP      (under ringmaster-run --np NP)

Inputs are a pattern of (rank, call), and the reductions run on integer-valued floats, so every result has
one right value whatever order a backend adds in."""

import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

import ringmaster.torch as hvd
import torch_world

backend, out, expected_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rank, n = torch_world.join(backend, out, expected_size, "the calls")
results = {}


def data(r, call, shape=(3, 4), dtype=torch.float64):
    """Rank r's input to `call`: integer values, distinct per rank and call."""
    g = torch.Generator().manual_seed(1000 * r + sum(map(ord, call)))
    return torch.randint(-20, 20, shape, generator=g).to(dtype)


def p2p(prefix, group, members):
    """Point-to-point among `members` (world ranks) of `group`, peers named by group rank."""
    me, m = members.index(rank), len(members)
    if m < 2:
        return
    right, left = (me + 1) % m, (me - 1) % m
    # blocking, in an order that cannot deadlock: even group ranks send first
    for dtype in (torch.float64, torch.float32, torch.int32, torch.bfloat16):
        got = torch.empty(3, 4, dtype=dtype)
        mine = data(rank, f"{prefix}send{dtype}", dtype=dtype)
        if me % 2 == 0:
            dist.send(mine, group_dst=right, group=group)
            dist.recv(got, group_src=left, group=group)
        else:
            dist.recv(got, group_src=left, group=group)
            dist.send(mine, group_dst=right, group=group)
        results[f"{prefix}send_recv.{dtype}"] = got
    # isend/irecv with tags, received in the other order
    a, b = data(rank, f"{prefix}tag1"), data(rank, f"{prefix}tag2")
    works = [dist.isend(a, group_dst=right, group=group, tag=1), dist.isend(b, group_dst=right, group=group, tag=2)]
    got_b = torch.empty(3, 4, dtype=torch.float64)
    got_a = torch.empty(3, 4, dtype=torch.float64)
    works += [
        dist.irecv(got_b, group_src=left, group=group, tag=2),
        dist.irecv(got_a, group_src=left, group=group, tag=1),
    ]
    for w in works:
        w.wait()
    results[f"{prefix}tagged.1"], results[f"{prefix}tagged.2"] = got_a, got_b
    # batch_isend_irecv: both directions at once
    to_right, to_left = data(rank, f"{prefix}bright"), data(rank, f"{prefix}bleft")
    from_left, from_right = torch.empty(3, 4, dtype=torch.float64), torch.empty(3, 4, dtype=torch.float64)
    ops = [
        dist.P2POp(dist.isend, to_right, group=group, group_peer=right),
        dist.P2POp(dist.irecv, from_left, group=group, group_peer=left),
        dist.P2POp(dist.isend, to_left, group=group, group_peer=left),
        dist.P2POp(dist.irecv, from_right, group=group, group_peer=right),
    ]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    results[f"{prefix}batch.from_left"], results[f"{prefix}batch.from_right"] = from_left, from_right


def collectives(prefix, group, members):
    me, m = members.index(rank), len(members)
    for root in range(m):
        t = data(rank, f"{prefix}bcast{root}")
        dist.broadcast(t, group_src=root, group=group)
        results[f"{prefix}broadcast.{root}"] = t
    for name, op in [
        ("sum", dist.ReduceOp.SUM),
        ("max", dist.ReduceOp.MAX),
        ("min", dist.ReduceOp.MIN),
        ("product", dist.ReduceOp.PRODUCT),
    ]:
        for dtype in (torch.float64, torch.int64):
            t = (
                data(rank, f"{prefix}ar{name}", dtype=dtype).clamp(-3, 3)
                if name == "product"
                else data(rank, f"{prefix}ar{name}", dtype=dtype)
            )
            dist.all_reduce(t, op=op, group=group)
            results[f"{prefix}all_reduce.{name}.{dtype}"] = t
    t = data(rank, f"{prefix}ar_async")
    dist.all_reduce(t, group=group, async_op=True).wait()
    results[f"{prefix}all_reduce.async"] = t
    root = m - 1
    t = data(rank, f"{prefix}reduce")
    dist.reduce(t, group_dst=root, group=group)
    if me == root:  # elsewhere the tensor's content is unspecified
        results[f"{prefix}reduce"] = t
    outs = [torch.empty(3, 4, dtype=torch.float64) for _ in range(m)]
    dist.all_gather(outs, data(rank, f"{prefix}ag"), group=group)
    results[f"{prefix}all_gather"] = torch.stack(outs)
    o = torch.empty(m * 3, 4, dtype=torch.float64)
    dist.all_gather_into_tensor(o, data(rank, f"{prefix}agt"), group=group)
    results[f"{prefix}all_gather_into_tensor"] = o
    o = torch.empty(2, 4, dtype=torch.float64)
    dist.reduce_scatter_tensor(o, data(rank, f"{prefix}rst", shape=(2 * m, 4)), group=group)
    results[f"{prefix}reduce_scatter_tensor"] = o
    # all_to_all_single: even, then uneven splits (rank i sends j+i+1 rows to rank j; a zero too)
    o = torch.empty(2 * m, 3, dtype=torch.float64)
    dist.all_to_all_single(o, data(rank, f"{prefix}a2a", shape=(2 * m, 3)), group=group)
    results[f"{prefix}all_to_all_single.even"] = o
    send = [(j + me + 1) % 3 for j in range(m)]
    recv = [(me + i + 1) % 3 for i in range(m)]
    o = torch.empty(sum(recv), 3, dtype=torch.float64)
    dist.all_to_all_single(
        o,
        data(rank, f"{prefix}a2au", shape=(sum(send), 3)),
        output_split_sizes=recv,
        input_split_sizes=send,
        group=group,
    )
    results[f"{prefix}all_to_all_single.uneven"] = o
    root = 0
    gathered = [torch.empty(3, 4, dtype=torch.float64) for _ in range(m)] if me == root else None
    dist.gather(data(rank, f"{prefix}gather"), gathered, group_dst=root, group=group)
    if me == root:
        results[f"{prefix}gather"] = torch.stack(gathered)
    o = torch.empty(3, 4, dtype=torch.float64)
    pieces = [data(rank, f"{prefix}scatter{j}") for j in range(m)] if me == root else None
    dist.scatter(o, pieces, group_src=root, group=group)
    results[f"{prefix}scatter"] = o
    dist.barrier(group=group)


world = list(range(n))
p2p("world.", None, world)
collectives("world.", None, world)
# new_group: the even and the odd ranks (every rank creates both, as torch requires)
evens, odds = world[0::2], world[1::2]
groups = {"evens": dist.new_group(evens), "odds": dist.new_group(odds)}
for label, members in (("evens", evens), ("odds", odds)):
    if rank in members:
        p2p(f"new_group.{label}.", groups[label], members)
        collectives(f"new_group.{label}.", groups[label], members)
# split_group: halves of the world
halves = [world[: n // 2], world[n // 2 :]]
split = dist.split_group(split_ranks=halves)
mine = next(h for h in halves if rank in h)
p2p("split_group.", split, mine)
collectives("split_group.", split, mine)
# a (dp x tp) DeviceMesh with tp=2
mesh = init_device_mesh("cpu", (n // 2, 2), mesh_dim_names=("dp", "tp"))
for dim in ("dp", "tp"):
    g = mesh[dim].get_group()
    members = dist.get_process_group_ranks(g)
    t = data(rank, f"mesh.{dim}")
    dist.all_reduce(t, group=g)
    results[f"mesh.{dim}.ranks"] = torch.tensor(members)
    results[f"mesh.{dim}.all_reduce"] = t
    collectives(f"mesh.{dim}.", g, members)

torch.save(results, os.path.join(out, f"calls.{backend}.{rank}.pt"))
dist.destroy_process_group()
print(f"rank {rank}: {len(results)} results over {backend}", flush=True)
hvd.shutdown()
