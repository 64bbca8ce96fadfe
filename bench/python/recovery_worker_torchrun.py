"""Recovery-bench worker for torchrun (torch.distributed.run --max-restarts N), Gloo on CPU.

torchrun restarts EVERY local worker after one fails, so each round is a fresh process that imports torch
and joins a new process group. The store is torchrun's (MASTER_ADDR:MASTER_PORT), prefixed per restart
round: without the prefix a round after a kill -9 fails in connectFullMesh (old round's keys)."""

import time

T0 = time.time()  # before torch is imported

from bench_log import Recorder, die_with_parent

die_with_parent()

import os
from datetime import timedelta

import torch
import torch.distributed as dist

rec = Recorder("torchrun", T0)
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
store = dist.PrefixStore(
    f"attempt_{attempt}",
    dist.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, timeout=timedelta(seconds=60)
    ),
)
dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=60))
tensor = torch.ones(rec.numel, dtype=torch.float32)
for step in range(rec.max_steps):
    out = tensor.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    if out[0].item() != world:
        raise RuntimeError(f"wrong allreduce result {out[0].item()} for size {world}")
    rec.completed(step, rank, world, attempt)
    rec.pace()
dist.destroy_process_group()
