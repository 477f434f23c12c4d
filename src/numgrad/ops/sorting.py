"""Sorting along one dimension: ``sort`` (``(values, indices)``, as
``torch.return_types.sort``), ``argsort`` and ``topk``.

The order is PyTorch's: NaN is the largest value, and the sort is stable (equal values keep
their order, descending too). ``topk`` takes the first ``k`` of that order, so among equal values
it returns the first ones; PyTorch leaves which ones unspecified (its CPU kernel may return others).
The gradient of either goes back to the positions the indices name (PyTorch's
``value_selecting_reduction_backward``: a scatter into zeros, recorded, so second derivatives
work).
"""
from __future__ import annotations

import numpy as np

from ..autograd.graph import keep_given
from ..tensor import Tensor, _wrap_dim
from ._names import export
from .reduction import _ValuesIndices
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from .gather import _scatter_into_zeros


class _SortResult(_ValuesIndices):
    _name = "sort"


class _TopkResult(_ValuesIndices):
    _name = "topk"


class _Selecting(Op):
    """The values a kernel selected along ``dim`` (computed with their indices before the op
    runs: ``forward`` passes them through); the gradient goes back to the indices."""

    jvp = _jvp.transposed_backward
    on_cuda = True

    @staticmethod
    def forward(K, values, *, dim, indices):
        return values

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        if not shape:
            return (grad,)

        return (_scatter_into_zeros(shape, ctx.params["dim"], ctx.params["indices"], grad),)


@register
class Sort(_Selecting):
    name, node = "sort", "SortBackward0"
    samples = (
        Sample(lambda m, a: m.sort(a)[0], ((3, 4),)),
        Sample(lambda m, a: a.t().sort(dim=0, descending=True).values, ((3, 4),)),
    )


@register
class SortStable(_Selecting):
    """``sort`` called with ``stable=`` (PyTorch's other overload, another node name)."""

    name, node = "sort_stable", "SortBackward1"
    samples = (Sample(lambda m, a: m.sort(a, stable=True, dim=-1).values, ((5,),)),
               Sample(lambda m, a: a.sort(stable=False, descending=True)[0], ((2, 3),)))


@register
class Topk(_Selecting):
    name, node = "topk", "TopkBackward0"
    samples = (
        Sample(lambda m, a: a.topk(2).values, ((3, 4),)),
        Sample(lambda m, a: m.topk(a, 2, dim=0, largest=False).values, ((3, 4),)),
    )


def _checked(input: Tensor, dim):
    data = input._data
    if data.dtype.kind == "c":  # (PyTorch's CPU sorts refuse complex numbers)
        raise RuntimeError("Sort does not support complex dtypes on CPU")
    d = (_wrap_dim(int(dim), data.ndim) % max(data.ndim, 1))
    return data, d


@export(method=True)
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable=None):
    """``(values, indices)``: ``input`` sorted along ``dim`` (ascending unless ``descending``;
    always stable, whatever ``stable`` says; NaN largest)."""
    data, d = _checked(input, dim)
    op = Sort if stable is None else SortStable
    K = kernels_for((input,), op)
    values, indices = K.sort_dim(data, d, bool(descending))
    out = apply(op, (input,), (values,), dim=d, indices=indices)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return _SortResult(out, Tensor._wrap(indices))


@export(method=True)
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (int64)."""
    data, d = _checked(input, dim)
    return Tensor._wrap(kernels_for((input,)).sort_dim(data, d, bool(descending))[1])


@export(method=True)
def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension."""
    return sort(input, 0)[0]


@export(method=True)
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements along
    ``dim``, in order (also with ``sorted=False``)."""
    data, d = _checked(input, dim)
    k = int(k)
    size = data.shape[d] if data.ndim else 1
    if k < 0 or k > size:
        raise RuntimeError("selected index k out of range")
    if data.dtype == np.bool_:
        device = "CPU" if isinstance(data, np.ndarray) else "CUDA"
        raise RuntimeError(f"topk does not support bool dtypes on {device}")
    K = kernels_for((input,), Topk)
    values, indices = K.topk_dim(data, k, d, bool(largest))
    out = apply(Topk, (input,), (values,), dim=d, indices=indices)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return _TopkResult(out, Tensor._wrap(indices))
