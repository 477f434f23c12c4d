"""More indexing, utility and counting ops with PyTorch's names, defaults, node names and errors.

* Views: ``unbind`` (UnbindBackward0), ``select`` (SelectBackward0), ``tensor_split`` (narrow:
  SliceBackward0).
* Writes along one dimension, out of place and in place: ``index_add`` (``alpha``),
  ``index_copy``, ``index_fill``, through the scatter kernels with the index broadcast along the
  other dimensions; ``take`` (the flat elements), ``masked_scatter``.
* Composed as PyTorch composes them (so their nodes are PyTorch's): ``diff`` (SubBackward0),
  ``tensordot`` (ViewBackward0 over MmBackward0), ``kron`` (UnsafeViewBackward0),
  ``cartesian_prod`` and ``combinations`` (StackBackward0), ``torch.dropout`` (MulBackward0).
* Products with their own nodes: ``baddbmm``, ``addmv``; ``block_diag``.
* Scans: ``cummax``/``cummin`` (values and indices; the gradient goes back to the indices),
  ``logcumsumexp`` (PyTorch's stable, twice differentiable backward).
* Counting and searching (no gradient): ``bucketize``, ``searchsorted``, ``bincount``, ``histc``,
  ``nn.functional.one_hot``, ``triu_indices``/``tril_indices``; and ``logspace``,
  ``broadcast_shapes``, ``is_nonzero``, ``typename``, ``detach``.

The new kernels (``K.cum_extreme``, ``K.logcumsumexp_dim``, ``K.search_sorted``, ``K.bincount``,
``K.histc``) are in ``kernels/cpu/indexing_more.py`` and ``kernels/cuda/indexing_more.py``; the
rest runs on the existing scatter, index and matmul kernels.
"""
from __future__ import annotations

import builtins
import itertools
import math

import numpy as np

from .._dtype import promote_types, to_dtype, torch_name
from ..tensor import Tensor, _wrap_dim
from .gather import ADD, SET, ScatterAdd, _scatter_into_zeros
from .indexing import SELECT, Key, _BasicView
from .indexing import take as _take_key
from .reduction import _ValuesIndices
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from .sorting import _Selecting


def _ops():
    from .. import ops

    return ops


def _i(m, x, values, dtype=None):
    """An index tensor on ``x``'s device, for the samples."""
    return m.tensor(values, device=x.device) if dtype is None else m.tensor(
        values, dtype=dtype, device=x.device)


def _dim(input: Tensor, dim) -> int:
    nd = input._data.ndim
    return _wrap_dim(int(dim), nd) % max(nd, 1)


# ------------------------------------------------------------------ views
@register
class Unbind(_BasicView):
    """One slice of ``unbind``: a view whose node is PyTorch's UnbindBackward0."""

    name, node = "unbind", "UnbindBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a: m.unbind(a)[1], ((3, 4),)),
        Sample(lambda m, a: a.t().unbind(-1)[2], ((3, 4),)),
    )


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices of ``input`` along ``dim``, as views (``dim`` removed)."""
    nd = input._data.ndim
    if not nd:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(int(dim), nd)
    return tuple(apply(Unbind, (input,), (input._data,),
                       key=Key((slice(None),) * d + (i,), None, SELECT, SELECT))
                 for i in range(input._data.shape[d]))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice of ``input`` at ``index`` along ``dim`` (a view, ``dim`` removed)."""
    nd = input._data.ndim
    if not nd:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(int(dim), nd)
    size = input._data.shape[d]
    i = int(index)
    if not -size <= i < size:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    return _take_key(input, Key((slice(None),) * d + (i % size,), None, SELECT, SELECT))


def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None,
                 indices=None) -> tuple:
    """``input`` split along ``dim`` into ``sections`` nearly equal parts (the first ones one
    longer), or at the given indices (a list or a 0-d or 1-d int64 tensor), as views."""
    nd = input._data.ndim
    if not nd:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _wrap_dim(int(dim), nd)
    size = input._data.shape[d]
    spec = next((v for v in (indices_or_sections, sections, indices) if v is not None), None)
    if spec is None:
        raise TypeError("tensor_split() missing 1 required positional argument: "
                        "\"indices_or_sections\"")
    if isinstance(spec, Tensor):
        if spec._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{spec._data.ndim} dims")
        if spec._data.dtype != np.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of "
                               f"long, but got {torch_name(spec._data.dtype)}")
        spec = int(spec.item()) if spec._data.ndim == 0 else [int(v) for v in spec.tolist()]
    if isinstance(spec, (int, np.integer)):
        n = int(spec)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        small, extra = divmod(size, n)
        bounds, start = [], 0
        for k in range(n - 1):
            start += small + (1 if k < extra else 0)
            bounds.append(start)
    else:
        bounds = [int(v) for v in spec]
    parts, start = [], 0
    ops = _ops()
    for stop in bounds + [size]:
        lo = builtins.min(builtins.max(start if start >= 0 else start + size, 0), size)
        hi = builtins.min(builtins.max(stop if stop >= 0 else stop + size, 0), size)
        parts.append(ops.narrow(input, d, lo, builtins.max(hi - lo, 0)))
        start = stop
    return tuple(parts)


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
    jvp = _jvp.linear
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
    return apply(IndexAdd, (input, source), (input._data, source._data), dim=d, index=idx,
                 alpha=alpha)


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
    return apply(IndexFill, (input,), (input._data,), dim=d, index=idx, value=value)


def _inplace(fn):
    def method(input: Tensor, *args, **kwargs) -> Tensor:
        from .inplace import _write

        return _write(input, fn, *args, saves_self=False, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"``{fn.__name__}`` in place."
    return method


index_add_ = _inplace(index_add)
index_copy_ = _inplace(index_copy)
index_fill_ = _inplace(index_fill)


@register
class Take(Op):
    name, node = "take", "TakeBackward0"
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
    from ._promote import broadcast_shapes as _broadcast

    shape = tuple(_broadcast(tuple(mask._data.shape), tuple(input._data.shape)))
    m = K.ascontiguous(K.broadcast_to(mask._data, shape))
    if m.size:
        count = int(np.asarray(K.to_host(K.sum_dims(K.cast(m, np.int64), tuple(range(m.ndim)),
                                                      False))))
        if count > source._data.size:
            raise RuntimeError("Number of elements of source < number of ones in mask")
    return apply(MaskedScatter, (input, source), (input._data, source._data), mask=m)


masked_scatter_ = _inplace(masked_scatter)


# ------------------------------------------------------------------ composed as PyTorch composes
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``), after
    ``prepend`` and ``append`` are concatenated to ``input`` along ``dim``."""
    nd = input._data.ndim
    if not nd:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(int(dim), nd)
    ops = _ops()
    parts = []
    for extra in (prepend, append):
        if extra is not None and isinstance(extra, Tensor) and extra._data.ndim != nd:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if prepend is not None or append is not None:
        if prepend is not None:
            parts.append(prepend)
        parts.append(input)
        if append is not None:
            parts.append(append)
        input = ops.cat(parts, d)
    out = input
    for _ in range(int(n)):
        size = out._data.shape[d]
        if size == 0:
            break
        hi = ops.narrow(out, d, 1, size - 1)
        lo = ops.narrow(out, d, 0, size - 1)
        out = ops.ne(hi, lo) if out._data.dtype == np.bool_ else hi - lo  # (logical_xor)
    return out


def _tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """The sum of products over the last ``dims`` dimensions of ``a`` and the first of ``b``,
    or over the pairs of dimensions ``dims = (dims_a, dims_b)``."""
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        k = int(dims)
        if k < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={k}")
        if k > na or k > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={k}")
        dims_a, dims_b = list(range(na - k, na)), list(range(k))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, (int, np.integer)) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, (int, np.integer)) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    dims_a = [_wrap_dim(int(x), na) for x in dims_a]
    dims_b = [_wrap_dim(int(x), nb) for x in dims_b]
    for x, y in zip(dims_a, dims_b):
        sa, sb = a._data.shape[x], b._data.shape[y]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in "
                               f"dim {x - na if isinstance(dims, int) else x} and second has size "
                               f"{sb} in dim {y}")
    ops = _ops()
    for x, y in zip(dims_a, dims_b):  # a size 1 against a size n: the other side summed, as ATen
        sa, sb = a._data.shape[x], b._data.shape[y]
        if sa == 1 and sb != 1:
            b = b.sum(y, keepdim=True)
        elif sb == 1 and sa != 1:
            a = a.sum(x, keepdim=True)
    free_a = [x for x in range(na) if x not in dims_a]
    free_b = [y for y in range(nb) if y not in dims_b]
    shape_a = [a._data.shape[x] for x in free_a]
    shape_b = [b._data.shape[y] for y in free_b]
    csize = math.prod(a._data.shape[x] for x in dims_a)
    ta = ops.permute(a, free_a + dims_a).reshape(math.prod(shape_a), csize)
    tb = ops.permute(b, dims_b + free_b).reshape(csize, math.prod(shape_b))
    return ops.mm(ta, tb).reshape(shape_a + shape_b)


def _with_out(fn, name: str):
    from .._out import with_out

    return with_out(fn, name)


tensordot = _with_out(_tensordot, "tensordot")  # (not a Tensor method: out= as PyTorch's)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: blocks ``input[i, j] * other`` (dimensions padded on the left to
    the larger number of either)."""
    nd = builtins.max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + tuple(input._data.shape)
    sb = (1,) * (nd - other._data.ndim) + tuple(other._data.shape)
    a = input.reshape(tuple(itertools.chain.from_iterable((n, 1) for n in sa)))
    b = other.reshape(tuple(itertools.chain.from_iterable((1, n) for n in sb)))
    prod = a * b
    from .shape import UnsafeView

    shape = tuple(x * y for x, y in zip(sa, sb))
    return apply(UnsafeView, (prod,), (prod._data,), shape=shape)


def _check_vector(t: Tensor, what="Expect a 1D vector"):
    if t._data.ndim != 1:
        raise RuntimeError(f"{what}, but got shape {list(t._data.shape)}")


def cartesian_prod(*tensors) -> Tensor:
    """The Cartesian product of 1-D tensors: one row per combination (the 1-D tensor itself for
    one tensor)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        _check_vector(t)
    ops = _ops()
    if len(tensors) == 1:
        return tensors[0]
    grids = ops.meshgrid(*tensors, indexing="ij")
    return ops.stack([g.flatten() for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the 1-D ``input``'s elements, one per row, in
    lexicographic order of positions (``with_replacement``: repeats allowed); as PyTorch, the
    masked elements of an ``r``-fold meshgrid, stacked."""
    _check_vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    K = kernels_for((input,))
    if r == 0:
        return Tensor._wrap(K.zeros((0,), input._data.dtype))
    n = input._data.shape[0]
    ops = _ops()
    grids = ops.meshgrid(*([input] * r), indexing="ij")
    at = np.indices((n,) * r)
    keep = np.ones((n,) * r, bool)
    for k in range(r - 1):
        keep &= (at[k] <= at[k + 1]) if with_replacement else (at[k] < at[k + 1])
    mask = Tensor._wrap(K.upload(keep))
    return ops.stack([ops.masked_select(g, mask) for g in grids], 1)


# ------------------------------------------------------------------ products
def _number(value, dtype):
    return np.array(value).astype(dtype)[()]


@register
class Baddbmm(Op):
    name, node = "baddbmm", "BaddbmmBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, c, a, b: m.baddbmm(c, a, b), ((2, 3, 5), (2, 3, 4), (2, 4, 5))),
        Sample(lambda m, c, a, b: c.baddbmm(a, b.transpose(1, 2), beta=0.5, alpha=-2),
               ((3, 1), (2, 3, 4), (2, 5, 4))),
    )

    @staticmethod
    def forward(K, c, a, b, *, beta, alpha):
        prod = K.matmul(a, b)
        if alpha != 1:
            prod = K.binary(K.MUL, prod, _number(alpha, prod.dtype))
        if beta == 0:
            return prod
        base = c if beta == 1 else K.binary(K.MUL, c, _number(beta, c.dtype))
        return K.binary(K.ADD, base, prod) if tuple(base.shape) == tuple(prod.shape) else \
            K.binary(K.ADD, K.broadcast_copy(base, tuple(prod.shape), prod.dtype), prod)

    save_inputs = (1, 2)
    save_only_for = {1: 2, 2: 1}  # noqa: RUF012

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_c, need_a, need_b = ctx.needs_input_grad
        beta, alpha = ctx.params["beta"], ctx.params["alpha"]
        ops = _ops()
        g_c = (grad * beta if beta != 1 else grad) if need_c else None
        g_a = ops.bmm(grad, b.transpose(1, 2)) if need_a else None
        g_b = ops.bmm(a.transpose(1, 2), grad) if need_b else None
        if alpha != 1:
            g_a = g_a * alpha if g_a is not None else None
            g_b = g_b * alpha if g_b is not None else None
        return g_c, g_a, g_b


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices (``input``
    broadcast; ignored, NaN included, when ``beta`` is 0)."""
    kernels_for((input, batch1, batch2), Baddbmm)  # (PyTorch's error for two devices)
    kinds = [t._data.dtype for t in (input, batch1, batch2)]
    if len(set(kinds)) > 1:
        from .._dtype import c_name

        raise RuntimeError(f"Input dtypes must be the same, got: input {c_name(kinds[0])}, "
                           f"batch1: {c_name(kinds[1])}, batch2: {c_name(kinds[2])}")
    if kinds[0] == np.bool_:
        raise NotImplementedError("\"baddbmm\" not implemented for 'Bool'")
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if not t._data.ndim:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if t._data.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (bs, n, k), (bs2, k2, p) = batch1._data.shape, batch2._data.shape
    if (bs2, k2) != (bs, k):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{bs}, {k}] but got: [{bs2}, {k2}].")
    _ops().expand(input, (bs, n, p)) if input._data.ndim <= 3 else None  # PyTorch's shape errors
    return apply(Baddbmm, (input, batch1, batch2), (input._data, batch1._data, batch2._data),
                 beta=beta, alpha=alpha)


@register
class Addmv(Op):
    name, node = "addmv", "AddmvBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, c, a, v: m.addmv(c, a, v), ((3,), (3, 4), (4,))),
        Sample(lambda m, c, a, v: c.addmv(a.t(), v, beta=2, alpha=0.5), ((1,), (4, 3), (4,))),
    )
    save_inputs = (1, 2)
    save_only_for = {1: 2, 2: 1}  # noqa: RUF012

    @staticmethod
    def forward(K, c, a, v, *, beta, alpha):
        return Baddbmm.forward(K, c, a, v, beta=beta, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        a, v = ctx.saved_tensors
        need_c, need_a, need_v = ctx.needs_input_grad
        beta, alpha = ctx.params["beta"], ctx.params["alpha"]
        ops = _ops()
        g_c = (grad * beta if beta != 1 else grad) if need_c else None
        g_a = ops.outer(grad, v) if need_a else None
        g_v = ops.mv(a.t(), grad) if need_v else None
        if alpha != 1:
            g_a = g_a * alpha if g_a is not None else None
            g_v = g_v * alpha if g_v is not None else None
        return g_c, g_a, g_v


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` (``input`` broadcast)."""
    kernels_for((input, mat, vec), Addmv)  # (PyTorch's error for two devices)
    if mat._data.ndim != 2 or vec._data.ndim != 1 or input._data.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, "
                           f"{mat._data.ndim}, {vec._data.ndim}")
    n, m = mat._data.shape
    if vec._data.shape[0] != m or (input._data.ndim and input._data.shape[0] not in (1, n)):
        raise RuntimeError(f"size mismatch, got input ({input._data.shape[0] if input._data.ndim else 1}), "
                           f"mat ({n}x{m}), vec ({vec._data.shape[0]})")
    kinds = [t._data.dtype for t in (input, mat, vec)]
    if len(set(kinds)) > 1:
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{torch_name(kinds[0])}, {torch_name(kinds[1])}, and "
                           f"{torch_name(kinds[2])}")
    if kinds[0] == np.bool_:
        raise NotImplementedError("\"addmv_impl_cpu\" not implemented for 'Bool'")
    return apply(Addmv, (input, mat, vec), (input._data, mat._data, vec._data), beta=beta,
                 alpha=alpha)


baddbmm_ = _inplace(baddbmm)
addmv_ = _inplace(addmv)


@register
class BlockDiag(Op):
    name, node = "block_diag", "BlockDiagBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: m.block_diag(a, b), ((2, 3), (3, 2))),
        Sample(lambda m, a, b, c: m.block_diag(a, b.t(), c), ((), (3, 2), (4,))),
    )

    @staticmethod
    def forward(K, *arrays, shapes, dtype):
        rows = builtins.sum(s[0] for s in shapes)
        cols = builtins.sum(s[1] for s in shapes)
        out = K.zeros((rows, cols), dtype)
        r = c = 0
        for a, (h, w) in zip(arrays, shapes):
            if h and w:
                block = K.reshape_view(a, (h, w)) if a.ndim < 2 else a
                if block.dtype != dtype:
                    block = K.cast(block, dtype)
                K.assign(K.view_index(out, (slice(r, r + h), slice(c, c + w))), block)
            r += h
            c += w
        return out

    @staticmethod
    def backward(ctx, grad):
        ops = _ops()
        grads, r, c = [], 0, 0
        for need, (h, w), shape in zip(ctx.needs_input_grad, ctx.params["shapes"],
                                       ctx.input_shapes):
            if need:
                g = ops.narrow(ops.narrow(grad, 0, r, h), 1, c, w)
                grads.append(g.reshape(shape) if len(shape) < 2 else g)
            else:
                grads.append(None)
            r += h
            c += w
        return tuple(grads)


def block_diag(*tensors) -> Tensor:
    """The tensors (0-d, 1-d rows or 2-d) as the blocks of a block-diagonal matrix, zeros
    elsewhere; the dtype is their promoted one."""
    shapes = []
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if nd > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {nd} dimensions")
        shape = t._data.shape
        shapes.append((1, 1) if nd == 0 else (1, shape[0]) if nd == 1 else tuple(shape))
    if not tensors:
        from .._dtype import get_default_dtype

        return Tensor._wrap(kernels_for(()).zeros((1, 0), get_default_dtype().np))
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = promote_types(dt, t.dtype)
    return apply(BlockDiag, tuple(tensors), tuple(t._data for t in tensors), shapes=tuple(shapes),
                 dtype=dt.np)


# ------------------------------------------------------------------ scans
class _CummaxResult(_ValuesIndices):
    _name = "cummax"


class _CumminResult(_ValuesIndices):
    _name = "cummin"


class _CumExtreme(_Selecting):
    """The running extremes (computed with their indices before the op runs); PyTorch's
    backward adds each gradient at the index it came from (indices repeat)."""

    jvp = _jvp.transposed_backward
    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        if not shape:
            return (grad,)
        return (_scatter_into_zeros(shape, ctx.params["dim"], ctx.params["indices"], grad,
                                    ScatterAdd),)


@register
class Cummax(_CumExtreme):
    name, node = "cummax", "CummaxBackward0"
    samples = (
        Sample(lambda m, a: m.cummax(a, 1)[0], ((3, 4),)),
        Sample(lambda m, a: a.t().cummax(dim=-2).values, ((3, 4),)),
        Sample(lambda m, a: m.cummax(a, 0).values, ((),)),
    )


@register
class Cummin(_CumExtreme):
    name, node = "cummin", "CumminBackward0"
    samples = (
        Sample(lambda m, a: m.cummin(a, 0)[0], ((3, 4),)),
        Sample(lambda m, a: a.cummin(-1).values, ((5,),)),
    )


def _cum_extreme(op, result, input: Tensor, dim, take_max: bool):
    d = _dim(input, dim)
    K = kernels_for((input,), op)
    values, indices = K.cum_extreme(input._data, d, take_max)
    out = apply(op, (input,), (values,), dim=d, indices=indices)
    return result(out, Tensor._wrap(indices))


def cummax(input: Tensor, dim: int):
    """``(values, indices)``: the running maximum along ``dim`` and the index where it was last
    reached (a NaN stays the maximum from where it appears)."""
    return _cum_extreme(Cummax, _CummaxResult, input, dim, True)


def cummin(input: Tensor, dim: int):
    """``(values, indices)``: the running minimum along ``dim`` and the index where it was last
    reached."""
    return _cum_extreme(Cummin, _CumminResult, input, dim, False)


@register
class Logcumsumexp(Op):
    name, node = "logcumsumexp", "LogcumsumexpBackward0"
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: m.logcumsumexp(a, 1), ((3, 4),)),
        Sample(lambda m, a: a.t().logcumsumexp(dim=0), ((3, 4),), gradgrad=False),
        Sample(lambda m, a: a.logcumsumexp(-1), ((),)),
    )

    @staticmethod
    def forward(K, a, *, dim):
        return K.logcumsumexp_dim(a, dim)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.params["dim"]
        if not grad._data.ndim or not grad._data.size:
            return (grad,)
        ops = _ops()
        lowest = float(np.finfo(grad._data.dtype).min)

        def reverse_lcse(t):
            return ops.flip(logcumsumexp(ops.flip(t, (dim,)), dim), (dim,))

        log_abs = grad.abs().log()
        floor = Tensor._wrap(kernels_for((grad,)).full((), lowest, grad._data.dtype))
        pos = ops.where(grad > 0, log_abs, floor)
        neg = ops.where(grad < 0, log_abs, floor)
        return ((reverse_lcse(pos - out) + x).exp() - (reverse_lcse(neg - out) + x).exp(),)

    @staticmethod
    def jvp(ctx, t):
        """The running softmax-weighted sum of the tangent, PyTorch's formula: with ``e =
        exp(x - max(x))`` along ``dim``, ``cumsum(e * t) / (cumsum(e) + 1e-13)`` (so NaN and
        infinities spread as there)."""
        x, _ = ctx.saved_tensors
        dim = ctx.params["dim"]
        if not t._data.size:
            return t
        e = (x - x.amax(dim, keepdim=True)).exp()
        return (e * t).cumsum(dim) / (e.cumsum(dim) + 1e-13)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """The running ``log(sum(exp(input)))`` along ``dim``, computed stably."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{torch_name(input._data.dtype)}'")
    return apply(Logcumsumexp, (input,), (input._data,), dim=_dim(input, dim))


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


searchsorted = _with_out(_searchsorted, "searchsorted")
bucketize = _with_out(_bucketize, "bucketize")


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


def histc(input: Tensor, bins: int = 100, min=0, max=0, *, out=None) -> Tensor:
    """The histogram of ``input`` in ``bins`` equal bins over ``[min, max]`` (the data's range
    where both are 0); elements outside are ignored."""
    data = input._data
    if np.dtype(data.dtype).kind != "f":
        raise NotImplementedError(
            f"\"histogram_cpu\" not implemented for '{torch_name(data.dtype)}'")
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    K = kernels_for((input,), Histc)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        every = tuple(range(data.ndim))
        lo = float(np.asarray(K.to_host(K.reduce_dims(K.MIN, data, every, False))))
        hi = float(np.asarray(K.to_host(K.reduce_dims(K.MAX, data, every, False))))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    t = np.dtype(data.dtype).type
    lo, hi = float(t(lo)), float(t(hi))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_g(lo)}, {_g(hi)}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    result = apply(Histc, (input,), (data,), bins=bins, lo=lo, hi=hi)
    if out is None:
        return result
    from .._out import write

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
    from ..creation import _finish

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


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The coordinates (a 2 x N int64 tensor, row-major order) of the upper triangle of a
    ``row`` x ``col`` matrix, from diagonal ``offset`` on."""
    return _tri_indices(int(row), int(col), int(offset), dtype, device, True)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The coordinates (a 2 x N int64 tensor, row-major order) of the lower triangle of a
    ``row`` x ``col`` matrix, up to diagonal ``offset``."""
    return _tri_indices(int(row), int(col), int(offset), dtype, device, False)


# ------------------------------------------------------------------ small utilities
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout``: ``nn.functional.dropout`` with PyTorch's RuntimeError for ``p``."""
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    from ..nn import functional as F

    return F.dropout(input, p, train)


def detach(input: Tensor) -> Tensor:
    """``input``'s data without its history (a view that never requires grad)."""
    return input.detach()


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` values ``base ** t`` for ``t`` evenly spaced from ``start`` to ``end``,
    computed as PyTorch's kernel does (the first half from ``start``, the rest from ``end``)."""
    from .._dtype import get_default_dtype
    from ..creation import _check_space_args, _finish

    _check_space_args("logspace", start, end, steps)
    kind = to_dtype(dtype).np if dtype is not None else get_default_dtype().np
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    t = kind.type if kind.kind == "f" else np.float64
    i = np.arange(steps)
    if steps == 1:
        values = np.power(t(base), np.full(1, t(start), t))
    elif steps:
        s, e = t(start), t(end)
        step = (e - s) / t(steps - 1)
        with np.errstate(over="ignore"):
            exps = np.where(i < steps // 2, s + step * i.astype(t), e - step * (steps - i - 1).astype(t))
            values = np.power(t(base), exps.astype(t))
    else:
        values = np.zeros(0, t)
    return _finish(np.ascontiguousarray(values.astype(kind)), requires_grad, device)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to (``numgrad.Size``), with PyTorch's
    error for shapes that do not broadcast."""
    from ..tensor import Size

    sizes = [(s,) if isinstance(s, (int, np.integer)) else tuple(int(n) for n in s)
             for s in shapes]
    out: list = []
    for i, shape in enumerate(sizes):
        if builtins.any(n < 0 for n in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        for k in range(1, len(shape) + 1):
            n = shape[-k]
            if k > len(out):
                out.insert(0, n)
            elif out[-k] == 1:
                out[-k] = n
            elif n != 1 and n != out[-k]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {n} at {-k}! Mismatching "
                    f"argument at index {i} had {shape}; but expected shape should be "
                    f"broadcastable to {out}")
    return Size(out)


def is_nonzero(input: Tensor) -> bool:
    """Whether the one-element tensor ``input`` is not zero (PyTorch's errors otherwise)."""
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def typename(obj) -> str:
    """The type of ``obj`` as a string: a tensor's legacy type (``numgrad.FloatTensor``), else
    its module and qualified name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


__all__ = [
    "addmv",
    "baddbmm",
    "bincount",
    "block_diag",
    "broadcast_shapes",
    "bucketize",
    "cartesian_prod",
    "combinations",
    "cummax",
    "cummin",
    "detach",
    "diff",
    "dropout",
    "histc",
    "index_add",
    "index_copy",
    "index_fill",
    "is_nonzero",
    "kron",
    "logcumsumexp",
    "logspace",
    "masked_scatter",
    "searchsorted",
    "select",
    "take",
    "tensor_split",
    "tensordot",
    "tril_indices",
    "triu_indices",
    "typename",
    "unbind",
]
METHODS = ("unbind", "select", "tensor_split", "index_add", "index_add_", "index_copy",
           "index_copy_", "index_fill", "index_fill_", "take", "masked_scatter",
           "masked_scatter_", "diff", "kron", "baddbmm", "baddbmm_", "addmv", "addmv_", "cummax",
           "cummin", "logcumsumexp", "bincount", "histc", "is_nonzero")
