"""A peer dies while asynchronous collectives of the "ringmaster" backend are in flight: the survivor must see
HorovodInternalError where it waits — and never hang or crash.

    python async_failure_worker.py MODE OUT      (under ringmaster-run --np 2 --min 1)

Both ranks build DDP and take one good step. Then rank 1 waits for rank 0's signal file and exits, never joining
rank 0's next collectives, which therefore fail in flight once its connections close:
- MODE "wait": rank 0 submits `all_reduce(async_op=True)`, signals, and records what `work.wait()` (twice) and
  `work.get_future().wait()` raise.
- MODE "backward": rank 0 runs a DDP backward pass and signals from a gradient hook of the first layer's weight
  (which fires after DDP submitted the later layers' buckets); it records what `loss.backward()` raises (the
  failure comes from an autograd final callback, _pg_work.py).
Writes OUT/async.<what>.txt with the outcome for the test to read."""

import os
import sys
import time

import torch
import torch.distributed as dist

import ringmaster.distributed  # noqa: F401  (registers the backend)
import ringmaster.torch as hvd
from ringmaster.torch.ops import HorovodInternalError

mode, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
signal = os.path.join(out, "rank0-submitted")
hvd.init()
rank = hvd.rank()
dist.init_process_group("ringmaster")
torch.manual_seed(3)
net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=0.001)
ddp(torch.randn(4, 64)).sum().backward()  # both ranks: one good step (DDP builds its buckets)
dist.barrier()
if rank == 1:
    deadline = time.monotonic() + 60
    while not os.path.exists(signal) and time.monotonic() < deadline:
        time.sleep(0.01)
    os._exit(0)  # a worker that dies, not one that says goodbye


def submitted():
    open(signal, "w").close()


def record(what, fn):
    try:
        fn()
        outcome = "no error"
    except HorovodInternalError:
        outcome = "HorovodInternalError"
    except BaseException as e:  # noqa: BLE001 -- the test names what came instead
        outcome = f"{type(e).__name__}: {e}"
    with open(os.path.join(out, f"async.{what}.txt"), "w") as f:
        f.write(outcome)
    print(f"rank 0: {what}: {outcome}", flush=True)


if mode == "wait":
    work = dist.all_reduce(torch.ones(1 << 16), async_op=True)
    submitted()
    record("wait", work.wait)
    record("wait_again", work.wait)
    record("future", lambda: work.get_future().wait())
else:
    net[0].weight.register_hook(lambda grad: submitted())
    record("backward", lambda: ddp(torch.randn(4, 64)).sum().backward())
print("rank 0: done", flush=True)
os._exit(0)  # the world lost a rank; a clean shutdown is not what is tested here
