"""``histogram`` and ``histogramdd``: counts (or summed weights, or densities) of a float
tensor's values, or of its innermost dimension's points, in bins given by their number (equal
bins over ``range`` or the data's range) or their edges; ``(hist, bin_edges)`` as PyTorch returns
them. A point's bin is found by ``searchsorted`` among the edges (the last bin closed on the
right, points outside every bin dropped), the counts by ``bincount``; not differentiable, as
PyTorch's."""
from __future__ import annotations

import math

from .._dtype import torch_name
from ..tensor import Tensor
from ._names import export
from .linalg_common import _ExResult
import numgrad


class _HistogramResult(_ExResult):
    _fields, _name = ("hist", "bin_edges"), "histogram"


def _ng():
    return numgrad


def _edges(points: Tensor, d: int, bins, range_) -> Tensor:
    """The bin edges of dimension ``d``."""
    ng = _ng()
    if isinstance(bins, Tensor):
        if bins.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {bins.ndim} dimensions in the bins tensor for dimension {d}")
        return bins.detach().to(points.dtype)
    b = int(bins)
    if b <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension {d}")
    if range_ is not None:
        lo, hi = float(range_[2 * d]), float(range_[2 * d + 1])
    elif points.shape[0]:
        column = points[:, d]
        lo, hi = float(column.min()), float(column.max())
    else:
        lo, hi = 0.0, 0.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_g(lo)} "
                           f"max {_g(hi)} for dimension {d}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{_g(lo)}, {_g(hi)}] is "
                           "not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return ng.linspace(lo, hi, b + 1, dtype=points.dtype, device=points.device)


def _g(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(v)


@export
def histogramdd(input: Tensor, bins, *, range=None, weight=None, density: bool = False):
    """The histogram of the points in ``input``'s innermost dimension (D coordinates each):
    ``bins`` an int, D ints, or D 1-D tensors of edges."""
    ng = _ng()
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{torch_name(input._data.dtype)}'")
    D = input.shape[-1] if input.ndim else 1
    if isinstance(bins, (list, tuple)) and len(bins) != D:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * D
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                           f"have {2 * D} elements, but got {len(range)}")
    points = input.detach().reshape(-1, D)
    edges = [_edges(points, d, b, range) for d, b in enumerate(per_dim)]
    sizes = [e.shape[0] - 1 for e in edges]
    total = math.prod(sizes)
    flat = ng.zeros(points.shape[0], dtype=ng.int64, device=input.device)
    inside = ng.ones(points.shape[0], dtype=ng.bool, device=input.device)
    for d, e in enumerate(edges):
        x = points[:, d].contiguous()
        k = ng.searchsorted(e, x, right=True) - 1
        k = ng.where(x == e[-1], sizes[d] - 1, k)  # (the last bin is closed on the right)
        inside = inside & (k >= 0) & (k < sizes[d]) & (x >= e[0]) & (x <= e[-1])
        flat = flat * sizes[d] + k.clamp(0, max(sizes[d] - 1, 0))
    flat = ng.where(inside, flat, total)  # (an extra bin for the points outside, dropped)
    w = None if weight is None else weight.detach().reshape(-1).to(ng.float64)
    hist = ng.bincount(flat, w, total + 1)[:total].to(input.dtype).reshape(sizes)
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = (e[1:] - e[:-1]).reshape([-1 if k == d else 1 for k in builtins_range(D)])
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return _HistogramResult(hist, tuple(edges))


@export(method=True)
def histogram(input: Tensor, bins=100, *, range=None, weight=None, density: bool = False):
    """The histogram of ``input``'s values: ``bins`` equal bins over ``range`` (the data's range
    by default) or the edges ``bins`` (a 1-D tensor)."""
    if isinstance(bins, Tensor) and bins.ndim != 1:
        raise RuntimeError("torch.histogram(): bins tensor should have one dimension, but got "
                           f"{bins.ndim} dimensions in the bins tensor")
    hist, edges = histogramdd(input.reshape(-1, 1), [bins], range=range,
                              weight=None if weight is None else weight.reshape(-1),
                              density=density)
    return _HistogramResult(hist, edges[0])


builtins_range = __builtins__["range"] if isinstance(__builtins__, dict) else __builtins__.range
