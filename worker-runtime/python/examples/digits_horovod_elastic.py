"""An elastic Horovod script, run by Ringmaster: an MLP on scikit-learn's digits, float64.

    ringmaster-run --np 4 --min 2 --max 6 --out /tmp/digits -- python digits_horovod_elastic.py
    python digits_horovod_elastic.py            # a world of one, on a laptop

Only the import names Ringmaster; the rest is Horovod's elastic API. Two differences from a stock Horovod
script, both for exactness: the ElasticSampler takes the *global* batch (no padding, every sample once per
epoch whatever happens to the membership), and the optimizer sums the shares' gradients (op=Sum with each
share's loss divided by the global batch), so the weights equal a one-process run's. A stock script's own
lines, ElasticSampler(data, shuffle=True, seed=...) with DataLoader(data, batch_size=<the local batch>,
sampler=sampler), run unchanged too (every sample once per epoch, no padding), but their global batch is
the local batch times the world size, so the weights then follow the membership.
"""

import torch

import ringmaster.torch as hvd
from digits_common import dataset, model, parse_args, pause, share_loss, write_weights

args = parse_args(__doc__.splitlines()[0])
hvd.init()

data = dataset()
net = model(args)
optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=net.named_parameters(), op=hvd.Sum)
sampler = hvd.elastic.ElasticSampler(data, batch_size=args.batch, seed=args.seed)
loader = torch.utils.data.DataLoader(data, batch_sampler=sampler)


@hvd.elastic.run
def train(state):
    for state.epoch in range(state.epoch, args.epochs):
        state.sampler.set_epoch(state.epoch)
        for x, y in loader:
            optimizer.zero_grad()
            share_loss(net, x, y, args.batch).backward()
            pause(args)
            optimizer.step()
            state.commit()
        if hvd.rank() == 0:
            print(f"epoch {state.epoch} done on {hvd.size()} workers", flush=True)


state = hvd.elastic.TorchState(net, optimizer, sampler=sampler, epoch=0)
state.register_reset_callbacks([lambda: print(f"reset: rank {hvd.rank()} of {hvd.size()}", flush=True)])
train(state)
write_weights(args, net, hvd._context.context().session.worker_id())
print(f"FINISHED {hvd._context.context().session.committed_step()}", flush=True)
hvd.shutdown()
