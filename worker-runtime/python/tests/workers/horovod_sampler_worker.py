"""A stock Horovod elastic script, run by Ringmaster: Horovod's ElasticSampler line, a fixed local batch, the
optimizer averaging the ranks' gradients (hvd.DistributedOptimizer's default op=Average), record_batch and
a commit every --commit-every batches.

Beside what a stock script does, it keeps the sequence of steps in the elastic state (`history`: per step,
every rank's sample ids, gathered after the step), so the history is committed and rolled back with the
weights; rank 0 writes the final one to OUT/history.json. `replay(history)` trains that sequence in one
process with the same arithmetic (each step: the mean over the ranks of each rank's mean loss): the test's
reference for the weights.
"""

import argparse
import json
import os
import time

import torch

import ringmaster.torch as hvd

SEED, SAMPLER_SEED, FEATURES, CLASSES, LR = 3, 42, 8, 4, 0.1


def dataset(num_samples):
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(num_samples, FEATURES, generator=g, dtype=torch.float64)
    y = torch.randint(0, CLASSES, (num_samples,), generator=g)
    return torch.utils.data.TensorDataset(x, y)


def model():
    torch.manual_seed(SEED)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.Tanh(), torch.nn.Linear(16, CLASSES)).to(
        torch.float64
    )


def weights(net):
    return torch.cat([p.detach().reshape(-1) for _, p in sorted(net.named_parameters())])


def replay(history, num_samples):
    """One process, the same steps: returns the weights a run with this history ends with."""
    x, y = dataset(num_samples).tensors
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    for step in history:
        optimizer.zero_grad()
        losses = [torch.nn.functional.cross_entropy(net(x[ids]), y[ids]) for ids in step]
        (sum(losses) / len(step)).backward()
        optimizer.step()
    return weights(net)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--batch-size", type=int, required=True, help="the local batch")
    p.add_argument("--epochs", type=int, required=True, help="epochs 1 .. epochs, as Horovod's examples count")
    p.add_argument("--commit-every", type=int, default=1)
    p.add_argument("--step-delay-ms", type=int, default=0)
    p.add_argument("--out", default=os.environ.get("RINGMASTER_OUT", "."))
    return p.parse_args()


def main():
    args = parse_args()
    hvd.init()
    train_dataset = dataset(args.samples)
    x, _ = train_dataset.tensors
    model_ = model()
    optimizer = torch.optim.SGD(model_.parameters(), lr=LR)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model_.named_parameters())

    # -- Horovod's lines, unchanged -------------------------------------------------------------------
    train_sampler = hvd.elastic.ElasticSampler(train_dataset, shuffle=True, seed=SAMPLER_SEED)
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=args.batch_size, sampler=train_sampler)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, args.epochs + 1):
            state.train_sampler.set_epoch(state.epoch)
            for batch_idx, (data, target) in enumerate(train_loader):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model_(data), target).backward()
                if args.step_delay_ms:
                    time.sleep(args.step_delay_ms / 1000.0)
                optimizer.step()
                ids = state.train_sampler.get_indices(batch_idx, args.batch_size)
                assert torch.equal(data, x[ids]), "the loader's batch is not the sampler's get_indices"
                state.history.append(hvd.allgather_object(list(ids), name="history"))
                state.train_sampler.record_batch(batch_idx, args.batch_size)
                if batch_idx % args.commit_every == 0:
                    state.commit()
            state.batch = 0

    state = hvd.elastic.TorchState(
        model=model_, optimizer=optimizer, train_sampler=train_sampler, epoch=1, batch=0, history=[]
    )
    train(state)
    # -------------------------------------------------------------------------------------------------

    worker = hvd._context.context().session.worker_id()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"weights.{worker}.txt"), "w") as f:
        f.writelines(f"{v:.17g}\n" for v in weights(model_).tolist())
    if hvd.rank() == 0:
        with open(os.path.join(args.out, "history.json"), "w") as f:
            json.dump(state.history, f)
    print(f"FINISHED rank {hvd.rank()} of {hvd.size()}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
