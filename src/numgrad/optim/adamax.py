"""Adamax: Adam with the infinity norm in place of the second moment."""
from __future__ import annotations

from .._dtype import float64
from ..creation import full, tensor, zeros_like
from ..ops import maximum
from ..tensor import Tensor
from .optimizer import (Optimizer, _check_betas, _check_nonnegative, _lerp_, _no_grad_step,
                        _unsupported)
from .sgd import _call_closure


class Adamax(Optimizer):
    """PyTorch's Adamax, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p)
        m = lerp(m, g, 1 - beta1)
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    (with ``maximize``, ``grad`` is negated). ``state[p]`` holds ``step`` (a float32 scalar
    tensor, on the parameter's device as Adam's), ``exp_avg`` (m) and ``exp_inf`` (u).
    ``foreach`` and ``capturable`` are accepted and change nothing. Parameters whose ``grad`` is
    None are skipped.
    """

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _state(self, p) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            state["exp_avg"] = zeros_like(p)
            state["exp_inf"] = zeros_like(p)
        return state

    @_no_grad_step
    def step(self, closure=None):
        """Performs one optimization step; ``closure`` (re-evaluating the loss, with grad mode
        on) is called first if given, and its loss returned."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay = group["weight_decay"]
            if isinstance(lr, Tensor):
                lr = lr.item()
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._state(p)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                # The bias correction as a 0-d float64 tensor (PyTorch: Python floats from the
                # step read back), so that nothing is read back (see Adam).
                step = state["step"].to(float64)
                neg_clr = -(full((), lr, dtype=float64, device=p.device) / (1 - beta1**step))
                # addcdiv ``p + (c * m) / u``, PyTorch's order.
                p.add_(exp_avg * neg_clr / exp_inf)
        return loss

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in (("foreach", None), ("maximize", False),
                               ("differentiable", False), ("capturable", False)):
                group.setdefault(key, value)
