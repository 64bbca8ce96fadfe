"""Where the model examples (resnet_ddp_elastic.py, gpt_horovod_elastic.py) put their model and batches.

A worker process owns one device for its whole life: `hvd.device()` is the GPU its NCCL communicators run on
(RINGMASTER_DEVICE when set, else its first generation's local rank, modulo the visible GPUs), or the CPU under
Gloo. The GPU trains in float32. The CPU trains in float64, so that an elastic run's weights equal a one-process
run's to 1e-9: the global batch is fixed and every rank's loss is its share's sum over that batch (digits_common),
and float64 keeps the different summation orders of different world sizes far below that tolerance.
"""

import torch


def placement(hvd):
    """(device, dtype) of this process: its GPU in float32, made the current CUDA device, or the CPU in float64."""
    device = hvd.device()
    if device.type == "cuda":
        torch.cuda.set_device(device)  # NCCL, the caching allocator and new tensors use this GPU
        return device, torch.float32
    return device, torch.float64


def to_device(batch, device, dtype):
    """A DataLoader batch (inputs, targets) on `device`, floating-point inputs in `dtype` (indices stay int64)."""
    x, y = batch
    x = x.to(device, dtype) if x.is_floating_point() else x.to(device)
    return x, y.to(device)
