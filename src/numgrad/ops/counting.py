"""Counting and searching (no gradient), with PyTorch's names, defaults and errors:
``searchsorted``/``bucketize`` (``K.search_sorted``), ``bincount`` and ``histc`` (``K.bincount``,
``K.histc``: ``kernels/*/counting.py``), ``nn.functional.one_hot`` and
``triu_indices``/``tril_indices``.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _lowp
from .._dtype import promote_types, to_dtype, torch_name
from ..tensor import Tensor
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register
from ._common import _i, _with_out
from .._out import write
from ..creation import _finish


# ------------------------------------------------------------------ counting and searching
@register
class SearchSorted(Op):
    name, node = "searchsorted", "NotImplemented"
    on_cuda = True
    differentiable = False
    samples = (
        Sample(lambda m, a: m.searchsorted(m.tensor([-1., 0, 1], dtype=a.dtype, device=a.device),
                                           a), ((3, 4),), grad=False),
        Sample(lambda m, a: m.searchsorted(a.sort(-1).values, a[:, :2] * 0.5, right=True,
                                           out_int32=True), ((3, 4),), grad=False),
        Sample(lambda m, a: m.bucketize(a, m.tensor([-1., 0, 1], dtype=a.dtype, device=a.device),
                                        right=True), ((5,),), grad=False),
    )

    @staticmethod
    def forward(K, bounds, values, *sorter, right, out_dtype):
        return K.search_sorted(bounds, values, sorter[0] if sorter else None, right,
                                      out_dtype)


def _as_values(value, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return Tensor._wrap(kernels_for((like,)).full((), value, to_dtype(type(value)).np
                                                  if not isinstance(value, bool) else np.bool_))


def _searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                  right: bool = False, side=None, sorter=None) -> Tensor:
    """For each value of ``input``, the position in ``sorted_sequence`` (1-D, or one sorted line
    per leading position of ``input``) where it would be inserted to keep it sorted: before equal
    values, or after them with ``right=True`` / ``side='right'``."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                               f"{side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    bounds = sorted_sequence
    values = _as_values(input, bounds)
    bd, vd = bounds._data, values._data
    if not bd.ndim:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if bd.ndim > 1 and (vd.ndim != bd.ndim or tuple(vd.shape[:-1]) != tuple(bd.shape[:-1])):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(bd.shape)} and input value tensor {list(vd.shape)}")
    K = kernels_for((bounds, values, sorter), SearchSorted)
    arrays = [bd, vd]
    inputs = [bounds, values]
    if sorter is not None:
        if sorter._data.dtype != np.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {torch_name(sorter._data.dtype)}")
        if tuple(sorter._data.shape) != tuple(bd.shape):
            raise RuntimeError(
                "torch.searchsorted(): boundary and sorter must have the same size, but got "
                f"boundary tensor {list(bd.shape)}and got sorter tensor "
                f"{list(sorter._data.shape)}")
        s = sorter._data
        if isinstance(s, np.ndarray) and s.size and ((s < 0) | (s >= tuple(bd.shape)[-1])).any():
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        arrays.append(s)
        inputs.append(sorter)
    common = promote_types(bounds.dtype, values.dtype).np
    if common == np.bool_:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    arrays[0] = arrays[0] if arrays[0].dtype == common else K.cast(arrays[0], common)
    arrays[1] = arrays[1] if arrays[1].dtype == common else K.cast(arrays[1], common)
    if common.num in _lowp.NARROW:
        # (a narrow dtype searched widened here, not by ``apply``, which would round an int32
        # result, out_int32's, back to the narrow dtype: widening keeps every order)
        arrays[:2] = _lowp.widened(K, tuple(arrays[:2]))[0]
    return apply(SearchSorted, tuple(inputs), tuple(arrays), right=bool(right),
                 out_dtype=np.dtype(np.int32 if out_int32 else np.int64))


def _bucketize(input, boundaries: Tensor, *, out_int32: bool = False,
               right: bool = False) -> Tensor:
    """For each value of ``input``, the index of its bucket among the sorted 1-D ``boundaries``
    (``boundaries[i-1] < x <= boundaries[i]``; with ``right``, ``<= x <``)."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return _searchsorted(boundaries, input, out_int32=out_int32, right=right)


searchsorted = export(_with_out(_searchsorted, "searchsorted"), "searchsorted")


bucketize = export(_with_out(_bucketize, "bucketize"), "bucketize")


@register
class Bincount(Op):
    """``bincount``: PyTorch defines no derivative (with weights, its node raises)."""

    name, node = "bincount", "NotImplemented"
    on_cuda = True
    differentiable = False
    samples = (
        Sample(lambda m, a: m.bincount(_i(m, a, [0, 1, 1, 3, 1])), ((1,),), grad=False),
        Sample(lambda m, a: _i(m, a, [2, 0, 2]).bincount(a, minlength=5), ((3,),), grad=False),
    )

    @staticmethod
    def forward(K, x, *weights, length, out_dtype):
        return K.bincount(x, weights[0] if weights else None, length, out_dtype)


@export(method=True)
def bincount(input: Tensor, weights=None, minlength: int = 0) -> Tensor:
    """The number of times each non-negative integer appears in the 1-D ``input`` (with
    ``weights``: the sum of their weights), ``max(input) + 1`` long or ``minlength``."""
    data = input._data
    if data.dtype == np.bool_ or np.dtype(data.dtype).kind == "f":
        raise NotImplementedError(
            f"\"bincount_cpu\" not implemented for '{torch_name(data.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if data.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    K = kernels_for((input, weights), Bincount)
    length = int(minlength)
    if data.size:
        lo = int(np.asarray(K.to_host(K.reduce_dims(K.MIN, data, (0,), False))))
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        hi = int(np.asarray(K.to_host(K.reduce_dims(K.MAX, data, (0,), False))))
        length = builtins.max(length, hi + 1)
    x = data if data.dtype == np.int64 else K.cast(data, np.int64)
    if weights is None:
        return apply(Bincount, (input,), (x,), length=length, out_dtype=np.dtype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != data.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = np.dtype(np.float32 if w.dtype == np.float32 else np.float64)
    if w.dtype != out_dtype:
        w = K.cast(w, out_dtype)
    return apply(Bincount, (input, weights), (x, w), length=length, out_dtype=out_dtype)


@register
class Histc(Op):
    name, node = "histc", "NotImplemented"
    on_cuda = True
    differentiable = False
    samples = (
        Sample(lambda m, a: m.histc(a), ((3, 4),), grad=False),
        Sample(lambda m, a: a.t().histc(bins=5, min=-1, max=1.5), ((3, 4),), grad=False),
    )

    @staticmethod
    def forward(K, x, *, bins, lo, hi):
        return K.histc(x, bins, lo, hi)


def _g(value: float) -> str:
    return f"{value:g}"


@export(method=True)
def histc(input: Tensor, bins: int = 100, min=0, max=0, *, out=None) -> Tensor:
    """The histogram of ``input`` in ``bins`` equal bins over ``[min, max]`` (the data's range
    where both are 0); elements outside are ignored."""
    data = input._data
    if np.dtype(data.dtype).kind not in "fV":  # ("V": bfloat16, numgrad._lowp)
        raise NotImplementedError(
            f"\"histogram_cpu\" not implemented for '{torch_name(data.dtype)}'")
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    K = kernels_for((input,), Histc)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        every = tuple(range(data.ndim))
        lo, hi = (float(_lowp.to_float(np.asarray(K.to_host(
            _lowp.wider(K.reduce_dims, code, data, every, False)))))
            for code in (K.MIN, K.MAX))  # (float16, bfloat16: their extremes found in float32)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    t = np.dtype(data.dtype).type if data.dtype.kind == "f" else np.float32
    lo, hi = float(t(lo)), float(t(hi))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_g(lo)}, {_g(hi)}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    result = apply(Histc, (input,), (data,), bins=bins, lo=lo, hi=hi)
    if out is None:
        return result

    write(out, result)
    return out


@register
class OneHot(Op):
    """``nn.functional.one_hot`` (PyTorch composes it; its result never requires grad)."""

    name, node = "one_hot", "NotImplemented"
    on_cuda = True
    differentiable = False
    samples = (
        Sample(lambda m, a: m.nn.functional.one_hot(_i(m, a, [0, 2, 1, 2])), ((1,),), grad=False),
        Sample(lambda m, a: m.nn.functional.one_hot(_i(m, a, [[1], [0]]), 4), ((1,),),
               grad=False),
    )

    @staticmethod
    def forward(K, x, *, num_classes):
        classes = K.upload(np.arange(num_classes, dtype=np.int64))
        hit = K.binary(K.EQ, K.reshape_view(x, tuple(x.shape) + (1,)), classes, np.bool_)
        return K.cast(hit, np.int64)


@export(function=False, functional=True)
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """The int64 one-hot encoding of the class indices ``tensor``: a new last dimension of
    ``num_classes`` (``max + 1`` where -1) with a 1 at each index."""
    data = tensor._data
    if data.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    K = kernels_for((tensor,), OneHot)
    n = int(num_classes)
    every = tuple(range(data.ndim))
    if not data.size:
        if n == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        lo = int(np.asarray(K.to_host(K.reduce_dims(K.MIN, data, every, False))))
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        hi = int(np.asarray(K.to_host(K.reduce_dims(K.MAX, data, every, False))))
        if n == -1:
            n = hi + 1
        elif hi >= n:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return apply(OneHot, (tensor,), (data,), num_classes=n)


def _tri_indices(row: int, col: int, offset: int, dtype, device, upper: bool) -> Tensor:
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    kind = to_dtype(dtype).np if dtype is not None else np.dtype(np.int64)
    if kind.kind != "i":
        name = "triu_indices" if upper else "tril_indices"
        raise NotImplementedError(f"\"{name}\" not implemented for '{torch_name(kind)}'")
    r, c = np.indices((row, col)).reshape(2, -1)
    keep = (c - r >= offset) if upper else (c - r <= offset)
    return _finish(np.ascontiguousarray(np.stack([r[keep], c[keep]]).astype(kind)), False, device)


@export
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The coordinates (a 2 x N int64 tensor, row-major order) of the upper triangle of a
    ``row`` x ``col`` matrix, from diagonal ``offset`` on."""
    return _tri_indices(int(row), int(col), int(offset), dtype, device, True)


@export
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The coordinates (a 2 x N int64 tensor, row-major order) of the lower triangle of a
    ``row`` x ``col`` matrix, up to diagonal ``offset``."""
    return _tri_indices(int(row), int(col), int(offset), dtype, device, False)
