"""Adadelta, with (L2) weight decay."""
from __future__ import annotations

from .optimizer import (_SingleTensorOptimizer, _check_nonnegative, _check_tensor_lr,
                        _unsupported)


class Adadelta(_SingleTensorOptimizer):
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

    _buffers = ("square_avg", "acc_delta")
    _late_options = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_tensor_lr(lr)
        _check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        _unsupported(differentiable=differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, group, lr, p, grad, state) -> None:
        """One parameter's Adadelta update (``lr`` a number, its ``state["step"]`` advanced)."""
        rho, eps = group["rho"], group["eps"]
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        # addcmul is ``v + (c * g) * g``: PyTorch's order, so that the roundings agree.
        square_avg.mul_(rho).add_(grad * (1 - rho) * grad)
        std = (square_avg + eps).sqrt()
        delta = (acc_delta + eps).sqrt().div_(std).mul_(grad)
        acc_delta.mul_(rho).add_(delta * (1 - rho) * delta)
        p.add_(delta, alpha=-lr)
