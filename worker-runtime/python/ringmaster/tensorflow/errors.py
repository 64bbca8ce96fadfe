"""HorovodInternalError for TensorFlow: one class that catches a failed collective however it surfaced.

A collective fails (a peer died, the membership changed, a timeout) in one of two ways: a call into the
runtime from Python raises `ringmaster._native.CollectiveAborted`, and an op of the TensorFlow library
fails its kernel with the runtime's status, which TensorFlow raises as a `tf.errors.OpError` subclass
(AbortedError, UnavailableError, ...) whose message contains "ringmaster collective '" — eagerly from the
op, or later from a tf.function call, `Session.run` or `model.fit`, far from any code of ours.

`HorovodInternalError` is `CollectiveAborted`, as in ringmaster.torch. So that `except HorovodInternalError`
also catches the TensorFlow errors wherever they are raised, `install()` hooks the construction of
`tf.errors.OpError`: TensorFlow builds every such error by calling its class (from C++ as from Python), and
when the message is one of our collectives' the hook returns an instance of a subclass of both the
TensorFlow class and CollectiveAborted (`AbortedError` -> `RingmasterAbortedError`). The error stays
everything it was (`except tf.errors.AbortedError` and `e.error_code` keep working); only its class gains
a base. Errors of other ops are untouched.
"""

import threading

from tensorflow.python.framework import errors_impl

from ringmaster import _native

HorovodInternalError = _native.CollectiveAborted

# What the op library puts at the start of every failed collective's message (TensorFlow may prepend
# context, "Graph execution error: ...", so it is searched for, not matched at the start).
MESSAGE_MARK = "ringmaster collective '"

_lock = threading.Lock()
_converted = {}  # TensorFlow error class -> its subclass that is also a HorovodInternalError
_installed = False


def _converted_class(cls):
    with _lock:
        sub = _converted.get(cls)
        if sub is None:
            sub = type(
                "Ringmaster" + cls.__name__,
                (cls, HorovodInternalError),
                {
                    "__module__": __name__,
                    "__doc__": f"A failed ringmaster collective, raised as {cls.__name__}.",
                    # Pickled as its TensorFlow class (which the hook converts again when unpickled).
                    "__reduce__": lambda self: (cls, cls.__reduce__(self)[1]),
                },
            )
            _converted[cls] = sub
    return sub


def _message_of(args, kwargs):
    message = kwargs.get("message", args[2] if len(args) > 2 else None)
    return message if isinstance(message, str) else ""


def _new(cls, *args, **kwargs):
    if not issubclass(cls, HorovodInternalError) and MESSAGE_MARK in _message_of(args, kwargs):
        cls = _converted_class(cls)
    # OpError's own __new__ is BaseException's, which takes (and ignores) the constructor's arguments.
    return BaseException.__new__(cls, *args, **kwargs)


def install():
    """Makes failed collectives' TensorFlow errors HorovodInternalErrors (idempotent; done at import)."""
    global _installed
    with _lock:
        if not _installed:
            errors_impl.OpError.__new__ = staticmethod(_new)
            _installed = True


def is_collective_error(error):
    """True for an exception that reports a failed collective."""
    return isinstance(error, HorovodInternalError)
