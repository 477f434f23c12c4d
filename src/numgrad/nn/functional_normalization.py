"""``nn.functional``'s group, instance, RMS and local response normalisation: ``group_norm`` (one
op, ``NativeGroupNormBackward0``), ``instance_norm`` (batch normalisation over a batch of one),
``rms_norm`` and ``local_response_norm`` (composites, written as PyTorch writes them).
"""
from __future__ import annotations

import numgrad

from .. import ops
from .._dtype import bfloat16 as _bfloat16, float16 as _float16, float64 as _float64
from ..ops import nn_functional as _nn
from ..tensor import Tensor
from .functional_activation import _check_float
from ..autograd import grad_mode
from ..ops._names import export as _export


# ------------------------------------------------------------------ normalisation
@_export
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises each sample's ``num_groups`` groups of channels (biased variance plus
    ``eps``), then ``* weight + bias`` per channel."""
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    size = list(input.shape)
    prods = size[0] * size[1] // num_groups
    for s in size[2:]:
        prods *= s
    if prods == 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"{[size[0] * size[1] // num_groups, num_groups] + size[2:]}")
    n, c = size[0], size[1]
    _check_float("GroupNormKernelImpl", input, suffix=False)
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {_sizes(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {_sizes(t.shape)} and input of shape "
                f"{_sizes(input.shape)}")
    if input.numel():
        return _nn.native_group_norm(input, weight, bias, num_groups, eps)
    x = input.reshape(n, num_groups, (input.numel() // n if n else 0) // num_groups
                      if n else _prod(size[1:]) // num_groups)  # (no elements: the composite)
    mean = x.mean(-1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdim=True)
    out = (centred * ops.rsqrt(var + eps)).reshape(input.shape)
    channel = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(channel)
    if bias is not None:
        out = out + bias.reshape(channel)
    return out


def _prod(sizes) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


@_export
def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalises each channel of each sample over its spatial dimensions: ATen's
    ``instance_norm``, a ``batch_norm`` of the input viewed as ``(1, N * C, *)`` with the
    running statistics repeated per sample (and averaged back over the batch)."""
    if use_input_stats:
        size = list(input.shape)
        prods = 1
        for s in size[2:]:
            prods *= s
        if prods == 1:
            raise ValueError(
                "Expected more than 1 spatial element when training, got input size "
                f"{input.size()}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    batch_norm = numgrad.nn.functional.batch_norm
    b, c = input.shape[0], input.shape[1]
    shape = (1, b * c) + tuple(input.shape[2:])

    def rep(t):
        return None if t is None else t.repeat(b)

    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(input.reshape(shape), rm, rv, rep(weight), rep(bias), use_input_stats,
                     momentum, eps)
    if use_input_stats:
        with grad_mode.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.view(b, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.view(b, c).mean(0))
    return out.view(input.shape)


@_export
def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``input * rsqrt(mean(input**2) + eps)`` over the trailing ``normalized_shape``
    dimensions, times ``weight`` (node ``MulBackward0``); ``eps`` defaults to the machine
    epsilon of the input's float type (float32's for float32)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if n == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < n or tuple(input.shape[input.ndim - n:]) != shape:
        star = "*" + ", ".join(str(s) for s in shape)  # (PyTorch's rms_norm writes [*4, 5])
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [{star}], but got "
            f"input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    if eps is None:
        eps = 2.220446049250313e-16 if input.dtype == _float64 else 1.1920928955078125e-07
    dims = tuple(range(input.ndim - n, input.ndim))
    x = input
    if input.dtype in (_float16, _bfloat16):  # (in float32, PyTorch's opmath: 300 ** 2 is inf)
        x = input.float()
    out = x * ops.rsqrt((x * x).mean(dims, keepdim=True) + eps)
    if x is not input:
        out = out.to(input.dtype)
    return out if weight is None else out * weight


@_export
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Divides each element by ``(k + alpha / size * sum of squares over the ``size``
    neighbouring channels) ** beta``, as ``torch.nn.functional``'s (node ``DivBackward0``)."""
    F = numgrad.nn.functional
    avg_pool2d, pad = F.avg_pool2d, F.pad
    dim = input.dim()
    if dim < 3:
        raise ValueError(  # (PyTorch's message, its spaces included)
            "Expected 3D or higher dimensionality                          input (got "
            f"{dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    sizes = input.shape
    if dim > 3 and div._data.dtype.name not in ops.pooling._AVG_POOL3D_DTYPES:
        # (ATen pools 4-D and wider inputs with avg_pool3d, which takes no float16, bfloat16 or
        # small integers; a 3-D input is pooled by avg_pool2d, which takes the half types)
        ops.pooling._not_implemented("avg_pool3d_out_frame", div)
    # (ATen's avg_pool3d over (size, 1, 1) of (N, 1, C, H, W...) is an avg_pool2d over (size, 1)
    # of the spatial dimensions flattened)
    div = div.reshape(sizes[0], 1, sizes[1], -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    div = div.reshape(sizes)
    div = (div * alpha + k) ** beta
    return input / div
