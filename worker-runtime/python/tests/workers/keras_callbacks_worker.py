"""ringmaster.keras's callbacks and DistributedOptimizer on 2 ranks: each rank records what it saw in
RINGMASTER_OUT/keras.<rank>.json; tests/test_keras_callbacks.py checks it against hand arithmetic."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringmaster.keras as hvd  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
keras.config.set_floatx("float64")
hvd.init()
rank, size = hvd.rank(), hvd.size()
result = {"rank": rank, "size": size}


def mlp(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(2)])


def flat(model):
    return np.concatenate([np.ravel(v.numpy()) for v in model.weights]).tolist()


# -- BroadcastGlobalVariablesCallback: different initial weights per rank, a fit with lr 0 ---------------------
model = mlp(100 + rank)
result["initial"] = flat(model)
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.0)), loss="mse")
x = np.full((4, 3), float(rank + 1))
y = np.zeros((4, 2))
model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
result["after_broadcast"] = flat(model)

# -- MetricAverageCallback: rank-dependent logs, averaged in place ---------------------------------------------
logs = {"loss": float(rank + 1), "accuracy": 10.0 * (rank + 1)}
hvd.callbacks.MetricAverageCallback().on_epoch_end(0, logs)
result["averaged_logs"] = logs


# -- The learning-rate callbacks, driven batch by batch -------------------------------------------------------
def drive(callback, optimizer, epochs, steps):
    """(epoch, batch, lr during the batch, momentum during the batch, momentum after the batch) per batch."""
    m = mlp(0)
    m.compile(optimizer=optimizer, loss="mse")
    callback.set_model(m)
    callback.set_params({"epochs": epochs, "steps": steps, "verbose": 0})
    callback.on_train_begin()
    seen = []
    for epoch in range(epochs):
        callback.on_epoch_begin(epoch)
        for batch in range(steps):
            callback.on_train_batch_begin(batch)
            lr = float(m.optimizer.learning_rate.numpy())
            during = float(m.optimizer.momentum)
            callback.on_train_batch_end(batch)
            seen.append([epoch, batch, lr, during, float(m.optimizer.momentum)])
        epoch_logs = {}
        callback.on_epoch_end(epoch, epoch_logs)
    return seen


result["warmup"] = drive(
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.1, warmup_epochs=2, momentum_correction=False),
    keras.optimizers.SGD(learning_rate=1.0),
    epochs=3,
    steps=4,
)
result["schedule"] = drive(
    hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.1, multiplier=0.5, start_epoch=1, end_epoch=3),
    keras.optimizers.SGD(learning_rate=1.0, momentum=0.9),
    epochs=4,
    steps=2,
)

# -- DistributedOptimizer: rank-dependent gradients, eagerly and in a tf.function -----------------------------
var = keras.Variable(np.zeros(3), name="v")
opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0))
opt.apply([tf.constant([1.0, 2.0, 3.0], tf.float64) * (rank + 1)], [var])
result["average_eager"] = var.numpy().tolist()

var2 = keras.Variable(np.zeros(2), name="w")
opt2 = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), op=hvd.Sum, backward_passes_per_step=2)
opt2.build([var2])


@tf.function
def step(g):
    opt2.apply_gradients([(g, var2)])


history = []
for k in range(4):
    step(tf.constant([1.0, 10.0], tf.float64) * (rank + 1) * (k + 1))
    history.append(var2.numpy().tolist() + [int(opt2.iterations.numpy())])
result["sum_accumulated_graph"] = history

with open(os.path.join(os.environ.get("RINGMASTER_OUT", "."), f"keras.{rank}.json"), "w") as f:
    json.dump(result, f)
print(f"FINISHED rank {rank}", flush=True)
hvd.shutdown()
