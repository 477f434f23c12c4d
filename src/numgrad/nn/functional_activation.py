"""``nn.functional``'s activations beyond the fused ones of ``ops/activation.py``: ``prelu``,
``glu``, ``softshrink``, ``hardshrink``, ``threshold`` and ``rrelu`` (each one op with PyTorch's
node: ``PreluKernelBackward0``, ``GluBackward0`` ..., from ``ops/nn_functional.py``) and
``softmin`` (a composite).
"""
from __future__ import annotations

import sys
import warnings

from .. import ops
from .._dtype import bool_ as _bool
from .._dtype import float64 as _float64
from ..creation import empty_like as _empty_like
from ..ops import nn_functional as _nn
from ..ops.loss import _type_name
from ..tensor import Tensor
from .functional_distance import _dim
from ..ops._names import export as _export


# ------------------------------------------------------------------ activations
@_export
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``, with one weight or one per channel
    (dimension 1)."""
    if input.ndim == 0 and weight.numel() != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    _check_float("prelu", input)
    if weight.dtype != input.dtype:
        raise RuntimeError("prelu: Type promoting not supported. Got "
                           f"{_type_name(input)} and {_type_name(weight)}")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    # the weight viewed as PyTorch's prelu views it (its node keeps that view, _saved_weight):
    # (1, C, 1, ...) for an input of 2 dimensions or more, () for a 0-d one, (1,) for a 1-d one
    if input.ndim >= 2:
        w = weight.reshape((1, weight.numel()) + (1,) * (input.ndim - 2))
    elif input.ndim == 0:
        w = weight.reshape(())
    else:
        w = weight.reshape(1) if weight.ndim == 0 else weight
    return _nn.prelu(input, w)


@_export
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` for the two halves ``a``, ``b`` of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _dim(dim, input.ndim)
    _check_float("glu", input)
    if input.shape[d] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return _nn.glu(input, d, dim)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's deprecated choice of softmax's dimension where none is given (with its
    warning): softmax, log_softmax and softmin. ``stacklevel`` counts as PyTorch's (3: the
    line that called the function), past the dispatching wrappers of ``overrides`` between
    the function and its caller."""
    frame, wrappers = sys._getframe(2), 0
    while frame is not None and frame.f_globals.get("__name__") == "numgrad.overrides":
        wrappers += 1
        frame = frame.f_back
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.", UserWarning, stacklevel=stacklevel + wrappers)
    return 0 if ndim in (0, 1, 3) else 1


@_export
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-input)`` along ``dim`` (node ``SoftmaxBackward0``)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    return ops.softmax(-input, dim, dtype=dtype)


def _check_float(name: str, input: Tensor, suffix: bool = True) -> None:
    if not input.dtype.is_floating_point:
        if suffix:
            name += "_cpu" if input.device.type == "cpu" else "_cuda"
        raise NotImplementedError(f"\"{name}\" not implemented for '{_type_name(input)}'")


@_export
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (NaN kept)."""
    _check_float("softshrink_check", input, suffix=False)
    top = 1.79769e+308 if input.dtype == _float64 else 3.40282e+38
    if not 0 <= lambd <= (1.7976931348623157e308 if input.dtype == _float64
                          else 3.4028234663852886e38):
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{_type_name(input)}, but found {lambd:g}")
    return _nn.softshrink(input, lambd)


@_export
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0 (NaN kept)."""
    _check_float("hardshrink", input)
    return _nn.hardshrink(input, lambd)


@_export
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value`` (NaN kept)."""
    if input.dtype == _bool:
        _check_float("threshold", input)
    if inplace:
        return threshold_(input, threshold, value)
    return _nn.threshold(input, threshold, value)


@_export
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    if input.dtype == _bool:
        _check_float("threshold", input)
    return _nn.threshold_(input, threshold, value)


@_export
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomised leaky ReLU: in training, each non-positive element times a slope drawn from
    U(lower, upper) with numgrad's generator; in eval, ``leaky_relu`` with the mean slope."""
    if lower > upper:
        raise RuntimeError(
            "Lower bound should be less than or equal to the upper bound")
    _check_float("leaky_relu" if not training else "rrelu_with_noise_out", input)
    if training:
        noise = _empty_like(input.detach()).uniform_(lower, upper)
    else:
        noise = (lower + upper) / 2
    given = (lower, upper, bool(training))
    if inplace:
        return _nn.rrelu_with_noise_(input, noise, *given)
    return _nn.rrelu_with_noise(input, noise, *given)


@_export
def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, True)
