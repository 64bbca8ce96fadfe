"""DDP on the digits MLP for a few steps, over either the "ringmaster" backend (the unmodified
`init_process_group("ringmaster")` call) or torch's own Gloo; writes this rank's final weights as exact
hex floats to OUT/ddp.<backend>.<rank>.txt for the test to compare bit for bit.

    python ddp_compare_worker.py BACKEND OUT NP      (under ringmaster-run --np NP)

The buckets are tiny on purpose: after DDP's first step (one bucket: DDP does not bucket the first
iteration) the gradients go in three buckets per step, so the comparison covers several allreduces per
backward pass, which the ringmaster backend must keep apart exactly as Gloo does."""

import os
import sys

import torch
import torch.distributed as dist

import ringmaster.torch as hvd
import torch_world

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from digits_common import dataset  # noqa: E402

BUCKETS = 3  # what bucket_cap_mb=0.0001 gives this model: [fc2 weight+bias], [fc1 bias], [fc1 weight]

backend, out, expected_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rank, size = torch_world.join(backend, out, expected_size, "training")
assert dist.get_rank() == rank and dist.get_world_size() == size

torch.manual_seed(7)
net = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 10)).to(torch.float64)
# DDP closes a bucket once it holds >= the cap (104 bytes here): three buckets, see BUCKETS.
ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.0001)
opt = torch.optim.Adam(ddp.parameters(), lr=0.01)
data = dataset()
x_all, y_all = data.tensors
per_rank = 16
for step in range(12):
    begin = (step * per_rank * size + rank * per_rank) % (len(x_all) - per_rank)
    x, y = x_all[begin : begin + per_rank], y_all[begin : begin + per_rank]
    opt.zero_grad()
    torch.nn.functional.cross_entropy(ddp(x), y).backward()
    opt.step()
buckets = ddp._get_ddp_logging_data().get("num_buckets_reduced")
if buckets != BUCKETS:
    sys.exit(
        f"rank {rank}: DDP reduced {buckets} buckets per step, not {BUCKETS}: adjust bucket_cap_mb so the "
        f"comparison still covers several buckets"
    )
with open(os.path.join(out, f"ddp.{backend}.{rank}.txt"), "w") as f:
    for _, p in sorted(net.named_parameters()):
        f.write("\n".join(v.hex() for v in p.detach().reshape(-1).tolist()) + "\n")
dist.destroy_process_group()
print(f"rank {rank}: DDP over {backend} done", flush=True)
hvd.shutdown()
