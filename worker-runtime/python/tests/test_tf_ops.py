"""Every op of ringmaster.tensorflow, and its gradient, against NumPy on 1, 2 and 4 ranks, eagerly and in
tf.function, on the global set and process sets (workers/tf_ops_worker.py: one run per world size)."""

import pytest

from conftest import WORKERS


@pytest.mark.parametrize("np_", [1, 2, 4])
def test_tf_ops_match_numpy(ranks, np_):
    output, _ = ranks(np_, WORKERS / "tf_ops_worker.py", np_, env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    assert output.count("every TensorFlow op matches NumPy") == np_, output[-3000:]
