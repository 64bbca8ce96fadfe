"""What the step-time benches (ddp_step_bench.py, fsdp_step_bench.py) share: one run of `ringmaster-run --np N`
with the bench script itself as the worker, and inside it the rounds that alternate torch's Gloo backend with
the "ringmaster" backend on the same workers.

The driver side: `launch_world()` starts the launcher, streams the workers' progress lines and returns the
per-step times the workers wrote. The worker side: `worker_world()` checks the world, `alternate()` runs
`measure(backend, tag)` for gloo then ringmaster, --rounds times, and keeps per backend the slowest rank's time
of every step (a step takes as long as its slowest rank); `init_group()` makes a fresh process group of
either backend (Gloo over a FileStore, as worker-runtime/python/tests/workers/ddp_compare_worker.py does).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BACKENDS = ("gloo", "ringmaster")


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def add_run_args(p, steps, warmup, rounds, timeout_s):
    """The arguments every step bench takes (the defaults are the bench's own)."""
    p.add_argument("--steps", type=int, default=steps, help="timed steps per backend and round")
    p.add_argument("--warmup", type=int, default=warmup, help="untimed steps before them")
    p.add_argument("--rounds", type=int, default=rounds, help="gloo then ringmaster, this many times")
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"), help="where ringmaster-run is")
    p.add_argument("--timeout-s", type=int, default=timeout_s, help="per world size, launcher start to finish")
    p.add_argument("--out", help="keep the launcher's directories here (default: a temporary directory)")
    p.add_argument("--json", help="also write the figures here, for make bench-report (bench_json.py)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)


# -- the worker (one rank, under ringmaster-run) -------------------------------------------------------


def worker_world(hvd):
    """(rank, world size, the directory for Gloo's FileStores) of this worker, after hvd.init(); exits if the
    world is not the one the driver asked for."""
    rank, world = hvd.rank(), hvd.size()
    expected = int(os.environ["STEP_BENCH_NP"])
    if world != expected:
        sys.exit(
            f"rank {rank}: a world of {world}, not {expected} (a worker was removed before the bench "
            f"started?): the figures would not be for {expected} ranks; run it again"
        )
    return rank, world, os.environ["STEP_BENCH_STORE_DIR"]  # made by the driver (a FileStore cannot create it)


def init_group(dist, backend, store_dir, tag, rank, world):
    if backend == "ringmaster":
        dist.init_process_group("ringmaster")
    else:
        # A fresh file per group: a FileStore file that still holds an earlier group's keys would mix them.
        store = dist.FileStore(os.path.join(store_dir, f"gloo.{tag}.store"), world)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world)


def alternate(args, hvd, torch, rank, world, measure):
    """gloo then ringmaster, args.rounds times: `measure(backend, tag)` returns this rank's step times (seconds)
    and a note for the progress line. Returns {backend: the slowest rank's time of every step}."""
    times = {b: [] for b in BACKENDS}
    for r in range(args.rounds):
        for backend in BACKENDS:
            mine, note = measure(backend, f"{r}")
            # A step takes as long as its slowest rank: every rank's times, the maximum per step.
            every = hvd.allgather(torch.tensor([mine], dtype=torch.float64), name=f"bench.{backend}.{r}")
            slowest = every.max(dim=0).values.tolist()
            times[backend] += slowest
            if rank == 0:
                log(
                    f"np={world} round {r + 1}/{args.rounds} {backend}: {len(slowest)} steps, median "
                    f"{statistics.median(slowest) * 1e3:.3f} ms{note} ({loadavg()})"
                )
    return times


def write_result(args, rank, result):
    if rank == 0:
        with open(args.result, "w") as f:
            json.dump(result, f)


# -- the driver ----------------------------------------------------------------------------------------


def launch_world(args, script, np_, out, worker_args):
    """Runs `ringmaster-run --np np_ -- python script --worker --result R *worker_args`, streaming the bench's
    progress lines; returns what the workers wrote to R (rank 0's write_result). Exits, naming the launcher's
    output, if the run fails."""
    launcher = os.path.join(args.bin, "ringmaster-run")
    if not os.path.exists(launcher):
        sys.exit(f"{launcher} is missing: build the project first (make build) or pass --bin")
    result = os.path.join(out, f"result.np{np_}.json")
    cmd = [
        launcher,
        "--np",
        str(np_),
        "--min",
        str(np_),
        "--max",
        str(np_),
        "--out",
        os.path.join(out, f"np{np_}"),
        # the interpreter and torch take seconds to start on a loaded machine (the first heartbeat comes
        # after them); the launcher's defaults have no deadline, a bench ends within --timeout-s
        "--startup-timeout-s",
        "120",
        "--heartbeat-timeout-ms",
        "30000",
        "--deadline-s",
        str(args.timeout_s),
        "--",
        sys.executable,
        os.path.abspath(script),
        "--worker",
        "--result",
        result,
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--rounds",
        str(args.rounds),
    ] + list(worker_args)
    stores = os.path.join(out, f"np{np_}.stores")
    os.makedirs(stores, exist_ok=True)
    env = dict(
        os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", STEP_BENCH_NP=str(np_), STEP_BENCH_STORE_DIR=stores
    )
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    lines = []
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    try:
        for line in proc.stdout:
            lines.append(line)
            # the launcher's generations, less the ends of workers that finished (rank 0 finishes first)
            if "[bench " in line or (
                line.startswith("[ringmaster-run")
                and (("generation" in line and "finished)" not in line) or "FAILED" in line)
            ):
                print("  " + line.rstrip(), flush=True)
        code = proc.wait(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session: it and the workers it started
        proc.wait()
        raise
    if code != 0 or not os.path.exists(result):
        sys.exit(
            f"np={np_}: ringmaster-run exited {code} without a result; its output ends with:\n"
            f"{''.join(lines)[-4000:]}\n(logs kept in {out})"
        )
    with open(result) as f:
        return json.load(f)


def median_ms(values):
    return statistics.median(values) * 1e3


def p90_ms(values):
    """The 90th percentile (statistics.quantiles' default 'exclusive' method)."""
    return statistics.quantiles(values, n=10)[8] * 1e3 if len(values) > 1 else values[0] * 1e3
