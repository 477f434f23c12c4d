"""Adam (and AMSGrad), with L2 or decoupled weight decay."""
from __future__ import annotations

from .._dtype import float64
from ..creation import full, tensor, zeros_like
from ..ops import maximum
from .optimizer import Optimizer, _check_nonnegative, _no_grad_step, _unsupported
from .sgd import _call_closure


class Adam(Optimizer):
    """PyTorch's Adam, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay if decoupled)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        (amsgrad: v_max = max(v_max, v), used for v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    ``state[p]["step"]`` is a float32 scalar tensor, as PyTorch's, on the parameter's device (as
    PyTorch's ``capturable`` Adam keeps it: a step on CUDA parameters reads nothing back and mixes
    no devices). Parameters whose ``grad`` is None are skipped.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check_nonnegative(weight_decay=weight_decay)
        _unsupported(capturable=capturable, differentiable=differentiable, fused=fused)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _state(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    @_no_grad_step
    def step(self, closure=None):
        """Performs one optimization step; ``closure`` (re-evaluating the loss, with grad mode
        on) is called first if given, and its loss returned."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self._state(p, amsgrad)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                state["step"] += 1
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                # The operations in PyTorch's order, so that the roundings agree: lerp with a
                # weight under 0.5 is ``m + w * (g - m)``, addcmul ``v + (c * g) * g``.
                exp_avg.add_(grad - exp_avg, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)
                # PyTorch reads the step count to the host and takes the bias corrections in
                # Python floats; here they are 0-d float64 tensors (the same IEEE operations:
                # pow, a subtraction, a division), so that no value is read back and the step
                # traces (numgrad.compile) as it runs.
                step = state["step"].to(float64)
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = full((), lr, dtype=float64, device=p.device) / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    max_sq.copy_(maximum(max_sq, exp_avg_sq))
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                p.add_(exp_avg * -step_size / denom)
        return loss
