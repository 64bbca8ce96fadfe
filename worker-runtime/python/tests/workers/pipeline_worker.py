"""A 2-stage pipeline (torch.distributed.pipelining, ScheduleGPipe, 4 microbatches), float64, three SGD steps;
writes each stage's weights to OUT/pipe.<backend>.<rank>.pt. With backend "none" (one process) it trains the
whole model on the same global batches: the reference.

    python pipeline_worker.py BACKEND OUT      (under ringmaster-run --np 2)"""

import os
import sys

import torch
import torch.distributed as dist

import ringmaster.torch as hvd
import torch_world

BATCH, MICROBATCHES, STEPS = 8, 4, 3


def model():
    torch.manual_seed(5)
    return torch.nn.Sequential(
        torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 24), torch.nn.Tanh(), torch.nn.Linear(24, 6)
    ).to(torch.float64)


def batch(step):
    g = torch.Generator().manual_seed(200 + step)
    return torch.randn(BATCH, 12, generator=g, dtype=torch.float64), torch.randn(
        BATCH, 6, generator=g, dtype=torch.float64
    )


backend, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
net = model()
if backend == "none":
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    torch.save({f"{k}": v.detach() for k, v in net.state_dict().items()}, os.path.join(out, "pipe.none.0.pt"))
    sys.exit(0)

from torch.distributed.pipelining import PipelineStage, ScheduleGPipe  # noqa: E402

rank, size = torch_world.join(backend, out, 2, "training")
first = net[:3] if rank == 0 else net[3:]
stage = PipelineStage(first, rank, 2, torch.device("cpu"))
schedule = ScheduleGPipe(stage, MICROBATCHES, loss_fn=torch.nn.functional.mse_loss)
opt = torch.optim.SGD(first.parameters(), lr=0.1)
for step in range(STEPS):
    x, y = batch(step)
    opt.zero_grad()
    if rank == 0:
        schedule.step(x)
    else:
        schedule.step(target=y)
    opt.step()
# a slice of a Sequential keeps the whole model's names ("4.weight")
weights = {k: v.detach() for k, v in first.state_dict().items()}
torch.save(weights, os.path.join(out, f"pipe.{backend}.{rank}.pt"))
dist.destroy_process_group()
print(f"rank {rank}: pipeline over {backend} done", flush=True)
hvd.shutdown()
