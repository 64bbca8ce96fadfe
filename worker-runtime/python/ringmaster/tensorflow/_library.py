"""The TensorFlow op library (_tf_ops.so) and its binding to the process's worker session.

The library is compiled against the installed TensorFlow (`make build`: build/python/ringmaster/_tf_ops.so,
from worker-runtime/python/tensorflow_ops/). Its kernels submit collectives to the session through a C bridge
(native/tf_bridge.h): `attach(session)` hands the library the session's bridge once, after `init()`.

The ops (Python names as TensorFlow generates them; every one takes `process_set` (an id) and
`tensor_name` (the collective's name, matched across ranks; empty: the graph node's name)):
    ringmaster_allreduce(tensor, reduce_op)                 -> same shape
    ringmaster_grouped_allreduce(tensors, reduce_op)        -> a list, same shapes (one fused submission)
    ringmaster_allgather(tensor)                            -> first dim x set size (equal shapes on every rank)
    ringmaster_allgatherv(tensor, first_dims)               -> rows of every rank in rank order; first_dims:
                                                               int64 [set size], each rank's first dimension
    ringmaster_broadcast(tensor, root_rank)                 -> the root's tensor
    ringmaster_reducescatter(tensor, reduce_op)             -> first dim / set size (equal chunks)
    ringmaster_alltoall(tensor)                             -> same shape (equal chunks of first dim / set size)
    ringmaster_size(), ringmaster_rank()                    -> int32 scalars read when the op runs (stateful)
"""

import ctypes
import os
import threading

import ringmaster

_LIBRARY_NAME = "_tf_ops.so"
_lock = threading.Lock()
_module = None  # tf.load_op_library's module
_cdll = None  # the same shared object through ctypes, for ringmaster_tf_attach


def library_path():
    """Where _tf_ops.so is: beside the native module (the package directories, build tree first)."""
    for d in ringmaster.__path__:
        p = os.path.join(d, _LIBRARY_NAME)
        if os.path.exists(p):
            return p
    raise ImportError(
        f"ringmaster's TensorFlow op library ({_LIBRARY_NAME}) is not built: in this repository run `make build` "
        "(it compiles the library against build/venv's TensorFlow); elsewhere install the package with "
        "`pip install --no-build-isolation worker-runtime/python` in an environment that already has TensorFlow"
    )


def _load():
    global _module, _cdll
    if _module is None:
        import tensorflow as tf

        path = library_path()
        _module = tf.load_op_library(path)
        _cdll = ctypes.CDLL(path)  # the same handle: dlopen of a loaded library returns it
        _cdll.ringmaster_tf_attach.argtypes = [ctypes.c_void_p]
        _cdll.ringmaster_tf_attach.restype = ctypes.c_int
    return _module


def attach(session):
    """Binds the library's kernels to `session` (a _native.Session), or detaches them with None."""
    with _lock:
        _load()
        rc = _cdll.ringmaster_tf_attach(session.tf_bridge() if session is not None else None)
        if rc != 0:
            raise ImportError(
                f"{library_path()} was built for another version of ringmaster's native module: rebuild it (make build)"
            )


def ops():
    """The loaded op library (its functions are listed in this module's docstring)."""
    with _lock:
        return _load()
