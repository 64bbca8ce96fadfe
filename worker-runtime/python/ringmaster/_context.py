"""The process's one worker session and what hangs off it.

Horovod's API is module-level (`hvd.init()`, `hvd.rank()`), so the session it talks to is one object per
process, kept here and nowhere else; everything else receives it from `context()`.
"""

import itertools
import threading

from ringmaster import _native

from .exceptions import NotInitializedError


class Context:
    """One `_native.Session` plus the Python-side state that must follow it across generations:
    the auto-name counters (reset per generation, so survivors and newcomers name collectives alike),
    the outstanding async handles and the user's process sets."""

    def __init__(self):
        self.session = _native.Session()
        self.session.start()
        self._lock = threading.Lock()
        self._handles = {}
        self._next_handle = itertools.count(1)
        self._names = {}
        self.process_sets = []  # ProcessSet objects the user added, re-created after every rebuild
        self.topology = self.session.topology()

    # -- naming and handles -------------------------------------------------------------------------
    def auto_name(self, op):
        """The name "<op>.noname.<n>", n counting that op's unnamed calls in this generation."""
        with self._lock:
            n = self._names.get(op, 0)
            self._names[op] = n + 1
        return f"{op}.noname.{n}"

    def add_handle(self, native, finish):
        with self._lock:
            h = next(self._next_handle)
            self._handles[h] = (native, finish)
        return h

    def take_handle(self, handle):
        with self._lock:
            entry = self._handles.pop(handle, None)
        if entry is None:
            raise ValueError(f"unknown or already synchronized handle {handle!r}")
        return entry

    def peek_handle(self, handle):
        with self._lock:
            entry = self._handles.get(handle)
        if entry is None:
            raise ValueError(f"unknown or already synchronized handle {handle!r}")
        return entry

    # -- generations --------------------------------------------------------------------------------
    def after_join(self):
        """A new generation was joined: fresh names, no handles from the old one, sets re-created."""
        with self._lock:
            self._names.clear()
            self._handles.clear()
        self.topology = self.session.topology()
        for ps in self.process_sets:
            ps._recreate(self)


_context = None
_context_lock = threading.Lock()
# The context shutdown() finished, kept until the interpreter exits or init() is called again: its
# session serves the pod's /readyz, and a worker that is done must not look NotReady to the operator
# during the seconds its interpreter takes to exit (the operator would drop it from the membership).
_finished = None


def init():
    """Joins the job (idempotent)."""
    global _context, _finished
    with _context_lock:
        if _context is None:
            _finished = None  # a new session takes its ports
            _context = Context()
        return _context


def shutdown():
    global _context, _finished
    with _context_lock:
        if _context is not None:
            _context.session.finish()
            _finished, _context = _context, None


def context():
    if _context is None:
        raise NotInitializedError("ringmaster is not initialized: call init() first")
    return _context


def is_initialized():
    return _context is not None
