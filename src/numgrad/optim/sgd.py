"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""
from __future__ import annotations

import numpy as np

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

    On the CPU, the update of the float32 and float64 parameters is one fused kernel
    (``kernels/cpu/optim.py``) over all of them, with the same operations in the same order as
    the op-by-op update below (the same values, bit for bit, and the same version counts), also
    where ``numgrad.compile`` traces the step (it records the kernel's call); the op-by-op update
    runs where a parameter is elsewhere, its state is not of its layout, or forward AD is
    active.
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
        fused = []  # (each group's call of the fused kernel)
        try:
            self._steps(registry._forward_ad is None, fused)
        finally:  # (an error op by op leaves the parameters before it updated, as unfused)
            if fused:
                K = registry.kernels_for(())  # (the CPU's, or numgrad.compile's recording ones)
                with record_function("aten::_fused_sgd_"):  # (PyTorch's name for its step)
                    for args in fused:  # (a group's options: numbers a compiled step takes)
                        K.optim.sgd_step(*args)
        return loss

    def _steps(self, fusing: bool, fused: list) -> None:
        """The op-by-op updates, and each group's call of the fused kernel where ``fusing``."""
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov = group["weight_decay"], group["nesterov"]
            numbers = fusing and all(type(x) in (int, float) for x in
                                     (lr, momentum, dampening, weight_decay))
            targets, grads, firsts = [], [], []
            try:
                self._group_steps(group, numbers, targets, grads, firsts)
            finally:
                if targets:
                    fused.append((tuple(targets), tuple(grads), float(lr), float(momentum),
                                  float(dampening), float(weight_decay), bool(nesterov),
                                  bool(group["maximize"]), tuple(firsts)))

    def _group_steps(self, group: dict, numbers: bool, targets: list, grads: list,
                     firsts: list) -> None:
        """One group's op-by-op updates, and its fused kernel's arguments where ``numbers``."""
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if numbers and self._fused_arguments(group, p, targets, grads, firsts):
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

    def _fused_arguments(self, group: dict, p, targets: list, grads: list, firsts: list) -> bool:
        """Where ``p``, its gradient and its momentum buffer (if any yet) are C-contiguous
        float32 or float64 arrays of one dtype and shape on the CPU: makes the buffer on the
        first step, bumps the version counters as the op-by-op update does, appends ``p``'s
        arrays to the fused kernel's ``targets``, ``grads`` and ``firsts`` (whether its buffer is
        new) and returns True. Otherwise changes nothing and returns False."""
        data = p._data
        if (not isinstance(data, np.ndarray) or data.dtype not in _FUSED or not data.ndim
                or not data.flags.writeable):  # (0-d: the op-by-op update mixes in float64)
            return False  # (an ndarray: also a traced one, numgrad.compile records the call)
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
            if (not isinstance(a, np.ndarray) or a.dtype != data.dtype or a.shape != data.shape
                    or not a.flags.c_contiguous):
                return False
        if buf is not None and (not buf._data.flags.writeable
                                or np.may_share_memory(buf._data, data)):
            return False
        first = momentum != 0 and buf is None
        if first:  # (the first step: the buffer is the gradient, cloned)
            buf = self.state[p]["momentum_buffer"] = zeros_like(p)
        elif buf is not None:
            buf._version_counter.value += 2  # (mul_, add_)
        targets.append((data, None if buf is None else buf._data))
        grads.append(p.grad._data)
        firsts.append(first)
        p._version_counter.value += 1
        return True


_FUSED = (np.dtype(np.float32), np.dtype(np.float64))
