"""RMSprop, with momentum, centering and (L2) weight decay."""
from __future__ import annotations

from ..creation import tensor, zeros_like
from .optimizer import (_SingleTensorOptimizer, _check_nonnegative, _check_tensor_lr, _lerp_,
                        _unsupported)


class RMSprop(_SingleTensorOptimizer):
    """PyTorch's RMSprop, update for update (its single-tensor path)::

        g = grad (+ weight_decay * p)
        v = alpha * v + (1 - alpha) * g * g
        centered: m = lerp(m, g, 1 - alpha);  avg = sqrt(v - m * m) + eps
        else:     avg = sqrt(v) + eps
        momentum > 0: b = momentum * b + g / avg;  p = p - lr * b
        else:         p = p - lr * g / avg

    (with ``maximize``, ``grad`` is negated). ``state[p]["step"]`` is a float32 scalar tensor,
    as PyTorch's, on the parameter's device (see Adam). Parameters whose ``grad`` is None are
    skipped.
    """

    _late_options = dict(momentum=0, centered=False, foreach=None, maximize=False,
                         differentiable=False, capturable=False)

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_tensor_lr(lr)
        _check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                           alpha=alpha)
        _unsupported(capturable=capturable, differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state(self, p, group) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = tensor(0.0, device=p.device)
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    def _update(self, group, lr, p, grad, state) -> None:
        alpha, eps = group["alpha"], group["eps"]
        weight_decay, momentum = group["weight_decay"], group["momentum"]
        square_avg = state["square_avg"]
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        # PyTorch's operations in its order, so that the roundings agree: addcmul is
        # ``v + (c * g) * g``, lerp with a weight under 0.5 ``m + w * (g - m)``,
        # addcdiv ``p + (c * g) / d``.
        square_avg.mul_(alpha).add_(grad * (1 - alpha) * grad)
        if group["centered"]:
            grad_avg = _lerp_(state["grad_avg"], grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).add_(grad / avg)
            p.add_(buf, alpha=-lr)
        else:
            p.add_(grad * -lr / avg)
