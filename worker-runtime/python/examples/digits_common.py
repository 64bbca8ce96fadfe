"""What the digits examples share: the data set, the model, the arguments and the output files.

scikit-learn's bundled digits (1,797 8x8 images, 10 classes; no download), float64, a small MLP with a
seeded initialisation: every run with the same seed computes the same thing, whatever the world size,
because the global batch is fixed and each rank's loss is its share's *sum* divided by that batch."""

import argparse
import os
import time

import numpy as np
import torch
from sklearn.datasets import load_digits


def parse_args(description, mesh=False):
    p = argparse.ArgumentParser(description=description)
    if mesh:
        p.add_argument("--tp", type=int, default=2, help="tensor-parallel width of the mesh (dp = the rest)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64, help="the global batch, fixed whatever the world size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step-delay-ms", type=int, default=0, help="sleep per step (lets chaos land mid-training)")
    p.add_argument(
        "--out",
        default=os.environ.get("RINGMASTER_OUT", "."),
        help="where weights.<worker>.txt goes (default: $RINGMASTER_OUT, else .)",
    )
    return p.parse_args()


def dataset():
    digits = load_digits()
    x = torch.from_numpy(digits.data.astype(np.float64) / 16.0)
    y = torch.from_numpy(digits.target.astype(np.int64))
    return torch.utils.data.TensorDataset(x, y)


def model(args):
    torch.manual_seed(args.seed)
    return torch.nn.Sequential(torch.nn.Linear(64, args.hidden), torch.nn.Tanh(), torch.nn.Linear(args.hidden, 10)).to(
        torch.float64
    )


def share_loss(net, x, y, global_batch):
    """This rank's part of the global batch's mean loss (an empty share contributes zero)."""
    return torch.nn.functional.cross_entropy(net(x), y, reduction="sum") / global_batch


def pause(args):
    if args.step_delay_ms:
        time.sleep(args.step_delay_ms / 1000.0)


def write_weights(args, net, worker_id):
    """weights.<worker>.txt: every parameter, flattened in name order, one %.17g per line (ringmaster-run
    copies a finisher's to weights.txt)."""
    write_tensors(args, dict(net.named_parameters()), worker_id)


def write_tensors(args, named, worker_id):
    """write_weights for a {name: tensor} dict (e.g. the full tensors of a sharded model)."""
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"weights.{worker_id}.txt")
    with open(path + ".tmp", "w") as f:
        for _, p in sorted(named.items()):
            for v in p.detach().reshape(-1).tolist():
                f.write(f"{v:.17g}\n")
    os.replace(path + ".tmp", path)
