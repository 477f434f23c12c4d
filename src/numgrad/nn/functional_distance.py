"""``nn.functional``'s distances and similarities: ``normalize``, ``cosine_similarity``,
``pairwise_distance`` and ``pdist``, composites of numgrad's ops written as PyTorch writes them
(ATen's composites), so values, gradients, second derivatives and ``grad_fn`` nodes are
PyTorch's.
"""
from __future__ import annotations

import math

from ..tensor import Tensor
import numgrad
from ..ops.counting import triu_indices
from ..ops._names import export as _export


def _dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


# ------------------------------------------------------------------ distances and similarities
def _norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """``linalg.vector_norm(x, p, dim, keepdim)``: ``Tensor.norm`` for p=2, else composed."""
    p = float(p)
    if p == 2.0:
        return x.norm(2, dim, keepdim=keepdim)
    a = x.abs()
    if p == math.inf:
        return a.amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return a.amin(dim, keepdim=keepdim)
    if p == 0.0:
        return (a != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == 1.0:
        return a.sum(dim, keepdim=keepdim)
    return (a ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


@_export
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim`` (node ``DivBackward0``)."""
    denom = _norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom

    return numgrad.div(input, denom, out=out)


@_export
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``, as ATen
    computes it: each input divided by its clamped norm first, then the product summed
    (node ``SumBackward1``)."""
    shape = _broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = _norm(x1, 2, dim, keepdim=True).clamp(min=eps)
    n2 = _norm(x2, 2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _broadcast_shapes(a, b) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


@_export
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dimension (ATen's ``pairwise_distance``)."""
    out_dim = max(x1.ndim, x2.ndim)
    if out_dim == 0:  # (two numbers: ATen takes the norm over dimension 0 of their difference)
        return (x1 - x2 + eps).abs() if p != 0 else ((x1 - x2 + eps) != 0).to(x1.dtype)
    return _norm(x1 - x2 + eps, p, out_dim - 1, keepdim=keepdim)


@_export
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distances between the rows of an ``(N, M)`` input, each pair ``i < j``
    once, in row-major order: ``N (N - 1) / 2`` values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    return _norm(input[i] - input[j], p, 1)
