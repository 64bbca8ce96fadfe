#!/usr/bin/env python3
"""TensorFlow step time: ringmaster.tensorflow (DistributedGradientTape and the TF1-style
DistributedOptimizer path's grouped allreduce) vs TensorFlow's own MultiWorkerMirroredStrategy, in the
same run on the same workers (CPU, loopback).

    build/venv/bin/python bench/python/tf_step_bench.py               # 2 and 4 ranks
    build/venv/bin/python bench/python/tf_step_bench.py --np 2 --steps 20

For each world size the script starts `ringmaster-run --np N` with itself as the worker (--worker). Every
worker builds MultiWorkerMirroredStrategy first (TF_CONFIG: one loopback port per rank, from --port-base),
then hvd.init(). The model is an MLP of --layers dense layers --width wide (float32) on a global batch of
--batch rows (batch/N per rank), SGD. A step is forward + backward + gradient averaging + update in one
tf.function: under the strategy `strategy.run` (its collective all-reduce), under ringmaster a
DistributedGradientTape (one grouped allreduce). Each rank times --steps steps after --warmup; the table
gives per world size the median step of the slowest rank and the ratio ringmaster/MWMS. A program that
prints figures, not a test.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def free_port_base(count):
    """A port p with p..p+count-1 free now (a best effort: they are bound by the workers moments later)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count >= 65535:
            continue
        try:
            socks = []
            for p in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise SystemExit("no run of free ports found")


# -- the worker ----------------------------------------------------------------------------------------


def worker(args):
    n = args.np
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import numpy as np
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    # The strategy must exist before any other TensorFlow op runs in the process; ringmaster's ops after.
    # The rank is known only after hvd.init(): the strategy's task index is the launcher's worker name (wK).
    worker_name = os.environ.get("RINGMASTER_WORKER_ID") or os.environ.get("RINGMASTER_POD_NAME", "w0")
    wid = int(worker_name.lstrip("w") or 0)
    cluster = [f"127.0.0.1:{args.port_base + i}" for i in range(n)]
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": cluster}, "task": {"type": "worker", "index": wid}})
    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    import ringmaster.tensorflow as hvd

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if size != n:
        sys.exit(f"a world of {size}, not {n}")
    rows = args.batch // n
    rng = np.random.default_rng(rank)
    x = tf.constant(rng.standard_normal((rows, args.width)).astype(np.float32))
    y = tf.constant(rng.standard_normal((rows, 1)).astype(np.float32))

    def make_vars():
        init = np.random.default_rng(0)
        dims = [args.width] * args.layers + [1]
        return [
            tf.Variable((init.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32))
            for i in range(len(dims) - 1)
        ]

    def forward(vs, x):
        h = x
        for w in vs[:-1]:
            h = tf.nn.relu(h @ w)
        return tf.reduce_mean(tf.square(h @ vs[-1] - y))

    lr = 0.01

    rm_vars = make_vars()

    @tf.function
    def rm_step():
        with tf.GradientTape() as tape:
            loss = forward(rm_vars, x)
        grads = hvd.DistributedGradientTape(tape).gradient(loss, rm_vars)
        for v, g in zip(rm_vars, grads):
            v.assign_sub(lr * g)
        return loss

    with strategy.scope():
        mw_vars = make_vars()

    @tf.function
    def mw_step():
        def replica():
            with tf.GradientTape() as tape:
                loss = forward(mw_vars, x)
            grads = tape.gradient(loss, mw_vars)
            ctx = tf.distribute.get_replica_context()
            grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
            for v, g in zip(mw_vars, grads):
                v.assign_sub(lr * g)
            return loss

        return strategy.run(replica)

    def measure(step):
        for _ in range(args.warmup):
            step()
        times = []
        for _ in range(args.steps):
            hvd.allreduce(tf.constant(0.0), name="bench.sync")  # start together
            t0 = time.perf_counter()
            out = step()
            float(tf.reduce_sum(strategy.experimental_local_results(out)[0]) if not tf.is_tensor(out) else out)
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    result = {"mwms": measure(mw_step), "ringmaster": measure(rm_step)}
    every = hvd.allgather_object(result, name="bench.result")
    if rank == 0:
        slowest = {k: max(r[k] for r in every) for k in result}
        with open(args.result, "w") as f:
            json.dump(slowest, f)
    hvd.allreduce(tf.constant(0.0), name="bench.done")
    hvd.shutdown()


# -- the driver ----------------------------------------------------------------------------------------


def run_world(args, n):
    out = tempfile.mkdtemp(prefix=f"tf-step-bench-np{n}-")
    result = os.path.join(out, "result.json")
    cmd = [
        os.path.join(args.bin, "ringmaster-run"),
        "--np",
        str(n),
        "--min",
        str(n),
        "--max",
        str(n),
        "--out",
        os.path.join(out, "run"),
        "--deadline-s",
        str(args.timeout_s),
        "--",
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        "--np",
        str(n),
        "--port-base",
        str(free_port_base(n)),
        "--result",
        result,
    ]
    for k in ("steps", "warmup", "batch", "width", "layers", "threads"):
        cmd += [f"--{k}", str(getattr(args, k))]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if proc.returncode != 0 or not os.path.exists(result):
        sys.exit(f"np {n}: ringmaster-run exited {proc.returncode}:\n{proc.stdout[-4000:]}")
    with open(result) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--np", type=int, nargs="*", default=[2, 4])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=256, help="global batch rows")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--layers", type=int, default=3, help="hidden dense layers")
    p.add_argument("--threads", type=int, default=1, help="TensorFlow intra-op threads per rank")
    p.add_argument("--bin", default=os.path.join(REPO, "build", "bin"))
    p.add_argument("--timeout-s", type=int, default=900)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--port-base", type=int, help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        args.np = args.np[0]
        return worker(args)
    rows = []
    for n in args.np:
        print(f"np {n}: running ...", flush=True)
        r = run_world(args, n)
        rows.append((n, r["mwms"] * 1e3, r["ringmaster"] * 1e3))
    print(
        f"\nMLP {args.layers} x {args.width}, global batch {args.batch}, float32, CPU; median step of the slowest rank"
    )
    print(f"{'ranks':>5} {'MWMS ms':>10} {'ringmaster ms':>14} {'ratio':>7}")
    for n, mw, rm in rows:
        print(f"{n:>5} {mw:>10.2f} {rm:>14.2f} {rm / mw:>7.2f}")


if __name__ == "__main__":
    main()
