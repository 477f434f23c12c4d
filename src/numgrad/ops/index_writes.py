"""Writes at indices along one dimension and at a mask, out of place and in place, with PyTorch's
names, node names and errors: ``index_add`` (``alpha``), ``index_copy``, ``index_fill``, through
the scatter kernels with the index broadcast along the other dimensions; ``take`` (the flat
elements) and ``masked_scatter``.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtype import torch_name
from ..creation import check_scalar
from ..autograd.graph import keep_given
from ..tensor import Tensor
from ._names import Out, export
from .gather import ADD, SET, ScatterAdd, _scatter_into_zeros
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from ._common import _dim, _i, _inplace, _ops
from ._promote import broadcast_shapes as _broadcast


# ------------------------------------------------------------------ writes along one dimension
def _wide(K, index, dim: int, shape: tuple):
    """The 1-D int64 ``index`` broadcast to ``shape`` along every dimension but ``dim`` (a
    stride-0 view), the index of a scatter that writes whole slices."""
    return K.broadcast_to(K.reshape_view(index, tuple(
        index.size if k == dim else 1 for k in range(len(shape)))), shape)


def _at_least_1d(K, a):
    return K.reshape_view(a, (1,)) if a.ndim == 0 else a


class _IndexWrite(Op):
    on_cuda = True


@register
class IndexAdd(_IndexWrite):
    name, node = "index_add", "IndexAddBackward0"
    complex_ok = True
    jvp = _jvp.linear
    # (the source kept for its own gradient only, as PyTorch's node keeps it and the index:
    # unread, but an in-place write to it before backward is refused as there)
    save_inputs, save_only_for = (1,), {1: 1}
    samples = (
        Sample(lambda m, a, s: a.index_add(0, _i(m, a, [2, 0, 2]), s), ((3, 4), (3, 4))),
        Sample(lambda m, a, s: m.index_add(a.t(), -1, _i(m, a, [1]), s, alpha=-2.5),
               ((3, 4), (4, 1))),
    )

    @staticmethod
    def forward(K, a, src, *, dim, index, alpha):
        x, s = _at_least_1d(K, a), _at_least_1d(K, src)
        if alpha != 1:
            s = K.binary(K.MUL, s, np.array(alpha).astype(s.dtype)[()])
        out = K.scatter_dim(x, dim, _wide(K, index, dim, tuple(s.shape)), s, ADD)
        return K.reshape_view(out, ()) if a.ndim == 0 else out

    @staticmethod
    def backward(ctx, grad):
        need_self, need_src = ctx.needs_input_grad
        dim, index, alpha = ctx.params["dim"], ctx.params["index"], ctx.params["alpha"]
        g_src = None
        if need_src:
            g_src = _select_slices(grad, dim, index, ctx.input_shapes[1])
            if alpha != 1:
                g_src = g_src * alpha
        return (grad if need_self else None), g_src


def _select_slices(grad: Tensor, dim: int, index, shape: tuple) -> Tensor:
    """``grad.index_select(dim, index)`` in ``shape`` (a 0-d source's)."""
    out = _ops().index_select(grad, dim, Tensor._wrap(index))
    return out.reshape(shape) if tuple(out._data.shape) != tuple(shape) else out


@register
class IndexCopy(_IndexWrite):
    complex_ok = True
    name, node = "index_copy", "IndexCopyBackward0"
    jvp = _jvp.linear
    samples = (
        Sample(lambda m, a, s: a.index_copy(0, _i(m, a, [2, 0]), s), ((3, 4), (2, 4))),
        Sample(lambda m, a, s: m.index_copy(a.t(), 1, _i(m, a, [1, 2]), s), ((3, 4), (4, 2))),
    )

    @staticmethod
    def forward(K, a, src, *, dim, index):
        x, s = _at_least_1d(K, a), _at_least_1d(K, src)
        out = K.scatter_dim(x, dim, _wide(K, index, dim, tuple(s.shape)), s, SET)
        return K.reshape_view(out, ()) if a.ndim == 0 else out

    @staticmethod
    def backward(ctx, grad):
        need_self, need_src = ctx.needs_input_grad
        dim, index = ctx.params["dim"], ctx.params["index"]
        return (_fill_slices(grad, dim, index, 0) if need_self else None,
                _select_slices(grad, dim, index, ctx.input_shapes[1]) if need_src else None)


def _fill_slices(t: Tensor, dim: int, index, value) -> Tensor:
    return apply(IndexFill, (t,), (t._data,), dim=dim, index=index, value=value)


@register
class IndexFill(_IndexWrite):
    complex_ok = True
    name, node = "index_fill", "IndexFillBackward0"
    jvp = _jvp.transposed_backward
    samples = (
        Sample(lambda m, a: a.index_fill(1, _i(m, a, [0, 3]), -1.5), ((3, 4),)),
        Sample(lambda m, a: m.index_fill(a.t(), 0, _i(m, a, 2), 2), ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, dim, index, value):
        x = _at_least_1d(K, a)
        shape = tuple(index.size if k == dim else n for k, n in enumerate(x.shape))
        fill = K.full(shape, np.array(value).astype(x.dtype)[()], x.dtype)
        out = K.scatter_dim(x, dim, _wide(K, index, dim, shape), fill, SET)
        return K.reshape_view(out, ()) if a.ndim == 0 else out

    @staticmethod
    def backward(ctx, grad):
        return (_fill_slices(grad, ctx.params["dim"], ctx.params["index"], 0),)


@register
class IndexFillTensor(_IndexWrite):
    """``index_fill`` with a 0-d tensor value (PyTorch's other overload and node)."""

    complex_ok = True
    name, node = "index_fill_tensor", "IndexFillBackward1"
    jvp = _jvp.transposed_backward
    samples = (
        Sample(lambda m, a, v: a.index_fill(1, _i(m, a, [0, 3]), v), ((3, 4), ())),
        Sample(lambda m, a, v: m.index_fill(a.t(), -1, _i(m, a, [1, 1]), v), ((3, 4), ())),
    )

    @staticmethod
    def forward(K, a, value, *, dim, index):
        x = _at_least_1d(K, a)
        shape = tuple(index.size if k == dim else n for k, n in enumerate(x.shape))
        fill = K.broadcast_copy(value, shape, x.dtype)
        out = K.scatter_dim(x, dim, _wide(K, index, dim, shape), fill, SET)
        return K.reshape_view(out, ()) if a.ndim == 0 else out

    @staticmethod
    def backward(ctx, grad):
        need_self, need_value = ctx.needs_input_grad
        dim, index = ctx.params["dim"], ctx.params["index"]
        rest = _fill_slices(grad, dim, index, 0)
        # (the filled slices' gradient, each once however often the index repeats it)
        g_value = (grad - rest).sum() if need_value else None
        return (rest if need_self else None), g_value


def _index_vector(name: str, input: Tensor, index, K, dim: int, kinds=(np.int64, np.int32),
                  dtype_message=None):
    """``index`` as a 1-D int64 array on ``input``'s device, checked as PyTorch's ``name``."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' (position 3) must be Tensor, not "
                        f"{type(index).__name__}")
    data = index._data
    if data.dtype not in kinds:
        raise (dtype_message(data) if dtype_message else RuntimeError(
            f"{name}(): Expected dtype int32/int64 for index but got: {torch_name(data.dtype)}"))
    if data.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: {data.ndim} "
                         f"with type: {torch_name(data.dtype)} and size: {list(data.shape)}")
    if isinstance(data, np.ndarray) and not isinstance(input._data, np.ndarray):
        data = K.upload(data)
    flat = K.reshape_view(K.ascontiguous(data), (data.size,))
    return K.cast(flat, np.int64) if flat.dtype != np.int64 else K.copy(flat)


def _check_in_range(index: np.ndarray, size: int, dim: int, prefix: str, error, wrap=False):
    """PyTorch's error for an index (an index tensor's data) out of ``[0, size)`` (``wrap``:
    ``[-size, size)``), checked on the host (CUDA indices are checked by the scatter kernel,
    reported at the next sync)."""
    if not isinstance(index, np.ndarray) or not index.size:
        return
    lo = -size if wrap else 0
    flat = index.reshape(-1)
    bad = (flat < lo) | (flat >= size)
    if bad.any() and not size:  # (PyTorch fails there on a storage size instead)
        raise RuntimeError(f"{prefix}index {int(flat[bad][0])} is out of bounds for dimension "
                           f"{dim} with size 0")
    if bad.any():
        raise error(f"{prefix}index {int(flat[bad][0])} is out of bounds for dimension {dim} "
                    f"with size {size}")


def _check_source(name: str, input: Tensor, d: int, index, source: Tensor, copy=False):
    if source._data.dtype != input._data.dtype:
        if copy:
            raise RuntimeError(
                f"{name}(): self and source expected to have the same dtype, but got (self) "
                f"{torch_name(input._data.dtype)} and (source) {torch_name(source._data.dtype)}")
        raise RuntimeError(f"{name}(): self ({torch_name(input._data.dtype)}) and source "
                           f"({torch_name(source._data.dtype)}) must have the same scalar type")
    n = index.size
    src_shape = source._data.shape
    own = input._data.shape
    both = input._data.ndim and source._data.ndim
    if copy and both and len(own) != len(src_shape):
        raise IndexError(f"{name}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({len(src_shape)}), "
                         f"destination dimensionality ({len(own)})")
    if not copy and both and d >= len(src_shape):
        raise RuntimeError(f"{name}(): Indexing dim {d} is out of bounds of the source tensor "
                           f"with dim {len(src_shape)}")
    src_size = src_shape[d] if d < len(src_shape) else 1
    if copy:
        if src_size != n and source._data.ndim:
            raise IndexError(f"{name}(): Number of indices ({n}) should be equal to "
                             f"source.size(dim) ({src_size})")
    elif n != src_size:
        raise RuntimeError(f"{name}(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src_size}), for dim: {d}")
    if copy and both and any(k != d and own[k] != src_shape[k] for k in range(len(own))):
        mine = " ".join(str(x) for k, x in enumerate(own) if k != d)
        theirs = " ".join(str(x) for k, x in enumerate(src_shape) if k != d)
        raise RuntimeError(f"{name}(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {mine} at dimension {d} and source slice "
                           f"shape: {theirs} at dimension 0.")
    if both and (len(own) != len(src_shape) or any(
            k != d and own[k] != src_shape[k] for k in range(len(own)))):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(own)} source.shape = "
                           f"{list(src_shape)}")


@export(method=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``input`` with ``alpha * source``'s slices added at the positions ``index``
    names along ``dim`` (repeated positions add up)."""
    K = kernels_for((input, index, source), IndexAdd)
    d = _dim(input, dim)
    idx = _index_vector("index_add_", input, index, K, d)
    if not input._data.ndim or not source._data.ndim:
        if idx.size != 1:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        data = index._data
        if not input._data.ndim and isinstance(data, np.ndarray) and int(data.reshape(-1)[0]):
            raise IndexError("index out of range in self")
    _check_source("index_add_", input, d, idx, source)
    size = input._data.shape[d] if input._data.ndim else 1
    _check_in_range(index._data, size, d, "", RuntimeError)
    out = apply(IndexAdd, (input, source), (input._data, source._data), dim=d, index=idx,
                alpha=alpha)
    if dim != d:  # (as given: PyTorch's node shows it so)
        keep_given(out, dim=int(dim))
    return out


@export(method=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source``'s slices written at the positions ``index`` names
    along ``dim``."""
    K = kernels_for((input, index, source), IndexCopy)
    d = _dim(input, dim)
    if isinstance(index, Tensor) and index._data.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index._data.ndim})")
    idx = _index_vector("index_copy_", input, index, K, d, (np.int64,), lambda data: RuntimeError(
        f"index_copy_(): Expected a long tensor for index, but got {torch_name(data.dtype)}"))
    _check_source("index_copy_", input, d, idx, source, copy=True)
    size = input._data.shape[d] if input._data.ndim else 1
    _check_in_range(index._data, size, d, "index_copy_(): ", IndexError)
    return apply(IndexCopy, (input, source), (input._data, source._data), dim=d, index=idx)


@export(method=True)
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with the slices at the positions ``index`` names along ``dim`` set to
    ``value`` (a number or a 0-d tensor; negative positions count from the end)."""
    K = kernels_for((input, index), IndexFill)
    d = _dim(input, dim)
    if isinstance(index, Tensor) and index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    idx = _index_vector("index_fill_", input, index, K, d, (np.int64,), lambda data: IndexError(
        "index_fill_(): Expected dtype int64 for index."))
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    size = input._data.shape[d] if input._data.ndim else 1
    _check_in_range(index._data, size, d, "", IndexError, wrap=True)
    idx = K.where(K.binary(K.LT, idx, np.int64(0), np.bool_), K.binary(K.ADD, idx, np.int64(size)),
                  idx)
    if isinstance(value, Tensor):
        data = value._data
        if isinstance(data, np.ndarray) and not isinstance(input._data, np.ndarray):
            value = value.to(input.device)
        return apply(IndexFillTensor, (input, value), (input._data, value._data), dim=d, index=idx)
    check_scalar(value, input._data.dtype)
    return apply(IndexFill, (input,), (input._data,), dim=d, index=idx, value=value)


index_add_ = export(_inplace(index_add), "index_add_", function=False, method=True)


index_copy_ = export(_inplace(index_copy), "index_copy_", function=False, method=True)


index_fill_ = export(_inplace(index_fill), "index_fill_", function=False, method=True)


@register
class Take(Op):
    name, node = "take", "TakeBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a: a.take(_i(m, a, [[0, 11], [5, 5]])), ((3, 4),)),
        Sample(lambda m, a: m.take(a.t(), _i(m, a, [-1, 2, 0])), ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, index):
        flat = K.reshape_view(K.ascontiguous(a), (a.size,))
        return K.index(flat, (), (index,))

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        index = ctx.params["index"]
        K = kernels_for((grad,))
        flat_index = K.reshape_view(K.ascontiguous(index), (index.size,))
        out = _scatter_into_zeros((math.prod(shape),), 0, flat_index, grad.reshape(-1), ScatterAdd)
        return (out.reshape(shape),)


@export(method=True, out=Out(
    same_dtype="take(): self and out expected to have the same dtype, but got self.dtype = "
               "{result} and out.dtype = {out}", no_overlap=True))
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of ``input`` at the flat (C-order) positions ``index``, in ``index``'s
    shape; negative positions count from the end."""
    K = kernels_for((input, index), Take)
    if index._data.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{torch_name(index._data.dtype)}")
    n = input._data.size
    data = index._data
    if isinstance(data, np.ndarray):
        bad = (data < -n) | (data >= n)
        if bad.any():
            raise IndexError(f"out of range: tried to access index {int(data[bad][0])} on a "
                             f"tensor of {n} elements.")
        if not isinstance(input._data, np.ndarray):
            data = K.upload(data)
    idx = K.where(K.binary(K.LT, data, np.int64(0), np.bool_), K.binary(K.ADD, data, np.int64(n)),
                  data)
    return apply(Take, (input,), (input._data,), index=idx)


@register
class MaskedScatter(Op):
    complex_ok = True
    name, node = "masked_scatter", "MaskedScatterBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, s: a.masked_scatter(a > 0, s), ((3, 4), (13,))),
        Sample(lambda m, a, s: m.masked_scatter(a.t(), m.tensor([True, False, True],
                                                                device=a.device), s),
               ((3, 4), (2, 4))),
    )

    @staticmethod
    def forward(K, a, source, *, mask):
        shape = tuple(mask.shape)
        x = K.broadcast_to(a, shape) if tuple(a.shape) != shape else a
        if not source.size:
            return K.copy(x)
        m = K.reshape_view(K.ascontiguous(mask), (mask.size,))
        pos = K.cumulative(K.cast(m, np.int64), 0, False, False)
        pos = K.binary(K.MAXIMUM, K.binary(K.SUB, pos, np.int64(1)), np.int64(0))
        pos = K.binary(K.MINIMUM, pos, np.int64(source.size - 1))
        picked = K.index(K.reshape_view(K.ascontiguous(source), (source.size,)), (), (pos,))
        return K.where(mask, K.reshape_view(picked, shape), x)

    @staticmethod
    def backward(ctx, grad):
        need_self, need_source = ctx.needs_input_grad
        ops = _ops()
        mask = Tensor._wrap(ctx.params["mask"])
        g_self = ops.masked_fill(grad, mask, 0) if need_self else None
        g_source = None
        if need_source:
            shape = ctx.input_shapes[1]
            n = math.prod(shape)
            picked = ops.masked_select(grad, mask)
            count = picked._data.size
            if count < n:
                K = kernels_for((grad,))
                pad = Tensor._wrap(K.zeros((n - count,), grad._data.dtype))
                picked = ops.cat([picked, pad])
            g_source = picked.reshape(shape)
        return g_self, g_source


@export(method=True)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source``'s first elements written, in order, where ``mask``
    (bool, broadcast with ``input``) is True."""
    K = kernels_for((input, mask, source), MaskedScatter)
    if mask._data.dtype != np.bool_:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{torch_name(mask._data.dtype)}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{torch_name(input._data.dtype)} and {torch_name(source._data.dtype)}")

    shape = tuple(_broadcast(tuple(mask._data.shape), tuple(input._data.shape)))
    m = K.ascontiguous(K.broadcast_to(mask._data, shape))
    if m.size:
        count = int(np.asarray(K.to_host(K.sum_dims(K.cast(m, np.int64), tuple(range(m.ndim)),
                                                      False))))
        if count > source._data.size:
            raise RuntimeError("Number of elements of source < number of ones in mask")
    return apply(MaskedScatter, (input, source), (input._data, source._data), mask=m)


masked_scatter_ = export(_inplace(masked_scatter), "masked_scatter_", function=False, method=True)
