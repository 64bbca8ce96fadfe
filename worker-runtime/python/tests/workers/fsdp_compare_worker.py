"""FSDP2 (fully_shard, per layer and at the root) on the world's 1-D mesh for a few SGD steps, over either the
"ringmaster" backend or torch's own Gloo; writes every parameter's full value as exact hex floats to
OUT/fsdp.<backend>.<rank>.txt for the test to compare bit for bit.

    python fsdp_compare_worker.py BACKEND OUT NP      (under ringmaster-run --np NP)

float32, so that the order in which a reduce-scatter adds the ranks' gradients shows in the last bits: the
ringmaster backend's asynchronous all-gathers and reduce-scatters (FSDP2 prefetches the next layer's all-gather
during the current layer's compute and reduce-scatters each layer's gradients during the rest of the backward
pass) must compute exactly what torch's Gloo computes."""

import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import ringmaster.torch as hvd
import torch_world

backend, out, expected_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rank, size = torch_world.join(backend, out, expected_size, "training")

torch.manual_seed(5)
layers = [torch.nn.Linear(24, 40), torch.nn.Linear(40, 40), torch.nn.Linear(40, 12)]
net = torch.nn.Sequential(layers[0], torch.nn.Tanh(), layers[1], torch.nn.Tanh(), layers[2])
mesh = init_device_mesh("cpu", (size,))
for layer in layers:
    fully_shard(layer, mesh=mesh)
fully_shard(net, mesh=mesh)
opt = torch.optim.SGD(net.parameters(), lr=0.05)
for step in range(6):
    g = torch.Generator().manual_seed(1000 * step + rank)
    x, y = torch.randn(8, 24, generator=g), torch.randn(8, 12, generator=g)
    opt.zero_grad()
    torch.nn.functional.mse_loss(net(x), y).backward()
    opt.step()
with open(os.path.join(out, f"fsdp.{backend}.{rank}.txt"), "w") as f:
    for name, p in sorted(net.named_parameters()):
        full = p.full_tensor().detach().reshape(-1)
        f.write(name + "\n" + "\n".join(v.hex() for v in full.double().tolist()) + "\n")
dist.destroy_process_group()
print(f"rank {rank}: FSDP2 over {backend} done", flush=True)
hvd.shutdown()
