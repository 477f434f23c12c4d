"""Gathering and scattering along one dimension: ``gather``, ``scatter`` (a tensor ``src`` or a
number ``value``; ``reduce='add'``/``'multiply'``), ``scatter_add`` (and the in-place
``scatter_``, ``scatter_add_``) and ``index_select``.

Their index tensors (int64 or int32, on the input's device) are copied into the op's parameters
as int64, so the backward reads them as they were. Each op's backward is made of the others
(gather's is a scatter-add into zeros, scatter-add's a gather...), recorded, so second derivatives
work. Indices out of range raise PyTorch's errors (on CUDA at the next sync, as PyTorch's
device-side asserts).
"""
from __future__ import annotations

import numpy as np

from ..autograd.graph import keep_given
from ..tensor import Tensor, _wrap_dim
from . import _jvp
from ._names import Out, export
from .registry import Op, Sample, apply, kernels_for, register
from .inplace import _write

SET, ADD, MULTIPLY = 0, 1, 2  # scatter's modes (the kernels')


def _i(m, x, values):
    """An int64 index tensor on ``x``'s device, for the samples."""
    return m.tensor(values, device=x.device)


def _zeros_like_shape(shape, t: Tensor) -> Tensor:
    return Tensor._wrap(kernels_for((t,)).zeros(tuple(shape), t._data.dtype))


def _scatter_into_zeros(shape, dim, index, src: Tensor, op=None) -> Tensor:
    """``zeros(shape).scatter(dim, index, src)`` (``op``: ScatterAdd to add), recorded."""
    zeros = _zeros_like_shape(shape, src)
    return apply(op or Scatter, (zeros, src), (zeros._data, src._data), dim=dim, index=index)


def _gather(t: Tensor, dim, index) -> Tensor:
    return apply(Gather, (t,), (t._data,), dim=dim, index=index)


@register
class Gather(Op):
    name, node = "gather", "GatherBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    save_inputs = (0,)  # (not read by the backward: PyTorch's node keeps it, ``_saved_self``)
    samples = (
        Sample(lambda m, a: a.gather(1, _i(m, a, [[0, 0], [3, 1], [2, 2]])), ((3, 4),)),
        Sample(lambda m, a: m.gather(a.t(), 0, _i(m, a, [[1, 0, 2], [0, 0, 1]])), ((3, 4),)),
        Sample(lambda m, a: m.gather(a, -1, _i(m, a, [2, 0, 2, 1])), ((3,),)),
    )

    @staticmethod
    def forward(K, a, *, dim, index):
        return K.gather_dim(a, dim, index)

    @staticmethod
    def backward(ctx, grad):
        return (_scatter_into_zeros(ctx.input_shapes[0], ctx.params["dim"], ctx.params["index"],
                                    grad, ScatterAdd),)


@register
class Scatter(Op):
    name, node = "scatter", "ScatterBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, s: a.scatter(1, _i(m, a, [[0, 2], [3, 1], [1, 0]]), s),
               ((3, 4), (3, 2))),
        Sample(lambda m, a, s: m.scatter(a, 0, _i(m, a, [[2, 0, 1, 0]]), s.t()), ((3, 4), (4, 1))),
    )

    @staticmethod
    def forward(K, a, src, *, dim, index):
        return K.scatter_dim(a, dim, index, src, SET)

    @staticmethod
    def backward(ctx, grad):
        need_self, need_src = ctx.needs_input_grad
        dim, index = ctx.params["dim"], ctx.params["index"]
        return (_scatter_value(grad, dim, index, 0) if need_self else None,
                _gather(grad, dim, index) if need_src else None)


def _scatter_value(t: Tensor, dim, index, value) -> Tensor:
    return apply(ScatterValue, (t,), (t._data,), dim=dim, index=index, value=value)


@register
class ScatterValue(Op):
    name, node = "scatter_value", "ScatterBackward1"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, a: a.scatter(1, _i(m, a, [[0, 2], [3, 1]]), 1.5), ((2, 4),)),
        Sample(lambda m, a: m.scatter(a, -1, _i(m, a, [1]), value=-2), ((3,),)),
    )

    @staticmethod
    def forward(K, a, *, dim, index, value):
        return K.scatter_dim(a, dim, index, K.full(tuple(index.shape), value, a.dtype), SET)

    @staticmethod
    def backward(ctx, grad):
        return (_scatter_value(grad, ctx.params["dim"], ctx.params["index"], 0),)


@register
class ScatterAdd(Op):
    name, node = "scatter_add", "ScatterAddBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, s: a.scatter_add(0, _i(m, a, [[0, 1, 2, 0], [0, 0, 0, 2]]), s),
               ((3, 4), (2, 4))),
        Sample(lambda m, a, s: m.scatter_add(a, 1, _i(m, a, [[1, 1], [0, 1]]), s.t()),
               ((2, 3), (2, 2))),
    )

    @staticmethod
    def forward(K, a, src, *, dim, index):
        return K.scatter_dim(a, dim, index, src, ADD)

    @staticmethod
    def backward(ctx, grad):
        need_self, need_src = ctx.needs_input_grad
        return (grad if need_self else None,
                _gather(grad, ctx.params["dim"], ctx.params["index"]) if need_src else None)


@register
class ScatterReduce(Op):
    """``scatter(..., reduce='add'|'multiply')`` (a tensor or a number): PyTorch defines no
    derivative for it (its node raises), so the result does not require grad here."""

    name, node = "scatter_reduce_legacy", "NotImplemented"
    jvp = _jvp.transposed_backward
    on_cuda = True
    differentiable = False
    samples = (
        Sample(lambda m, a, s: a.scatter(1, _i(m, a, [[0, 0], [2, 0]]), s, reduce="multiply"),
               ((2, 3), (2, 2)), grad=False),
        Sample(lambda m, a: a.scatter(0, _i(m, a, [[1, 1, 0]]), 2.5, reduce="add"), ((2, 3),),
               grad=False),
    )

    @staticmethod
    def forward(K, a, *src, dim, index, value, mode):
        if not src:
            src = (K.full(tuple(index.shape), value, a.dtype),)
        return K.scatter_dim(a, dim, index, src[0], mode)


@register
class IndexSelect(Op):
    name, node = "index_select", "IndexSelectBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a: a.index_select(0, _i(m, a, [2, 0, 2])), ((3, 4),)),
        Sample(lambda m, a: m.index_select(a.t(), -1, _i(m, a, [1])), ((3, 4),)),
        Sample(lambda m, a: m.index_select(a, 0, _i(m, a, 1)), ((4,),)),
    )

    @staticmethod
    def forward(K, a, *, dim, index):
        return K.index_select_dim(a, dim, index)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's zeros(...).index_add(dim, index, grad): a scatter-add by the index broadcast
        # to the gradient's shape.
        shape = ctx.input_shapes[0]
        dim, index = ctx.params["dim"], ctx.params["index"]
        g = grad if shape else grad.reshape(-1)
        full = tuple(g._data.shape)
        K = kernels_for((grad,))
        wide = K.broadcast_to(K.reshape_view(index, tuple(
            index.size if d == dim else 1 for d in range(len(full)))), full)
        out = _scatter_into_zeros(shape or (1,), dim, wide, g, ScatterAdd)
        return (out if shape else out.reshape(()),)


# ------------------------------------------------------------------ checks and public functions
def _index_of(name: str, index, K, what: str = "dtype int32/int64"):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' (position 3) must be Tensor, not "
                        f"{type(index).__name__}")
    kind = index._data.dtype
    if kind not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected {what} for index")
    data = index._data
    return K.cast(data, np.int64) if kind != np.int64 else K.copy(data)


def _same_ndim(index: Tensor, other: Tensor, what: str) -> None:
    if max(index._data.ndim, 1) != max(other._data.ndim, 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {what} "
                           "tensor")


def _shape_list(t: Tensor) -> list:
    return list(t._data.shape)


def _dims(t: Tensor) -> tuple:
    return tuple(t._data.shape) or (1,)


@export(method=True, out=Out(same_dtype=True, no_overlap=True))
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` (for ``dim=1``), for every position of ``index``."""
    K = kernels_for((input, index), Gather)
    d = (_wrap_dim(int(dim), input._data.ndim) % max(input._data.ndim, 1))
    idx = _index_of("gather", index, K)
    _same_ndim(index, input, "input")
    if index._data.size:
        for k, (n, m) in enumerate(zip(_dims(index), _dims(input))):
            if k != d and n > m:
                raise RuntimeError(
                    f"Size does not match at dimension {k} expected index {_shape_list(index)} "
                    f"to be no larger than self {_shape_list(input)} apart from dimension {d}")
    out = apply(Gather, (input,), (input._data,), dim=d, index=idx)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return out


def _scatter_checks(name: str, input: Tensor, d: int, index: Tensor, src) -> None:
    _same_ndim(index, input, "self")
    if isinstance(src, Tensor):
        _same_ndim(index, src, "src")
        if src._data.dtype != input._data.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    if not index._data.size:
        return
    for k, n in enumerate(_dims(index)):
        too_big = (k != d and n > _dims(input)[k]) or (
            isinstance(src, Tensor) and n > _dims(src)[k])
        if too_big:
            tail = (f" and to be no larger size than src {_shape_list(src)}"
                    if isinstance(src, Tensor) else "")
            raise RuntimeError(f"Expected index {_shape_list(index)} to be no larger than self "
                               f"{_shape_list(input)} apart from dimension {d}{tail}")


def _value(value, dtype):
    """A number for a fill of ``dtype`` (PyTorch casts it)."""
    if isinstance(value, Tensor):
        value = value.item()
    return np.dtype(dtype).type(value)


@export(method=True, out=Out(same_dtype=True))
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    """A copy of ``input`` with ``src``'s elements (or ``value``) written at the positions
    ``index`` names along ``dim``: ``out[i][index[i][j]] = src[i][j]`` (for ``dim=1``)."""
    if src is None:
        src = value
    K = kernels_for((input, index, src), Scatter)
    d = (_wrap_dim(int(dim), input._data.ndim) % max(input._data.ndim, 1))
    idx = _index_of("scatter", index, K)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    _scatter_checks("scatter", input, d, index, src)
    if reduce is not None:
        mode = ADD if reduce == "add" else MULTIPLY
        if isinstance(src, Tensor):
            return apply(ScatterReduce, (input, src), (input._data, src._data), dim=d, index=idx,
                         value=None, mode=mode)
        return apply(ScatterReduce, (input,), (input._data,), dim=d, index=idx,
                     value=_value(src, input._data.dtype), mode=mode)
    if isinstance(src, Tensor):
        return apply(Scatter, (input, src), (input._data, src._data), dim=d, index=idx)
    return apply(ScatterValue, (input,), (input._data,), dim=d, index=idx,
                 value=_value(src, input._data.dtype))


@export(method=True, out=Out(same_dtype=True))
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src``'s elements added at the positions ``index`` names along
    ``dim`` (repeated positions add up)."""
    K = kernels_for((input, index, src), ScatterAdd)
    d = (_wrap_dim(int(dim), input._data.ndim) % max(input._data.ndim, 1))
    idx = _index_of("scatter", index, K)
    _scatter_checks("scatter", input, d, index, src)
    return apply(ScatterAdd, (input, src), (input._data, src._data), dim=d, index=idx)


@export(function=False, method=True)
def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,
             reduce=None) -> Tensor:
    """``scatter`` in place."""
    return _write(input, scatter, dim, index, src, value=value, reduce=reduce, saves_self=False)


@export(function=False, method=True)
def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``scatter_add`` in place."""
    return _write(input, scatter_add, dim, index, src, saves_self=False)


@export(method=True, out=Out(
    same_dtype="index_select(): self and result must have the same scalar type",
    no_overlap=True))
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` at the positions ``index`` (a vector) along ``dim``."""
    K = kernels_for((input, index), IndexSelect)
    d = (_wrap_dim(int(dim), input._data.ndim) % max(input._data.ndim, 1))
    if not isinstance(index, Tensor):
        raise TypeError("index_select(): argument 'index' (position 3) must be Tensor, not "
                        f"{type(index).__name__}")
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    idx = _index_of("index_select", index, K, "dtype int32 or int64")
    if not input._data.ndim and index._data.size != 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{index._data.size} value(s)")
    if not input._data.ndim:
        idx = K.reshape_view(idx, ())
    out = apply(IndexSelect, (input,), (input._data,), dim=d, index=idx)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return out
