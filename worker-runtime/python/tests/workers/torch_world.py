"""How every comparison worker starts: it joins the ringmaster job, checks that the world is the size the
test launched, and opens torch's world over the backend under test -- "ringmaster", or torch's own "gloo"
through a FileStore in the output directory (the peer the results are compared with)."""

import os
import sys

import torch.distributed as dist

import ringmaster.distributed  # noqa: F401  (registers the backend)
import ringmaster.torch as hvd


def join(backend, out, expected_size, before):
    """Returns (rank, size). Exits, naming both sizes, when the membership changed `before` the work."""
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if size != expected_size:
        sys.exit(
            f"rank {rank}: a world of {size}, not {expected_size}: the membership changed before {before} "
            f"(a worker removed?); run the test again on a less loaded machine"
        )
    # torch's FileStore waits (up to its timeout, minutes) for a file it cannot create: the directory must exist.
    os.makedirs(out, exist_ok=True)
    if backend == "ringmaster":
        dist.init_process_group("ringmaster")
    else:
        dist.init_process_group(
            "gloo", store=dist.FileStore(os.path.join(out, "gloo.store"), size), rank=rank, world_size=size
        )
    return rank, size
