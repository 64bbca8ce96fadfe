"""ringmaster.keras on 2 ranks under ringmaster-run (tests/workers/keras_callbacks_worker.py): the broadcast
callback, metric averaging, the learning-rate warmup and schedule, and DistributedOptimizer (Average eagerly,
Sum with backward_passes_per_step=2 in a tf.function), each checked against hand arithmetic."""

import json

import numpy as np
import pytest

from conftest import WORKERS


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from conftest import run_ranks

    tmp = tmp_path_factory.mktemp("keras_callbacks")
    code, output, out = run_ranks(tmp, 2, WORKERS / "keras_callbacks_worker.py", env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    assert code == 0, output[-6000:]
    return [json.loads((out / f"keras.{r}.json").read_text()) for r in range(2)]


def test_broadcast_callback_gives_every_rank_the_roots_weights(results):
    root = results[0]["initial"]
    assert results[1]["initial"] != root, "the ranks started equal: the test proves nothing"
    for r in results:
        np.testing.assert_array_equal(r["after_broadcast"], root)


def test_metric_average_callback_averages_logs_over_ranks(results):
    for r in results:
        assert r["averaged_logs"] == {"loss": 1.5, "accuracy": 15.0}


def test_warmup_ramps_from_lr_over_size_to_lr(results):
    # Horovod's rule: at fractional epoch e = epoch + batch/steps, lr = initial/size * (e' (size-1)/warmup + 1)
    # with e' = e + 1/steps; after the warmup epochs the rate stays where it ended.
    initial, warmup, steps, size = 0.1, 2, 4, 2
    for epoch, batch, lr, _, _ in results[0]["warmup"]:
        if epoch < warmup:
            e = epoch + batch / steps + 1 / steps
            want = initial / size * (e * (size - 1) / warmup + 1)
        else:
            want = initial
        assert lr == pytest.approx(want, rel=1e-12), (epoch, batch)
    assert results[0]["warmup"][warmup * steps - 1][2] == pytest.approx(initial)


def test_schedule_is_staircase_exponential_with_momentum_correction(results):
    # multiplier 0.5 from epoch 1 to 3 (exclusive): epoch 0 keeps the optimizer's 1.0, epochs 1, 2 get
    # 0.1 * 0.5 ** (epoch - 1), epoch 3 keeps 0.05. Momentum 0.9 is scaled by new/old for the batch of a change
    # and restored after it.
    want_lr = {0: 1.0, 1: 0.1, 2: 0.05, 3: 0.05}
    want_momentum_first_batch = {0: 0.9, 1: 0.9 * 0.1 / 1.0, 2: 0.9 * 0.05 / 0.1, 3: 0.9}
    for epoch, batch, lr, during, after in results[0]["schedule"]:
        assert lr == pytest.approx(want_lr[epoch]), (epoch, batch)
        assert during == pytest.approx(want_momentum_first_batch[epoch] if batch == 0 else 0.9), (epoch, batch)
        assert after == pytest.approx(0.9)


def test_distributed_optimizer_averages_gradients(results):
    # rank r's gradient is (r + 1) * [1, 2, 3]; the average over 2 ranks is 1.5 * [1, 2, 3]; SGD with lr 1.
    for r in results:
        np.testing.assert_allclose(r["average_eager"], [-1.5, -3.0, -4.5], rtol=1e-15)


def test_backward_passes_accumulate_then_sum_in_a_tf_function(results):
    # Step k (0..3) gives rank r the gradient (k+1)(r+1)[1, 10]. Every 2nd step applies the sum over the two
    # passes and the two ranks: steps 0+1 -> (1+2)(1+2) = 9, steps 2+3 -> (3+4)(1+2) = 21; iterations count
    # every step.
    want = [[0.0, 0.0, 1], [-9.0, -90.0, 2], [-9.0, -90.0, 3], [-30.0, -300.0, 4]]
    for r in results:
        np.testing.assert_allclose(r["sum_accumulated_graph"], want, rtol=1e-15)
