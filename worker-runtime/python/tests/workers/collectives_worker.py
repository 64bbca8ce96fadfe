"""Every collective and process-set call of ringmaster.torch against a NumPy reference, on whatever world
ringmaster-run gives (1, 2 or 4 ranks). Rank r's input is a pattern of (r, shape, seed), so every rank can
compute what every other rank sent. Exits 1 with the first mismatch."""

import sys

import numpy as np
import torch

import ringmaster.torch as hvd


def data(rank, shape, dtype, seed=0):
    rng = np.random.default_rng(1000 * seed + rank)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def check(name, got, want, exact=False):
    got = got.detach().cpu().numpy() if torch.is_tensor(got) else np.asarray(got)
    if got.shape != want.shape:
        sys.exit(f"rank {hvd.rank()}: {name}: shape {got.shape}, want {want.shape}")
    ok = np.array_equal(got, want) if exact else np.allclose(got, want, rtol=1e-5, atol=1e-5)
    if not ok:
        sys.exit(f"rank {hvd.rank()}: {name}: got {got.ravel()[:6]}, want {want.ravel()[:6]}")


def check_world(members, ps):
    r, n = hvd.rank(), len(members)
    me = members.index(r)
    dtypes = [np.float32, np.float64, np.int32, np.int64]
    for dt in dtypes:
        inputs = [data(m, (5, 3), dt, 1) for m in members]
        tdt = torch.from_numpy(inputs[0]).dtype
        mine = torch.from_numpy(inputs[me].copy())
        for op, ref in [(hvd.Sum, np.sum), (hvd.Min, np.min), (hvd.Max, np.max)]:
            check(
                f"allreduce {dt.__name__} {op}",
                hvd.allreduce(mine, op=op, process_set=ps),
                ref(np.stack(inputs), axis=0).astype(dt),
                exact=np.issubdtype(dt, np.integer),
            )
        if not np.issubdtype(dt, np.integer):
            check(
                f"allreduce average {dt.__name__}",
                hvd.allreduce(mine, op=hvd.Average, process_set=ps),
                np.mean(np.stack(inputs), axis=0).astype(dt),
            )
        # in place
        t = mine.clone()
        out = hvd.allreduce_(t, op=hvd.Sum, process_set=ps)
        if out.data_ptr() != t.data_ptr():
            sys.exit("allreduce_ did not return its own tensor")
        check(
            f"allreduce_ {dt.__name__}",
            t,
            np.sum(np.stack(inputs), axis=0).astype(dt),
            exact=np.issubdtype(dt, np.integer),
        )
        # async, poll, synchronize
        h = hvd.allreduce_async(mine, op=hvd.Max, process_set=ps)
        while not hvd.poll(h):
            pass
        check(f"allreduce_async {dt.__name__}", hvd.synchronize(h), np.max(np.stack(inputs), axis=0).astype(dt))
        # broadcast from every member
        for root in members:
            want = inputs[members.index(root)]
            check(f"broadcast {dt.__name__} root {root}", hvd.broadcast(mine, root, process_set=ps), want, exact=True)
            t = mine.clone()
            hvd.broadcast_(t, root, process_set=ps)
            check(f"broadcast_ {dt.__name__} root {root}", t, want, exact=True)
        assert tdt == mine.dtype
    # allgather with a different first dimension per member
    parts = [data(m, (m + 1, 2), np.float32, 2) for m in members]
    check("allgather uneven", hvd.allgather(torch.from_numpy(parts[me].copy()), process_set=ps), np.concatenate(parts))
    # grouped allreduce, prescale/postscale, fp16 compression
    xs = [[data(m, (k + 1,), np.float64, 3 + k) for k in range(4)] for m in members]
    got = hvd.grouped_allreduce([torch.from_numpy(x.copy()) for x in xs[me]], op=hvd.Sum, process_set=ps)
    for k in range(4):
        check(f"grouped_allreduce {k}", got[k], np.sum([xs[m][k] for m in range(n)], axis=0))
    ts = [torch.from_numpy(x.copy()) for x in xs[me]]
    hvd.grouped_allreduce_(ts, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5, process_set=ps)
    for k in range(4):
        check(f"grouped_allreduce_ scaled {k}", ts[k], np.sum([xs[m][k] for m in range(n)], axis=0))
    f = [data(m, (8,), np.float32, 4) for m in members]
    got = hvd.allreduce(torch.from_numpy(f[me].copy()), op=hvd.Sum, compression=hvd.Compression.fp16, process_set=ps)
    if got.dtype != torch.float32:
        sys.exit("fp16 compression did not give the input's dtype back")
    if not np.allclose(got.numpy(), np.sum(f, axis=0), rtol=1e-2, atol=1e-2):
        sys.exit("fp16 allreduce is off")
    # reducescatter: even and uneven first dimension (Horovod's split: the first members get one more row)
    for rows in (2 * n, 2 * n + 1):
        xs = [data(m, (rows, 3), np.float64, 5) for m in members]
        total = np.sum(xs, axis=0)
        base, extra = divmod(rows, n)
        start = me * base + min(me, extra)
        size = base + (1 if me < extra else 0)
        check(
            f"reducescatter rows={rows}",
            hvd.reducescatter(torch.from_numpy(xs[me].copy()), op=hvd.Sum, process_set=ps),
            total[start : start + size],
        )
    # alltoall: even, and with uneven splits
    xs = [data(m, (2 * n, 2), np.float32, 6) for m in members]
    want = np.concatenate([xs[s][2 * me : 2 * me + 2] for s in range(n)])
    check("alltoall", hvd.alltoall(torch.from_numpy(xs[me].copy()), process_set=ps), want, exact=True)
    splits = [[(s + d) % 3 for d in range(n)] for s in range(n)]
    xs = [data(m, (sum(splits[i]), 2), np.float32, 7) for i, m in enumerate(members)]
    out, received = hvd.alltoall(torch.from_numpy(xs[me].copy()), splits=splits[me], process_set=ps)
    want = np.concatenate([xs[s][sum(splits[s][:me]) : sum(splits[s][:me]) + splits[s][me]] for s in range(n)])
    check("alltoall splits", out, want, exact=True)
    check("alltoall received splits", received, np.array([splits[s][me] for s in range(n)]), exact=True)
    hvd.barrier(process_set=ps)
    # objects
    objs = hvd.allgather_object({"rank": r, "text": "x" * r}, process_set=ps)
    if objs != [{"rank": m, "text": "x" * m} for m in members]:
        sys.exit(f"allgather_object: {objs}")
    if hvd.broadcast_object({"from": members[-1]}, root_rank=members[-1], process_set=ps) != {"from": members[-1]}:
        sys.exit("broadcast_object")


def check_refusals():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # not contiguous
    try:
        hvd.allreduce_(t)
        sys.exit("allreduce_ on a non-contiguous tensor was not refused")
    except ValueError as e:
        if "contiguous" not in str(e):
            sys.exit(f"unclear refusal: {e}")
    # out of place: made contiguous explicitly, correct result
    got = hvd.allreduce(t, op=hvd.Sum)
    check("allreduce non-contiguous", got, t.numpy() * hvd.size())
    for bad in (torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.complex64)):
        try:
            hvd.allreduce(bad)
            sys.exit(f"{bad.dtype} was not refused")
        except ValueError as e:
            if "unsupported dtype" not in str(e):
                sys.exit(f"unclear refusal: {e}")
    try:
        hvd.ops._allreduce_into(
            hvd._context.context(),
            "mixed",
            torch.ones(3),
            torch.ones(3, dtype=torch.float64),
            hvd.Sum,
            hvd.global_process_set,
        )
        sys.exit("mixed dtypes were not refused")
    except ValueError as e:
        if "mixed dtypes" not in str(e):
            sys.exit(f"unclear refusal: {e}")


def check_model_helpers():
    """broadcast_parameters, broadcast_optimizer_state and DistributedOptimizer (hooks, op, predivide,
    backward_passes_per_step) against the same arithmetic done by hand."""
    r, n = hvd.rank(), hvd.size()
    torch.manual_seed(100 + r)  # every rank starts different
    net = torch.nn.Linear(4, 3).to(torch.float64)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    torch.manual_seed(100)
    want = torch.nn.Linear(4, 3).to(torch.float64)
    for (name, p), q in zip(net.named_parameters(), want.parameters()):
        check(f"broadcast_parameters {name}", p, q.detach().numpy(), exact=True)
    # Give rank 0's optimizer some state, then broadcast it.
    net(torch.ones(1, 4, dtype=torch.float64)).sum().backward()
    if r == 0:
        opt.step()
    opt.zero_grad()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    if len(opt.state_dict()["state"]) != 2:
        sys.exit(f"rank {r}: broadcast_optimizer_state left {len(opt.state_dict()['state'])} buffers")
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)

    def inputs(rank, k):
        g = torch.Generator().manual_seed(1000 * rank + k)
        return torch.randn(5, 4, generator=g, dtype=torch.float64)

    for op, predivide, passes in [(hvd.Average, 1.0, 1), (hvd.Average, 2.0, 2), (hvd.Sum, 1.0, 1)]:
        model = torch.nn.Linear(4, 3).to(torch.float64)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        start = {k: v.clone() for k, v in model.state_dict().items()}
        dopt = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=0.5),
            named_parameters=model.named_parameters(),
            op=op,
            gradient_predivide_factor=predivide,
            backward_passes_per_step=passes,
        )
        for k in range(passes):
            model(inputs(r, k)).pow(2).sum().backward()
        dopt.step()
        # By hand: every rank's summed gradient over its passes, combined over the world.
        ref = torch.nn.Linear(4, 3).to(torch.float64)
        ref.load_state_dict(start)
        grads = [torch.zeros_like(p) for p in ref.parameters()]
        for rank in range(n):
            ref.zero_grad()
            for k in range(passes):
                ref(inputs(rank, k)).pow(2).sum().backward()
            for g, p in zip(grads, ref.parameters()):
                g += p.grad / passes
        for g in grads:
            g /= n if op == hvd.Average else 1
        for (name, p), g, s0 in zip(model.named_parameters(), grads, [start["weight"], start["bias"]]):
            check(
                f"DistributedOptimizer op={op} predivide={predivide} passes={passes} {name}", p, (s0 - 0.5 * g).numpy()
            )


def main():
    n = int(sys.argv[1])
    evens = hvd.ProcessSet(range(0, n, 2))
    hvd.init(process_sets=[evens] if n > 1 else None)
    if hvd.size() != n:
        sys.exit(f"size {hvd.size()}, want {n}")
    check_world(list(range(n)), hvd.global_process_set)
    check_refusals()
    check_model_helpers()
    if n > 1:
        if evens.included():
            check_world(evens.ranks, evens)
        dynamic = hvd.add_process_set([n - 1, 0])
        if dynamic.included():
            check_world(dynamic.ranks, dynamic)
        hvd.remove_process_set(dynamic)
        try:
            hvd.allreduce(torch.ones(1), process_set=dynamic)
            sys.exit("a removed process set was accepted")
        except ValueError:
            pass
    print(f"rank {hvd.rank()}: every collective matches NumPy", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
