#!/usr/bin/env python3
"""The peer figure for ringmaster-perf: torch.distributed's Gloo backend on the same machine.

Prints, per size, the allreduce time, algbw and busbw (nccl-tests formulas, like ringmaster-perf),
and for N small tensors: one allreduce per tensor (what torch does without a bucketing layer).

usage: torch_gloo_bench.py --np 2 --sizes 1M,64M,256M [--tensors 1000 --tensor-bytes 4K] [--iters N | --traffic 1G]

Without --iters, each size runs max(2, min(50, traffic // size)) timed iterations, ringmaster-perf's rule.
"""

import argparse
import socket
import sys
import time


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, args, port, queue):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.np)
    results = []
    for size in args.sizes:
        t = torch.full((size // 4,), float(rank + 1), dtype=torch.float32)
        iters = args.iters or max(2, min(50, args.traffic // size))
        dist.all_reduce(t)  # warm-up
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        elapsed = (time.perf_counter() - start) / iters
        results.append(("allreduce", size, iters, elapsed))
    if args.tensors:
        ts = [torch.ones(args.tensor_bytes // 4) for _ in range(args.tensors)]
        for x in ts:
            dist.all_reduce(x)
        dist.barrier()
        rounds = 3
        start = time.perf_counter()
        for _ in range(rounds):
            works = [dist.all_reduce(x, async_op=True) for x in ts]
            for w in works:
                w.wait()
        results.append(("small", args.tensors * args.tensor_bytes, rounds, (time.perf_counter() - start) / rounds))
    # Slowest rank's time, like ringmaster-perf.
    times = torch.tensor([r[3] for r in results], dtype=torch.float64)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    if rank == 0:
        queue.put([(r[0], r[1], r[2], float(tm)) for r, tm in zip(results, times)])
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--sizes", default="1M,64M,256M")
    p.add_argument("--tensors", type=int, default=1000)
    p.add_argument("--tensor-bytes", default="4K")
    p.add_argument("--iters", type=int, default=0)
    p.add_argument("--traffic", default="1G", help="bytes per size that set the iterations when --iters is 0")
    args = p.parse_args()
    args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    args.tensor_bytes = parse_size(args.tensor_bytes)
    args.traffic = parse_size(args.traffic)
    import torch
    import torch.multiprocessing as mp

    torch.set_num_threads(1)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, args, port, queue)) for r in range(args.np)]
    for pr in procs:
        pr.start()
    results = queue.get(timeout=3600)
    for pr in procs:
        pr.join()
        if pr.exitcode != 0:
            sys.exit(f"rank failed with exit code {pr.exitcode}")
    n = args.np
    factor = 2.0 * (n - 1) / n if n > 1 else 0.0
    print(f"# torch {torch.__version__} gloo allreduce: {n} ranks, float32, loopback 127.0.0.1")
    print(f"# {'what':>14} {'bytes':>12} {'iters':>6} {'time(us)':>12} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}")
    for what, size, iters, t in results:
        algbw = size / t / 1e9
        print(f"  {what:>14} {size:>12} {iters:>6} {t * 1e6:>12.1f} {algbw:>12.3f} {algbw * factor:>12.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
