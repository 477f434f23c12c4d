"""Adam (and AMSGrad), with L2 or decoupled weight decay."""
from __future__ import annotations

import numpy as np

from .._dtype import float64
from ..creation import full, tensor, zeros_like
from ..ops import maximum, registry
from .optimizer import Optimizer, _check_nonnegative, _no_grad_step, _unsupported
from .sgd import _call_closure
from ..autograd.profiler import record_function


class Adam(Optimizer):
    """PyTorch's Adam, update for update (its single-tensor path)::

        t += 1;  g = grad (+ weight_decay * p, or p *= 1 - lr * weight_decay if decoupled)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        (amsgrad: v_max = max(v_max, v), used for v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    ``state[p]["step"]`` is a float32 scalar tensor, as PyTorch's, on the parameter's device (as
    PyTorch's ``capturable`` Adam keeps it: a step on CUDA parameters reads nothing back and mixes
    no devices). Parameters whose ``grad`` is None are skipped.

    On the CPU, the update of the float32 and float64 parameters is one fused kernel
    (``kernels/cpu/optim.py``) over all of them, with the same operations in the same order as
    the op-by-op update below (the same values, bit for bit, and the same version counts), also
    where ``numgrad.compile`` traces the step (it records the kernel's call); the op-by-op update
    runs where a parameter is elsewhere, its state is not of its layout, or forward AD is
    active.
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
        fusing = registry._forward_ad is None
        fused = []  # (each group's call of the fused kernel)
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
            numbers = fusing and all(type(x) in (int, float) for x in
                                     (lr, beta1, beta2, eps, weight_decay))
            targets, grads = [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if numbers and self._fused_arguments(group, p, targets, grads):
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
            if targets:
                fused.append((tuple(targets), tuple(grads), float(lr), float(beta1),
                              float(beta2), float(eps), float(weight_decay),
                              bool(group["decoupled_weight_decay"]), bool(group["maximize"])))
        if fused:
            K = registry.kernels_for(())  # (the CPU's, or numgrad.compile's recording ones)
            with record_function("aten::_fused_adam_"):  # (PyTorch's name for its fused step)
                for args in fused:  # (a group's options: numbers a compiled step takes)
                    K.optim.adam_step(*args)
        return loss

    def _fused_arguments(self, group: dict, p, targets: list, grads: list) -> bool:
        """Where ``p``, its gradient and its state are C-contiguous float32 or float64 arrays
        of one dtype and shape on the CPU: bumps the version counters as the op-by-op update
        does, appends ``p``'s arrays to the fused kernel's ``targets`` (its step count too,
        which the kernel advances) and ``grads``, and returns True. Otherwise changes nothing
        and returns False."""
        amsgrad = group["amsgrad"]
        state = self._state(p, amsgrad)
        names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        tensors = (p, p.grad) + tuple(state.get(name) for name in names)
        data = p._data
        if (not isinstance(data, np.ndarray) or data.dtype not in _FUSED or not data.ndim
                or not data.flags.writeable):  # (0-d: the op-by-op update mixes in float64)
            return False  # (an ndarray: also a traced one, numgrad.compile records the call)
        for t in tensors:
            a = getattr(t, "_data", None)
            if (not isinstance(a, np.ndarray) or a.dtype != data.dtype or a.shape != data.shape
                    or not a.flags.c_contiguous):
                return False
        step = state["step"]
        count = getattr(step, "_data", None)
        if not isinstance(count, np.ndarray) or count.shape != () or count.dtype.kind != "f" \
                or not count.flags.writeable:
            return False
        a = [t._data for t in tensors]
        targets.append((a[0], a[2], a[3], a[4] if amsgrad else None, count))
        grads.append(a[1])
        mode = 0 if group["weight_decay"] == 0 else \
            2 if group["decoupled_weight_decay"] else 1
        for t, bumps in zip(tensors, (1 + (mode == 2), 0, 1, 2, 1)):
            t._version_counter.value += bumps
        step._version_counter.value += 1
        return True


_FUSED = (np.dtype(np.float32), np.dtype(np.float64))
