"""Order statistics along a dimension: ``kthvalue`` (``(values, indices)``), ``quantile`` and
``nanquantile``.

Composed as ATen computes them, of ``sort`` (NaN largest, stable), ``gather`` and ``lerp``, so
the gradient goes back to the elements picked (shared between the two neighbours of an
interpolated quantile by its weights), as PyTorch's does.
"""
from __future__ import annotations

import numpy as np

from .. import _lowp
from .._dtype import torch_name
from ..tensor import Tensor, _wrap_dim
from ._names import Out, export
from .predicates import _MedianDimOp
from .reduction import _ValuesIndices, _given, _result_shape
from .registry import Sample, apply, kernels_for, register
from .sorting import sort
import numgrad


class _KthvalueResult(_ValuesIndices):
    _name = "kthvalue"


@register
class Kthvalue(_MedianDimOp):
    """The ``k``-th smallest values along ``dim`` (``KthvalueBackward0``): the gradient goes back
    to the indices picked."""

    name, node = "kthvalue", "KthvalueBackward0"
    samples = (Sample(lambda m, a: a.kthvalue(2, 1)[0], ((3, 4),)),
               Sample(lambda m, a: m.kthvalue(a, 3, 0, keepdim=True).values, ((3, 2),)))


def _device(data) -> str:
    return "cpu" if isinstance(data, np.ndarray) else "cuda"


@export(method=True, out=Out(several=True, no_overlap=True))
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """``(values, indices)`` of the ``k``-th smallest element along ``dim`` (``k`` from 1; NaN
    largest, ties by position, as a stable sort orders them)."""
    data = input._data
    if data.dtype == np.bool_ or data.dtype.kind == "c":
        raise NotImplementedError(f'"kthvalue_{_device(data)}" not implemented for '
                                  f"'{torch_name(data.dtype)}'")
    nd = data.ndim
    d = _wrap_dim(dim, nd) % max(nd, 1)
    if nd and not data.shape[d]:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    size = data.shape[d] if nd else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    K = kernels_for((input,), Kthvalue)
    if nd == 0:
        values, indices = K.copy(data), K.zeros((), np.dtype(np.int64))
        out = _given(apply(Kthvalue, (input,), (values,), dim=0, indices=indices,
                           keepdim=bool(keepdim)), dim, 0)
        return _KthvalueResult(out, Tensor._wrap(indices))
    ordered, order = K.order_dim(data, d)
    kept = tuple(1 if i == d else n for i, n in enumerate(data.shape))
    pos = K.full(kept, np.int64(k - 1), np.dtype(np.int64))
    chosen = K.gather_dim(order, d, pos)
    picked = _lowp.wider(K.gather_dim, ordered, d, pos)  # (float16: gathered as float32)
    shape = _result_shape(data.shape, (d,), keepdim)
    out = _given(apply(Kthvalue, (input,), (K.reshape_view(picked, shape),), dim=d,
                       indices=chosen, keepdim=bool(keepdim)), dim, d)
    return _KthvalueResult(out, Tensor._wrap(K.reshape_view(chosen, shape)))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q, dim, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    if input._data.dtype not in (np.float32, np.float64):  # (PyTorch's: float16 neither)
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if q.numel() and not bool(((q.detach() >= 0) & (q.detach() <= 1)).all()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        qs = q.detach()
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        qs = numgrad.tensor(float(q), dtype=input.dtype, device=input.device)
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is None:
        x = input.reshape(-1)
        sorted_x = sort(x)[0]
    else:
        d = _wrap_dim(dim, input.ndim)
        x = input.unsqueeze(-1) if input.ndim else input.reshape(1, 1)
        x = x.transpose(d, -1) if input.ndim else x
        sorted_x = sort(x)[0]
    lead = tuple(sorted_x.shape[:-1])
    n = sorted_x.shape[-1]
    q1 = qs.reshape(-1)
    qn = q1.shape[0]
    nan = sorted_x.detach().isnan()
    if ignore_nan:
        count = (~nan).sum(-1, keepdim=True).to(input.dtype)
        ranks = q1 * (count - 1)
        ranks = numgrad.where(ranks < 0, 0.0, ranks)
    else:
        ranks = (q1 * (n - 1)).expand(*lead, qn)
        ranks = numgrad.where(nan.any(-1, keepdim=True), float(n - 1), ranks)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.to(numgrad.int64)
    values = sorted_x.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = (ranks - below.to(input.dtype)) if interpolation == "linear" else \
            numgrad.full_like(ranks, 0.5)
        above = sorted_x.gather(-1, ranks.ceil().to(numgrad.int64))
        values = values.lerp(above, weights)
    if qs.ndim == 0:
        values = values.squeeze(-1)
    else:
        values = values.movedim(-1, 0)
    if dim is None:
        if keepdim:
            shape = (1,) * input.ndim
            values = values.reshape((qn,) + shape if qs.ndim else shape)
        return values
    if not keepdim and input.ndim:
        values = values.squeeze(d + (qs.ndim > 0))
    elif not input.ndim:
        values = values.reshape((qn,) if qs.ndim else ())
    return values


@export(method=True)
def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of ``input`` along ``dim`` (of all its elements when None), NaN
    where a reduced row holds a NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


@export(method=True)
def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (NaN only where a reduced row is all NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)
