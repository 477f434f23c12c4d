"""``max_unpool1d/2d/3d``: the partial inverse of max pooling, each value written back at the
flat position (within its channel's output plane) its index names, zeros elsewhere; and
``adaptive_max_pool3d``.

Unpooling is composed of ``scatter`` into zeros, so the gradient is PyTorch's: the gradient at
those positions, gathered (``MaxUnpool2DBackward0`` gathers the same way). Adaptive 3-D max
pooling gathers each window (``[floor(i L / n), ceil((i + 1) L / n))`` along each dimension,
short windows padded with their last element) and takes the first largest.
"""
from __future__ import annotations

import math

from ..tensor import Tensor
from .._dtype import torch_name
import numgrad
from ..ops.pooling import _output_size_arg
from .functional_fractional_pool import window_max
from ..ops._names import export as _export


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
    return torch_name(t._data.dtype)


@_export
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool1d``: ``(N, C, L)`` or ``(C, L)``."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


@_export
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool2d``: ``(N, C, H, W)`` or ``(C, H, W)``."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


@_export
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of ``max_pool3d``: ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


@_export
def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """The largest element of each of ``output_size`` adaptive windows of the last three
    dimensions of a (N, C, D, H, W) or (C, D, H, W) input (None entries keep the input's size);
    with ``return_indices``, its flat position in its (D, H, W) plane."""
    shape = tuple(input.shape)
    size = _output_size_arg(output_size, shape) if isinstance(output_size, (list, tuple)) else (
        (int(output_size),) * 3)
    if len(size) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(shape)}")
    for d in range(1, input.ndim):
        if shape[d] <= 0:
            raise RuntimeError("adaptive_max_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(shape)} with "
                               f"dimension {d} being empty")
    if any(s < 0 for s in size):
        bad = next(s for s in size if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                           f"{list(shape[:-3] + size)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"adaptive_max_pool3d_cpu" not implemented for '
                                  f"'{torch_name(input._data.dtype)}'")
    batched = input.ndim == 5
    x = input if batched else input.unsqueeze(0)
    sizes = tuple(x.shape[2:])
    positions = []
    for L, n in zip(sizes, size):
        starts = [i * L // n for i in range(n)]
        ends = [-(-(i + 1) * L // n) for i in range(n)]
        width = max((e - b for b, e in zip(starts, ends)), default=1)
        rows = [[min(b + j, e - 1) for j in range(width)] for b, e in zip(starts, ends)]
        positions.append(numgrad.tensor(rows or [[0]] * 0, dtype=numgrad.int64,
                                        device=x.device).reshape(1, 1, n, width))
    values, indices = window_max(x, positions, sizes)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values
