#!/usr/bin/env python3
"""CPU allreduce, ours against torch's Gloo process group, measured in the same run (`make bench-allreduce`).

    build/venv/bin/python bench/runtime/allreduce_bench.py                  # 2, 4, 8 ranks; 1M..256M
    build/venv/bin/python bench/runtime/allreduce_bench.py --np 4 --sizes 64M --rounds 5

Each round runs, for every world size, `ringmaster-perf allreduce --backend gloo --in-place` (one call per size)
once per --algorithms entry -- `exact`, the default path (bit-identical to torch's Gloo: Gloo's ring order of
additions, through shared memory between ranks on one host); `bcube`, the opt-in
(RINGMASTER_ALLREDUCE_ALGORITHM=bcube) as it runs on one host (shared memory as well: faster than any TCP
algorithm); `bcube-tcp`, the opt-in between hosts, emulated with --no-shared-memory (BCube over TCP up to 1M
per rank, another order of additions, the ring above); `exact-tcp`, the default between hosts (Gloo's ring,
the path before shared memory) -- and `torch_gloo_bench.py`
(torch.distributed's Gloo backend: one process group, every size), float32 sum in place on loopback, the same
number of timed iterations per size (max(2, min(50, --traffic // size))) after one warm-up, and the time of the
slowest rank. The order of the sides rotates round by round, so the load of a shared machine falls on all.
Then ringmaster-perf's fusion benchmark: --tensors allreduces of --tensor-bytes each, fused (one launch) vs
unfused (one launch each), at --fusion-np ranks.

The table gives algorithm bandwidth (bytes / time) over the rounds: the median and the p90 (the 90th
percentile of the time, so the slow tail, as GB/s) per side, and the ratio ours / torch of the medians, one row
per algorithm, world size and size (the goal: the default path >= 1.2x torch in every cell).
Progress lines, each with the load average, go by while it runs. --json PATH also writes the figures for
`make bench-report` (bench/bench_json.py). Exit status 1 if ours returned a wrong result (the first round
checks every element) or a side failed.
"""

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_json  # noqa: E402  (the benches' --json writer)


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def size_name(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def loadavg():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def log(msg):
    print(f"[allreduce-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(cmd, timeout):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"allreduce-bench: {' '.join(cmd)} failed with {out.returncode}:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def iters_for(args, size):
    return max(2, min(50, args.traffic // size))


ALGORITHMS = {  # --algorithms entry: ringmaster-perf flags
    "exact": ["--allreduce-algorithm", "exact"],
    "bcube": ["--allreduce-algorithm", "bcube"],
    "exact-tcp": ["--allreduce-algorithm", "exact", "--no-shared-memory"],
    "bcube-tcp": ["--allreduce-algorithm", "bcube", "--no-shared-memory"],
}


def ours(args, np_, size, check, algorithm):
    """algbw (GB/s) of ringmaster-perf at one size."""
    cmd = [
        args.perf,
        "allreduce",
        "--np",
        str(np_),
        "--backend",
        "gloo",
        "--in-place",
        "--min-bytes",
        str(size),
        "--max-bytes",
        str(size),
        "--iters",
        str(iters_for(args, size)),
    ]
    cmd += ALGORITHMS[algorithm] + (["--check"] if check else [])
    text = run(cmd, args.timeout)
    for line in text.splitlines():
        fields = line.split()
        if not line.startswith("#") and len(fields) >= 6:
            if check and (len(fields) < 7 or fields[6] != "0"):
                sys.exit(
                    f"allreduce-bench: ours ({algorithm}) returned wrong results at {np_} ranks, "
                    f"{size_name(size)}:\n{text}"
                )
            return float(fields[4])
    sys.exit(f"allreduce-bench: no figure in ringmaster-perf's output:\n{text}")


def torch_gloo(args, np_):
    """{size: algbw (GB/s)} of torch's Gloo process group, every size in one group."""
    cmd = [
        args.python,
        os.path.join(HERE, "torch_gloo_bench.py"),
        "--np",
        str(np_),
        "--tensors",
        "0",
        "--sizes",
        ",".join(str(s) for s in args.sizes),
        "--traffic",
        str(args.traffic),
    ]
    got = {}
    for line in run(cmd, args.timeout).splitlines():
        fields = line.split()
        if fields and fields[0] == "allreduce":
            got[int(fields[1])] = float(fields[4])
    if set(got) != set(args.sizes):
        sys.exit(f"allreduce-bench: torch_gloo_bench.py gave sizes {sorted(got)}, wanted {args.sizes}")
    return got


def fusion(args):
    """(fused us/round, unfused us/round) of ringmaster-perf fusion."""
    cmd = [
        args.perf,
        "fusion",
        "--np",
        str(args.fusion_np),
        "--backend",
        "gloo",
        "--tensors",
        str(args.tensors),
        "--tensor-bytes",
        str(args.tensor_bytes),
        "--iters",
        str(args.fusion_iters),
        "--check",
    ]
    text = run(cmd, args.timeout)
    got = dict(re.findall(r"^\s+(fused|unfused)\s+([0-9.]+) us/round", text, re.M))
    if set(got) != {"fused", "unfused"}:
        sys.exit(f"allreduce-bench: no fusion figures in:\n{text}")
    return float(got["fused"]), float(got["unfused"])


def p90_bandwidth(gbps):
    """GB/s at the 90th percentile of time (nearest rank): the slow tail."""
    times = sorted(1.0 / g for g in gbps)
    return 1.0 / times[max(0, math.ceil(0.9 * len(times)) - 1)]


def p90_time(values):
    values = sorted(values)
    return values[max(0, math.ceil(0.9 * len(values)) - 1)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, nargs="+", default=[2, 4, 8], help="world sizes")
    p.add_argument("--sizes", default="1M,4M,16M,64M,256M", help="float32 buffer sizes (K, M, G)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--algorithms",
        default="exact,bcube,bcube-tcp",
        help="ours, any of: " + ", ".join(ALGORITHMS) + " (see above)",
    )
    p.add_argument("--traffic", default="256M", help="bytes per size and side that set the iterations")
    p.add_argument("--fusion-np", type=int, default=4, help="ranks of the fused vs unfused run (0: skip it)")
    p.add_argument("--tensors", type=int, default=1000)
    p.add_argument("--tensor-bytes", default="4K")
    p.add_argument("--fusion-iters", type=int, default=2, help="timed rounds of the fusion benchmark per run")
    p.add_argument("--perf", default=os.path.join(ROOT, "build", "bin", "ringmaster-perf"))
    p.add_argument("--python", default=sys.executable, help="a Python with torch")
    p.add_argument("--timeout", type=int, default=1800, help="seconds for one side's run")
    p.add_argument("--json", default=None, help="also write the figures here, for make bench-report")
    args = p.parse_args()
    report = bench_json.Report("allreduce")
    args.sizes = [parse_size(s) for s in args.sizes.split(",")]
    args.traffic = parse_size(args.traffic)
    args.tensor_bytes = parse_size(args.tensor_bytes)
    if not os.access(args.perf, os.X_OK):
        sys.exit(f"allreduce-bench: {args.perf} is missing: run make build")

    load_start = loadavg()
    log(
        f"{args.rounds} rounds of np {args.np} x sizes {[size_name(s) for s in args.sizes]}; cores {os.cpu_count()}; "
        f"{load_start}"
    )
    algorithms = args.algorithms.split(",")
    for a in algorithms:
        if a not in ALGORITHMS:
            sys.exit(f"allreduce-bench: unknown algorithm {a!r} (want any of {', '.join(ALGORITHMS)})")
    ours_gbps = {(a, n, s): [] for a in algorithms for n in args.np for s in args.sizes}
    torch_gbps = {(n, s): [] for n in args.np for s in args.sizes}
    fused_us, unfused_us = [], []
    for r in range(args.rounds):
        for n in args.np:
            sides = algorithms + ["torch"]
            sides = sides[r % len(sides) :] + sides[: r % len(sides)]  # who goes first rotates
            for side in sides:
                if side != "torch":
                    got = {s: ours(args, n, s, check=(r == 0), algorithm=side) for s in args.sizes}
                    for s in args.sizes:
                        ours_gbps[(side, n, s)].append(got[s])
                else:
                    got = torch_gloo(args, n)
                    for s in args.sizes:
                        torch_gbps[(n, s)].append(got[s])
                log(
                    f"round {r + 1}/{args.rounds} np={n} {side:5}: "
                    + " ".join(f"{size_name(s)} {got[s]:.3f}" for s in args.sizes)
                    + f" GB/s ({loadavg()})"
                )
        if args.fusion_np > 0:
            f, u = fusion(args)
            fused_us.append(f)
            unfused_us.append(u)
            log(
                f"round {r + 1}/{args.rounds} fusion np={args.fusion_np}: fused {f:.0f} us, unfused {u:.0f} us, "
                f"{u / f:.1f}x ({loadavg()})"
            )

    print()
    print(
        f"# CPU allreduce, float32 sum in place, loopback; algbw in GB/s over {args.rounds} rounds "
        f"(median, p90 = slow tail); ratio = ours/torch medians"
    )
    print(
        "# exact: the default path, bit-identical to torch's Gloo; bcube: the opt-in on one host; "
        "-tcp: without shared memory, as between hosts"
    )
    print(f"# load at start: {load_start}; at end: {loadavg()}; cores: {os.cpu_count()}")
    print(
        f"# {'algorithm':>9} {'ranks':>5} {'size':>6} {'ours':>8} {'ours p90':>9} {'torch':>8} {'torch p90':>9} "
        f"{'ratio':>7}"
    )
    worst = {}
    for a in algorithms:
        for n in args.np:
            for s in args.sizes:
                o, t = ours_gbps[(a, n, s)], torch_gbps[(n, s)]
                ratio = statistics.median(o) / statistics.median(t)
                worst[a] = min(worst.get(a, ratio), ratio)
                # The default path keeps the figure ids it always had; the opt-in's are allreduce.bcube.*.
                fid = f"allreduce.{n}.{size_name(s)}" if a == "exact" else f"allreduce.{a}.{n}.{size_name(s)}"
                report.figure(
                    fid,
                    f"allreduce algbw, {n} ranks, {size_name(s)} (median)" + ("" if a == "exact" else f" ({a})"),
                    "GB/s",
                    statistics.median(o),
                    statistics.median(t),
                    "torch Gloo",
                    bench_json.goal("ratio", ">=", 1.2, ">= 1.2x torch") if a == "exact" else None,
                    ratio,
                )
                print(
                    f"  {a:>9} {n:>5} {size_name(s):>6} {statistics.median(o):>8.3f} {p90_bandwidth(o):>9.3f} "
                    f"{statistics.median(t):>8.3f} {p90_bandwidth(t):>9.3f} {ratio:>6.2f}x"
                )
    cells = f"{min(args.np)}-{max(args.np)} ranks x {size_name(min(args.sizes))}-{size_name(max(args.sizes))}"
    for a in algorithms:
        goal_text = " (goal: >= 1.20x)" if a == "exact" else " (opt-in: no goal)"
        print(f"# lowest ratio, {a}: {worst[a]:.2f}x{goal_text}")
        report.figure(
            "allreduce.worst" if a == "exact" else f"allreduce.{a}.worst",
            f"allreduce algbw vs torch Gloo, lowest ratio over {cells}"
            + (" (default, bit-identical)" if a == "exact" else f" ({a})"),
            "x",
            worst[a],
            None,
            "torch Gloo",
            bench_json.goal("ours", ">=", 1.2, ">= 1.2x torch in every cell") if a == "exact" else None,
            worst[a],
        )
    if fused_us:
        f, u = statistics.median(fused_us), statistics.median(unfused_us)
        print()
        print(
            f"# {args.tensors} x {size_name(args.tensor_bytes)} float32 allreduces, {args.fusion_np} ranks, "
            f"us per round (median, p90)"
        )
        print(f"  fused   {f:>12.0f} {p90_time(fused_us):>12.0f}")
        print(f"  unfused {u:>12.0f} {p90_time(unfused_us):>12.0f}")
        print(f"# fused is {u / f:.1f}x faster than unfused (goal: >= 10x)")
        # ratio: how many times faster fused is (unfused / fused time), the printed figure
        report.figure(
            "allreduce.fusion",
            f"{args.tensors} x {size_name(args.tensor_bytes)} allreduces fused vs "
            f"unfused, {args.fusion_np} ranks (median)",
            "us",
            f,
            u,
            "unfused",
            bench_json.goal("ratio", ">=", 10.0, ">= 10x faster"),
            u / f,
        )
    report.write(args.json)


if __name__ == "__main__":
    main()
