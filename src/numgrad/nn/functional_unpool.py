"""``max_unpool1d/2d/3d``: the partial inverse of max pooling, each value written back at the
flat position (within its channel's output plane) its index names, zeros elsewhere.

Composed of ``scatter`` into zeros, so the gradient is PyTorch's: the gradient at those
positions, gathered (``MaxUnpool2DBackward0`` gathers the same way).
"""
from __future__ import annotations

import math

from ..tensor import Tensor

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _tuple(value, k: int) -> tuple:
    if isinstance(value, (tuple, list)):
        return tuple(int(v) for v in value)
    return (int(value),) * k


def _output_size(input: Tensor, kernel, stride, padding, output_size) -> tuple:
    """PyTorch's ``_unpool_output_size``: the default size, or ``output_size`` checked against
    it."""
    k = len(kernel)
    default = [(input.shape[-k + d] - 1) * stride[d] + kernel[d] - 2 * padding[d]
               for d in range(k)]
    if output_size is None:
        return tuple(default)
    output_size = tuple(output_size)
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(f"output_size should be a sequence containing {k} or {k + 2} elements, "
                         f"but it has a length of '{len(output_size)}'")
    for d in range(k):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{low} and {high})")
    return tuple(int(s) for s in output_size)


def _max_unpool(k: int, input: Tensor, indices: Tensor, kernel_size, stride, padding,
                output_size) -> Tensor:
    kernel = _tuple(kernel_size, k)
    stride = kernel if stride is None else _tuple(stride, k)
    padding = _tuple(padding, k)
    size = _output_size(input, kernel, stride, padding, output_size)
    if indices._data.dtype.kind != "i" or indices._data.dtype.itemsize != 8:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{_torch_dtype(indices)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.ndim not in (k + 1, k + 2):
        name = f"max_unpooling{k}d" if k > 1 else "max_unpooling2d"
        raise RuntimeError(f"Input to {name} should be a {k + 1}d or {k + 2}d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    plane = math.prod(size)
    if indices.numel():
        flat = indices.detach()
        bad = (flat < 0) | (flat >= plane)
        if bool(bad.any()):
            sizes = "x".join(str(s) for s in (size if k > 1 else size + (1,)))
            raise RuntimeError(f"Found an invalid max index: {int(flat[bad][0])} (output volumes "
                               f"are of size {sizes})")
    lead = tuple(input.shape[:-k])
    x = input.reshape(*lead, -1)
    idx = indices.reshape(*lead, -1)
    out = x.new_zeros((*lead, plane)).scatter(-1, idx, x)
    return out.reshape(*lead, *size)


def _torch_dtype(t: Tensor) -> str:
    from .._dtype import torch_name

    return torch_name(t._data.dtype)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool1d``: ``(N, C, L)`` or ``(C, L)``."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool2d``: ``(N, C, H, W)`` or ``(C, H, W)``."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool3d``: ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)
