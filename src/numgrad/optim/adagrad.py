"""Adagrad, with learning-rate decay and (L2) weight decay."""
from __future__ import annotations

from .._dtype import float64
from ..creation import full, full_like, tensor
from .optimizer import (_SingleTensorOptimizer, _check_nonnegative, _check_tensor_lr,
                        _unsupported)


class Adagrad(_SingleTensorOptimizer):
    """PyTorch's Adagrad, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p)
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    (with ``maximize``, ``grad`` is negated). As PyTorch's, the state (``step``, a float32
    scalar tensor, on the parameter's device as Adam's, and ``sum``, filled with
    ``initial_accumulator_value``) is made for every parameter by the constructor. Parameters
    whose ``grad`` is None are skipped.
    """

    _late_options = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_tensor_lr(lr)
        _check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        _unsupported(differentiable=differentiable, fused=fused)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> dict:
        state = self.state[p]
        state["step"] = tensor(0.0, device=p.device)
        state["sum"] = full_like(p, self.defaults["initial_accumulator_value"])
        return state

    def _state(self, p, group) -> dict:
        return self.state[p] or self._init_state(p)  # (a group added later)

    def _update(self, group, lr, p, grad, state) -> None:
        lr_decay, eps, weight_decay = group["lr_decay"], group["eps"], group["weight_decay"]
        state_sum = state["sum"]
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        if lr_decay == 0:
            neg_clr = -lr  # lr / (1 + (t - 1) * 0) is lr itself
        else:
            # PyTorch reads the step count to the host and takes the decayed rate in Python
            # floats; here a 0-d float64 tensor (the same IEEE operations), so that nothing is
            # read back and the step traces (numgrad.compile).
            step = state["step"].to(float64)
            neg_clr = -(full((), lr, dtype=float64, device=p.device) / (1 + (step - 1) * lr_decay))
        # addcmul ``s + (1 * g) * g`` and addcdiv ``p + (-clr * g) / std``, in PyTorch's order
        # so that the roundings agree.
        state_sum.add_(grad * grad)
        std = state_sum.sqrt().add_(eps)
        p.add_(grad * neg_clr / std)
