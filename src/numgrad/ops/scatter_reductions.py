"""``scatter_reduce`` and ``index_reduce``: ``src``'s elements reduced (sum, product, mean,
largest, smallest) into the positions of ``input`` that ``index`` names along ``dim``, with
``input``'s own element taking part (``include_self``) or not.

Sums and means are composed of ``scatter_add``; products and extremes are one op
(``ScatterReduceBackward0``) whose forward is the scatter kernel's multiply / max / min mode and
whose backward is PyTorch's, made of recorded ops (so second derivatives work): a product's
gradient is the product of the other contributors (zeros handled: a single zero gets the
product of the rest), an extreme's is shared evenly among the elements equal to it.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtype import bool_, int64
from ..tensor import Tensor, _wrap_dim
from ._names import export
from .gather import (
    ADD, MULTIPLY, SET, ScatterAdd, _gather, _index_of, _scatter_checks, _scatter_into_zeros,
    scatter_add,
)
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
import numgrad
from .elementwise import where
from .inplace import _write

AMAX, AMIN = 3, 4  # (the scatter kernel's modes)
_MODES = {"prod": MULTIPLY, "amax": AMAX, "amin": AMIN}
_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, np_dtype):
    """The value an excluded ``input`` element starts from."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if np_dtype.kind in "fV" else (  # ("V": bfloat16, a float)
        1 if np_dtype.kind == "b" else np.iinfo(np_dtype).max)
    small = -np.inf if np_dtype.kind in "fV" else (
        0 if np_dtype.kind == "b" else np.iinfo(np_dtype).min)
    return small if reduce == "amax" else big


def _hits(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """How many of ``src``'s elements land on each position of ``input`` (int64)."""
    zeros = input.new_zeros(tuple(input.shape), dtype=int64)
    return scatter_add(zeros, dim, index, index.new_ones(tuple(index.shape), dtype=int64))


@register
class ScatterReduceTwo(Op):
    """``scatter_reduce`` with ``reduce`` 'prod', 'amax' or 'amin'. (Its samples leave 'prod'
    out: PyTorch 2.13's forward-mode derivative of it is zero, which the registry's jvp test
    would compare against; tests/test_composite_ops.py checks 'prod' by finite differences. An
    excluded ``input`` element equal to the extreme still counts in the share, as in PyTorch's
    backward, though not in its forward-mode derivative: the samples keep clear of that tie.)"""

    name, node = "scatter_reduce", "ScatterReduceBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True  # (the CUDA scatter's AMAX/AMIN and MULTIPLY run one thread, in index order)
    save_inputs = (0, 1)
    save_output = True
    samples = (
        Sample(lambda m, a, s: a.scatter_reduce(1, m.tensor([[1, 1], [2, 1]], device=a.device),
                                                s, "amax", include_self=False),
               ((2, 3), (2, 2))),
        Sample(lambda m, a, s: m.scatter_reduce(a, 0, m.tensor([2, 0, 2], device=a.device), s,
                                                "amin"), ((3,), (3,))),
    )

    @staticmethod
    def forward(K, a, src, *, dim, index, mode, include_self, fill):
        if not include_self:
            a = K.scatter_dim(a, dim, index, K.full(tuple(index.shape), fill, a.dtype), SET)
        return K.scatter_dim(a, dim, index, src, mode)

    @staticmethod
    def backward(ctx, grad):
        a, src, out = ctx.saved_tensors
        p = ctx.params
        dim, index, include_self = p["dim"], p["index"], p["include_self"]
        idx = Tensor._wrap(index)
        shape = tuple(a.shape)
        if p["mode"] == MULTIPLY:
            grad_self = grad_src = None
            zero_src = src.detach() == 0
            if include_self:
                kept = where(a.detach() == 0, 1.0, a)
                others = _reduce(kept, dim, idx, src, "prod", True)
                grad_self = grad * others / kept
            zeros = _scatter_into_zeros(shape, dim, index, zero_src.to(a.dtype), ScatterAdd)
            if include_self:
                zeros = zeros + (a.detach() == 0).to(a.dtype)
            single = zero_src & (_gather(zeros, dim, index) == 1)
            rest = _reduce(a, dim, idx, where(single, 1.0, src), "prod", include_self)
            grad_src = where(single, _gather(grad * rest, dim, index),
                             _gather(grad * out, dim, index) / where(zero_src, 1.0, src))
        else:  # (as PyTorch: masks multiplied in, so a NaN's share stays NaN)
            at_src = (src.detach() == _gather(out.detach(), dim, index)).to(a.dtype)
            at_self = (a.detach() == out.detach()).to(a.dtype)
            count = at_self + _scatter_into_zeros(shape, dim, index, at_src, ScatterAdd)
            share = grad / count
            grad_self = at_self * share
            grad_src = at_src * _gather(share, dim, index)
        if not include_self:
            hit = _hits(a, dim, idx) > 0
            grad_self = where(hit, 0.0, grad if grad_self is None else grad_self)
        return grad_self, grad_src


def _reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
            include_self: bool) -> Tensor:
    """``scatter_reduce`` for checked arguments (``dim`` non-negative, ``index`` int64)."""
    if reduce in ("sum", "mean"):
        base = input
        if not include_self or reduce == "mean":
            hits = _hits(input, dim, index)
        if not include_self:
            base = where(hits > 0, input.new_zeros(()), input)
        total = scatter_add(base, dim, index, src)
        if reduce == "sum":
            return total
        count = hits + int(include_self)
        count = where(count == 0, 1, count)
        if input.dtype.is_floating_point:
            mean = total / count.to(input.dtype)
        else:
            mean = total.div(count, rounding_mode="floor").to(input.dtype)
        return where(hits > 0, mean, input)
    K = kernels_for((input, src), ScatterReduceTwo)
    fill = _identity(reduce, input._data.dtype)
    return apply(ScatterReduceTwo, (input, src), (input._data, src._data), dim=dim,
                 index=K.copy(index._data), mode=_MODES[reduce], include_self=bool(include_self),
                 fill=fill)


@export(method=True)
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """``src`` reduced into ``input`` at the positions ``index`` names along ``dim``: 'sum',
    'prod', 'mean' (integers: floor division), 'amax' or 'amin' (a NaN wins)."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    K = kernels_for((input, index, src))
    d = _wrap_dim(int(dim), input.ndim) % max(input.ndim, 1)
    idx = Tensor._wrap(_index_of("scatter_reduce", index, K))
    _scatter_checks("scatter", input, d, index, src)
    if input.dtype == bool_:
        out = _reduce(input.to(int64), d, idx, src.to(int64), reduce, include_self)
        return out.to(bool_)
    if src.ndim == idx.ndim and tuple(idx.shape) != tuple(src.shape):  # (src's leading part)
        src = src[tuple(slice(0, n) for n in idx.shape)]
    return _reduce(input, d, idx, src, reduce, include_self)


@export(method=True)
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """``source``'s slices along ``dim`` reduced into ``input``'s slices ``index`` names:
    'prod', 'mean', 'amax' or 'amin' (in beta in PyTorch, which warns so once a process)."""
    from .. import _warn_once

    _warn_once("index_reduce() is in beta and the API may change at any time.")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or amin "
                           f"but got {reduce}.")
    d = _wrap_dim(int(dim), input.ndim) % max(input.ndim, 1)
    n = source.shape[d] if source.ndim else 1
    if index.ndim > 1 or index.numel() != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim): ({n}), for dim: {d}")
    if source.dtype != input.dtype:
        raise RuntimeError("index_reduce_(): self (" + _name(input) + ") and source ("
                           + _name(source) + ") must have the same scalar type")
    if not source.ndim:
        return scatter_reduce(input, d, index, source, reduce, include_self=include_self)
    wide = index.reshape([-1 if k == d else 1 for k in range(source.ndim)]).expand(
        tuple(source.shape))
    return scatter_reduce(input, d, wide, source, reduce, include_self=include_self)


@export(function=False, method=True)
def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """``scatter_reduce`` in place."""
    return _write(input, scatter_reduce, dim, index, src, reduce, include_self=include_self)


@export(function=False, method=True)
def index_reduce_(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """``index_reduce`` in place."""
    return _write(input, index_reduce, dim, index, source, reduce, include_self=include_self)


@export
def _segment_reduce(data: Tensor, reduce: str, *, lengths=None, indices=None, offsets=None,
                    axis: int = 0, unsafe: bool = False, initial=None) -> Tensor:
    """``data`` reduced along ``axis`` over consecutive segments of ``lengths`` (or between
    ``offsets``; per leading position when they have leading dimensions): 'sum', 'mean',
    'prod', 'max' or 'min', ``initial`` taking part in each segment (and the value of an empty
    one; without it: 0, NaN, 1, -inf, inf)."""
    ng = _ng()
    if reduce not in ("sum", "mean", "prod", "max", "min"):
        raise RuntimeError(f"segment_reduce(): reduction '{reduce}' is not supported")
    if lengths is None:
        if offsets is None:
            raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined")
        lengths = offsets[..., 1:] - offsets[..., :-1]
    axis = _wrap_dim(axis, data.ndim)
    ends = lengths.cumsum(-1)
    positions = ng.arange(data.shape[axis], device=data.device)
    positions = positions.expand(*ends.shape[:-1], data.shape[axis]).contiguous()
    segment = ng.searchsorted(ends.contiguous(), positions, right=True)
    count = lengths.shape[-1]
    segment = segment.clamp(max=max(count - 1, 0))
    index = segment.reshape(*segment.shape, *([1] * (data.ndim - axis - 1))).expand(
        tuple(data.shape))
    shape = (*data.shape[:axis], count, *data.shape[axis + 1:])
    fill = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[reduce]
    base = data.new_full(shape, fill if initial is None else initial)
    if reduce in ("sum", "mean"):
        total = scatter_add(base, axis, index, data)
        if reduce == "sum":
            return total
        n = lengths.reshape(*lengths.shape, *([1] * (data.ndim - axis - 1))).to(data.dtype)
        return total / (n.clamp_min(1) if initial is not None else n)
    return scatter_reduce(base, axis, index, data, {"max": "amax", "min": "amin"}.get(reduce,
                                                                                      reduce))


def _ng():
    return numgrad


def _name(t: Tensor) -> str:
    return {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}.get(
        t.dtype.name, t.dtype.name)
