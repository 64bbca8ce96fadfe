#!/usr/bin/env python3
"""FSDP2 step time on a (dp x tp) DeviceMesh: the "ringmaster" backend vs torch's Gloo, in the same run.

fully_shard on the dp dimension of the mesh, tensor parallel on tp, over the "ringmaster" backend and over
torch's own Gloo backend, on the same workers of one run on the same machine.

    build/venv/bin/python bench/python/fsdp_step_bench.py             # 4 ranks: dp 2 x tp 2
    build/venv/bin/python bench/python/fsdp_step_bench.py --rounds 1 --steps 5 --warmup 2

The script starts `ringmaster-run --np 4` with itself as the worker (--worker; step_bench_common.py). The model
is --blocks blocks of Linear(dim, hidden) -> ReLU -> Linear(hidden, dim), float32, seed 11: the first Linear of
a block column-parallel and the second row-parallel on tp (parallelize_module), every block then the whole
model fully_shard-ed on dp (FSDP2's usual one-unit-per-block wrapping), SGD. Each dp rank trains on its share
of a global batch of --batch rows, the same seeded batches on both backends (the tp pair of a dp rank sees the
same rows). A step is zero_grad + forward (FSDP's all-gathers, tp's allreduces) + backward (all-gathers again,
reduce-scatters of the gradients) + optimizer.step(); its time is the slowest rank's. A round is, for gloo
then ringmaster, a fresh group + mesh + model, --warmup untimed steps, a barrier, --steps timed steps, the group
destroyed; --rounds rounds alternate the backends so that the load of a shared machine falls on both. The
table gives the median and p90 step over all rounds per backend and their ratio ringmaster/gloo, with the load
average at the start and the end; the progress lines give each round's median and the loss of rank 0's last
step (the same on both backends up to the order of additions: the same work was timed).
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/: bench_json.py
import bench_json  # noqa: E402  (the benches' --json writer)
from step_bench_common import (
    BACKENDS,
    add_run_args,
    alternate,
    init_group,
    launch_world,
    loadavg,
    log,
    median_ms,
    p90_ms,
    worker_world,
    write_result,
)

GOAL = 1.0  # issue 33: FSDP2 over "ringmaster" at most Gloo's step


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, default=4, help="world size (dp = np / tp)")
    p.add_argument("--tp", type=int, default=2, help="tensor-parallel width of the mesh")
    p.add_argument("--dim", type=int, default=512, help="a block's input and output width")
    p.add_argument("--hidden", type=int, default=1024, help="a block's inner width")
    p.add_argument("--blocks", type=int, default=2, help="Linear -> ReLU -> Linear blocks, each its own FSDP unit")
    p.add_argument("--batch", type=int, default=64, help="the global batch (rows), split over dp")
    add_run_args(p, steps=30, warmup=5, rounds=5, timeout_s=300)
    args = p.parse_args()
    if args.np % args.tp or args.batch % (args.np // args.tp) or args.hidden % args.tp:
        p.error(f"--np {args.np} must be a multiple of --tp {args.tp}, and --batch and --hidden divisible by dp and tp")
    return args


def _parameters(args):
    return args.blocks * (2 * args.dim * args.hidden + args.hidden + args.dim)


# -- the worker (one rank, under ringmaster-run) -------------------------------------------------------


def _model(torch, args):
    torch.manual_seed(11)
    return torch.nn.Sequential(
        *[
            torch.nn.Sequential(
                torch.nn.Linear(args.dim, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, args.dim)
            )
            for _ in range(args.blocks)
        ]
    )


def _batches(torch, args, count, dp_rank, dp):
    """This dp rank's rows of the first `count` global batches (made before the clock starts)."""
    per = args.batch // dp
    out = []
    for step in range(count):
        g = torch.Generator().manual_seed(100 + step)
        x, y = torch.randn(args.batch, args.dim, generator=g), torch.randn(args.batch, args.dim, generator=g)
        out.append((x[dp_rank * per : (dp_rank + 1) * per], y[dp_rank * per : (dp_rank + 1) * per]))
    return out


def _train_steps(torch, net, optimizer, batches):
    """One step per batch; returns each one's wall time in seconds (this rank's) and the last loss."""
    times, loss = [], None
    for x, y in batches:
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return times, loss


def _measure(args, torch, dist, backend, store_dir, tag, rank, world):
    """One backend for one round: a fresh group, mesh and model, warm-up, timed steps, the group destroyed."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    setup = time.perf_counter()
    init_group(dist, backend, store_dir, tag, rank, world)
    try:
        mesh = init_device_mesh("cpu", (world // args.tp, args.tp), mesh_dim_names=("dp", "tp"))
        net = _model(torch, args)
        plan = {}
        for b in range(args.blocks):
            plan[f"{b}.0"], plan[f"{b}.2"] = ColwiseParallel(), RowwiseParallel()
        parallelize_module(net, mesh["tp"], plan)
        for block in net:
            fully_shard(block, mesh=mesh["dp"])
        fully_shard(net, mesh=mesh["dp"])
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        batches = _batches(torch, args, args.warmup + args.steps, mesh["dp"].get_local_rank(), mesh["dp"].size())
        setup = time.perf_counter() - setup
        _train_steps(torch, net, optimizer, batches[: args.warmup])
        dist.barrier()  # every rank starts the timed steps together
        times, loss = _train_steps(torch, net, optimizer, batches[args.warmup :])
        return times, f", last loss {loss.item():.9g}, setup {setup:.2f} s"
    finally:
        dist.destroy_process_group()


def worker(args):
    import torch
    import torch.distributed as dist

    import ringmaster.distributed  # noqa: F401  (registers the backend)
    import ringmaster.torch as hvd

    hvd.init()
    rank, world, store_dir = worker_world(hvd)
    times = alternate(
        args,
        hvd,
        torch,
        rank,
        world,
        lambda backend, tag: _measure(args, torch, dist, backend, store_dir, tag, rank, world),
    )
    write_result(args, rank, {"np": world, "times": times})
    hvd.shutdown()


# -- the driver ----------------------------------------------------------------------------------------


def _table(times):
    gloo_median, gloo_p90 = median_ms(times["gloo"]), p90_ms(times["gloo"])
    rows = [f"{'backend':<11}  {'steps':>5}  {'median ms':>9}  {'p90 ms':>9}  {'median/gloo':>11}  {'p90/gloo':>8}"]
    for backend in BACKENDS:
        median, p90 = median_ms(times[backend]), p90_ms(times[backend])
        rows.append(
            f"{backend:<11}  {len(times[backend]):>5}  {median:>9.3f}  {p90:>9.3f}  "
            f"{median / gloo_median:>11.2f}  {p90 / gloo_p90:>8.2f}"
        )
    return "\n".join(rows)


def driver(args):
    dp = args.np // args.tp
    params = _parameters(args)
    started = loadavg()
    report = bench_json.Report("python-fsdp")
    log(
        f"FSDP2 step time, {args.blocks} x Linear({args.dim}, {args.hidden}) -> ReLU -> Linear({args.hidden}, "
        f"{args.dim}), float32: {params / 1e6:.2f} M parameters ({params * 4 / 2**20:.1f} MiB, "
        f"{params * 4 / args.np / 2**20:.1f} MiB per rank); {args.np} ranks = dp {dp} x tp {args.tp}, global batch "
        f"{args.batch}; {args.rounds} rounds x ({args.warmup} warm-up + {args.steps} timed) steps per backend; "
        f"{started}"
    )
    out = args.out or tempfile.mkdtemp(prefix="fsdp_step_bench.")
    os.makedirs(out, exist_ok=True)
    worker_args = [
        "--tp",
        str(args.tp),
        "--dim",
        str(args.dim),
        "--hidden",
        str(args.hidden),
        "--blocks",
        str(args.blocks),
        "--batch",
        str(args.batch),
    ]
    times = launch_world(args, __file__, args.np, out, worker_args)["times"]
    ratio = median_ms(times["ringmaster"]) / median_ms(times["gloo"])
    print()
    print(f"FSDP2 on dp {dp} x tp {args.tp}, step time (slowest rank per step) over {args.rounds} alternating rounds:")
    print(_table(times))
    print(f"ringmaster/gloo (median): {ratio:.2f}x (issue 33's goal: <= {GOAL}x)")
    print(f"at the start: {started}; at the end: {loadavg()}; launcher directory {out}")
    report.figure(
        "python.fsdp",
        f"FSDP2 step time, dp {dp} x tp {args.tp} (median)",
        "ms",
        median_ms(times["ringmaster"]),
        median_ms(times["gloo"]),
        "torch Gloo",
        bench_json.goal("ratio", "<=", GOAL, f"<= {GOAL}x Gloo"),
        ratio,
    )
    report.write(args.json)


def main():
    args = parse_args()
    if args.worker:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    sys.exit(main())
