"""Every op of ringmaster.tensorflow against NumPy on whatever world ringmaster-run gives (1, 2 or 4
ranks), eagerly and inside tf.function, on the global set and on process sets; every gradient checked
against the arithmetic done by hand (Horovod's definitions: see ringmaster/tensorflow/_gradients.py).
Rank r's inputs are a pattern of (r, shape, seed), so every rank computes what every other rank sent.
Exits 1 with the first mismatch."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.get_logger().setLevel("ERROR")  # every case traces its own tf.function: no retracing warnings
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(2)

import ringmaster.tensorflow as hvd  # noqa: E402

MODES = ("eager", "function")


def data(rank, shape, dtype, seed=0):
    rng = np.random.default_rng(1000 * seed + rank)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1, 4 if seed == 7 else 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def fail(msg):
    sys.exit(f"rank {hvd.rank()}: {msg}")


def check(name, got, want, tol=1e-5):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape}, want {want.shape}")
    exact = want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer)
    if got.dtype != want.dtype:
        fail(f"{name}: dtype {got.dtype}, want {want.dtype}")
    ok = np.array_equal(got, want) if exact else np.allclose(got, want, rtol=tol, atol=tol)
    if not ok:
        fail(f"{name}: got {got.ravel()[:6]}, want {want.ravel()[:6]}")


def run(mode, fn):
    """fn() eagerly, or as a tf.function (traced here, once; fn's default arguments stay Python values)."""
    return fn() if mode == "eager" else tf.function(lambda: fn(), autograph=False)()


def split_rows(rows, n):
    """Horovod's split: the first rows % n ranks get one row more."""
    base, extra = divmod(rows, n)
    sizes = [base + (1 if i < extra else 0) for i in range(n)]
    return sizes, [sum(sizes[:i]) for i in range(n)]


def check_collectives(members, ps, mode):
    r, n = hvd.rank(), len(members)
    me = members.index(r)
    tag = f"[{mode} set={members}]"

    # allreduce, every reduce op and dtype
    for dt in (np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8):
        ins = [data(m, (4, 3), dt, 7) for m in members]
        mine = ins[me]
        stack = np.stack(ins)
        ops = [(hvd.Sum, np.sum), (hvd.Min, np.min), (hvd.Max, np.max), (hvd.Product, np.prod)]
        if np.issubdtype(dt, np.floating):
            ops.append((hvd.Average, np.mean))
        tol = 1e-2 if dt == np.float16 else 1e-5
        for op, ref in ops:
            got = run(mode, lambda op=op, mine=mine: hvd.allreduce(tf.constant(mine), op=op, process_set=ps))
            check(f"{tag} allreduce {dt.__name__} op={op}", got, ref(stack, axis=0).astype(dt), tol)
    ins = [data(m, (5,), np.float32, 1) for m in members]
    got = run(
        mode,
        lambda: hvd.allreduce(
            tf.constant(ins[me]), op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.25, process_set=ps
        ),
    )
    check(f"{tag} allreduce pre/postscale", got, 0.5 * np.sum(ins, axis=0))
    got = run(mode, lambda: hvd.allreduce(tf.constant(ins[me]), compression=hvd.Compression.fp16, process_set=ps))
    check(f"{tag} allreduce fp16", got, np.mean(ins, axis=0), 1e-2)
    got = run(mode, lambda: hvd.allreduce(tf.constant(ins[me]), average=False, process_set=ps))
    check(f"{tag} allreduce average=False", got, np.sum(ins, axis=0))
    # tf.IndexedSlices: values and indices gathered, values averaged
    vals = [data(m, (m % 3 + 1, 2), np.float32, 2) for m in members]
    idx = [np.arange(m % 3 + 1, dtype=np.int64) + m for m in members]
    got = run(
        mode,
        lambda: hvd.allreduce(
            tf.IndexedSlices(tf.constant(vals[me]), tf.constant(idx[me]), tf.constant([8, 2], tf.int64)),
            process_set=ps,
        ),
    )
    check(f"{tag} allreduce IndexedSlices values", got.values, np.concatenate(vals) / n)
    check(f"{tag} allreduce IndexedSlices indices", got.indices, np.concatenate(idx))

    # grouped_allreduce: mixed dtypes and shapes, one call
    group = [(np.float32, (3,)), (np.int32, (2, 2)), (np.float64, ()), (np.float32, (2, 1, 2))]
    ins = [[data(m, s, dt, 3 + i) for i, (dt, s) in enumerate(group)] for m in members]
    got = run(mode, lambda: hvd.grouped_allreduce([tf.constant(x) for x in ins[me]], op=hvd.Sum, process_set=ps))
    for i, (dt, _) in enumerate(group):
        check(f"{tag} grouped_allreduce #{i}", got[i], np.sum([x[i] for x in ins], axis=0).astype(dt))
    got = run(mode, lambda: hvd.grouped_allreduce([tf.constant(ins[me][0]), tf.constant(ins[me][2])], process_set=ps))
    check(f"{tag} grouped_allreduce average", got[1], np.mean([x[2] for x in ins], axis=0))

    # allgather: uneven first dimensions, every data-movement dtype, scalars
    for dt in (np.float32, np.int64, np.int8, np.uint8, np.bool_, np.float16):
        ins = [data(m, (m + 1, 2), dt, 4) for m in members]
        got = run(mode, lambda ins=ins: hvd.allgather(tf.constant(ins[me]), process_set=ps))
        check(f"{tag} allgather {dt.__name__}", got, np.concatenate(ins))
    got = run(mode, lambda: hvd.allgather(tf.constant(float(r)), process_set=ps))
    check(f"{tag} allgather scalar", got, np.array(members, np.float32))
    ins = [data(m, (2 * (m % 2), 3), np.float32, 5) for m in members]  # some ranks send no rows
    got = run(mode, lambda: hvd.allgather(tf.constant(ins[me]), process_set=ps))
    check(f"{tag} allgather empty parts", got, np.concatenate(ins))

    # broadcast from every member
    for root in members:
        for dt in (np.float32, np.bool_, np.int8):
            ins = [data(m, (3, 2), dt, 6) for m in members]
            got = run(mode, lambda ins=ins, root=root: hvd.broadcast(tf.constant(ins[me]), root, process_set=ps))
            check(f"{tag} broadcast root={root} {dt.__name__}", got, ins[members.index(root)])

    # alltoall: equal chunks, then uneven splits (some zero) returning received splits
    ins = [data(m, (2 * n, 3), np.float32, 8) for m in members]
    got = run(mode, lambda: hvd.alltoall(tf.constant(ins[me]), process_set=ps))
    check(f"{tag} alltoall equal", got, np.concatenate([x[2 * me : 2 * me + 2] for x in ins]))
    splits = [[(m + j) % 3 for j in range(n)] for m in members]
    for dt in (np.float64, np.bool_):
        ins = [data(m, (sum(splits[i]), 2), dt, 9) for i, m in enumerate(members)]
        want = np.concatenate([ins[i][sum(splits[i][:me]) : sum(splits[i][: me + 1])] for i in range(n)])
        out, received = run(mode, lambda ins=ins: hvd.alltoall(tf.constant(ins[me]), splits=splits[me], process_set=ps))
        check(f"{tag} alltoall uneven {dt.__name__}", out, want)
        check(f"{tag} alltoall received splits", received, np.array([s[me] for s in splits], np.int32))

    # reducescatter: even and uneven first dimensions (Horovod's split), Sum and Average
    for rows in sorted({2 * n, 2 * n + 1, 3}):
        ins = [data(m, (rows, 2), np.float32, 10) for m in members]
        sizes, starts = split_rows(rows, n)
        for op, ref in ((hvd.Sum, np.sum), (hvd.Average, np.mean)):
            got = run(mode, lambda ins=ins, op=op: hvd.reducescatter(tf.constant(ins[me]), op=op, process_set=ps))
            want = ref(ins, axis=0)[starts[me] : starts[me] + sizes[me]]
            check(f"{tag} reducescatter rows={rows} op={op}", got, want)
    ins = [data(m, (2 * n, 2), np.int32, 7) for m in members]
    got = run(mode, lambda: hvd.reducescatter(tf.constant(ins[me]), op=hvd.Max, process_set=ps))
    check(f"{tag} reducescatter max int32", got, np.max(ins, axis=0)[2 * me : 2 * me + 2])

    # in-graph size and rank
    got = run(mode, lambda: tf.stack([hvd.size_op(ps.process_set_id), hvd.rank_op(process_set_id=ps.process_set_id)]))
    check(f"{tag} size_op/rank_op", got, np.array([n, me], np.int32))


def grad_of(mode, x0, forward):
    """d(forward(x))/dx at x0 (float64), by tf.GradientTape, eagerly or inside a tf.function."""
    x = tf.Variable(x0)

    def g():
        with tf.GradientTape() as tape:
            y = forward(x)
        return tape.gradient(y, x)

    return run(mode, g)


def check_gradients(members, ps, mode):
    r, n = hvd.rank(), len(members)
    me = members.index(r)
    tag = f"[{mode} set={members}] gradient"
    f64 = np.float64
    x0 = data(r, (2 * n, 3), f64, 11)
    w = [data(m, (2 * n, 3), f64, 12) for m in members]  # rank m's weights on the op's output
    wt = tf.constant(w[me])

    def loss(v, weights=wt):
        return tf.reduce_sum(weights * v)

    # allreduce: allreduce(grad, op)
    got = grad_of(mode, x0, lambda x: loss(hvd.allreduce(x, op=hvd.Sum, process_set=ps)))
    check(f"{tag} allreduce sum", got, np.sum(w, axis=0))
    got = grad_of(
        mode,
        x0,
        lambda x: loss(hvd.allreduce(x, prescale_factor=3.0, postscale_factor=0.5, process_set=ps)),
    )
    check(f"{tag} allreduce average pre/post", got, 1.5 * np.mean(w, axis=0))
    # grouped allreduce: each tensor's own reduced weights
    got = grad_of(
        mode,
        x0,
        lambda x: tf.add_n(
            [loss(t, k * wt) for k, t in enumerate(hvd.grouped_allreduce([x, 2.0 * x], op=hvd.Sum, process_set=ps))]
        ),
    )
    check(f"{tag} grouped_allreduce", got, 2.0 * np.sum(w, axis=0))
    # allgather (uneven rows): Average of the weights, this rank's rows
    rows = [m % 2 + 1 for m in members]
    xa = data(r, (rows[me], 3), f64, 13)
    wa = [data(m, (sum(rows), 3), f64, 14) for m in members]
    got = grad_of(mode, xa, lambda x: loss(hvd.allgather(x, process_set=ps), tf.constant(wa[me])))
    start = sum(rows[:me])
    check(f"{tag} allgather", got, np.mean(wa, axis=0)[start : start + rows[me]])
    # broadcast: Average on the root, zero elsewhere
    root = members[-1]
    got = grad_of(mode, x0, lambda x: loss(hvd.broadcast(x, root, process_set=ps)))
    check(f"{tag} broadcast", got, np.mean(w, axis=0) if r == root else np.zeros_like(x0))
    # reducescatter: allgather(grad x size) for Sum, allgather(grad) for Average; uneven rows too
    for rs_rows in sorted({2 * n, 2 * n + 1}):
        sizes, starts = split_rows(rs_rows, n)
        xr = data(r, (rs_rows, 3), f64, 15)
        wr = [data(m, (sizes[i], 3), f64, 16) for i, m in enumerate(members)]
        for op, scale in ((hvd.Sum, n), (hvd.Average, 1)):
            got = grad_of(
                mode,
                xr,
                lambda x, op=op, wr=wr: loss(hvd.reducescatter(x, op=op, process_set=ps), tf.constant(wr[me])),
            )
            check(f"{tag} reducescatter rows={rs_rows} op={op}", got, scale * np.concatenate(wr))
    # alltoall, equal: rows I sent to rank j get rank j's weights at the rows it received from me
    got = grad_of(mode, x0, lambda x: loss(hvd.alltoall(x, process_set=ps)))
    check(f"{tag} alltoall equal", got, np.concatenate([w[j][2 * me : 2 * me + 2] for j in range(n)]))
    # alltoall, uneven
    splits = [[(m + 2 * j) % 3 + (j == i) for j in range(n)] for i, m in enumerate(members)]
    recv = [[splits[i][j] for i in range(n)] for j in range(n)]  # recv[j][i]: rows j got from i
    xu = data(r, (sum(splits[me]), 2), f64, 17)
    wu = [data(m, (sum(recv[j]), 2), f64, 18) for j, m in enumerate(members)]
    got = grad_of(
        mode,
        xu,
        lambda x: loss(hvd.alltoall(x, splits=splits[me], process_set=ps)[0], tf.constant(wu[me])),
    )
    want = np.concatenate([wu[j][sum(recv[j][:me]) : sum(recv[j][: me + 1])] for j in range(n)])
    check(f"{tag} alltoall uneven", got, want)


def check_training(members, ps, mode):
    """DistributedGradientTape: one grouped allreduce of every gradient, averaged; groups, sparse."""
    r, n = hvd.rank(), len(members)
    me = members.index(r)
    tag = f"[{mode} set={members}] DistributedGradientTape"
    a0, b0 = data(0, (3, 2), np.float64, 20), data(0, (4,), np.float64, 21)
    emb0 = data(0, (6, 2), np.float64, 22)
    wa = [data(m, (3, 2), np.float64, 23) for m in members]
    wb = [data(m, (4,), np.float64, 24) for m in members]
    ids = [np.array([m % 6, (m + 2) % 6, m % 6]) for m in members]
    a, b, emb = tf.Variable(a0), tf.Variable(b0), tf.Variable(emb0)
    dense_emb = []
    for i in range(n):
        g = np.zeros_like(emb0)
        np.add.at(g, ids[i], 1.0)
        dense_emb.append(g)

    for kwargs in ({}, {"groups": 2}, {"groups": [[b, emb]]}, {"sparse_as_dense": True}, {"op": hvd.Sum}):

        def step(kwargs=kwargs):
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(wa[me] * a * a) + tf.reduce_sum(wb[me] * b)
                y += tf.reduce_sum(tf.gather(emb, ids[me]))
            tape = hvd.DistributedGradientTape(tape, process_set=ps, **kwargs)
            ga, gb, ge = tape.gradient(y, [a, b, emb])
            return ga, gb, tf.convert_to_tensor(ge)

        ga, gb, ge = run(mode, step)
        reduce = np.sum if kwargs.get("op") == hvd.Sum else np.mean
        check(f"{tag} {kwargs} a", ga, 2 * a0 * reduce(wa, axis=0))
        check(f"{tag} {kwargs} b", gb, reduce(wb, axis=0))
        check(f"{tag} {kwargs} embedding", ge, reduce(dense_emb, axis=0))
    # gradient_predivide_factor and fp16 compression keep the average
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(wb[me] * b)
    tape = hvd.DistributedGradientTape(tape, gradient_predivide_factor=2.0, process_set=ps)
    check(f"{tag} predivide", tape.gradient(y, [b])[0], np.mean(wb, axis=0))


def check_tf1_optimizer(members, ps):
    """TF1 DistributedOptimizer in a graph: plain, and backward_passes_per_step=2 (local aggregation)."""
    r = hvd.rank()
    me = members.index(r)
    w = [data(m, (3,), np.float64, 30) for m in members]
    v0 = data(0, (3,), np.float64, 31)
    for passes, average in ((1, False), (2, True), (2, False)):
        with tf.Graph().as_default():
            v = tf.compat.v1.Variable(v0)
            step = tf.compat.v1.train.get_or_create_global_step()
            opt = hvd.DistributedOptimizer(
                tf.compat.v1.train.GradientDescentOptimizer(1.0),
                backward_passes_per_step=passes,
                average_aggregated_gradients=average,
                process_set=ps,
            )
            train = opt.minimize(tf.reduce_sum(tf.constant(w[me]) * v), global_step=step)
            with tf.compat.v1.Session() as sess:
                sess.run([tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()])
                tag = f"[tf1 set={members}] DistributedOptimizer passes={passes} average={average}"
                for k in range(1, 3):
                    sess.run(train)
                    done = k // passes  # reductions applied so far
                    factor = 1.0 if (passes == 1 or average) else passes
                    check(f"{tag} step {k}", sess.run(v), v0 - done * factor * np.mean(w, axis=0))
                    check(f"{tag} global_step {k}", sess.run(step), np.int64(k))


def check_functions(members, ps):
    r, n = hvd.rank(), len(members)
    tag = f"[set={members}]"
    root = members[0]
    v = tf.Variable(data(r, (2, 3), np.float32, 40))
    u = tf.Variable(data(r, (4,), np.int64, 41))
    hvd.broadcast_variables([v, u], root_rank=root, process_set=ps)
    check(f"{tag} broadcast_variables", v, data(root, (2, 3), np.float32, 40))
    check(f"{tag} broadcast_variables int", u, data(root, (4,), np.int64, 41))
    obj = {"rank": r, "list": list(range(r + 2))} if r == root else None
    got = hvd.broadcast_object(obj, root_rank=root, process_set=ps)
    if got != {"rank": root, "list": list(range(root + 2))}:
        fail(f"{tag} broadcast_object: {got}")
    got = hvd.allgather_object(("rank", r, "x" * r), process_set=ps)
    if got != [("rank", m, "x" * m) for m in members]:
        fail(f"{tag} allgather_object: {got}")
    with tf.Graph().as_default():
        g = tf.compat.v1.Variable(data(r, (3,), np.float64, 42))
        hook = hvd.BroadcastGlobalVariablesHook(0) if ps is hvd.global_process_set else None
        bcast = hook and (hook.begin() or hook.bcast_op)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            if bcast is not None:
                hook.after_create_session(sess, None)
                check(f"{tag} BroadcastGlobalVariablesHook", sess.run(g), data(0, (3,), np.float64, 42))
            got = hvd.broadcast_object([r] * 3 if r == root else None, root, session=sess, process_set=ps)
            if got != [root] * 3:
                fail(f"{tag} broadcast_object in a graph: {got}")
    del n


def check_errors():
    """A failed collective's TensorFlow error is a HorovodInternalError (and stays what it was)."""
    mark = "ringmaster collective 'x' failed: peer gone"
    for mode in MODES:
        try:
            run(mode, lambda: tf.debugging.check_numerics(tf.constant(np.nan), mark))
            fail(f"{mode}: check_numerics did not fail")
        except hvd.HorovodInternalError as e:
            if not isinstance(e, tf.errors.InvalidArgumentError):
                fail(f"{mode}: converted error lost its TensorFlow class: {type(e).__mro__}")
        try:
            run(mode, lambda: tf.debugging.check_numerics(tf.constant(np.nan), "some other op"))
        except hvd.HorovodInternalError:
            fail(f"{mode}: an unrelated error became a HorovodInternalError")
        except tf.errors.InvalidArgumentError:
            pass
    try:
        hvd.allreduce(tf.constant([1.0]), op=hvd.Adasum)
        fail("Adasum was accepted")
    except NotImplementedError:
        pass


def main():
    n_expected = int(sys.argv[1])
    even, odd = hvd.ProcessSet(range(0, n_expected, 2)), hvd.ProcessSet(range(1, n_expected, 2))
    hvd.init(process_sets=[even, odd] if n_expected > 1 else None)
    r, n = hvd.rank(), hvd.size()
    if n != n_expected:
        fail(f"size {n}, want {n_expected}")
    sets = [(list(range(n)), hvd.global_process_set)]
    if n > 1:
        sets.append((even.ranks, even) if r % 2 == 0 else (odd.ranks, odd))
    if n > 2:  # a dynamic set every rank adds; ranks outside it skip its collectives
        tail = hvd.add_process_set(list(range(1, n)))
        if r in tail.ranks:
            sets.append((tail.ranks, tail))
    check_errors()
    for members, ps in sets:
        for mode in MODES:
            check_collectives(members, ps, mode)
            check_gradients(members, ps, mode)
            check_training(members, ps, mode)
        check_tf1_optimizer(members, ps)
        check_functions(members, ps)
    # Wait for every rank: one that leaves early changes the membership under the others' collectives.
    hvd.allreduce(tf.constant(0.0), name="done")
    print(f"rank {r}: every TensorFlow op matches NumPy", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
