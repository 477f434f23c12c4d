"""Adadelta, with (L2) weight decay."""
from __future__ import annotations

from ..creation import tensor, zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer, _check_nonnegative, _no_grad_step, _unsupported
from .sgd import _call_closure


class Adadelta(Optimizer):
    """PyTorch's Adadelta, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p)
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta

    (with ``maximize``, ``grad`` is negated). ``state[p]`` holds ``step`` (a float32 scalar
    tensor, on the parameter's device as Adam's), ``square_avg`` (v) and ``acc_delta`` (u).
    ``foreach`` and ``capturable`` are accepted and change nothing (numgrad's step count already
    stays beside the parameter). Parameters whose ``grad`` is None are skipped.
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state(self, p) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            state["square_avg"] = zeros_like(p)
            state["acc_delta"] = zeros_like(p)
        return state

    @_no_grad_step
    def step(self, closure=None):
        """Performs one optimization step; ``closure`` (re-evaluating the loss, with grad mode
        on) is called first if given, and its loss returned."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr, rho, eps = group["lr"], group["rho"], group["eps"]
            weight_decay = group["weight_decay"]
            if isinstance(lr, Tensor):
                lr = lr.item()
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._state(p)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                # addcmul is ``v + (c * g) * g``: PyTorch's order, so that the roundings agree.
                square_avg.mul_(rho).add_(grad * (1 - rho) * grad)
                std = (square_avg + eps).sqrt()
                delta = (acc_delta + eps).sqrt().div_(std).mul_(grad)
                acc_delta.mul_(rho).add_(delta * (1 - rho) * delta)
                p.add_(delta, alpha=-lr)
        return loss

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in (("foreach", None), ("maximize", False),
                               ("differentiable", False), ("capturable", False)):
                group.setdefault(key, value)
