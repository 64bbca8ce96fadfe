"""examples/tf1_linear_regression.py (TF1 graph, MonitoredTrainingSession, BroadcastGlobalVariablesHook,
DistributedOptimizer) on 2 ranks: both end with the same weights, equal (1e-9 relative) to one process
training on the whole global batch with the same effective learning rate (the example scales its --lr by
hvd.size(): 2 x 0.05 there, 1 x 0.1 here)."""

import json

import numpy as np

from conftest import EXAMPLES

ENV = {"TF_CPP_MIN_LOG_LEVEL": "2"}


def _weights(out, rank):
    with open(out / f"weights-rank{rank}.json") as f:
        d = json.load(f)
    return np.array(d["w"] + d["b"])


def test_tf1_linear_regression_two_ranks_match_one_process(ranks, tmp_path):
    script = EXAMPLES / "tf1_linear_regression.py"
    two, one = tmp_path / "two", tmp_path / "one"
    ranks(2, script, "--steps", 40, "--lr", 0.05, "--out", two, env=ENV)
    ranks(1, script, "--steps", 40, "--lr", 0.1, "--out", one, env=ENV)
    w0, w1, ref = _weights(two, 0), _weights(two, 1), _weights(one, 0)
    np.testing.assert_array_equal(w0, w1)
    np.testing.assert_allclose(w0, ref, rtol=1e-9, atol=0)
    # It trained: close to the generating weights (1, 2, 3, 4) and bias 0.5.
    np.testing.assert_allclose(ref, [1, 2, 3, 4, 0.5], atol=0.05)
