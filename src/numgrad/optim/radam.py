"""RAdam: Adam with the variance of its adaptive rate rectified, L2 or decoupled weight decay."""
from __future__ import annotations

from .._dtype import float64
from ..creation import tensor, zeros_like
from ..ops import where
from ..tensor import Tensor
from .optimizer import (Optimizer, _check_betas, _check_nonnegative, _lerp_, _no_grad_step,
                        _unsupported)
from .sgd import _call_closure


class RAdam(Optimizer):
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

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _state(self, p) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
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
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                _lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)
                # The scalars as 0-d float64 tensors (PyTorch: Python floats from the step read
                # back), and the branch on rho_t a ``where``, so that nothing is read back.
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
        return loss

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in (("foreach", None), ("maximize", False), ("differentiable", False),
                               ("capturable", False), ("decoupled_weight_decay", False)):
                group.setdefault(key, value)
