"""The framework-neutral part of Horovod's module-level API (Horovod's horovod/common/basics.py): joining and
leaving the job, this worker's place in the world and which backends there are.

ringmaster.torch and ringmaster.tensorflow export these under their own names; a framework whose `init()` or
`shutdown()` does more (TensorFlow binds its op library to the session) wraps the ones here.
"""

import os

from ringmaster import _context
from ringmaster.process_sets import static_sets_variable


def init(process_sets=None):
    """Joins the job: waits for the first membership generation that includes this worker, builds the
    communicators and restores the newest committed state. `process_sets`: ProcessSet objects that exist in
    every generation (re-created by rule after each membership change). Idempotent."""
    if process_sets and not _context.is_initialized():
        os.environ["RINGMASTER_PROCESS_SETS"] = static_sets_variable(process_sets)
    ctx = _context.init()
    for ps in process_sets or []:
        ps._recreate(ctx)
        if ps not in ctx.process_sets:
            ctx.process_sets.append(ps)


def shutdown():
    """Leaves the job: waits for the last checkpoint and stops following the membership."""
    _context.shutdown()


def is_initialized():
    return _context.is_initialized()


def _topology(key):
    return _context.context().topology[key]


def rank():
    return _topology("rank")


def size():
    return _topology("size")


def local_rank():
    """This worker's index among the workers on its node (it can change after a membership change)."""
    return _topology("local_rank")


def local_size():
    return _topology("local_size")


def cross_rank():
    """This worker's node's index among the job's nodes."""
    return _topology("cross_rank")


def cross_size():
    return _topology("cross_size")


def is_homogeneous():
    ctx = _context.context()
    return ctx.topology["size"] == ctx.topology["local_size"] * ctx.topology["cross_size"]


def gloo_built():
    return True


def nccl_built():
    return True


def mpi_built():
    return False


def gloo_enabled():
    return _context.context().session.backend() == "gloo"


def nccl_enabled():
    return _context.context().session.backend() == "nccl"


def mpi_enabled():
    return False
