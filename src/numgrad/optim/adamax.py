"""Adamax: Adam with the infinity norm in place of the second moment."""
from __future__ import annotations

from .._dtype import float64
from ..creation import full
from ..ops import maximum
from .optimizer import _SingleTensorOptimizer, _check_adam_like, _lerp_, _unsupported


class Adamax(_SingleTensorOptimizer):
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

    _buffers = ("exp_avg", "exp_inf")
    _late_options = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_like(lr, betas, eps, weight_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, group, lr, p, grad, state) -> None:
        """One parameter's Adamax update (``lr`` a number, its ``state["step"]`` advanced)."""
        (beta1, beta2), eps = group["betas"], group["eps"]
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        _lerp_(exp_avg, grad, 1 - beta1)
        exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
        # The bias correction as a 0-d float64 tensor (PyTorch: Python floats from the step
        # read back), so that nothing is read back (see Adam).
        step = state["step"].to(float64)
        neg_clr = -(full((), lr, dtype=float64, device=p.device) / (1 - beta1**step))
        # addcdiv ``p + (c * m) / u``, PyTorch's order.
        p.add_(exp_avg * neg_clr / exp_inf)
