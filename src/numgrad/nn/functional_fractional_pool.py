"""``fractional_max_pool2d``/``3d`` (Graham's fractional max pooling): the maximum of each
``kernel_size`` window placed at pseudo-random positions, one random number a plane and a
dimension (``_random_samples``, drawn uniformly from [0, 1) when not given), the windows of
dimension ``d`` starting at ``floor((i + u) a) - floor(u a)``, ``a = (in - k) / (out - 1)``, the
last at ``in - k``, as ATen places them.

Composed of indexing (each plane's windows gathered) and ``max``, so the gradient goes to the
maxima, as PyTorch's; with ``return_indices``, the maxima's flat positions in their planes.
"""
from __future__ import annotations

from ..tensor import Tensor
import numgrad
from ..ops._names import export as _export


def _ng():
    return numgrad


def _tuple(v, k: int) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * k


def _starts(u: Tensor, size: int, kernel: int, out: int) -> Tensor:
    """The windows' first positions along one dimension: (..., out) int64 from samples u."""
    ng = _ng()
    if out == 1:
        return (u * 0).unsqueeze(-1).to(ng.int64) + (size - kernel)
    alpha = (size - kernel) / (out - 1)
    i = ng.arange(out, dtype=u.dtype, device=u.device)
    starts = ((i + u.unsqueeze(-1)) * alpha).floor() - (u.unsqueeze(-1) * alpha).floor()
    starts = starts.to(ng.int64)
    last = ng.arange(out, device=u.device) == out - 1
    return ng.where(last, size - kernel, starts)


def _fractional(name: str, k: int, input: Tensor, kernel_size, output_size, output_ratio,
                return_indices: bool, samples):
    ng = _ng()
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (k + 1, k + 2):
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    batched = input.ndim == k + 2
    x = input if batched else input.unsqueeze(0)
    sizes = tuple(x.shape[2:])
    kernel = _tuple(kernel_size, k)
    if output_size is None:
        ratio = _tuple(output_ratio, k)
        output_size = tuple(int(s * r) for s, r in zip(sizes, ratio))
    out = _tuple(output_size, k)
    what = ("height", "width") if k == 2 else ("time", "height", "width")
    for d in range(k):
        if out[d] + kernel[d] - 1 > sizes[d]:
            raise RuntimeError(f"{name}(): pool {what[d]} {kernel[d]} too large relative to input "
                               f"{what[d]} {sizes[d]}")
    n, c = x.shape[0], x.shape[1]
    if samples is None:
        samples = ng.rand(n, c, k, dtype=x.dtype, device=x.device)
    # ATen reads a plane's samples as (width, height) in 2-D and (time, height, width) in 3-D
    order = (1, 0) if k == 2 else (0, 1, 2)
    positions = []
    for d in range(k):
        start = _starts(samples[..., order[d]], sizes[d], kernel[d], out[d])  # (n, c, out_d)
        pos = start.unsqueeze(-1) + ng.arange(kernel[d], device=x.device)  # (n, c, out_d, k_d)
        positions.append(pos)
    values, indices = window_max(x, positions, sizes)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def window_max(x: Tensor, positions: list, sizes: tuple):
    """(the maxima, their flat positions in their planes) of windows of ``x`` (N, C, *sizes):
    ``positions[d]`` (N or 1, C or 1, out_d, k_d) are the windows' positions along dimension
    ``d``; every window's elements gathered (N, C, *out, prod(k)), then the first largest."""
    n, c = x.shape[0], x.shape[1]
    k = len(sizes)
    out = [p.shape[2] for p in positions]
    flat = None
    for d in range(k):
        p = positions[d].expand(n, c, out[d], positions[d].shape[3]).reshape(
            [n, c] + [out[d] if e == d else 1 for e in range(k)]
            + [positions[d].shape[3] if e == d else 1 for e in range(k)])
        flat = p if flat is None else flat * sizes[d] + p
    flat = flat.expand(n, c, *flat.shape[2:]).reshape(n, c, -1)
    window = x.reshape(n, c, -1).gather(-1, flat).reshape(n, c, *out, -1)
    values, which = window.max(-1)
    indices = flat.reshape(n, c, *out, -1).gather(-1, which.unsqueeze(-1)).squeeze(-1)
    return values, indices


@_export
def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """2-D fractional max pooling of a (N, C, H, W) or (C, H, W) input."""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


@_export
def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """3-D fractional max pooling of a (N, C, T, H, W) or (C, T, H, W) input."""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)
