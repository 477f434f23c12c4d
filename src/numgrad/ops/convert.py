"""Dtype conversion as a differentiable op."""
from __future__ import annotations

import numpy as np

from .._dtype import to_dtype
from ..tensor import Tensor
from .registry import Op, Sample, apply, register


@register
class ToCopy(Op):
    name, node = "to_dtype", "ToCopyBackward0"
    # A float32 round trip is linear, so a large finite-difference step is exact up to rounding.
    samples = (
        Sample(lambda m, a: a.float(), ((3, 4),), eps=1e-2, atol=1e-4),
        Sample(lambda m, a: a.to(m.float32).double(), ((4,),), eps=1e-2, atol=1e-4),
    )

    @staticmethod
    def forward(K, a, *, dtype):
        return a.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)  # the engine casts it back to the input's dtype


def to(input: Tensor, *args, dtype=None, device=None, copy: bool = False) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(other)``: the tensor converted, or itself if nothing
    changes (unless ``copy``)."""
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str) or type(a).__name__ == "device":
            device = a
        else:
            dtype = a
    if device is not None and str(device).split(":")[0] != "cpu":
        from ..cuda import _unavailable

        _unavailable()
    if dtype is None:
        return input.clone() if copy else input
    dt = to_dtype(dtype)
    if dt is input.dtype and not copy:
        return input
    if input._requires_grad and not dt.is_floating_point:
        # PyTorch returns an integer tensor with no history here.
        return Tensor._wrap(input._data.astype(dt.np))
    return apply(ToCopy, (input,), (input._data,), dtype=dt.np)


@register
class Clone(Op):
    name, node = "clone", "CloneBackward0"
    samples = (Sample(lambda m, a: a.clone(), ((3, 4),)), Sample(lambda m, a: a.t().contiguous(), ((3, 4),)))

    @staticmethod
    def forward(K, a):
        return np.array(a, order="C", copy=True)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


def clone(input: Tensor) -> Tensor:
    """A copy of ``input`` with its own storage, recorded so gradients flow back to ``input``."""
    return apply(Clone, (input,), (input._data,))


def contiguous(input: Tensor) -> Tensor:
    """``input`` if its data is C-contiguous, else a contiguous copy."""
    return input if input._data.flags.c_contiguous else clone(input)

# What numgrad exports as functions, and what Tensor gets as methods.
__all__ = ["clone"]
METHODS = ("to", "clone", "contiguous")
