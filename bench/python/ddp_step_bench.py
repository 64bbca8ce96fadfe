#!/usr/bin/env python3
"""DDP step time: the digits MLP through unmodified DistributedDataParallel over the "ringmaster" backend
vs over torch's own Gloo backend, in the same run on the same machine.

    build/venv/bin/python bench/python/ddp_step_bench.py            # 2 and 4 ranks
    build/venv/bin/python bench/python/ddp_step_bench.py --np 2 --steps 50

For each world size the script starts `ringmaster-run --np N` with itself as the worker (--worker). Every
worker trains the model of worker-runtime/python/examples/digits_common.py (float64, 64-32-10, seed 1) on a
global batch of 64 (64/N rows per rank), SGD, for --rounds rounds; a round is --warmup untimed steps then --steps
timed steps over Gloo (a FileStore rendezvous, as worker-runtime/python/tests/workers/ddp_compare_worker.py
does), then the same over
"ringmaster" (`init_process_group("ringmaster")`). Alternating the backends round by round spreads the
load of a shared machine over both. A step is zero_grad + forward + backward (DDP's allreduce) +
optimizer.step(); its time is the slowest rank's. The table gives the median step per backend and the
ratio ringmaster/gloo; progress lines go by while it runs.
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/: bench_json.py
import bench_json  # noqa: E402  (the benches' --json writer)
from step_bench_common import (
    add_run_args,
    alternate,
    init_group,
    launch_world,
    loadavg,
    log,
    median_ms,
    worker_world,
    write_result,
)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "worker-runtime", "python", "examples")
GLOBAL_BATCH = 64


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, nargs="+", default=[2, 4], help="world sizes to measure")
    add_run_args(p, steps=200, warmup=20, rounds=2, timeout_s=540)
    return p.parse_args()


# -- the worker (one rank, under ringmaster-run) -------------------------------------------------------


def _train_steps(ddp, optimizer, x, y, world, count):
    """`count` steps on the same share (the data does not change the time); returns each one's wall time
    in seconds (this rank's)."""
    from digits_common import share_loss

    times = []
    for _ in range(count):
        start = time.perf_counter()
        optimizer.zero_grad()
        # DDP averages gradients over the world: scale the share's loss back to the global batch's mean.
        (share_loss(ddp, x, y, GLOBAL_BATCH) * world).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return times


def _measure(args, torch, dist, backend, store_dir, tag, rank, world, x, y):
    """One backend for one round: a fresh model and group, warm-up, timed steps, the group destroyed."""
    from digits_common import model

    init_group(dist, backend, store_dir, tag, rank, world)
    try:
        net = model(argparse.Namespace(seed=1, hidden=32))
        ddp = torch.nn.parallel.DistributedDataParallel(net)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
        _train_steps(ddp, optimizer, x, y, world, args.warmup)
        dist.barrier()  # every rank starts the timed steps together
        return _train_steps(ddp, optimizer, x, y, world, args.steps), ""
    finally:
        dist.destroy_process_group()


def worker(args):
    sys.path.insert(0, EXAMPLES)
    import torch
    import torch.distributed as dist

    import ringmaster.distributed  # noqa: F401  (registers the backend)
    import ringmaster.torch as hvd
    from digits_common import dataset

    hvd.init()
    rank, world, store_dir = worker_world(hvd)
    share = GLOBAL_BATCH // world
    x_all, y_all = dataset().tensors
    x, y = x_all[rank * share : (rank + 1) * share], y_all[rank * share : (rank + 1) * share]
    times = alternate(
        args,
        hvd,
        torch,
        rank,
        world,
        lambda backend, tag: _measure(args, torch, dist, backend, store_dir, tag, rank, world, x, y),
    )
    write_result(args, rank, {"np": world, "times": times})
    hvd.shutdown()


# -- the driver ----------------------------------------------------------------------------------------


def _table(results):
    rows = [f"{'ranks':>5}  {'steps':>5}  {'gloo ms':>9}  {'ringmaster ms':>13}  {'ringmaster/gloo':>15}"]
    for np_, times in results:
        gloo, ours = median_ms(times["gloo"]), median_ms(times["ringmaster"])
        rows.append(f"{np_:>5}  {len(times['gloo']):>5}  {gloo:>9.3f}  {ours:>13.3f}  {ours / gloo:>15.2f}")
    return "\n".join(rows)


def driver(args):
    log(
        f"DDP step time, digits MLP (float64, global batch {GLOBAL_BATCH}), ranks {args.np}, "
        f"{args.rounds} rounds x ({args.warmup} warm-up + {args.steps} timed) steps per backend; {loadavg()}"
    )
    report = bench_json.Report("python-ddp")
    out = args.out or tempfile.mkdtemp(prefix="ddp_step_bench.")
    os.makedirs(out, exist_ok=True)
    results = []
    for np_ in args.np:
        log(f"np={np_}: starting ringmaster-run ({loadavg()})")
        results.append((np_, launch_world(args, __file__, np_, out, [])["times"]))
        log(f"np={np_}: done ({loadavg()})")
    print()
    print("median step time (slowest rank per step), DDP over each backend:")
    print(_table(results))
    print(
        f"{loadavg()}; cycle time {os.environ.get('RINGMASTER_CYCLE_TIME_MS', 'default')} "
        f"(RINGMASTER_CYCLE_TIME_MS); launcher directories in {out}"
    )
    for np_, times in results:
        report.figure(
            f"python.ddp.{np_}",
            f"DDP step time, digits MLP, {np_} ranks (median)",
            "ms",
            median_ms(times["ringmaster"]),
            median_ms(times["gloo"]),
            "torch Gloo",
        )
    report.write(args.json)


def main():
    args = parse_args()
    if args.worker:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
