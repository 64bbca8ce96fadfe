"""An elastic Keras 3 script (TensorFlow backend), run by Ringmaster: an MLP on scikit-learn's digits, float64.

    ringmaster-run --np 3 --min 2 --max 4 --out /tmp/keras -- python keras_elastic.py
    python keras_elastic.py            # a world of one, on a laptop

Horovod's Keras elastic API (`import ringmaster.keras as hvd`): model.fit under `hvd.elastic.run`, a
DistributedOptimizer and a CommitStateCallback. For exactness, as the digits examples: the global batch is
fixed (hvd.elastic.ElasticSampler cuts each step of `--batch` samples over the current world, every sample
once per epoch whatever happens to the membership), each rank's loss is its share's *sum* divided by the
global batch and the optimizer sums the shares' gradients (op=Sum), so the weights equal a one-process run's.

fit runs one epoch per call, the rest of the sampler's epoch (`steps_per_epoch=sampler.steps_left()`): the
first epoch after a membership change is a partial one, and Keras would hold every later epoch of the same
fit call to its length.
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import ringmaster.keras as hvd  # noqa: E402
from ringmaster import _context  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64, help="the global batch, fixed whatever the world size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step-delay-ms", type=int, default=0, help="sleep per step (lets chaos land mid-training)")
    p.add_argument(
        "--out",
        default=os.environ.get("RINGMASTER_OUT", "."),
        help="where weights.<worker>.txt goes (default: $RINGMASTER_OUT, else .)",
    )
    return p.parse_args()


class ShareLoss(keras.losses.Loss):
    """This rank's part of the global batch's mean cross-entropy: its share's sum / the global batch (an
    empty share contributes zero)."""

    def __init__(self, global_batch):
        super().__init__(reduction="sum", name="share_loss")
        self.global_batch = global_batch

    def call(self, y_true, y_pred):
        per_sample = keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        return per_sample / self.global_batch


class Pause(keras.callbacks.Callback):
    """Sleeps after every step (--step-delay-ms) and reports how long the first step after a reset took."""

    def __init__(self, ms):
        super().__init__()
        self.seconds = ms / 1000.0
        self.reset_at = None

    def reset(self):
        self.reset_at = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        if self.reset_at is not None:
            print(f"first step after the reset: {time.monotonic() - self.reset_at:.3f}s", flush=True)
            self.reset_at = None
        if self.seconds:
            time.sleep(self.seconds)


def write_weights(out, model, worker_id):
    """weights.<worker>.txt: every variable, flattened in path order, one %.17g per line (ringmaster-run copies
    a finisher's to weights.txt)."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"weights.{worker_id}.txt")
    with open(path + ".tmp", "w") as f:
        for v in sorted(model.weights, key=lambda v: v.path):
            for x in np.asarray(v.numpy(), dtype=np.float64).reshape(-1):
                f.write(f"{x:.17g}\n")
    os.replace(path + ".tmp", path)


def main():
    args = parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    keras.config.set_floatx("float64")
    hvd.init()

    digits = load_digits()
    x = digits.data.astype(np.float64) / 16.0
    y = digits.target.astype(np.int64)

    keras.utils.set_random_seed(args.seed)  # the same initial weights in every process (and rank 0's are synced)
    model = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(args.hidden, activation="tanh"), keras.layers.Dense(10)]
    )
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=args.lr), op=hvd.Sum)
    model.compile(optimizer=optimizer, loss=ShareLoss(args.batch))

    sampler = hvd.elastic.ElasticSampler(num_samples=len(x), batch_size=args.batch, seed=args.seed)
    dataset = sampler.dataset(
        lambda ids: (x[ids], y[ids]),
        output_signature=(tf.TensorSpec([None, 64], tf.float64), tf.TensorSpec([None], tf.int64)),
    )
    state = hvd.elastic.KerasState(model, sampler=sampler)
    pause = Pause(args.step_delay_ms)
    state.register_reset_callbacks(
        [lambda: print(f"reset: rank {hvd.rank()} of {hvd.size()}", flush=True), pause.reset]
    )
    callbacks = [hvd.elastic.CommitStateCallback(state), pause]

    @hvd.elastic.run
    def train(state):
        while state.sampler.epoch < args.epochs:
            epoch = state.sampler.epoch
            steps = state.sampler.steps_left()
            model.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, callbacks=callbacks, verbose=0)
            if hvd.rank() == 0:
                print(f"epoch {epoch} done on {hvd.size()} workers", flush=True)

    train(state)
    session = _context.context().session
    write_weights(args.out, model, session.worker_id())
    print(f"FINISHED {session.committed_step()}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
