"""Horovod's DistributedOptimizer: gradients are averaged (or summed) across the members of a process set
while backward runs. Each parameter's gradient allreduce starts from a hook as soon as the gradient is
accumulated, so communication overlaps the rest of the backward pass, and the runtime fuses the small
ones into few launches; `step()` waits for them all, then applies the wrapped optimizer's update."""

import torch

from ringmaster import _context

from .compression import Compression
from .ops import Average, Sum, _op, allreduce_async, allreduce_async_, synchronize
from .process_sets import global_process_set


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(
        self,
        params,
        named_parameters,
        compression,
        backward_passes_per_step,
        op,
        gradient_predivide_factor,
        process_set,
    ):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._op = _op(None, op)
        self._process_set = process_set
        self.backward_passes_per_step = int(backward_passes_per_step)
        if self.backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be >= 1")
        if gradient_predivide_factor != 1.0 and self._op != Average:
            raise ValueError("gradient_predivide_factor needs op=Average")
        self._predivide = float(gradient_predivide_factor)

        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            if any(not isinstance(n, tuple) for n in named):
                raise ValueError("named_parameters must be (name, parameter) pairs, e.g. model.named_parameters()")
            names = [n for n, _ in named]
            if len(set(names)) != len(names):
                raise ValueError("named_parameters has duplicate names")
            by_id = {id(p): n for n, p in named}
            missing = [p for p in all_params if id(p) not in by_id]
            if missing:
                raise ValueError(f"named_parameters does not name {len(missing)} of the optimizer's parameters")
            self._names = {p: by_id[id(p)] for p in all_params}
        else:
            self._names = {p: f"param.{i}" for i, p in enumerate(all_params)}
        self._handles = {}  # parameter -> handle of its gradient's allreduce in flight
        self._passes = {}  # parameter -> backward passes accumulated since the last allreduce
        self._hooks = []
        self._synchronized = False
        self._register_hooks(all_params)

    def _register_hooks(self, params):
        for p in params:
            if p.requires_grad:
                self._hooks.append(p.register_post_accumulate_grad_hook(self._on_grad))

    def _on_grad(self, p):
        if p in self._handles:
            raise RuntimeError(
                f"gradient of {self._names[p]} computed twice before step(): set "
                "backward_passes_per_step to the number of backward passes per step"
            )
        self._passes[p] = self._passes.get(p, 0) + 1
        if self._passes[p] < self.backward_passes_per_step:
            return
        self._handles[p] = self._allreduce(p)

    def _allreduce(self, p):
        name = f"grad.{self._names[p]}"
        n = len(self._process_set.ranks)
        prescale, postscale = 1.0, 1.0
        op = self._op
        if op == Average:
            # Horovod: divide by predivide before the sum and by size/predivide after it.
            op = Sum
            prescale = 1.0 / self._predivide
            postscale = self._predivide / n
        if self.backward_passes_per_step > 1:
            prescale /= self.backward_passes_per_step
        if self._compression is Compression.none:
            return (
                "inplace",
                allreduce_async_(
                    p.grad,
                    name=name,
                    op=op,
                    prescale_factor=prescale,
                    postscale_factor=postscale,
                    process_set=self._process_set,
                ),
            )
        return (
            "copy",
            allreduce_async(
                p.grad,
                name=name,
                op=op,
                prescale_factor=prescale,
                postscale_factor=postscale,
                process_set=self._process_set,
                compression=self._compression,
            ),
        )

    def synchronize(self):
        """Waits for every gradient allreduce; parameters whose hook did not fire (unused in this pass)
        are reduced now, in name order, so every member submits the same collectives."""
        missing = [p for p in self._names if p.requires_grad and p not in self._handles]
        for p in sorted(missing, key=lambda q: self._names[q]):
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            self._handles[p] = self._allreduce(p)
        try:
            for p, (kind, handle) in self._handles.items():
                result = synchronize(handle)
                if kind == "copy":
                    p.grad.copy_(result)
        finally:
            self._handles.clear()
            self._passes.clear()
        self._synchronized = True

    def skip_synchronize(self):
        """Horovod's context manager for calling synchronize() yourself before step()."""
        optimizer = self

        class _Skip:
            def __enter__(self):
                optimizer._skip = True

            def __exit__(self, *exc):
                optimizer._skip = False

        return _Skip()

    def step(self, closure=None):
        if not getattr(self, "_skip", False) and not self._synchronized:
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def load_state_dict(self, state_dict):
        # A restore (after a membership change) abandons the interrupted step's allreduces: their
        # handles belonged to the previous generation.
        self._handles.clear()
        self._passes.clear()
        self._synchronized = False
        return super(self.__class__, self).load_state_dict(state_dict)

    def zero_grad(self, set_to_none=True):
        if self._handles:
            raise RuntimeError(
                "zero_grad() while gradient allreduces are in flight: call step() or synchronize() first"
            )
        return super(self.__class__, self).zero_grad(set_to_none=set_to_none)


def DistributedOptimizer(
    optimizer,
    named_parameters=None,
    compression=Compression.none,
    backward_passes_per_step=1,
    op=Average,
    gradient_predivide_factor=1.0,
    process_set=global_process_set,
):
    """Wraps `optimizer` (an instance) so gradients are reduced across `process_set` before each step.
    The result is an instance of a subclass of the optimizer's own class, as in Horovod."""
    _context.context()  # init() first
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
    wrapped = cls(
        optimizer.param_groups,
        named_parameters,
        compression,
        backward_passes_per_step,
        op,
        gradient_predivide_factor,
        process_set,
    )
    wrapped.load_state_dict(optimizer.state_dict())
    return wrapped
