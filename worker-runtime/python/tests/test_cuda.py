"""GPU only (ctest label `gpu`; `make test-gpu` on a machine with a GPU): CUDA tensors on NCCL — stream
ordering, in place, process sets — on 1 rank and on 2 ranks sharing the GPUs there are (NCCL 2.30+ allows
two ranks on one GPU with NCCL_MULTI_RANK_GPU_ENABLE=1). Fails, never skips, without a GPU."""

import pytest
import torch

from conftest import WORKERS


@pytest.mark.parametrize("np_", [1, 2])
def test_cuda_tensors_on_nccl(ranks, np_):
    assert torch.cuda.is_available(), "this test needs a CUDA GPU (it carries the ctest label gpu)"
    env = {"RINGMASTER_BACKEND": "nccl", "NCCL_MULTI_RANK_GPU_ENABLE": "1"}
    output, _ = ranks(np_, WORKERS / "cuda_worker.py", np_, env=env)
    assert output.count("CUDA collectives correct") == np_, output[-3000:]
