"""NAdam: Adam with Nesterov momentum (Dozat's momentum schedule), L2 or decoupled weight
decay."""
from __future__ import annotations

from .._dtype import float64
from ..creation import full, tensor, zeros_like
from .optimizer import (_SingleTensorOptimizer, _check_betas, _check_nonnegative,
                        _check_tensor_lr, _lerp_, _unsupported)


class NAdam(_SingleTensorOptimizer):
    """PyTorch's NAdam, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay if decoupled)
        mu_t = beta1 * (1 - 0.96 ** (t * momentum_decay) / 2)     (and mu_{t+1} likewise)
        P = P * mu_t                                           (mu_product, float32)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P) * g / denom
              - lr * mu_{t+1} / (1 - P * mu_{t+1}) * m / denom

    (with ``maximize``, ``grad`` is negated). ``state[p]`` holds ``step`` and ``mu_product``
    (float32 scalar tensors, on the parameter's device as Adam's ``step``), ``exp_avg`` and
    ``exp_avg_sq``. ``foreach`` and ``capturable`` are accepted and change nothing. Parameters
    whose ``grad`` is None are skipped.
    """

    _late_options = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                         decoupled_weight_decay=False)

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_tensor_lr(lr)
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state(self, p, group) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            state["mu_product"] = tensor(1.0, device=p.device)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
        return state

    def _update(self, group, lr, p, grad, state) -> None:
        (beta1, beta2), eps = group["betas"], group["eps"]
        weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        mu_product = state["mu_product"]
        # PyTorch reads the step (and mu_product) back and computes these scalars in
        # Python floats; here 0-d float64 tensors, the same IEEE operations, so that
        # nothing is read back (see Adam).
        step = state["step"].to(float64)
        bias_correction2 = 1 - beta2**step
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        # PyTorch's in-place product rounds mu to mu_product's dtype (float32, or the
        # parameter's after load_state_dict) first.
        mu_product.mul_(mu.to(mu_product.dtype))
        _lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)
        denom = (exp_avg_sq / bias_correction2).sqrt().add_(eps)
        product = mu_product.to(float64)
        neg_lr = full((), -lr, dtype=float64, device=p.device)
        grad_scale = neg_lr * (1.0 - mu) / (1.0 - product)
        avg_scale = (neg_lr * mu_next) / (1.0 - product * mu_next)
        # two addcdivs ``p + (c * x) / denom``, PyTorch's order.
        p.add_(grad * grad_scale / denom)
        p.add_(exp_avg * avg_scale / denom)
