"""``nn.functional``'s channel-wise and alpha dropouts: ``dropout1d``/``2d``/``3d`` (whole channels
zeroed, as PyTorch's ``feature_dropout``), ``alpha_dropout`` and ``feature_alpha_dropout`` (SELU's
self-normalising dropout), composites of numgrad's random factories and arithmetic.
"""
from __future__ import annotations

import math
import warnings

from ..creation import empty_like as _empty_like
from ..creation import zeros as _zeros
from ..creation import zeros_like as _zeros_like
from ..tensor import Tensor
from ..ops._names import export as _export


# ------------------------------------------------------------------ dropout
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool = True) -> Tensor:
    """ATen's ``feature_dropout``: one Bernoulli draw per (sample, channel), broadcast over
    the remaining dimensions, scaled by ``1 / (1 - p)`` (unbatched: per channel)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    lead = 2 if batched else 1
    if input.ndim < lead:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:
        noise = _zeros_like(input.detach())
    else:
        shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
        noise = _zeros(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
        noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


@_export
def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _feature_dropout(input, p, training, inplace, batched=inp_dim == 3)


@_export
def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, H, W)`` input with probability ``p`` (a 3-D input
    is taken as ``(N, C, L)``, with PyTorch's warning)."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


@_export
def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with
    probability ``p``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if inp_dim == 5:
        return _feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace, batched=inp_dim == 5)


_ALPHA = 1.7580993408473766


@_export
def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's mean and variance: dropped elements are set to SELU's negative
    saturation, then all are scaled and shifted (ATen's ``alpha_dropout``; node
    ``AddBackward0``)."""
    return _alpha_dropout(input, p, training, inplace, False)


@_export
def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels: one draw per (sample, channel), broadcast over the
    remaining dimensions (ATen's ``feature_alpha_dropout``)."""
    return _alpha_dropout(input, p, training, inplace, True)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                   feature: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:
        return input.mul_(0.0) if inplace else input * _zeros_like(input.detach())
    if feature:
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
        noise = _zeros(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    else:
        noise = _empty_like(input.detach()).bernoulli_(1 - p)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
    noise = noise * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b
