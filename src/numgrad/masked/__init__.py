"""``numgrad.masked``: PyTorch's ``torch.masked`` for strided tensors, each function the
ordinary one applied to ``input`` with its masked-out elements (``mask`` False, broadcast to
``input``'s shape; ``mask=None``: none) replaced by the operation's identity: 0 for sums, 1 for
products, -inf (an integer dtype's least value) for maxima and ``log(sum(exp))``, +inf for minima,
NaN for medians. Means, variances and medians of fully masked-out rows are NaN.

Composed of numgrad's ops, so gradients are PyTorch's (nothing reaches a masked-out element).
"""
from __future__ import annotations

import math

import numpy as np

import numgrad

from .._dtype import bool_, float32, int64
from ..linalg import vector_norm
from ..nn import functional as F
from ..tensor import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]


def _dims(dim, ndim: int) -> tuple:
    """``dim`` as a sorted tuple of non-negative dimensions (None or (): all of them)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    out = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in out:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        out.append(d % ndim)
    return tuple(sorted(out))


def _mask(input: Tensor, mask) -> Tensor | None:
    """The mask as a bool tensor of ``input``'s shape (None for none)."""
    if mask is None:
        return None
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = mask.broadcast_to(input.shape)
    return mask if mask.dtype == bool_ else mask.to(bool_)


def _identity(kind: str, input: Tensor):
    floating = input.dtype.is_floating_point or input.dtype.is_complex
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if kind == "max":
        return -math.inf if floating else int(np.iinfo(input._data.dtype).min)
    if kind == "min":
        return math.inf if floating else int(np.iinfo(input._data.dtype).max)
    return math.nan  # (median)


def _filled(kind: str, input: Tensor, mask) -> Tensor:
    """``input`` with its masked-out elements replaced by the identity of ``kind``."""
    mask = _mask(input, mask)
    if mask is None:
        return input
    ng = numgrad
    fill = ng.tensor(_identity(kind, input), dtype=input.dtype, device=input.device)
    return ng.where(mask, input, fill)


def _sum_dtype(input: Tensor, dtype):
    if dtype is not None:
        return dtype
    return input.dtype if input.dtype.is_floating_point or input.dtype.is_complex else int64


# ------------------------------------------------------------------ reductions
def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The sum of the masked-in elements over ``dim``."""
    dims = _dims(dim, input.ndim)
    return numgrad.sum(_filled("sum", input, mask), dims, bool(keepdim),
                     dtype=_sum_dtype(input, dtype))


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The product of the masked-in elements over ``dim``."""
    dims = _dims(dim, input.ndim)
    out = _filled("prod", input, mask).to(_sum_dtype(input, dtype))
    for d in reversed(dims):
        out = out.prod(d, keepdim=bool(keepdim))
    return out


def amax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The largest masked-in element over ``dim`` (-inf where none)."""
    x = _filled("max", input, mask)
    return numgrad.amax(x, _dims(dim, x.ndim), bool(keepdim)).to(dtype or input.dtype)


def amin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The smallest masked-in element over ``dim`` (inf where none)."""
    x = _filled("min", input, mask)
    return numgrad.amin(x, _dims(dim, x.ndim), bool(keepdim)).to(dtype or input.dtype)


def argmax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The index of the largest masked-in element along ``dim``, in ``dtype`` (the input's)."""
    x = _filled("max", input, mask)
    return numgrad.argmax(x, dim, bool(keepdim)).to(dtype or input.dtype)


def argmin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The index of the smallest masked-in element along ``dim``, in ``dtype`` (the input's)."""
    x = _filled("min", input, mask)
    return numgrad.argmin(x, dim, bool(keepdim)).to(dtype or input.dtype)


def _count(input: Tensor, mask, dim, keepdim: bool) -> Tensor:
    """How many elements are masked in over ``dim``."""
    ng = numgrad
    m = _mask(input, mask)
    if m is None:
        m = ng.ones(tuple(input.shape), dtype=int64, device=input.device)
    return ng.sum(m, _dims(dim, input.ndim), bool(keepdim), dtype=int64)


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The mean of the masked-in elements over ``dim`` (NaN where none)."""
    source = "Input" if dtype is None else "Optional"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a "
                         f"floating point or complex dtype. Got: torch.{dtype.name}")
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, mask, dim, keepdim)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None,
           mask=None) -> Tensor:
    """The median of the masked-in elements along ``dim`` (NaN where none; the lower of the
    two middle ones for an even count, as ``nanmedian``)."""
    dtype = dtype or input.dtype
    d = _dims(dim, input.ndim)[0]
    floating = input.dtype.is_floating_point
    x = _filled("median", input if floating else input.to(float32), mask)
    out = numgrad.nanmedian(x, d, keepdim).values
    if floating:
        return out
    if bool(out.isnan().any()):
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return out.to(dtype)


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
              mask=None) -> Tensor:
    """``log(sum(exp))`` of the masked-in elements over ``dim`` (-inf where none)."""
    x = _filled("max", input, mask)
    return numgrad.logsumexp(x, _dims(dim, input.ndim), keepdim=keepdim).to(dtype or input.dtype)


def norm(input: Tensor, ord=2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask=None) -> Tensor:
    """The ``ord``-norm of the masked-in elements over ``dim``."""
    kind = "min" if ord == -math.inf else "sum"
    x = _filled(kind, input, mask)
    return vector_norm(x, ord, _dims(dim, input.ndim), bool(keepdim), dtype=dtype or input.dtype)


def _std_var(input: Tensor, dim, unbiased, correction, keepdim: bool, dtype, mask,
             root: bool) -> Tensor:
    if unbiased is not None and correction is not None:
        raise RuntimeError("Only one of unbiased and correction may be given")
    c = 1.0 if unbiased is None and correction is None else (
        float(correction) if correction is not None else float(bool(unbiased)))
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point or input.dtype.is_complex else \
            float32
    ng = numgrad
    count = _count(input, mask, dim, True)
    centred = input - sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    # (|x - mean|**2 of complex elements: a complex result of zero imaginary parts, PyTorch's)
    square = centred * (centred.conj() if centred.dtype.is_complex else centred)
    total = sum(square, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    if not keepdim:
        count = count.reshape(total.shape)
    if c != 0:  # (counted in the real dtype of a complex one)
        count = ng.clamp_min(count.to(dtype.to_real()) - c, 0)
    out = (total / count).to(dtype)
    return out.sqrt() if root else out


def var(input: Tensor, dim=None, unbiased=None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    """The variance of the masked-in elements over ``dim`` (``correction`` 1 by default)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input: Tensor, dim=None, unbiased=None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    """The standard deviation of the masked-in elements over ``dim``."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


# ------------------------------------------------------------------ along one dimension
def cumsum(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """The running sums along ``dim``, masked-out elements counted as 0."""
    dtype = dtype or input.dtype
    x = _filled("sum", input, mask)
    return numgrad.cumsum(x, _dims(dim, input.ndim)[0], dtype=dtype).to(dtype)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """The running products along ``dim``, masked-out elements counted as 1."""
    dtype = dtype or input.dtype
    x = _filled("prod", input, mask)
    return numgrad.cumprod(x, _dims(dim, input.ndim)[0], dtype=dtype).to(dtype)


def softmax(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """``softmax`` along ``dim`` over the masked-in elements (0 at the others)."""
    return F.softmax(_filled("max", input, mask), _dims(dim, input.ndim)[0],
                     dtype=dtype or input.dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """``log_softmax`` along ``dim`` over the masked-in elements (-inf at the others)."""
    return F.log_softmax(_filled("max", input, mask), _dims(dim, input.ndim)[0],
                         dtype=dtype or input.dtype)


def softmin(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """``softmin`` along ``dim`` over the masked-in elements (0 at the others)."""
    return F.softmin(_filled("min", input, mask), _dims(dim, input.ndim)[0],
                     dtype=dtype or input.dtype)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None,
              mask=None) -> Tensor:
    """``input`` (masked-out elements 0) divided by the ``ord``-norm of its masked-in elements
    along ``dim`` (at least ``eps``)."""
    n = norm(input, ord, dim, keepdim=True, dtype=dtype or input.dtype, mask=mask)
    return _filled("sum", input, mask) / numgrad.clamp_min(n, eps)


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask=None,
              other_mask=None) -> Tensor:
    """``logaddexp`` of the two, each one's masked-out elements taken as -inf."""
    out = numgrad.logaddexp(_filled("max", input, input_mask), _filled("max", other, other_mask))
    return out.to(dtype or input.dtype)

