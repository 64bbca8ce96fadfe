"""CUDA tensors on NCCL (RINGMASTER_BACKEND=nccl): every op in place and out of place, ordered after
torch's current stream, and on a process set. Exits 1 with the first mismatch."""

import sys

import torch

import ringmaster.torch as hvd


def main():
    n = int(sys.argv[1])
    evens = hvd.ProcessSet(range(0, n, 2))
    hvd.init(process_sets=[evens])
    r = hvd.rank()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    dev = torch.device("cuda")
    # Stream ordering: the input is produced by a slow kernel queued on a side stream made current; the
    # collective must see its final value, not the zeros it started from.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.zeros(1 << 20, device=dev)
        for _ in range(50):
            x.add_(r + 1.0 / 50)
        got = hvd.allreduce(x, op=hvd.Sum)
    torch.cuda.synchronize()
    want = sum((k + 1.0 / 50) * 50 for k in range(n))
    if not torch.allclose(got, torch.full_like(got, want), rtol=1e-4):
        sys.exit(f"rank {r}: allreduce after the side stream: {got[:3]} want {want}")
    # In place really is in place on the device.
    t = torch.full((1000,), float(r), device=dev)
    ptr = t.data_ptr()
    hvd.allreduce_(t, op=hvd.Sum)
    if t.data_ptr() != ptr or not torch.all(t == sum(range(n))):
        sys.exit(f"rank {r}: allreduce_ on CUDA")
    b = torch.full((10,), float(r), device=dev)
    hvd.broadcast_(b, root_rank=n - 1)
    if not torch.all(b == n - 1):
        sys.exit(f"rank {r}: broadcast_ on CUDA")
    g = hvd.allgather(torch.full((r + 1, 2), float(r), device=dev))
    if g.shape[0] != n * (n + 1) // 2:
        sys.exit(f"rank {r}: allgather on CUDA: {g.shape}")
    if evens.included():
        e = hvd.allreduce(torch.ones(4, device=dev), op=hvd.Sum, process_set=evens)
        if not torch.all(e == len(evens.ranks)):
            sys.exit(f"rank {r}: process set allreduce on CUDA")
    try:
        hvd.allreduce(torch.ones(4))
        sys.exit("a CPU tensor on an NCCL generation was not refused")
    except ValueError as err:
        if "CPU tensor" not in str(err):
            sys.exit(f"unclear refusal: {err}")
    print(f"rank {r}: CUDA collectives correct", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
