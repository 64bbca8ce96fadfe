"""The exceptions of Ringmaster's Horovod API (Horovod keeps its own in horovod/common/exceptions.py).

A leaf shared by every framework's API: it imports nothing from the package, so the modules that raise or
catch these (the elastic loops, their state, the mesh runner, the context) import them from here without
importing torch or TensorFlow. Each is also importable from where users find it:
`ringmaster.torch.HostsUpdatedInterrupt`, `ringmaster.torch.elastic.WorkerRemoved`,
`ringmaster.tensorflow.HostsUpdatedInterrupt`. A failed collective, HorovodInternalError, is the native
module's CollectiveAborted.
"""


class HostsUpdatedInterrupt(RuntimeError):
    """Raised at a commit when the membership changed: the elastic loop rebuilds and carries on (nothing
    committed is lost). Named as in Horovod."""

    def __init__(self, skip_sync=False):
        super().__init__("the job's membership changed")
        self.skip_sync = skip_sync


class WorkerRemoved(SystemExit):
    """This worker is not in the job's newest membership: it leaves with status 0."""

    def __init__(self):
        super().__init__(0)


class NotInitializedError(ValueError):
    """Raised by every call that needs `init()` first."""
