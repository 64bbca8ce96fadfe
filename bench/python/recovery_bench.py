#!/usr/bin/env python3
"""Recovery benchmark: the time from a worker's kill -9 to the next COMPLETED allreduce on the survivors.

    build/venv/bin/python bench/python/recovery_bench.py --trials 10

4 ranks on CPU (Gloo), one small allreduce per step (--step-ms apart), for each system:

  ringmaster  ringmaster.torch (Horovod's elastic API) under ringmaster-run: survivors rebuild in place
  torchrun    torch.distributed.run --max-restarts 3: every local worker is restarted (imports torch again)
  torchft     torchft 0.2.0: lighthouse + 4 replica groups of 1 process (Manager + ProcessGroupGloo)
  horovod     Horovod elastic: not measured unless `horovod` imports (0.28.1 does not build here, see README)

Each worker appends "<time.time()> <step> <rank> <size> <generation>" per completed allreduce to its own file.
Once every rank has done --warmup-steps allreduces at full size, the harness sends SIGKILL itself to one
non-zero rank (rotating over 1..np-1), noting time.time() just before the kill. Recovery = the first allreduce
completed after the kill on any survivor in a world without the victim (ringmaster: a newer generation of
np-1 ranks; torchrun: the next restart round; torchft: a newer quorum of np-1 replicas) minus the kill time.
Every trial starts from scratch and ends by killing every process it started (process groups and pids).

The floor, measured first: a process that imported what a worker imports (torch, ringmaster.torch) and sits
idle, killed with SIGKILL, until the bench reaps it (median of 5). The kernel frees a dying process's memory
before it closes its files, so the victim's sockets stay open, and its peers cannot know, until then: no system
recovers faster than this on the machine it runs on.
"""

import argparse
import ctypes
import importlib.util
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/: bench_json.py
import bench_json  # noqa: E402  (the benches' --json writer)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SYSTEMS = ["ringmaster", "torchrun", "torchft", "horovod"]

# The one Horovod build attempt (see README.md): what the bench prints when horovod does not import.
HOROVOD_REASON = (
    "horovod 0.28.1, the last release, is only an sdist on PyPI and must compile against the installed "
    "torch; a build against torch 2.15.0 fails: horovod/torch/CMakeLists.txt compiles with "
    "CMAKE_CXX_STANDARD 14 and torch's headers stop with 'torch/csrc/api/include/torch/all.h:9:2: "
    "error: #error C++20 or later compatible compiler is required to use PyTorch.' (see README.md)"
)


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def loadavg():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _new_session_dying_with_us():
    """preexec_fn: own process group (so a trial can kill it whole) and SIGKILL when the bench dies."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class WorkerFile:
    """One worker's record file, read incrementally."""

    def __init__(self, path):
        self.path = path
        self.pid = None
        self.t_start = self.t_imported = None  # worker script start, torch imports done (time.time())
        self.records = []  # (time, step, rank, size, generation)
        self._offset = 0
        self._partial = b""

    def poll(self):
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            parts = line.decode().split()
            if not parts:
                continue
            if parts[0] == "#":
                self.pid = int(parts[2])
                if len(parts) >= 6:
                    self.t_start, self.t_imported = float(parts[4]), float(parts[5])
                continue
            self.records.append(
                (
                    float(parts[0]),
                    int(parts[1]),
                    int(parts[2]) if parts[2] != "None" else -1,
                    int(parts[3]),
                    int(parts[4]),
                )
            )


class Trial:
    """The processes of one trial and their record files; stop() kills everything it started."""

    def __init__(self, directory, worker_script):
        self.dir = directory
        self.records_dir = os.path.join(directory, "records")
        os.makedirs(self.records_dir, exist_ok=True)
        self.worker_script = worker_script
        self.procs = []  # (name, Popen, log path)
        self.files = {}  # path -> WorkerFile
        self.killed = set()  # pids the harness killed on purpose

    def start(self, name, argv, env):
        log_path = os.path.join(self.dir, f"{name}.log")
        out = open(log_path, "wb")
        p = subprocess.Popen(
            argv,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_new_session_dying_with_us,
            cwd=HERE,
        )
        out.close()
        self.procs.append((name, p, log_path))
        return p

    def poll(self):
        for name in os.listdir(self.records_dir):
            path = os.path.join(self.records_dir, name)
            if path not in self.files:
                self.files[path] = WorkerFile(path)
            self.files[path].poll()
        return list(self.files.values())

    def check_alive(self, names):
        for name, p, log_path in self.procs:
            if name in names and p.pid not in self.killed and p.poll() is not None:
                raise RuntimeError(f"{name} exited with status {p.returncode} (see {log_path}):\n" + tail(log_path))

    def stop(self):
        for _, p, _ in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        # Workers in sessions of their own (torchrun starts each in a new session): by pid, checking that the
        # pid is still one of this trial's workers (its command line names the worker script).
        for f in self.files.values():
            if f.pid and _is_our_worker(f.pid, self.worker_script):
                try:
                    os.kill(f.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        # Last, anything still carrying this trial's RECOVERY_BENCH_DIR (e.g. a torchrun worker killed while it
        # was still importing torch, before it wrote its pid).
        for _ in range(3):
            pids = _pids_with_env(f"RECOVERY_BENCH_DIR={self.records_dir}")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if not pids:
                break
            time.sleep(0.2)
        for _, p, _ in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def _pids_with_env(entry):
    """Processes whose environment holds exactly `entry` ("NAME=value")."""
    needle = entry.encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = b"\0" + f.read()
        except OSError:
            continue
        if b"\0" + needle in env:
            found.append(int(name))
    return found


def _is_our_worker(pid, script):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return os.path.basename(script).encode() in f.read()
    except OSError:
        return False


def tail(path, n=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


class System:
    name = ""
    worker = ""

    def __init__(self, args):
        self.args = args

    def env(self, trial):
        env = dict(os.environ)
        env.update(
            RECOVERY_BENCH_DIR=trial.records_dir,
            RECOVERY_BENCH_STEP_MS=str(self.args.step_ms),
            RECOVERY_BENCH_NUMEL=str(self.args.numel),
            PYTHONUNBUFFERED="1",
            OMP_NUM_THREADS="1",
            RECOVERY_BENCH_TORCHFT_PG_TIMEOUT_S=str(self.args.torchft_pg_timeout_s),
            RECOVERY_BENCH_TORCHFT_TIMEOUT_S=str(self.args.torchft_timeout_s),
        )
        return env

    def launch(self, trial):
        raise NotImplementedError

    def recovered(self, record, kill_generation):
        """Whether a survivor's record is an allreduce in a world without the victim."""
        gen, size = record[4], record[3]
        return gen > kill_generation and size == self.args.np - 1


class Ringmaster(System):
    name = "ringmaster"
    worker = "recovery_worker_ringmaster.py"

    def launch(self, trial):
        a = self.args
        # the trial's own start-up wait bounds the workers' first heartbeat too
        argv = [
            a.launcher,
            "--np",
            str(a.np),
            "--min",
            "2",
            "--max",
            str(a.np),
            "--startup-timeout-s",
            str(max(1, math.ceil(a.startup_timeout))),
            "--heartbeat-timeout-ms",
            str(a.ringmaster_heartbeat_ms),
            "--deadline-s",
            str(a.trial_timeout),
            "--out",
            os.path.join(trial.dir, "ringmaster-run.out"),
            "--",
            a.python,
            os.path.join(HERE, self.worker),
        ]
        trial.start("ringmaster-run", argv, self.env(trial))
        return ["ringmaster-run"]

    def launcher_pids(self, trial):
        """The worker pids ringmaster-run reports ("started wN on HOST (pid P, ...")."""
        return {
            int(m)
            for m in re.findall(
                r"started w\d+ on \S+ \(pid (\d+)", tail(os.path.join(trial.dir, "ringmaster-run.log"), 10000)
            )
        }


class Torchrun(System):
    name = "torchrun"
    worker = "recovery_worker_torchrun.py"

    def launch(self, trial):
        a = self.args
        argv = [
            a.python,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "1",
            "--nproc-per-node",
            str(a.np),
            "--max-restarts",
            str(a.torchrun_max_restarts),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(free_port()),
            os.path.join(HERE, self.worker),
        ]
        trial.start("torchrun", argv, self.env(trial))
        return ["torchrun"]

    def recovered(self, record, kill_generation):
        # torchrun restarts the whole local worker group: the next round has np ranks again.
        return record[4] > kill_generation and record[3] == self.args.np


class Torchft(System):
    name = "torchft"
    worker = "recovery_worker_torchft.py"

    def launch(self, trial):
        a = self.args
        port = free_port()
        lighthouse = os.path.join(os.path.dirname(a.python), "torchft_lighthouse")
        argv = [
            lighthouse,
            "--min_replicas",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
            "--heartbeat_timeout_ms",
            str(a.torchft_heartbeat_ms),
            "--join_timeout_ms",
            str(a.torchft_join_timeout_ms),
            "--quorum_tick_ms",
            "100",
        ]
        trial.start("lighthouse", argv, dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info")))
        names = ["lighthouse"]
        for i in range(a.np):
            env = self.env(trial)
            env.update(TORCHFT_LIGHTHOUSE=f"http://127.0.0.1:{port}", REPLICA_ID=f"replica_{i}")
            trial.start(f"replica_{i}", [a.python, os.path.join(HERE, self.worker)], env)
            names.append(f"replica_{i}")
        return names


def wait_until(trial, alive, cond, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        files = trial.poll()
        result = cond(files)
        if result:
            return result
        trial.check_alive(alive)
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def run_trial(system, index, args, base):
    np_ = args.np
    victim_rank = 1 + index % (np_ - 1)
    trial = Trial(os.path.join(base, f"{system.name}.{index}"), system.worker)
    t_start = time.time()
    try:
        alive = system.launch(trial)

        def ready(files):
            full = [f for f in files if f.pid and sum(1 for r in f.records if r[3] == np_) >= args.warmup_steps]
            if len(full) < np_:
                return None
            # Every worker's newest record is in the same full-size generation.
            newest = [f.records[-1] for f in full]
            gens = {r[4] for r in newest}
            if len(gens) != 1 or any(r[3] != np_ for r in newest):
                return None
            victims = [f for f in full if f.records[-1][2] == victim_rank]
            return victims[0] if len(victims) == 1 else None

        victim = wait_until(trial, alive, ready, args.startup_timeout, f"{np_} ranks x {args.warmup_steps} steps")
        startup = time.time() - t_start
        if isinstance(system, Ringmaster) and victim.pid not in system.launcher_pids(trial):
            raise RuntimeError(f"pid {victim.pid} is not among ringmaster-run's workers")
        kill_generation = victim.records[-1][4]
        trial.killed.add(victim.pid)
        t_kill = time.time()
        os.kill(victim.pid, signal.SIGKILL)

        def recovered(files):
            firsts = []
            for f in files:
                if f is victim:
                    continue
                for r in f.records:
                    if r[0] > t_kill and system.recovered(r, kill_generation):
                        firsts.append(r)
                        break
            return firsts or None

        wait_until(trial, alive, recovered, args.recovery_timeout, "the first allreduce after the kill")
        time.sleep(0.2)  # a survivor preempted between its time.time() and its write may have an earlier record
        firsts = recovered(trial.poll())
        first = min(firsts, key=lambda r: r[0])
        recovery = first[0] - t_kill
        detail = ""
        fresh = [f for f in trial.files.values() if f.t_start and f.t_start > t_kill]
        if fresh:  # restarted processes (torchrun): when they started and when their imports were done
            detail = (
                f"; restarted workers: script start +{min(f.t_start for f in fresh) - t_kill:.2f}.."
                f"+{max(f.t_start for f in fresh) - t_kill:.2f} s, imports done "
                f"+{min(f.t_imported for f in fresh) - t_kill:.2f}..+{max(f.t_imported for f in fresh) - t_kill:.2f} s"
            )
        log(
            f"{system.name} trial {index + 1}/{args.trials}: start->ready {startup:.2f} s, SIGKILL rank "
            f"{victim_rank} (pid {victim.pid}, generation {kill_generation}) -> first allreduce after "
            f"{recovery:.3f} s (rank {first[2]}, size {first[3]}, generation {first[4]}, step {first[1]}){detail}"
        )
        return recovery
    finally:
        trial.stop()
        if not args.keep:
            shutil.rmtree(trial.dir, ignore_errors=True)


def teardown_floor(args, count=5):
    """Milliseconds from SIGKILL to the reaped exit of an idle process that imported torch and ringmaster.torch
    (see the module docstring), `count` times."""
    code = "import torch, ringmaster.torch, sys; print('ready', flush=True); sys.stdin.read()"
    times = []
    for _ in range(count):
        p = subprocess.Popen([args.python, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"{args.python} could not import torch and ringmaster.torch")
            time.sleep(0.2)
            start = time.perf_counter()
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            times.append((time.perf_counter() - start) * 1e3)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    return times


def horovod_status(args):
    """(the line printed while running, the table's note)"""
    if importlib.util.find_spec("horovod") is None:
        return (
            f"not measured: `import horovod` fails in {args.python} ({HOROVOD_REASON})",
            "not measured: no horovod (0.28.1 is C++14, torch 2.15 needs C++20)",
        )
    return ("not measured: horovod imports, but this bench has no horovodrun runner",) * 2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    p.add_argument("--np", type=int, default=4)
    p.add_argument("--step-ms", type=float, default=10, help="sleep between two allreduces")
    p.add_argument("--numel", type=int, default=1024, help="float32 elements per allreduce")
    p.add_argument("--warmup-steps", type=int, default=30, help="allreduces every rank completes before the kill")
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=180,
        help="seconds for every rank to finish the warm-up steps (also ringmaster-run --startup-timeout-s)",
    )
    p.add_argument("--recovery-timeout", type=float, default=120)
    p.add_argument("--trial-timeout", type=int, default=400, help="ringmaster-run --deadline-s")
    p.add_argument("--python", default=sys.executable, help="the venv's python (torch, torchft, ringmaster)")
    p.add_argument("--launcher", default=os.path.join(REPO, "build", "bin", "ringmaster-run"))
    p.add_argument(
        "--ringmaster-heartbeat-ms",
        type=int,
        default=30000,
        help="ringmaster-run --heartbeat-timeout-ms (large: a death is seen by reaping the child)",
    )
    p.add_argument("--torchrun-max-restarts", type=int, default=3)
    p.add_argument(
        "--torchft-heartbeat-ms",
        type=int,
        default=5000,
        help="lighthouse --heartbeat_timeout_ms (5000 is torchft's default)",
    )
    p.add_argument(
        "--torchft-join-timeout-ms",
        type=int,
        default=60000,
        help="lighthouse --join_timeout_ms (60000 is torchft's default)",
    )
    p.add_argument(
        "--torchft-pg-timeout-s",
        type=float,
        default=5,
        help="ProcessGroupGloo(timeout=) (5: torchft's train_ddp.py example; the class's default is 60)",
    )
    p.add_argument(
        "--torchft-timeout-s",
        type=float,
        default=30,
        help="Manager(timeout=) (30: train_ddp.py; the class's default is 60)",
    )
    p.add_argument("--out", default=None, help="where the trials' files go (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep every trial's files")
    p.add_argument("--json", default=None, help="also write the results and figures here (make bench-report)")
    args = p.parse_args()
    if args.np < 2:
        p.error("--np must be at least 2")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s!r}")

    report = bench_json.Report("python-recovery")
    base = args.out or tempfile.mkdtemp(prefix="recovery_bench.")
    os.makedirs(base, exist_ok=True)
    load_start = os.getloadavg()
    log(
        f"start: {loadavg()}; {os.cpu_count()} CPUs; np {args.np}, {args.trials} trials, step {args.step_ms} ms, "
        f"{args.numel} float32 per allreduce; files in {base}"
    )

    def on_signal(signum, _frame):
        # Once: the cleanup in progress (finally: trial.stop()) must not be interrupted by a second signal.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    floor = teardown_floor(args)
    log(
        "floor: SIGKILL of an idle process that imported torch and ringmaster.torch -> reaped (its sockets close): "
        f"median {statistics.median(floor):.1f} ms ({' '.join(f'{t:.1f}' for t in floor)}); {loadavg()}"
    )
    results = {}  # name -> {"times": [...], "errors": [...], "note": str}
    classes = {"ringmaster": Ringmaster, "torchrun": Torchrun, "torchft": Torchft}
    for name in systems:
        if name == "horovod":
            line, note = horovod_status(args)
            results[name] = {"times": [], "errors": [], "note": note, "detail": line}
            log(f"horovod: {line}")
            continue
        system = classes[name](args)
        res = results[name] = {"times": [], "errors": [], "note": ""}
        log(f"{name}: {args.trials} trials; {loadavg()}")
        for i in range(args.trials):
            try:
                res["times"].append(run_trial(system, i, args, base))
            except KeyboardInterrupt:
                raise
            except Exception as e:  # noqa: BLE001  (a failed trial is reported, the bench goes on)
                res["errors"].append(str(e))
                log(f"{name} trial {i + 1}/{args.trials} FAILED: {e}")
                if len(res["errors"]) >= 3 and not res["times"]:
                    log(f"{name}: 3 failures and no success: giving up on {name}")
                    break
    load_end = os.getloadavg()

    print()
    print(f"Recovery: SIGKILL of one of {args.np} CPU ranks -> first completed allreduce on a survivor (seconds)")
    ref = statistics.median(results["ringmaster"]["times"]) if results.get("ringmaster", {}).get("times") else None
    header = f"{'system':<12} {'trials':>7} {'median':>8} {'min':>8} {'max':>8} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for name in systems:
        r = results[name]
        times = r["times"]
        if not times:
            why = r["note"] or "not measured: " + (r["errors"][0].splitlines()[0] if r["errors"] else "no trial ran")
            print(f"{name:<12} {'0':>7}  {why}")
            continue
        med = statistics.median(times)
        ratio = f"{med / ref:.1f}x" if ref else "-"
        ok = f"{len(times)}/{len(times) + len(r['errors'])}"
        print(f"{name:<12} {ok:>7} {med:8.3f} {min(times):8.3f} {max(times):8.3f} {ratio:>7}")
    print()
    for name in systems:
        if results[name]["times"]:
            print(f"{name} trials: " + " ".join(f"{t:.3f}" for t in results[name]["times"]))
        for e in results[name]["errors"]:
            print(f"{name} failed trial: {e.splitlines()[0]}")
    print(
        f"floor (the victim's own teardown, see the docstring): median {statistics.median(floor) / 1e3:.3f} s; "
        f"ringmaster above it: {ref - statistics.median(floor) / 1e3:.3f} s"
        if ref
        else f"floor (the victim's own teardown): median {statistics.median(floor) / 1e3:.3f} s"
    )
    print(
        f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}; "
        f"at end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}"
    )
    if args.json:
        # figures: ours (ringmaster) against each other system; ratio ours / theirs (< 1: ours recovers faster)
        for name in systems:
            if name == "ringmaster":
                continue
            times = results[name]["times"]
            note = "" if times else (results[name]["note"] or "not measured")
            report.figure(
                f"python.recovery.{name}",
                f"kill -9 -> next allreduce, {args.np} CPU ranks (median), vs {name}",
                "s",
                ref,
                statistics.median(times) if times else None,
                name,
                note=note,
            )
        report.figure(
            "python.recovery.floor",
            "SIGKILL -> reaped, an idle process that imported torch (the floor of any recovery)",
            "s",
            statistics.median(floor) / 1e3,
        )
        if "ringmaster" in systems and len(systems) == 1:
            report.figure(
                "python.recovery.ringmaster", f"kill -9 -> next allreduce, {args.np} CPU ranks (median)", "s", ref
            )
        report.write(args.json, args=vars(args), results=results)
    if not args.out and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if all(results[n]["times"] or n == "horovod" for n in systems) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); every process of the running trial was killed")
        sys.exit(130)
