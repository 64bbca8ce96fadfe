"""Elastic training, Horovod's API on Ringmaster's in-place rebuild.

    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            state.sampler.set_epoch(state.epoch)
            for batch in loader:
                ...; optimizer.step(); state.commit()

    train(state)

When a worker dies, one is added or the job is scaled, the collective in flight fails (HorovodInternalError)
or the next commit sees the new generation (HostsUpdatedInterrupt); `run` then rebuilds the communicators
in place (no process restarts), restores the newest committed state on every worker, calls the state's
reset callbacks and calls the function again, which resumes from the restored epoch and sampler cursor. A
worker that is no longer a member exits with status 0 (WorkerRemoved). A suspended job (the operator's empty
generation) stops every worker at one commit; rank 0 saves that step as the final checkpoint before it exits
(RINGMASTER_CHECKPOINT_DIR), and the job admitted again resumes there. The membership comes from the
launcher or the operator (the same contract as the C++ runtime).

Sharded training on a DeviceMesh (FSDP2, tensor parallel): `run_mesh(MeshRule(tp=...), parallelize)` with a
`MeshState` rebuilds the mesh from the rule in every generation and restores through DCP (mesh.py).
"""

from ringmaster import _context, _elastic
from ringmaster.exceptions import HostsUpdatedInterrupt, WorkerRemoved  # noqa: F401  (hvd.elastic.HostsUpdatedInterrupt)

from ..ops import HorovodInternalError
from .mesh import MeshRule, MeshState, run_mesh
from .sampler import ElasticSampler
from .state import ObjectState, State, TorchState


def _is_collective_failure(exc):
    return isinstance(exc, HorovodInternalError)


def run(func):
    """Decorates `func(state, ...)`: runs it, and after every membership change rebuilds, restores `state`
    and runs it again, until it returns (ringmaster/_elastic.py's loop; a failed collective is reported with
    its whole message)."""
    return _elastic.run_fn(func, _context.init, _is_collective_failure, describe=str)


__all__ = [
    "run",
    "State",
    "ObjectState",
    "TorchState",
    "ElasticSampler",
    "WorkerRemoved",
    "MeshRule",
    "MeshState",
    "run_mesh",
]
