#!/usr/bin/env python3
"""DDP step time: the digits MLP through unmodified DistributedDataParallel over the "ringmaster" backend
vs over torch's own Gloo backend, in the same run on the same machine.

    build/venv/bin/python worker-runtime/python/bench/ddp_step_bench.py            # 2 and 4 ranks
    build/venv/bin/python worker-runtime/python/bench/ddp_step_bench.py --np 2 --steps 50

For each world size the script starts `ringmaster-run --np N` with itself as the worker (--worker). Every
worker trains the model of examples/digits_common.py (float64, 64-32-10, seed 1) on a global batch of 64
(64/N rows per rank), SGD, for --rounds rounds; a round is --warmup untimed steps then --steps timed steps
over Gloo (a FileStore rendezvous, as tests/workers/ddp_compare_worker.py does), then the same over
"ringmaster" (`init_process_group("ringmaster")`). Alternating the backends round by round spreads the
load of a shared machine over both. A step is zero_grad + forward + backward (DDP's allreduce) +
optimizer.step(); its time is the slowest rank's. The table gives the median step per backend and the
ratio ringmaster/gloo; progress lines go by while it runs.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
EXAMPLES = os.path.join(HERE, "..", "examples")
BACKENDS = ("gloo", "ringmaster")
GLOBAL_BATCH = 64


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, nargs="+", default=[2, 4], help="world sizes to measure")
    p.add_argument("--steps", type=int, default=200, help="timed steps per backend and round")
    p.add_argument("--warmup", type=int, default=20, help="untimed steps before them")
    p.add_argument("--rounds", type=int, default=2, help="gloo then ringmaster, this many times")
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"), help="where ringmaster-run is")
    p.add_argument("--timeout-s", type=int, default=540, help="per world size, launcher start to finish")
    p.add_argument("--out", help="keep the launcher's directories here (default: a temporary directory)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
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


def _init_group(dist, backend, store_dir, tag, rank, world):
    if backend == "ringmaster":
        dist.init_process_group("ringmaster")
    else:
        # A fresh file per group: a FileStore file that still holds an earlier group's keys would mix them.
        store = dist.FileStore(os.path.join(store_dir, f"gloo.{tag}.store"), world)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world)


def _measure(args, torch, dist, backend, store_dir, tag, rank, world, x, y):
    """One backend for one round: a fresh model and group, warm-up, timed steps, the group destroyed."""
    from digits_common import model
    _init_group(dist, backend, store_dir, tag, rank, world)
    try:
        net = model(argparse.Namespace(seed=1, hidden=32))
        ddp = torch.nn.parallel.DistributedDataParallel(net)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
        _train_steps(ddp, optimizer, x, y, world, args.warmup)
        dist.barrier()  # every rank starts the timed steps together
        return _train_steps(ddp, optimizer, x, y, world, args.steps)
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
    rank, world = hvd.rank(), hvd.size()
    expected = int(os.environ["DDP_BENCH_NP"])
    if world != expected:
        sys.exit(f"rank {rank}: a world of {world}, not {expected} (a worker was removed before the bench "
                 f"started?): the figures would not be for {expected} ranks; run it again")
    share = GLOBAL_BATCH // world
    x_all, y_all = dataset().tensors
    x, y = x_all[rank * share:(rank + 1) * share], y_all[rank * share:(rank + 1) * share]
    store_dir = os.environ["DDP_BENCH_STORE_DIR"]  # made by the driver (a FileStore cannot create it)
    times = {b: [] for b in BACKENDS}
    for r in range(args.rounds):
        for backend in BACKENDS:
            mine = _measure(args, torch, dist, backend, store_dir, f"{r}", rank, world, x, y)
            # A step takes as long as its slowest rank: every rank's times, the maximum per step.
            every = hvd.allgather(torch.tensor([mine], dtype=torch.float64), name=f"bench.{backend}.{r}")
            slowest = every.max(dim=0).values.tolist()
            times[backend] += slowest
            if rank == 0:
                log(f"np={world} round {r + 1}/{args.rounds} {backend}: {len(slowest)} steps, median "
                    f"{statistics.median(slowest) * 1e3:.3f} ms ({loadavg()})")
    if rank == 0:
        with open(args.result, "w") as f:
            json.dump({"np": world, "times": times}, f)
    hvd.shutdown()


# -- the driver ----------------------------------------------------------------------------------------

def _launch(args, np_, out):
    """ringmaster-run --np np_ with this script as the worker; streams the bench's progress lines and
    returns (exit status, the launcher's whole output, the result file)."""
    launcher = os.path.join(args.bin, "ringmaster-run")
    if not os.path.exists(launcher):
        sys.exit(f"{launcher} is missing: build the project first (make build) or pass --bin")
    result = os.path.join(out, f"result.np{np_}.json")
    cmd = [launcher, "--np", str(np_), "--min", str(np_), "--max", str(np_), "--out", os.path.join(out, f"np{np_}"),
           # the interpreter and torch take seconds to start on a loaded machine
           "--heartbeat-timeout-ms", "30000", "--deadline-s", str(args.timeout_s),
           "--", sys.executable, os.path.abspath(__file__), "--worker", "--result", result,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--rounds", str(args.rounds)]
    stores = os.path.join(out, f"np{np_}.stores")
    os.makedirs(stores, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", DDP_BENCH_NP=str(np_),
               DDP_BENCH_STORE_DIR=stores)
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    lines = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        for line in proc.stdout:
            lines.append(line)
            if "[bench " in line or (line.startswith("[ringmaster-run") and ("generation" in line or "FAILED" in line)):
                print("  " + line.rstrip(), flush=True)
        code = proc.wait(timeout=60)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session: it and the workers it started
        proc.wait()
        raise
    return code, "".join(lines), result


def _median_ms(values):
    return statistics.median(values) * 1e3


def _table(results):
    rows = [f"{'ranks':>5}  {'steps':>5}  {'gloo ms':>9}  {'ringmaster ms':>13}  {'ringmaster/gloo':>15}"]
    for np_, times in results:
        gloo, ours = _median_ms(times["gloo"]), _median_ms(times["ringmaster"])
        rows.append(f"{np_:>5}  {len(times['gloo']):>5}  {gloo:>9.3f}  {ours:>13.3f}  {ours / gloo:>15.2f}")
    return "\n".join(rows)


def driver(args):
    log(f"DDP step time, digits MLP (float64, global batch {GLOBAL_BATCH}), ranks {args.np}, "
        f"{args.rounds} rounds x ({args.warmup} warm-up + {args.steps} timed) steps per backend; {loadavg()}")
    out = args.out or tempfile.mkdtemp(prefix="ddp_step_bench.")
    os.makedirs(out, exist_ok=True)
    results = []
    for np_ in args.np:
        log(f"np={np_}: starting ringmaster-run ({loadavg()})")
        code, output, result = _launch(args, np_, out)
        if code != 0 or not os.path.exists(result):
            sys.exit(f"np={np_}: ringmaster-run exited {code} without a result; its output ends with:\n"
                     f"{output[-4000:]}\n(logs kept in {out})")
        with open(result) as f:
            results.append((np_, json.load(f)["times"]))
        log(f"np={np_}: done ({loadavg()})")
    print()
    print("median step time (slowest rank per step), DDP over each backend:")
    print(_table(results))
    print(f"{loadavg()}; cycle time {os.environ.get('RINGMASTER_CYCLE_TIME_MS', 'default')} "
          f"(RINGMASTER_CYCLE_TIME_MS); launcher directories in {out}")


def main():
    args = parse_args()
    if args.worker:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
