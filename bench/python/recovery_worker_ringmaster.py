"""Recovery-bench worker for Ringmaster (Horovod's elastic API), run by ringmaster-run.

Loops: allreduce a small tensor, record it, state.commit(). After a kill the survivors' allreduce fails or
their commit sees the new membership; hvd.elastic.run rebuilds the communicators in place (no restart)."""

import time

T0 = time.time()  # before torch is imported

from bench_log import Recorder, die_with_parent

die_with_parent()

import torch

import ringmaster.torch as hvd

rec = Recorder("ringmaster", T0)
hvd.init()
tensor = torch.ones(rec.numel, dtype=torch.float32)


@hvd.elastic.run
def loop(state):
    while state.step < rec.max_steps:
        out = hvd.allreduce(tensor, op=hvd.Sum, name="bench.allreduce")
        topo = hvd._context.context().topology
        if out[0].item() != topo["size"]:
            raise RuntimeError(f"wrong allreduce result {out[0].item()} for size {topo['size']}")
        rec.completed(state.step, topo["rank"], topo["size"], topo["generation"])
        state.step += 1
        state.commit()
        rec.pace()


state = hvd.elastic.ObjectState(step=0)
loop(state)
hvd.shutdown()
