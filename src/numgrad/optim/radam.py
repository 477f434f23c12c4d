"""RAdam: Adam with the variance of its adaptive rate rectified, L2 or decoupled weight decay."""
from __future__ import annotations

from .._dtype import float64
from ..ops import where
from .optimizer import _SingleTensorOptimizer, _check_adam_like, _lerp_, _unsupported


class RAdam(_SingleTensorOptimizer):
    """PyTorch's RAdam, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay if decoupled)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)
        m_hat = m / (1 - beta1**t)
        rho_t > 5:  p = p - m_hat * lr * sqrt(1 - beta2**t) / (sqrt(v) + eps) * r_t
                    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        else:       p = p - m_hat * lr

    (with ``maximize``, ``grad`` is negated). ``state[p]`` holds ``step`` (a float32 scalar
    tensor, on the parameter's device as Adam's), ``exp_avg`` and ``exp_avg_sq``. ``foreach``
    and ``capturable`` are accepted and change nothing. Parameters whose ``grad`` is None are
    skipped.
    """

    _buffers = ("exp_avg", "exp_avg_sq")
    _late_options = dict(foreach=None, maximize=False, differentiable=False, capturable=False,
                         decoupled_weight_decay=False)

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_like(lr, betas, eps, weight_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, group, lr, p, grad, state) -> None:
        """One parameter's RAdam update (``lr`` a number, its ``state["step"]`` advanced)."""
        (beta1, beta2), eps = group["betas"], group["eps"]
        weight_decay = group["weight_decay"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        _lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)
        # The scalars as 0-d float64 tensors (PyTorch: Python floats from the step read back),
        # and the branch on rho_t a ``where``, so that nothing is read back.
        step = state["step"].to(float64)
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / bias_correction1 * lr
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        # (negative under the root while rho_t < 4: that branch is not taken)
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)).clamp(min=0) ** 0.5
        adaptive = bias_correction2**0.5 / exp_avg_sq.sqrt().add_(eps)
        p.sub_(where(rho_t > 5.0, corrected * adaptive * rect, corrected))
