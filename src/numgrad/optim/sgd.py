"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

import numpy as np

from .. import _lazy, dispatch
from ..autograd.profiler import record_function
from ..creation import zeros_like
from ..ops import registry
from .optimizer import Optimizer, _call_closure, _no_grad_step, _unsupported


class SGD(Optimizer):
    """PyTorch's SGD, update for update (its single-tensor path)::

        g = grad (+ weight_decay * p)
        b = g on the first step, else momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b        (when momentum != 0)
        p = p - lr * g

    (with ``maximize``, ``grad`` is negated). Parameters whose ``grad`` is None are skipped.

    Eagerly on the CPU, the update of the float32 and float64 parameters is one fused kernel
    (``kernels/cpu/optim.py``) over all of them, with the same operations in the same order as
    the op-by-op update below (the same values, bit for bit, and the same version counts); that
    runs where a parameter is elsewhere, the step is traced (``numgrad.compile``) or a dispatch
    mode or forward AD is active.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _unsupported(differentiable=differentiable, fused=fused)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self, closure=None):
        """Performs one optimization step; ``closure`` (re-evaluating the loss, with grad mode
        on) is called first if given, and its loss returned."""
        loss = _call_closure(closure)
        fused = dispatch.current() is None and registry._forward_ad is None
        arrays, scalars = [], []
        try:
            self._steps(fused, arrays, scalars)
        finally:  # (an error op by op leaves the parameters before it updated, as unfused)
            if arrays:
                with record_function("aten::_fused_sgd_"):  # (PyTorch's name for its step)
                    _lazy.module("kernels.cpu.optim").sgd(arrays, scalars)
        return loss

    def _steps(self, fused: bool, arrays: list, scalars: list) -> None:
        """The op-by-op updates, and the fused kernel's arguments where ``fused``."""
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov = group["weight_decay"], group["nesterov"]
            numbers = fused and all(type(x) in (int, float) for x in
                                    (lr, momentum, dampening, weight_decay))
            for p in group["params"]:
                if p.grad is None:
                    continue
                if numbers and self._fused_arguments(group, p, arrays, scalars):
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = grad.detach().clone()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)

    def _fused_arguments(self, group: dict, p, arrays: list, scalars: list) -> bool:
        """Where ``p``, its gradient and its momentum buffer (if any yet) are C-contiguous
        float32 or float64 arrays of one dtype and shape on the CPU: makes the buffer on the
        first step, bumps the version counters as the op-by-op update does, appends ``p``'s
        arrays and scalars for the fused kernel and returns True. Otherwise changes nothing and
        returns False."""
        data = p._data
        if (type(data) is not np.ndarray or data.dtype not in _FUSED or not data.ndim
                or not data.flags.writeable):  # (0-d: the op-by-op update mixes in float64)
            return False
        momentum = group["momentum"]
        tensors = [p, p.grad]
        buf = None
        if momentum != 0:
            state = self.state.get(p)
            buf = state.get("momentum_buffer") if state else None
            if buf is not None:
                tensors.append(buf)
        for t in tensors:
            a = getattr(t, "_data", None)
            if (type(a) is not np.ndarray or a.dtype != data.dtype or a.shape != data.shape
                    or not a.flags.c_contiguous):
                return False
        if buf is not None and (not buf._data.flags.writeable
                                or np.may_share_memory(buf._data, data)):
            return False
        lr, dampening, dt = group["lr"], group["dampening"], data.dtype.type
        weight_decay = group["weight_decay"]
        if momentum == 0:
            mode, flat_buf = 0, _EMPTY[data.dtype]
        elif buf is None:  # (the first step: the buffer is the gradient, cloned)
            buf = self.state[p]["momentum_buffer"] = zeros_like(p)
            mode, flat_buf = 1, buf._data.reshape(-1)
        else:
            mode, flat_buf = 2, buf._data.reshape(-1)
            buf._version_counter.value += 2  # (mul_, add_)
        flat_grad = p.grad._data.reshape(-1)
        if group["maximize"]:
            flat_grad = np.negative(flat_grad)  # (as -p.grad: NaN's sign bit flipped too)
        arrays.append((data.reshape(-1), flat_grad, flat_buf))
        scalars.append((int(weight_decay != 0), dt(weight_decay), mode, dt(momentum),
                        dt(1 - dampening), bool(group["nesterov"]), dt(-lr)))
        p._version_counter.value += 1
        return True


_FUSED = (np.dtype(np.float32), np.dtype(np.float64))
_EMPTY = {dt: np.empty(0, dt) for dt in _FUSED}
