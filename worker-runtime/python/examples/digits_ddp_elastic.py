"""The digits MLP through unmodified DistributedDataParallel on the "ringmaster" backend, elastic.

    ringmaster-run --np 4 --min 2 --max 6 --out /tmp/digits -- python digits_ddp_elastic.py

`ringmaster.distributed.rebuild(model)` makes this generation's process group and DDP wrapper; the loop,
the sampler and the state are ringmaster.torch.elastic's. DDP averages gradients over the world, so each
rank's loss is its share's sum times the world size over the global batch: the update is the global
batch's mean gradient whatever the world size, and the weights equal a one-process run's.
"""

import torch

import ringmaster.distributed
import ringmaster.torch as hvd
from digits_common import dataset, model, parse_args, pause, share_loss, write_weights

args = parse_args(__doc__.splitlines()[0])
hvd.init()

data = dataset()
net = model(args)
optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
sampler = hvd.elastic.ElasticSampler(data, batch_size=args.batch, seed=args.seed)
loader = torch.utils.data.DataLoader(data, batch_sampler=sampler)


@hvd.elastic.run
def train(state):
    ddp = ringmaster.distributed.rebuild(net)
    for state.epoch in range(state.epoch, args.epochs):
        state.sampler.set_epoch(state.epoch)
        for x, y in loader:
            optimizer.zero_grad()
            (share_loss(ddp, x, y, args.batch) * hvd.size()).backward()
            pause(args)
            optimizer.step()
            state.commit()


state = hvd.elastic.TorchState(net, optimizer, sampler=sampler, epoch=0)
train(state)
write_weights(args, net, hvd._context.context().session.worker_id())
print(f"FINISHED {hvd._context.context().session.committed_step()}", flush=True)
hvd.shutdown()
