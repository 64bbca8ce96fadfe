"""The Horovod elastic example in NCCL generations, on the CPU emulation of NCCL and CUDA
(tests/gpu_emulation; label `gpu-emulated`): every generation's world communicator is NCCL's --
created, revoked and shrunk after each kill -- while the example's tensors are CPU tensors, so
`state.sync`, `broadcast_object`, the gradient allreduces and the metric averaging all run on the host
communicator beside NCCL. Four ranks, two kills: float64 weights equal to a one-process run's, and every
sample once per epoch. Evidence about our use of NCCL's API and the host path, not about NCCL."""

import os
import pathlib

import numpy as np
import pytest

from conftest import EXAMPLES, run_ranks
from test_elastic import ARGS, EPOCHS, assert_every_sample_once_per_epoch, weights

EMULATION = pathlib.Path(os.environ["RINGMASTER_BIN_DIR"]).parent / "lib" / "libringmaster_emulated_gpu.so"


def nccl_env():
    if not EMULATION.exists():
        pytest.fail(
            f"{EMULATION} is missing: build the tree (make build) -- it is the CPU emulation of NCCL", pytrace=False
        )
    return {
        "RINGMASTER_BACKEND": "nccl",
        "RINGMASTER_EMULATED_GPUS": "4",
        "RINGMASTER_GPU_EMULATION_LIBRARY": str(EMULATION),
        "NCCL_DEBUG": "NONE",
    }


def test_horovod_example_on_nccl_generations_with_two_kills_matches_one_process(tmp_path):
    code, output, out = run_ranks(tmp_path / "reference", 1, EXAMPLES / "digits_horovod_elastic.py", "--epochs", EPOCHS)
    assert code == 0, output[-4000:]
    reference = weights(out)

    code, output, out = run_ranks(
        tmp_path / "nccl",
        4,
        EXAMPLES / "digits_horovod_elastic.py",
        *ARGS,
        min_workers=2,
        chaos="kill@6:2,kill@14:1",
        env=nccl_env(),
    )
    assert code == 0, output[-6000:]
    # Only NCCL shrinks (Gloo builds afresh): each kill's survivors shrank the NCCL world.
    assert "generation 3 ready" in output and output.count("(shrunk)") >= 2 * 2, output[-6000:]
    np.testing.assert_allclose(weights(out), reference, rtol=1e-9, atol=1e-12)
    assert_every_sample_once_per_epoch(out)
