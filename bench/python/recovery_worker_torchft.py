"""Recovery-bench worker for torchft 0.2.0: one replica group of one process, Gloo on CPU.

    TORCHFT_LIGHTHOUSE=http://127.0.0.1:PORT REPLICA_ID=replica_1 python recovery_worker_torchft.py

Each replica hosts its own TCPStore (the replica group's store), runs a torchft Manager (whose Rust
ManagerServer heartbeats to the lighthouse) and loops start_quorum -> allreduce -> should_commit. A record is
written only when should_commit() says the step counts, i.e. the allreduce completed in a healthy quorum.
Timeouts as in torchft's own CPU example (train_ddp.py): ProcessGroupGloo(timeout=5 s), Manager(timeout=30 s).
The quorum is synchronous (use_async_quorum=False): with the async default a replica that is healing takes part
with zeros while num_participants() counts it, so a record's size would not say who contributed; after a failure
both modes wait for the next quorum before the allreduce (allreduce() calls wait_quorum()). After a peer dies
the allreduce errors (at once, or after the Gloo timeout on a replica whose ring peer is alive but has left the
collective), should_commit() is False, and the next quorum waits until the lighthouse stops counting the dead
replica (it must first miss its heartbeats, 5 s by default)."""

import time

T0 = time.time()  # before torch is imported

from bench_log import Recorder, die_with_parent

die_with_parent()

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import ReduceOp
from torchft import Manager, ProcessGroupGloo

rec = Recorder("torchft", T0)
replica_id = os.environ["REPLICA_ID"]
# torchft's own CPU example (train_ddp.py) uses ProcessGroupGloo(timeout=5 s) and Manager(timeout=30 s); a survivor
# whose ring peer is alive but has left the failed allreduce waits out the Gloo timeout.
pg_timeout = timedelta(seconds=float(os.environ.get("RECOVERY_BENCH_TORCHFT_PG_TIMEOUT_S", "5")))
timeout = timedelta(seconds=float(os.environ.get("RECOVERY_BENCH_TORCHFT_TIMEOUT_S", "30")))
store = dist.TCPStore(host_name="127.0.0.1", port=0, is_master=True, wait_for_workers=False)
tensor = torch.ones(rec.numel, dtype=torch.float32)
manager = Manager(
    pg=ProcessGroupGloo(timeout=pg_timeout),
    load_state_dict=lambda sd: None,
    state_dict=lambda: {"tensor": tensor},
    min_replica_size=int(os.environ.get("RECOVERY_BENCH_TORCHFT_MIN_REPLICAS", "2")),
    use_async_quorum=False,
    timeout=timeout,
    quorum_timeout=timeout,
    connect_timeout=timeout,
    rank=0,
    world_size=1,
    store_addr="127.0.0.1",
    store_port=store.port,
    lighthouse_addr=os.environ["TORCHFT_LIGHTHOUSE"],
    replica_id=replica_id,
    hostname="127.0.0.1",
)
try:
    for _ in range(rec.max_steps):
        manager.start_quorum()
        out = tensor.clone()
        manager.allreduce(out, reduce_op=ReduceOp.SUM).wait()
        if manager.should_commit():
            size = manager.num_participants()
            if out[0].item() != size:
                raise RuntimeError(f"wrong allreduce result {out[0].item()} for {size} participants")
            rec.completed(manager.current_step(), manager.participating_rank(), size, manager._quorum_id)
        rec.pace()
finally:
    manager.shutdown(wait=False)
