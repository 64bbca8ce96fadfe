"""The digits MLP sharded on a (dp x tp) DeviceMesh — FSDP2 over dp, tensor parallel over tp — elastic.

    ringmaster-run --np 4 --min 2 --max 6 --checkpoint-dir /tmp/ckpt --out /tmp/digits -- \
        python digits_fsdp_mesh_elastic.py --tp 2

The mesh is declared once, `MeshRule(tp=2)`: a world of W workers trains on dp = W // 2 replicas of a
2-wide tensor-parallel model, the W mod 2 others stand by; below 2 workers the job waits. After every
membership change `run_mesh` rebuilds the mesh over the "ringmaster" backend, calls `parallelize` on a
fresh model and loads the newest committed step from the DCP checkpoint under the job's checkpoint
directory, resharded for the new dp. The sampler cuts each fixed global batch for the dp replicas, and
FSDP averages gradients over dp, so each replica's loss is its share's sum times dp over the global batch:
the update is the global batch's mean gradient whatever the world, and the weights equal a one-process
run's (digits_horovod_elastic.py with one worker).
"""

import warnings

import torch
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import ringmaster.distributed  # noqa: F401  (registers the "ringmaster" backend)
import ringmaster.torch as hvd
from digits_common import dataset, model, parse_args, pause, share_loss, write_tensors

# FSDP2 warns that the tensor-parallel output is a view; nothing here modifies it in place.
warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")
args = parse_args(__doc__.splitlines()[0], mesh=True)
hvd.init()

data = dataset()
sampler = hvd.elastic.ElasticSampler(data, batch_size=args.batch, seed=args.seed)
loader = torch.utils.data.DataLoader(data, batch_sampler=sampler)
rule = hvd.elastic.MeshRule(tp=args.tp)


def parallelize(mesh):
    """A fresh model on this generation's mesh (its values come from the restored checkpoint)."""
    net = model(args)
    parallelize_module(net, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    for layer in (net[0], net[2]):
        fully_shard(layer, mesh=mesh["dp"])
    fully_shard(net, mesh=mesh["dp"])
    return net, torch.optim.SGD(net.parameters(), lr=args.lr)


@hvd.elastic.run_mesh(rule, parallelize)
def train(state):
    dp = state.mesh["dp"].size()
    for state.epoch in range(state.epoch, args.epochs):
        state.sampler.set_epoch(state.epoch)
        for x, y in loader:
            state.optimizer.zero_grad()
            (share_loss(state.model, x, y, args.batch) * dp).backward()
            pause(args)
            state.optimizer.step()
            state.commit()
    return {name: p.full_tensor().detach() for name, p in state.model.named_parameters()}


state = hvd.elastic.MeshState(sampler=sampler, epoch=0)
weights = train(state)
write_tensors(args, weights, hvd._context.context().session.worker_id())
print(f"FINISHED {hvd._context.context().session.committed_step()}", flush=True)
hvd.shutdown()
