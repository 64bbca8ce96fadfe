"""FSDP2 (fully_shard) on the dp dimension of a (dp x tp) DeviceMesh, tensor parallel on tp, float64, three
SGD steps; writes the full weights (every rank) and the mean step time to OUT/fsdp.<backend>.<rank>.pt.
Run with NP=1 and backend "none" it is the one-process reference: the same model, seed and global batches.

    python fsdp_mesh_worker.py BACKEND OUT NP [STEPS]      (under ringmaster-run --np NP)"""

import os
import sys
import time

import torch
import torch.distributed as dist

import ringmaster.torch as hvd
import torch_world

TP = 2
GLOBAL_BATCH = 8


def model():
    torch.manual_seed(11)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).to(torch.float64)


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(GLOBAL_BATCH, 16, generator=g, dtype=torch.float64), torch.randn(
        GLOBAL_BATCH, 8, generator=g, dtype=torch.float64
    )


def train(net, steps, dp_rank=0, dp_size=1):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    per = GLOBAL_BATCH // dp_size
    times = []
    for step in range(steps):
        x, y = batch(step)
        x, y = x[dp_rank * per : (dp_rank + 1) * per], y[dp_rank * per : (dp_rank + 1) * per]
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return times


backend, out, np_ = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
os.makedirs(out, exist_ok=True)
if backend == "none":
    net = model()
    train(net, steps)
    torch.save({"weights": {k: v.detach() for k, v in net.state_dict().items()}}, os.path.join(out, "fsdp.none.0.pt"))
    sys.exit(0)

from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module  # noqa: E402

rank, size = torch_world.join(backend, out, np_, "training")
mesh = init_device_mesh("cpu", (size // TP, TP), mesh_dim_names=("dp", "tp"))
net = model()
parallelize_module(net, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
for layer in (net[0], net[2]):
    fully_shard(layer, mesh=mesh["dp"])
fully_shard(net, mesh=mesh["dp"])
times = train(net, steps, mesh["dp"].get_local_rank(), mesh["dp"].size())
weights = {k: v.full_tensor().detach() for k, v in net.state_dict().items()}
torch.save(
    {"weights": weights, "step_s": sum(times[1:]) / max(1, len(times) - 1)},
    os.path.join(out, f"fsdp.{backend}.{rank}.pt"),
)
dist.destroy_process_group()
print(f"rank {rank}: FSDP2 over {backend} done", flush=True)
hvd.shutdown()
