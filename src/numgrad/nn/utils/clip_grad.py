"""Gradient clipping with PyTorch's arithmetic: the total norm is the norm of the per-gradient
norms, the gradients are multiplied in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
from __future__ import annotations

import functools
import math
import types
import warnings

from ...autograd import grad_mode
from ...creation import tensor
from ...ops import clamp, stack
from ...tensor import Tensor
from ..functional import _vector_norm


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with grad_mode.no_grad():
            return fn(*args, **kwargs)
    return wrapper


@_no_grad
def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of the tensors' norms (as if they were one vector)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    first_device = tensors[0].device
    norms = [_vector_norm(t, norm_type) for t in tensors]
    total_norm = _vector_norm(stack([n.to(first_device) for n in norms]), norm_type)
    if error_if_nonfinite:
        value = float(total_norm)
        if math.isnan(value) or math.isinf(value):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Multiplies the gradients in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = clamp(clip_coef, max=1.0)
    for g in grads:
        g.mul_(clip_coef_clamped.to(g.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Clips the gradients of ``parameters`` (a tensor or an iterable) in place so that their
    total ``norm_type``-norm is at most ``max_norm``; returns the total norm before clipping,
    as a tensor. With ``error_if_nonfinite``, a nan or infinite total norm raises."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated spelling of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamps every gradient of ``parameters`` to ``[-clip_value, clip_value]``, in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
