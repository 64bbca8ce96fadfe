"""A small GPT-2-style decoder through Horovod's elastic API, run by Ringmaster, on its GPUs.

    ringmaster-run --np 4 --min 2 --max 6 --out /tmp/gpt -- python gpt_horovod_elastic.py
    python gpt_horovod_elastic.py                # a world of one, on a laptop

The data: 1,536 token sequences made from a fixed seed (no download), each an arithmetic progression modulo a
vocabulary of 16 with its own start and stride: the model learns next-token prediction, which needs attention
to the earlier tokens to infer the stride. The model: token and position embeddings, two pre-LayerNorm
transformer blocks (causal multi-head self-attention, a GELU MLP), a final LayerNorm and a linear head;
`--hidden` is the embedding width (32 by default, 2 heads). Try `--lr 0.5 --epochs 20` to watch it learn.

Each process trains on the device `hvd.device()` names (gpu_common.py): its GPU under NCCL, in float32 (a pod
with one GPU: cuda:0), else the CPU in float64. The elastic part is digits_horovod_elastic.py's: the
ElasticSampler takes the *global* batch, and the optimizer sums the shares' gradients (op=Sum, each share's
loss divided by the global batch), so the weights equal a one-process run's whatever the world size.
"""

import numpy as np
import torch
import torch.nn.functional as F

import ringmaster.torch as hvd
from digits_common import parse_args, pause, write_weights
from gpu_common import placement, to_device

VOCAB, CONTEXT, SEQUENCES, HEADS, LAYERS = 16, 16, 1536, 2, 2


class CausalSelfAttention(torch.nn.Module):
    """Multi-head self-attention in which a position sees only itself and the positions before it."""

    def __init__(self, width):
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.reshape(b, t, HEADS, c // HEADS).transpose(1, 2) for z in self.qkv(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # a fused (flash) kernel on a GPU
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(torch.nn.Module):
    """GPT-2's transformer block: x + attention(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, width):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width)
        self.ln2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width)
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCAB, width)
        self.positions = torch.nn.Embedding(CONTEXT, width)
        self.blocks = torch.nn.Sequential(*(Block(width) for _ in range(LAYERS)))
        self.ln = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, VOCAB)

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))


def sequences():
    """(inputs, next tokens), each SEQUENCES x CONTEXT int64: progressions (start + stride * i) mod VOCAB, the
    same on every machine (numpy's seeded generator, not torch's, so that the model's seed does not move it)."""
    rng = np.random.default_rng(2024)
    start = rng.integers(0, VOCAB, size=(SEQUENCES, 1))
    stride = rng.integers(1, VOCAB, size=(SEQUENCES, 1))
    tokens = torch.from_numpy((start + stride * np.arange(CONTEXT + 1)) % VOCAB)
    return torch.utils.data.TensorDataset(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())


def share_loss(model, x, y, global_batch):
    """This rank's part of the global batch's mean per-token loss (an empty share contributes zero)."""
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), reduction="sum") / (global_batch * CONTEXT)


args = parse_args(__doc__.splitlines()[0])
hvd.init()
device, dtype = placement(hvd)

data = sequences()
torch.manual_seed(args.seed)
net = Gpt(args.hidden).to(device, dtype)
optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=net.named_parameters(), op=hvd.Sum)
sampler = hvd.elastic.ElasticSampler(data, batch_size=args.batch, seed=args.seed)
loader = torch.utils.data.DataLoader(data, batch_sampler=sampler)


@hvd.elastic.run
def train(state):
    for state.epoch in range(state.epoch, args.epochs):
        state.sampler.set_epoch(state.epoch)
        for batch in loader:
            x, y = to_device(batch, device, dtype)
            optimizer.zero_grad()
            share_loss(net, x, y, args.batch).backward()
            pause(args)
            optimizer.step()
            state.commit()
        if hvd.rank() == 0:
            print(f"epoch {state.epoch} done on {hvd.size()} workers ({device}, {dtype})", flush=True)


def loss_per_token():
    """The trained model's mean loss over every sequence (log(16) = 2.77 is a uniform guess)."""
    with torch.no_grad():
        x, y = to_device(data.tensors, device, dtype)
        return share_loss(net, x, y, len(data)).item()


state = hvd.elastic.TorchState(net, optimizer, sampler=sampler, epoch=0)
state.register_reset_callbacks([lambda: print(f"reset: rank {hvd.rank()} of {hvd.size()}", flush=True)])
train(state)
if hvd.rank() == 0:
    print(f"loss per token: {loss_per_token():.3f}", flush=True)
write_weights(args, net, hvd._context.context().session.worker_id())
print(f"FINISHED {hvd._context.context().session.committed_step()}", flush=True)
hvd.shutdown()
