"""The `"ringmaster"` process group's work objects: collectives that complete in the background.

A collective is submitted to the runtime at once and returns a `CollectiveWork`; one thread per process group
(`Completer`) waits for the group's collectives in submission order, runs what each needs afterwards (copying a
staging buffer back, for instance) and completes its torch Future. So DDP's buckets are reduced while the rest of
the backward pass runs, and FSDP2's prefetched all-gathers and reduce-scatters run beside its compute, as over
torch's Gloo backend.

Failures, and why they reach the caller this way:

* `wait()`, `result()` and a Future waited for from Python raise the collective's own exception
  (HorovodInternalError when a peer died or the membership changed), every time they are asked.
* A Future read by C++ must never hold a Python exception: `Future.set_exception` stores the exception as the
  Future's *value*, and DDP's reducer, which reads the value as tensors, crashes on it (a segfault in
  c10d::detail::parseCppCommHookResult, seen with torch 2.15). So a collective submitted during a backward pass
  completes its Future with its buffer whatever happens, and also queues an autograd final callback that waits
  for it and raises its failure. The engine runs final callbacks before the reducer's own (which is queued only
  once the last bucket is launched) and passes a Python exception raised there on, type and all, to
  `loss.backward()` — where `ringmaster.torch.elastic.run` catches it. The reducer never copies the bucket.
* Outside a backward pass the Future gets the exception (`set_exception`): only Python reads it there.

Thread-safety: a work is completed by its group's completer thread alone; every other method may be called
from any thread.
"""

import queue
import threading

import torch

from ringmaster import _context
from ringmaster.torch import ops


def _in_backward():
    """True inside an autograd backward pass (on the thread that runs it)."""
    return torch._C._current_graph_task_id() != -1


class Completer:
    """One group's background thread: completes its works in submission order (the runtime runs them in that
    order). Started with the first work; `stop()` lets it finish what is queued and end."""

    def __init__(self, name):
        self._name = name
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def submit(self, work):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"ringmaster-{self._name}", daemon=True)
                self._thread.start()
        self._queue.put(work)

    def stop(self):
        """Ends the thread once the works queued before are completed (the runtime fails those of a group it
        removed, so none waits long). Does not wait for it."""
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread = None

    def _run(self):
        while True:
            work = self._queue.get()
            if work is None:
                return
            work._complete()


class CollectiveWork(torch.distributed._Work):
    """A collective in flight: its runtime handles, what to do once they are done (`finish`) and the value
    torch gets (`result()`, the Future's value). A work without handles and without `finish` is complete
    when made (the collectives that ran synchronously)."""

    def __init__(self, group, handles=(), finish=None, result=None):
        super().__init__()
        self._group = group
        self._handles = list(handles)
        self._finish_fn = finish
        self._result = result
        self._error = None
        self._future = torch.futures.Future()
        self._done = threading.Event()
        if not self._handles and finish is None:
            self._future.set_result(result)
            self._done.set()
            return
        self._in_backward = _in_backward()
        if self._in_backward:
            torch.autograd.Variable._execution_engine.queue_callback(self._raise_failure)
        group._completer.submit(self)

    # -- the completer thread ------------------------------------------------------------------------
    def _complete(self):
        try:
            # A handle of an older generation is gone from the runtime: say so, not "unknown handle".
            self._group._check_generation()
            for h in self._handles:
                ops.synchronize(h)
            if self._finish_fn is not None:
                self._finish_fn()
        except BaseException as e:  # noqa: BLE001 -- every failure is the caller's, raised where it waits
            self._error = e
        finally:
            self._handles = []
            self._finish_fn = None
        if self._error is None or self._in_backward:
            self._future.set_result(self._result)
        else:
            self._future.set_exception(self._error)
        self._done.set()

    def _raise_failure(self):
        """The autograd final callback of a collective submitted during a backward pass."""
        self._done.wait()
        if self._error is not None:
            raise self._error

    # -- torch's Work API ----------------------------------------------------------------------------
    def is_completed(self):
        if self._done.is_set():
            return True
        # Its generation is over: the runtime fails it at once, and wait() raises.
        return _context.context().topology["generation"] != self._group._generation

    def is_success(self):
        return self._done.is_set() and self._error is None

    def exception(self):
        return self._error

    def wait(self, timeout=None):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return True

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        return self._future


class TransferWork(torch.distributed._Work):
    """A send or receive in flight. Waiting raises its failure (HorovodInternalError when a peer died)."""

    def __init__(self, group, transfer, keep, finish=None):
        super().__init__()
        self._group = group
        self._transfer = transfer
        self._keep = keep
        self._finish_fn = finish
        self._done = False
        self._error = None

    def wait(self, timeout=None):
        if self._error is not None:
            raise self._error
        if not self._done:
            try:
                self._transfer.wait()
                if self._finish_fn is not None:
                    self._finish_fn()
            except BaseException as e:  # HorovodInternalError when a peer died
                self._error = e
                raise
            self._done = True
            self._keep = None
        return True

    def is_completed(self):
        return self._done or self._error is not None

    def is_success(self):
        return self._done

    def exception(self):
        return self._error

    def result(self):
        self.wait()
        return [self._keep]

    def get_future(self):
        future = torch.futures.Future()
        self.wait()
        future.set_result(None)
        return future
