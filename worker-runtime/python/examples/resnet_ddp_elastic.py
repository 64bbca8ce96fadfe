"""A small ResNet through unmodified DistributedDataParallel on the "ringmaster" backend, elastic, on its GPUs.

    ringmaster-run --np 4 --min 2 --max 6 --out /tmp/resnet -- python resnet_ddp_elastic.py
    python resnet_ddp_elastic.py                 # a world of one, on a laptop

The data: scikit-learn's digits (1,797 8x8 images, bundled, no download) upsampled to 16x16. The model: a conv
stem, a residual block, a strided conv, a second residual block, global average pooling and a linear classifier;
the stages have `--hidden`/4 and `--hidden`/2 channels (8 and 16 by default: an epoch takes seconds on a CPU).
`--lr 0.2` passes 85% on the digits within 15 epochs. GroupNorm, not BatchNorm: its statistics are per
sample, so a rank's output does not depend on which other samples share its batch, and the weights stay those
of a one-process run whatever the world size (BatchNorm's batch statistics would differ by world size).

Each process trains on the device `hvd.device()` names (gpu_common.py): its GPU under NCCL, in float32 (a pod
with one GPU: cuda:0), else the CPU in float64. The elastic loop is digits_ddp_elastic.py's:
`ringmaster.distributed.rebuild(model)` makes each generation's process group and DDP wrapper, and each rank's
loss is its share's sum times the world size over the global batch (DDP averages over the world).
"""

import torch
import torch.nn.functional as F

import ringmaster.distributed
import ringmaster.torch as hvd
from digits_common import dataset as digits, parse_args, pause, write_weights
from gpu_common import placement, to_device


class ResidualBlock(torch.nn.Module):
    """relu(x + norm(conv(relu(norm(conv(x)))))): two 3x3 convolutions around an identity shortcut."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm1 = torch.nn.GroupNorm(4, channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm2 = torch.nn.GroupNorm(4, channels)

    def forward(self, x):
        return F.relu(x + self.norm2(self.conv2(F.relu(self.norm1(self.conv1(x))))))


def conv_norm_relu(cin, cout, stride):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        torch.nn.GroupNorm(4, cout),
        torch.nn.ReLU(),
    )


def resnet(hidden, classes=10):
    """16x16x1 -> (hidden/4 channels, 16x16) -> residual -> (hidden/2, 8x8) -> residual -> pooled -> classes."""
    half, width = hidden // 4, hidden // 2
    return torch.nn.Sequential(
        conv_norm_relu(1, half, 1),
        ResidualBlock(half),
        conv_norm_relu(half, width, 2),
        ResidualBlock(width),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(width, classes),
    )


def images():
    """The digits as 1x16x16 float64 images in [0, 1] (bilinear upsampling: the same on every machine)."""
    x, y = digits().tensors
    x = F.interpolate(x.reshape(-1, 1, 8, 8), size=(16, 16), mode="bilinear", align_corners=False)
    return torch.utils.data.TensorDataset(x, y)


args = parse_args(__doc__.splitlines()[0])
hvd.init()
device, dtype = placement(hvd)

data = images()
torch.manual_seed(args.seed)
net = resnet(args.hidden).to(device, dtype)
optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
sampler = hvd.elastic.ElasticSampler(data, batch_size=args.batch, seed=args.seed)
loader = torch.utils.data.DataLoader(data, batch_sampler=sampler)


def share_loss(model, x, y):
    """This rank's part of the global batch's mean loss, times the world size that DDP's average divides by."""
    return F.cross_entropy(model(x), y, reduction="sum") / args.batch * hvd.size()


@hvd.elastic.run
def train(state):
    ddp = ringmaster.distributed.rebuild(net, device_ids=[device.index] if device.type == "cuda" else None)
    for state.epoch in range(state.epoch, args.epochs):
        state.sampler.set_epoch(state.epoch)
        for batch in loader:
            x, y = to_device(batch, device, dtype)
            optimizer.zero_grad()
            share_loss(ddp, x, y).backward()
            pause(args)
            optimizer.step()
            state.commit()
        if hvd.rank() == 0:
            print(f"epoch {state.epoch} done on {hvd.size()} workers ({device}, {dtype})", flush=True)


def accuracy():
    """The trained model's accuracy on the whole data set (printed by rank 0 at the end)."""
    with torch.no_grad():
        x, y = to_device(data.tensors, device, dtype)
        return (net(x).argmax(1) == y).double().mean().item()


state = hvd.elastic.TorchState(net, optimizer, sampler=sampler, epoch=0)
state.register_reset_callbacks([lambda: print(f"reset: rank {hvd.rank()} of {hvd.size()}", flush=True)])
train(state)
if hvd.rank() == 0:
    print(f"accuracy on the digits: {accuracy():.3f}", flush=True)
write_weights(args, net, hvd._context.context().session.worker_id())
print(f"FINISHED {hvd._context.context().session.committed_step()}", flush=True)
hvd.shutdown()
