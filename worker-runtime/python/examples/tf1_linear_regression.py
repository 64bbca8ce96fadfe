"""Horovod's TF1-style training loop on Ringmaster: linear regression in a tf.compat.v1 graph, a
MonitoredTrainingSession whose BroadcastGlobalVariablesHook gives every rank rank 0's initial weights, and
hvd.DistributedOptimizer averaging the gradients (learning rate x hvd.size(), as Horovod's examples do).

The global batch is fixed (--batch rows, float64); rank r trains on its share, rows [r*B/n, (r+1)*B/n).
Every rank writes its final weights to <--out>/weights-rank<r>.json.

    ringmaster-run --np 2 -- python tf1_linear_regression.py --steps 40 --out /tmp/lr
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringmaster.tensorflow as hvd  # noqa: E402


def global_batch(rows, features):
    """The same data on every rank: y = X w* + b* + noise."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, features))
    y = x @ np.arange(1.0, features + 1.0) + 0.5 + 0.01 * rng.standard_normal(rows)
    return x, y.reshape(-1, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64, help="global batch rows (divisible by the ranks)")
    parser.add_argument("--features", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.05, help="per-rank learning rate (x hvd.size())")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    tf.compat.v1.disable_eager_execution()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if args.batch % size:
        raise SystemExit(f"--batch {args.batch} does not divide over {size} ranks")

    x_all, y_all = global_batch(args.batch, args.features)
    share = args.batch // size
    x = tf.constant(x_all[rank * share : (rank + 1) * share])
    y = tf.constant(y_all[rank * share : (rank + 1) * share])

    # Each rank starts from its own random weights: the hook replaces them with rank 0's.
    init = tf.compat.v1.random_normal_initializer(seed=rank, dtype=tf.float64)
    w = tf.compat.v1.get_variable("w", [args.features, 1], tf.float64, initializer=init)
    b = tf.compat.v1.get_variable("b", [1], tf.float64, initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))

    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(args.lr * size))
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = opt.minimize(loss, global_step=global_step)

    hooks = [hvd.BroadcastGlobalVariablesHook(0)]
    with tf.compat.v1.train.MonitoredTrainingSession(hooks=hooks, checkpoint_dir=None) as sess:
        for _ in range(args.steps):
            _, current = sess.run([train_op, loss])
        w_final, b_final = sess.run([w, b])

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"weights-rank{rank}.json"), "w") as f:
        json.dump({"w": w_final.ravel().tolist(), "b": b_final.tolist(), "loss": float(current)}, f)
    print(f"rank {rank}: loss {current:.6f} w {np.round(w_final.ravel(), 4)} b {b_final}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
