"""Indexing: ``tensor[index]`` (reading) and ``tensor[index] = value`` (writing, in place).

An index expression is parsed once, as PyTorch parses it (``python_variable_indexing.cpp``), into
a ``Key`` of two NumPy index tuples applied one after the other:

* ``basic``: ints, slices and ``None`` (``...`` expanded), which give a *view*;
* ``adv``: integer arrays and boolean masks (full slices elsewhere) on that view, which *copy*.

The split follows PyTorch, not NumPy, where they differ: PyTorch applies ints (and 0-d integer
tensors) as ``select`` before any advanced index, so ``x[0, :, [1, 2]]`` has shape (4, 2) for a
(3, 4, 5) tensor where NumPy gives (2, 4); and a Python ``True`` is an unsqueeze indexed by [0].

Reading with a basic key is one view op whose node carries PyTorch's name for the last view op it
would record (``x[0]`` → SelectBackward0, ``x[1:, None]`` → UnsqueezeBackward0); one node instead
of PyTorch's chain, with the same gradient. An advanced key is one ``index`` op (IndexBackward0),
whose backward is a scatter-add (duplicates accumulate) recorded as an op, so double backward works.

Writing is ``index_put`` (advanced keys) or ``CopySlices`` (basic ones) run in place on the
tensor's storage; in grad mode the node becomes the tensor's ``grad_fn`` (its old history is an
input), as ``ops/inplace.py`` does. A write through a view rebases the view's *base* and gives the
view a fresh history from it, as PyTorch's ``CopySlices`` does.

Every view of that base (the one written through included) then regenerates its history on
next use, as PyTorch does: its version counter moved on since its ``grad_fn`` was recorded, so
``Tensor.grad_fn`` asks ``regenerate_view`` for an ``AsStridedBackward0`` node reading the view's
elements off the base's current history. The in-place ops of ``ops/inplace.py`` write through
views the same way (``write_view``).

Known difference, a node name off the common path: the double-backward node of an advanced index
that also slices is IndexPutImplBackward0 (PyTorch chains a view backward after it).
"""
from __future__ import annotations

import numbers
import os
import operator
import sys
import warnings
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..autograd import grad_mode
from .. import _lowp
from .._dtype import torch_name
from ..tensor import Tensor
from ..dispatch import note_created
from ..creation import check_scalar
from ..kernels.cpu.indexing import check_bounds, check_index
from . import _jvp, registry
from ._names import export
from .registry import Op, Sample, apply, kernels_for, kernels_of, register
from . import _OVERLAP
from .registry import _record
from .. import cuda

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_OF_LEAF = "a view of " + _LEAF
_NOT_AN_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
    "indices (got {})"
)
_BAD_INDEX_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"
_TUPLE_SEQUENCE = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
    "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
    "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result"
)

# The view ops PyTorch records for basic indexing; a key remembers its first and last one, which
# name the node of the view (the last) and of its backward (the first).
SELECT, SLICE, UNSQUEEZE, ALIAS = "select", "slice", "unsqueeze", "alias"
_INT64_MAX = (1 << 63) - 1


class Key(NamedTuple):
    """A parsed index: ``array[basic + (...,)][adv]`` (``adv`` None: a basic index, a view).
    ``mask``: the advanced part is one boolean mask (a write of one element there is PyTorch's
    masked_fill, which casts the value; other advanced writes need the tensor's dtype)."""

    basic: tuple
    adv: tuple | None
    first: str = ALIAS
    last: str = ALIAS
    mask: bool = False
    # The arguments of the last view op as PyTorch records them (its node's ``_saved_*``): a
    # slice's (dim, start, end, step, sizes of its input) with the bounds as written (None
    # start 0, None end INT64_MAX), a select's (dim, index, sizes), an unsqueeze's (dim,).
    view: tuple | None = None


# ------------------------------------------------------------------ parsing
_INT, _SLICE, _NONE, _ELLIPSIS, _BOOL, _ARRAY, _MASK = range(7)


def _index_array(obj, cuda: bool = False):
    """An index tensor, array or (nested) list as an int64 or bool array: a NumPy array, or, for
    a CUDA index tensor indexing a CUDA tensor (``cuda``), a device array, which stays on the
    device (its indices are checked there, by the kernel). A CUDA index tensor indexing a CPU
    tensor is copied to the host (a sync the user chose by mixing devices)."""
    if isinstance(obj, Tensor):
        arr = obj._data
        if not isinstance(arr, np.ndarray):
            K = kernels_of(arr)
            if not cuda:
                arr = K.to_host(arr)
            elif arr.dtype.kind == "b" or arr.dtype == np.int64:
                return arr
            elif arr.dtype == np.uint8:
                return K.cast(_byte_mask(arr), np.bool_)
            elif arr.dtype == np.int32:
                return K.cast(arr, np.int64)
            else:
                raise IndexError(_BAD_INDEX_DTYPE)
    elif isinstance(obj, np.ndarray):
        arr = obj
    else:
        arr = np.array(obj)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)  # [] is an empty long index, as in PyTorch
    if arr.dtype.kind == "b":
        return arr
    if isinstance(obj, (Tensor, np.ndarray)) and arr.dtype.kind in "iu" and arr.dtype not in (
            np.int64, np.int32):  # (PyTorch's: long, int and byte index tensors, byte a mask)
        if arr.dtype != np.uint8:
            raise IndexError(_BAD_INDEX_DTYPE)
        return _byte_mask(arr).astype(np.bool_)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    raise IndexError(_BAD_INDEX_DTYPE)


def _byte_mask(arr):
    """A uint8 index tensor, which PyTorch reads as a mask (nonzero: true), with its warning."""
    frame, level = sys._getframe(), 1  # (the warning points at the user's line)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                  "torch.bool instead.", UserWarning, stacklevel=level)
    return arr


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _scalar(arr):
    """The value of a 0-d index array; of a device one, read back: a sync (PyTorch reads a 0-d
    integer index tensor with ``item()`` too, to select)."""
    return arr[()] if isinstance(arr, np.ndarray) else kernels_of(arr).to_host(arr)[()]


def _classify(obj, cuda: bool = False):
    """One index item as (kind, value)."""
    kind = type(obj)
    if kind is int:
        return _INT, obj
    if kind is slice:
        return _SLICE, obj
    if obj is None:
        return _NONE, None
    if obj is Ellipsis:
        return _ELLIPSIS, None
    if kind is not Tensor:  # (an index tensor, the common case, skips the number checks)
        if isinstance(obj, (bool, np.bool_)):
            return _BOOL, bool(obj)
        if isinstance(obj, (numbers.Integral, np.integer)):
            return _INT, int(obj)
    if isinstance(obj, (Tensor, np.ndarray, list, tuple, range)):  # (``y_hat[range(n), y]``)
        arr = _index_array(obj, cuda)
        if arr.ndim == 0 and isinstance(obj, (Tensor, np.ndarray)):
            # A 0-d integer tensor is an int (select); a 0-d bool one is a Python bool.
            value = _scalar(arr)
            return (_BOOL, bool(value)) if arr.dtype.kind == "b" else (_INT, int(value))
        return (_MASK if arr.dtype.kind == "b" else _ARRAY), arr
    if hasattr(type(obj), "__index__"):
        return _INT, obj.__index__()
    raise IndexError(_NOT_AN_INDEX.format(type(obj).__name__))


def _index_tensors_key(index: tuple):
    """The key of ``x[i, j]`` where every item is a host int64 index tensor, all of one shape of
    one dimension or more (a loss's ``logp[rows, target]``): what the general walk gives, without
    it. None for any other index."""
    arrays = []
    for obj in index:
        if type(obj) is not Tensor:
            return None
        a = obj._data
        if type(a) is not np.ndarray or a.dtype != np.int64 or not a.ndim or (
                arrays and a.shape != arrays[0].shape):
            return None
        arrays.append(a)
    return Key((slice(None),) * len(arrays), tuple(arrays))


def _sequence_is_tuple(seq: list) -> bool:
    """PyTorch's (NumPy's old) rule: a list holding a tensor, sequence, slice, ``...`` or None
    indexes several dimensions, as a tuple would; otherwise it is one index tensor."""
    if len(seq) >= 32:
        return False
    return any(
        isinstance(o, (Tensor, np.ndarray, list, tuple, range, slice, str)) or o is None
        or o is Ellipsis
        for o in seq
    )


def parse_index(index, shape: tuple, cuda: bool = False) -> Key:
    """The ``Key`` of ``tensor[index]`` for a tensor of ``shape``, with PyTorch's errors. For a
    CUDA tensor (``cuda``) the key's index arrays are device int64 arrays (``_to_device``)."""
    if type(index) is int and shape and -shape[0] <= index < shape[0]:
        # (the common x[i], without the general walk)
        return Key((index,), None, SELECT, SELECT, False, (0, index, shape))
    if type(index) is tuple and not cuda and 0 < len(index) <= len(shape):
        key = _index_tensors_key(index)
        if key is not None:
            return key
    single = not isinstance(index, tuple)
    if single and isinstance(index, list) and _sequence_is_tuple(index):
        warnings.warn(_TUPLE_SEQUENCE, UserWarning, stacklevel=3)
        index, single = tuple(index), False
    items = [_classify(obj, cuda) for obj in (index if not single else (index,))]
    ndim = len(shape)
    specified = sum(
        1 if kind in (_INT, _SLICE, _ARRAY) else value.ndim if kind == _MASK else 0
        for kind, value in items
    )
    if specified > ndim:
        if ndim == 0 and single and items[0][0] == _INT:
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        if ndim == 0 and single and items[0][0] == _SLICE:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")

    basic, adv, kinds = [], {}, []
    view = None  # the last view op's arguments (``Key.view``)
    cur = list(shape)  # the shape of the view built so far
    dim = 0  # the view's next dimension
    expanded = False
    for pos, (kind, value) in enumerate(items):
        if kind == _INT:
            size = cur[dim]
            if not -size <= value < size:
                raise IndexError(
                    f"index {value} is out of bounds for dimension {pos} with size {size}"
                )
            basic.append(value)
            view = (dim, value, tuple(cur))
            del cur[dim]
            kinds.append(SELECT)
        elif kind == _SLICE:
            size = cur[dim]
            start, stop, step = value.indices(size)  # raises for a zero step, as Python does
            if step < 0:
                raise ValueError("step must be greater than zero")
            if single or not _is_full(value, size):
                kinds.append(SLICE)
                view = (dim, 0 if value.start is None else operator.index(value.start),
                        _INT64_MAX if value.stop is None else operator.index(value.stop),
                        1 if value.step is None else operator.index(value.step), tuple(cur))
            basic.append(slice(start, stop, step))
            cur[dim] = len(range(start, stop, step))
            dim += 1
        elif kind == _NONE or kind == _BOOL:
            basic.append(None)
            cur.insert(dim, 1)
            kinds.append(UNSQUEEZE)
            view = (dim,)
            if kind == _BOOL:  # x[True]: x[None] indexed by [0]; x[False]: by [] (PyTorch)
                adv[dim] = np.zeros(1 if value else 0, np.int64)
            dim += 1
        elif kind == _ELLIPSIS:
            if not expanded:  # PyTorch ignores a second ``...`` (NumPy rejects it)
                free = ndim - specified
                basic.extend([slice(None)] * free)
                dim += free
                expanded = True
        else:  # an index array or a mask: full slices in the view, the array in ``adv``
            n = value.ndim if kind == _MASK else 1
            basic.extend([slice(None)] * n)
            adv[dim] = value
            dim += n
    first, last = (kinds[0], kinds[-1]) if kinds else (ALIAS, ALIAS)
    if not adv:
        return Key(tuple(basic), None, first, last, False, view)
    resolved = _check_advanced(adv, cur, cuda)
    entries, d = [], 0
    for p in sorted(adv):
        entries.extend([slice(None)] * (p - d))
        entries.extend(resolved.get(p, (adv[p],)))
        d = p + (adv[p].ndim if adv[p].dtype.kind == "b" else 1)
    entries = tuple(entries)
    mask = len(adv) == 1 and next(iter(adv.values())).dtype.kind == "b"
    return Key(tuple(basic), _to_device(entries) if cuda else entries, first, last, mask)


def _is_host(a) -> bool:
    return isinstance(a, np.ndarray)


def _to_device(entries: tuple) -> tuple:
    """The entries of an advanced key for a CUDA tensor: full slices and device int64 arrays (a
    host index array is uploaded once, here, after its check on the host; a host mask becomes its
    coordinates). The key is kept by the op's node, so the backward reuses them."""
    out, K = [], None
    for e in entries:
        if isinstance(e, slice) or not _is_host(e):
            out.append(e)
            continue
        if K is None:
            K = cuda.kernels()
        out.extend(K.upload(c) for c in (np.nonzero(e) if e.dtype.kind == "b" else (e,)))
    return tuple(out)


def _is_full(s: slice, size: int) -> bool:
    """Whether PyTorch skips the slice in a tuple index: it looks at the bounds as written
    (``x[:, -9:]`` records a slice, ``x[:, 0:9]`` does not), before any clamping."""
    start = 0 if s.start is None else operator.index(s.start)
    stop = size if s.stop is None else operator.index(s.stop)
    step = 1 if s.step is None else operator.index(s.step)
    return start == 0 and stop >= size and step == 1


def _check_advanced(adv: dict, shape: list, cuda: bool = False) -> dict:
    """PyTorch's checks on the index tensors at dimensions ``adv`` of a view of ``shape``: masks
    match the dimensions they cover, indices broadcast together and are in bounds. The bounds of
    a tensor's own device's index arrays are checked by the kernel (K.index, K.index_put: at
    once on the CPU, at the next sync on CUDA, so that a compiled replay raises as eager does);
    host index arrays for a CUDA tensor here, before they are uploaded (``cuda``). Returns the
    coordinates of the device masks (their ``nonzero``, by position), computed for the count."""
    shape = list(shape)
    resolved = {}
    tensors = []  # (shape, indexed dimension, int array or None), masks expanded as nonzero()
    for p in sorted(adv):
        a = adv[p]
        if a.dtype.kind == "b":
            for j in range(a.ndim):
                if a.shape[j] != shape[p + j]:
                    raise IndexError(
                        f"The shape of the mask {list(a.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {shape} at index {p + j}"
                    )
            if _is_host(a):
                count = int(np.count_nonzero(a))
            else:  # on the device: one int64 read back, the count (PyTorch syncs there too)
                resolved[p] = kernels_of(a).nonzero(a)
                count = resolved[p][0].shape[0]
            tensors.extend(((count,), p + j, None) for j in range(a.ndim))
        else:
            tensors.append((a.shape, p, a))
    try:
        first = tensors[0][0]
        if any(s != first for s, _, _ in tensors):  # (index arrays of one shape: the common case)
            np.broadcast_shapes(*(s for s, _, _ in tensors))
    except ValueError:
        shapes = ", ".join(str(list(s)) for s, _, _ in tensors)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    if cuda:
        for k, (_, p, a) in enumerate(tensors):
            if a is not None and _is_host(a):
                check_index(a, shape[p], k)
    return resolved


def _indices_key(indices, shape: tuple, cuda: bool = False) -> Key:
    """The key of ``index_put``'s ``indices``: one tensor per leading dimension, every one an
    advanced index (a 0-d one included)."""
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(
            "index_put(): argument 'indices' must be tuple of Tensors, not "
            f"{type(indices).__name__}"
        )
    adv, d = {}, 0
    for i, obj in enumerate(indices):
        if not isinstance(obj, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(obj).__name__}")
        arr = _index_array(obj, cuda)
        adv[d] = arr
        d += arr.ndim if arr.dtype.kind == "b" else 1
    if d > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    resolved = _check_advanced(adv, shape, cuda) if adv else {}
    entries = tuple(e for p in adv for e in resolved.get(p, (adv[p],)))
    mask = len(adv) == 1 and adv[0].dtype.kind == "b"
    return Key((), _to_device(entries) if cuda else entries, mask=mask)


# ------------------------------------------------------------------ array-level helpers
def _basic(a, key: Key):
    """The view ``a[key.basic]``, an array even when every entry is an int (host or device)."""
    if isinstance(a, np.ndarray):
        return a[key.basic + (Ellipsis,)]
    return kernels_of(a).view_index(a, key.basic + (Ellipsis,))


def _gather(a, key: Key):
    return kernels_of(a).index(a, key.basic, key.adv)


def _indexed_shape(a, key: Key) -> tuple:
    """The shape of ``a[key]``, without copying ``a``."""
    if not isinstance(a, np.ndarray):  # (shapes only: a host stand-in of no memory)
        a = np.broadcast_to(np.zeros((), np.int8), a.shape)
        view = _basic(a, key)
        if key.adv is None:
            return view.shape

        return cuda.kernels().result_shape(view.shape, key.adv)
    view = _basic(a, key)
    if key.adv is None:
        return view.shape
    # (a stand-in indexed by zeros of the index arrays' shapes: their values are not read here,
    # those of a re-run compiled call may not be computed yet; their bounds are the kernel's)
    stand_in = tuple(e if isinstance(e, slice) or e.dtype.kind == "b" else
                     np.broadcast_to(np.zeros((), np.intp), e.shape) for e in key.adv)
    try:
        return np.broadcast_to(np.zeros((), np.int8), view.shape)[stand_in].shape
    except IndexError:
        check_bounds(view.shape, key.adv)  # PyTorch's message for the index out of range
        raise


def _put_into(K, out, key: Key, values, accumulate: bool) -> None:
    """``out[key] = values`` (or ``+=``, duplicates accumulating), in place."""
    K.index_put(out, key.basic, key.adv, values, accumulate)


def _address(a) -> int:
    return kernels_of(a).address(a)


def _positions_in(base, view) -> np.ndarray:
    """For each element of ``view`` (a view into ``base``'s memory, host or device), its flat
    C-order position in ``base``: a table laid out like ``base``'s memory maps addresses to
    positions."""
    if base.size == 0:
        return np.zeros(view.shape, np.int64)
    item = base.itemsize
    steps = [s // item for s in base.strides]
    lo = sum((n - 1) * s for n, s in zip(base.shape, steps) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(base.shape, steps) if s > 0)
    table = np.full(hi - lo + 1, -1, np.int64)
    wide = table.itemsize
    as_strided(table[-lo:], base.shape, [s * wide for s in steps])[...] = np.arange(
        base.size, dtype=np.int64
    ).reshape(base.shape)
    offset = (_address(view) - _address(base)) // item
    return as_strided(
        table[offset - lo:], view.shape, [s // item * wide for s in view.strides]
    ).copy()


# ------------------------------------------------------------------ ops: reading
class _BasicView(Op):
    """``a[key]`` for a basic key: a view. Subclassed once per PyTorch node name."""

    jvp = _jvp.linear
    is_view = True

    @staticmethod
    def forward(K, a, *, key):
        return K.view_index(a, key.basic + (Ellipsis,))

    @staticmethod
    def backward(ctx, grad):
        key = ctx.params["key"]
        if key.first == ALIAS:
            return (grad,)
        return (_view_backward(grad, ctx.input_shapes[0], key),)


@register
class Select(_BasicView):
    name, node = "getitem_select", "SelectBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a: a[1], ((3, 4),)),
        Sample(lambda m, a: a[:, -1], ((3, 4),)),
        Sample(lambda m, a: a[None, 2, 1:3, 0], ((3, 4, 5),)),
        Sample(lambda m, a: a[m.tensor(1), ..., -2], ((3, 4, 5),)),
    )


@register
class Slice(_BasicView):
    name, node = "getitem_slice", "SliceBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a: a[1:, None, ::2], ((3, 4, 5),)),
        Sample(lambda m, a: a[:], ((3, 4),)),
        Sample(lambda m, a: a[0, :, -4:-1:2], ((3, 4, 5),)),
        Sample(lambda m, a: a[-100:2, 1:], ((3, 4),)),
    )


@register
class UnsqueezeView(_BasicView):
    name, node = "getitem_unsqueeze", "UnsqueezeBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a: a[None], ((3, 4),)),
        Sample(lambda m, a: a[0, None], ((3, 4),)),
        Sample(lambda m, a: a[None, ..., 1:3, None], ((2, 3, 4),)),
    )


@register
class Alias(_BasicView):
    name, node = "getitem_alias", "AliasBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a: a[...], ((3, 4),)),
        Sample(lambda m, a: a[:, 0:100], ((3, 4),)),
    )


_VIEWS = {SELECT: Select, SLICE: Slice, UNSQUEEZE: UnsqueezeView, ALIAS: Alias}


class _ViewBackward(Op):
    """The gradient of a basic view: zeros of the input's shape with ``grad`` at ``key``. Named
    as PyTorch names the backward of the first view op of the key."""

    jvp = _jvp.linear
    @staticmethod
    def forward(K, grad, *, shape, key):
        out = K.zeros(shape, grad.dtype)
        K.assign(K.view_index(out, key.basic + (Ellipsis,)), grad)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (take(grad, ctx.params["key"]),)


@register
class SelectBackward(_ViewBackward):
    name, node = "getitem_select_backward", "SelectBackwardBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a, g: m.autograd.grad(a[1, ::2], a, g, create_graph=True)[0],
               ((3, 4), (2,))),
    )


@register
class SliceBackward(_ViewBackward):
    name, node = "getitem_slice_backward", "SliceBackwardBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a, g: m.autograd.grad(a[1:, None, 2], a, g, create_graph=True)[0],
               ((3, 4, 5), (2, 1, 5))),
    )


@register
class UnsqueezeViewBackward(_ViewBackward):
    name, node = "getitem_unsqueeze_backward", "SqueezeBackward1"
    on_cuda = True
    samples = (
        Sample(lambda m, a, g: m.autograd.grad(a[None, 1:], a, g, create_graph=True)[0],
               ((3, 4), (1, 2, 4))),
    )


_VIEW_BACKWARDS = {SELECT: SelectBackward, SLICE: SliceBackward, UNSQUEEZE: UnsqueezeViewBackward}


def _view_backward(grad: Tensor, shape: tuple, key: Key) -> Tensor:
    op = _VIEW_BACKWARDS[key.first]
    return apply(op, (grad,), (grad._data,), shape=shape, key=key)


@register
class Index(Op):
    """``a[key]`` for an advanced key (index tensors, masks): a copy."""

    name, node = "index", "IndexBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a: a[m.tensor([0, 2, 2])], ((3, 4),)),
        Sample(lambda m, a: a[:, m.tensor([[0, 1], [3, 3]])], ((3, 4),)),
        Sample(lambda m, a: a[m.tensor([True, False, True])], ((3, 4),)),
        Sample(lambda m, a: a[m.tensor([[True, False, True, True], [False] * 4, [True] * 4])],
               ((3, 4),)),
        Sample(lambda m, a: a[0, :, m.tensor([1, 4, 1])], ((2, 3, 5),)),
        Sample(lambda m, a: a[m.tensor([1, 0, 1]), 1:, m.tensor([4, 4, 0])], ((2, 3, 5),)),
        Sample(lambda m, a: a[[1, 1], None, m.tensor([[2], [0]])], ((2, 3),)),
        Sample(lambda m, a: a[True, ..., m.tensor([2, 2])], ((2, 3),)),
    )

    @staticmethod
    def forward(K, a, *, key):
        return K.index(a, key.basic, key.adv)

    @staticmethod
    def backward(ctx, grad):
        g = grad._data
        K = kernels_of(g)
        zeros = K.zeros(ctx.input_shapes[0], g.dtype)
        key = ctx.params["key"]
        if not grad_mode.state.enabled:  # (a plain backward: the kernel its op would run)
            _put_into(K, zeros, key, g, True)
            return (Tensor._wrap(zeros),)
        # ``zeros`` is ours: the scatter can run in it (``inplace``) instead of in a copy.
        return (_put(IndexPutImpl, Tensor._wrap(zeros), key, grad, accumulate=True, inplace=True),)


@register
class AsStrided(Index):
    """The regenerated history of a view whose base was written in place after the view was made
    (``regenerate_view``): the view's elements read off the base at their flat positions, whose
    backward scatters the gradient into zeros of the base's shape (positions that repeat, in an
    expanded view, adding up)."""

    name, node = "as_strided_view", "AsStridedBackward0"
    jvp = _jvp.linear  # (a view's tangent read off its base's: ``forward_ad._view_tangents``)
    samples = (
        Sample(lambda m, a: _stale_view(a * 1, lambda y: y[1:3], lambda y: y.mul_(2)), ((4,),)),
        Sample(lambda m, a: _stale_view(a * 1, lambda y: y.t()[1], lambda y: y.add_(y)),
               ((3, 2),)),
        Sample(lambda m, a: _stale_view(a * 1, lambda y: y.expand(2, 3), lambda y: y.mul_(3)),
               ((3,),)),
    )


def _stale_view(y, make_view, write):
    """A view of ``y`` made, then ``y`` written in place: the view's history is regenerated."""
    view = make_view(y)
    write(y)
    return view


def regenerate_view(view: Tensor):
    """A fresh history for ``view``, read off its base's current one (``Tensor.grad_fn`` calls
    this once the version counter they share has moved on since the view's history was
    recorded). A view of a base that does not require grad keeps what it has."""
    base = view._base
    view._view_version = view._version_counter.value
    if not base._requires_grad:
        return view._grad_fn

    positions = _positions_in(base._data, view._data)
    if not _is_host(base._data):
        positions = kernels_of(base._data).upload(positions)
    view._requires_grad = True
    _record(AsStrided, (base,), view, {"key": _base_key(positions, base)})
    return view._grad_fn


def write_view(view: Tensor, key, values: Tensor, accumulate: bool = False) -> None:
    """Writes ``values`` into ``view[key]`` (``key`` None: all of the view) through its base,
    recorded: the base's history becomes a ``CopySlices`` node over its old one, and every view
    of the base regenerates its history on next use (the version counter moves on)."""
    base = view._base
    positions = _positions_in(base._data, view._data)
    if not _is_host(base._data):
        positions = kernels_of(base._data).upload(positions)
    written = positions if key is None else (
        _gather(positions, key) if key.adv is not None else _basic(positions, key))
    result = _put(CopySlices, base, _base_key(written, base), values, accumulate, inplace=True)
    base.grad_fn = result.grad_fn
    base._requires_grad = True


def take(input: Tensor, key: Key) -> Tensor:
    """``input[key]`` for a parsed key: a view (basic key) or a copy (advanced key)."""
    if key.adv is None:
        return apply(_VIEWS[key.last], (input,), (input._data,), key=key)
    return apply(Index, (input,), (input._data,), key=key)


# ------------------------------------------------------------------ ops: writing
class _Put(Op):
    """``a`` with ``values`` written (or, with ``accumulate``, added) at ``key``.

    Out of place unless ``inplace``, which writes into ``a`` itself: ``__setitem__`` and
    ``index_put_`` use that, recording the node on the tensor they modify.
    """

    jvp = _jvp.linear
    @staticmethod
    def forward(K, a, values, *, key, accumulate=False, inplace=False):
        out = a if inplace else K.copy(a)
        _put_into(K, out, key, values, accumulate)
        return out

    @staticmethod
    def backward(ctx, grad):
        need_self, need_values = ctx.needs_input_grad
        key, accumulate = ctx.params["key"], ctx.params["accumulate"]
        grad_self = grad_values = None
        if need_self:
            # What was overwritten gets no gradient; what was added to keeps it.
            grad_self = grad if accumulate else _put(
                ctx.op, grad, key, Tensor._wrap(kernels_of(grad._data).zeros((), grad._data.dtype)))
        if need_values:
            grad_values = take(grad, key)  # the engine sums it to ``values``' shape
        return grad_self, grad_values


def _setitem(t, index, value):
    """``t[index] = value; return t``: a setitem inside a sample's lambda."""
    t[index] = value
    return t


def _setitem_in_view(t, view_index, index, value):
    """``t[view_index][index] = value; return t``: a write through a view."""
    t[view_index][index] = value
    return t


@register
class IndexPut(_Put):
    name, node = "index_put", "IndexPutBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a, v: m.index_put(a, (m.tensor([0, 2, 2]),), v, accumulate=True),
               ((3, 4), (3, 4))),
        Sample(lambda m, a, v: m.index_put(a, (m.tensor([2, 0]),), v), ((3, 4), (4,))),
        Sample(lambda m, a, v: a.index_put((m.tensor([0, 1, 1]), m.tensor([3, 0, 0])), v, True),
               ((3, 4), (1,))),
        Sample(lambda m, a, v: a.index_put(
            (m.tensor([[0], [2]]), m.tensor([True, False, True, True])), v), ((3, 4), (3,))),
        Sample(lambda m, a, v: _setitem(a * 1, m.tensor([2, 0]), v), ((3, 4), (2, 1))),
        Sample(lambda m, a, v: _setitem(a * 1, (..., m.tensor([True, False, True, True])), v),
               ((3, 4), (3,))),
        Sample(lambda m, a: _setitem(a * 1, (slice(None), [3, 1]), 0.5), ((3, 4),)),
    )


@register
class IndexPutImpl(_Put):
    """The backward of ``index``: a scatter-add into zeros (PyTorch's ``_index_put_impl_``)."""

    name, node = "index_put_impl", "IndexPutImplBackward0"
    on_cuda = True
    samples = (
        Sample(lambda m, a, g: m.autograd.grad(a[m.tensor([0, 2, 2])], a, g, create_graph=True)[0],
               ((3, 4), (3, 4))),
        Sample(lambda m, a, g: m.autograd.grad(a[:, m.tensor([[0], [0]])], a, g,
                                               create_graph=True)[0], ((3, 4), (3, 2, 1))),
    )


@register
class CopySlices(_Put):
    """A write at a basic key, or through a view: PyTorch's CopySlices node on the base."""

    name, node = "setitem", "torch::autograd::CopySlices"
    on_cuda = True
    samples = (
        Sample(lambda m, a, v: _setitem(a * 1, (0, slice(1, 3)), v), ((3, 4), (2,))),
        Sample(lambda m, a, v: _setitem(a * 1, (slice(None), None, 2), v), ((3, 4), (1, 1))),
        Sample(lambda m, a: _setitem(a * 1, 1, 2.5), ((3, 4),)),
        Sample(lambda m, v: _setitem(m.zeros(3, 4, dtype=v.dtype), (1, slice(None, None, 2)), v),
               ((2,),)),
        Sample(lambda m, a, v: _setitem_in_view(a * 1, 1, slice(0, 2), v), ((3, 4), (2,))),
        Sample(lambda m, a, v: _setitem_in_view(a * 1, (slice(None), 2), m.tensor([2, 0]), v),
               ((3, 4), (2,))),
        Sample(lambda m, a, v: _setitem(a * 1, (m.tensor([True, False, True]), 1), v),
               ((3, 4), (2,))),
    )


def _put(op, input: Tensor, key: Key, values: Tensor, accumulate=False, inplace=False) -> Tensor:
    return apply(op, (input, values), (input._data, values._data), key=key,
                 accumulate=accumulate, inplace=inplace)


# ------------------------------------------------------------------ writing in place
def _tensor_kind(t: Tensor) -> str:
    return torch_name(t._data.dtype)


def _as_value(value, t: Tensor) -> Tensor:
    """A value to write into ``t``: a tensor, or a number as a 0-d tensor of ``t``'s dtype."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (numbers.Number, np.bool_, np.number)):
        data = t._data
        check_scalar(value, data.dtype)
        if isinstance(value, (complex, np.complexfloating)) and data.dtype.kind in "fiu":
            value = value.real  # (its imaginary part is 0: check_scalar refuses any other)
        if isinstance(data, np.ndarray):
            number = np.array(value).astype(data.dtype) if data.dtype.kind != "V" else \
                _lowp.cast(np.array(value), data.dtype)  # (bfloat16: rounded as PyTorch)
            note_created(number)
            return Tensor._wrap(number)
        return Tensor._wrap(kernels_of(data).full((), np.array(value).astype(data.dtype)[()], data.dtype))
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    raise TypeError(f"can't assign a {name} to a numgrad.{_tensor_kind(t)}Tensor")


def _fit_value(values: Tensor, target: tuple, key: Key, t: Tensor) -> Tensor:
    """``values`` without leading size-1 dimensions (as PyTorch strips them), checked to
    broadcast to ``target``, the shape of ``t[key]``."""
    shape = values._data.shape
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    stripped = shape[lead:]
    if key.adv is not None:
        try:
            ok = np.broadcast_shapes(stripped, target) == tuple(target)
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(stripped)} cannot be broadcast to "
                f"indexing result of shape {list(target)}"
            )
    else:
        if len(stripped) > len(target):
            raise RuntimeError(
                f"expand(numgrad.{_tensor_kind(values)}Tensor{{{list(stripped)}}}, "
                f"size={list(target)}): the number of sizes provided ({len(target)}) must be "
                f"greater or equal to the number of dimensions in the tensor ({len(stripped)})"
            )
        offset = len(target) - len(stripped)
        for i, n in enumerate(stripped):
            if n != 1 and n != target[offset + i]:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[offset + i]}) must match the "
                    f"existing size ({n}) at non-singleton dimension {offset + i}.  Target sizes: "
                    f"{list(target)}.  Tensor sizes: {list(stripped)}"
                )
    if not lead:
        return values
    if grad_mode.state.enabled and values._requires_grad or registry._forward_ad is not None:
        return values.reshape(stripped)  # (recorded: its history, and its forward-AD tangent)
    data = values._data
    return Tensor._wrap(kernels_of(data).reshape_view(data, stripped))


def _check_leaf(t: Tensor, key: Key) -> None:
    """PyTorch's error for writing, in grad mode, into a leaf that requires grad or a view of one
    (indexing by a basic key writes through a view, so that is the message there)."""
    if not grad_mode.state.enabled:
        return
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError(_LEAF if t._base is None and key.adv is not None else _VIEW_OF_LEAF)
    base = t._base
    if base is not None and (t._requires_grad or base._requires_grad and
                             type(getattr(t, "_multi_nr", None)) is str):  # (made in no_grad)
        _check_multi_view(t, key)
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError(_VIEW_OF_LEAF)


def _check_multi_view(t: Tensor, key: Key) -> None:
    """``registry.check_multi_view`` for a write into ``t[key]``: PyTorch names the view the
    basic part of the key makes (Select, Slice, Unsqueeze), or ``t``'s node where it makes none."""
    if getattr(t, "_multi_nr", None) is None:  # (not such a view: the common case)
        return
    full = all(type(k) is slice and k.start in (0, None) and k.step in (1, None)
               and (k.stop is None or k.stop >= n)
               for k, n in zip(key.basic, t._data.shape))  # (whole slices: PyTorch skips them)
    registry.check_multi_view(t, None if key.last == ALIAS or full else key.last.capitalize())


def _write(t: Tensor, key: Key, value, op, accumulate: bool = False) -> Tensor:
    """``t[key] = value`` (or ``+=``) in place: the data, the version counter and, in grad mode,
    the history (of ``t``'s base too when ``t`` is a view)."""
    if key.adv is not None and isinstance(value, Tensor):
        _check_put_dtype(t, value, key, accumulate)
    values = _as_value(value, t)
    if values.device != t.device:
        values = _on_device_of(t, values, key, op is CopySlices, accumulate)
    _check_leaf(t, key)
    values = _fit_value(values, _indexed_shape(t._data, key), key, t)
    _check_partial_overlap(_basic(t._data, key), values._data)
    tracked = grad_mode.state.enabled and (t._requires_grad or values._requires_grad)
    if tracked and t._base is not None:
        _check_multi_view(t, key)  # (PyTorch's error for split's parts, before any write)
    # An expanded view is a read-only NumPy array: its write goes to its base's storage.
    writeable = kernels_of(t._data).is_writeable(t._data)
    if t._base is not None and (tracked or not writeable):
        if registry._forward_ad is not None:  # (forward AD: the view's and its base's tangents)
            from ..autograd.forward_ad import write_into
            write_into(t, key, values, op, accumulate)
        _write_through_view(t, key, values, accumulate, tracked)
    elif not writeable:
        raise RuntimeError(_OVERLAP)
    elif tracked or registry._forward_ad is not None:  # (forward AD: the op's tangent for t)
        result = _put(op, t, key, values, accumulate, inplace=True)
        if tracked:
            t.grad_fn = result.grad_fn
            t._requires_grad = True
        if registry._forward_ad is not None:
            from ..autograd.forward_ad import copy_tangents
            copy_tangents(result, t)
    else:
        _put_into(kernels_for((t,)), t._data, key, values._data, accumulate)
    t._version_counter.value += 1
    if tracked and t._base is not None:
        t.grad_fn  # noqa: B018 (the view's history, regenerated now: it requires grad from here)
    return t


def _on_device_of(t: Tensor, values: Tensor, key: Key, copy: bool, accumulate: bool) -> Tensor:
    """``values`` moved to ``t``'s device where PyTorch moves them: a write at a basic key (its
    copy_, recorded), a 0-d value (index_put_ moves it), one value for a boolean mask (its
    masked_fill reads it); else PyTorch's error for two devices."""
    data = values._data
    if copy or data.ndim == 0 or (key.mask and not accumulate and data.size == 1):
        return values.to(t.device)
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{'cpu' if isinstance(data, np.ndarray) else 'cuda:0'} and "
        f"{'cpu' if isinstance(t._data, np.ndarray) else 'cuda:0'}!"
    )


def _check_partial_overlap(dest: np.ndarray, src: np.ndarray) -> None:
    """PyTorch refuses to copy between dense blocks of memory that overlap without coinciding
    (``y[1:] = y[:-1]``), rather than pick a copy order."""
    a, b = _dense_range(dest), _dense_range(src)
    if a is not None and b is not None and a != b and a[0] < b[1] and b[0] < a[1]:
        raise RuntimeError(
            "unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation."
        )


def _dense_range(a):
    """The (start, end) addresses of ``a``'s memory if its elements fill it without gaps or
    repeats; else None (PyTorch does not look further at such tensors)."""
    if a.size == 0:
        return None
    low = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0) + a.itemsize
    if high - low != a.size * a.itemsize or any(s == 0 for n, s in zip(a.shape, a.strides) if n > 1):
        return None
    start = _address(a) + low
    return start, start + high - low


def _write_through_view(view: Tensor, key: Key, values: Tensor, accumulate: bool,
                        tracked: bool) -> None:
    """Writes into the view's base at the positions ``view[key]`` occupies in it. Tracked, that
    write becomes the base's history (CopySlices) and the view gets a history read off the base."""
    base = view._base
    positions = _positions_in(base._data, view._data)
    region = _basic(positions, key)
    if (not kernels_of(view._data).is_writeable(view._data)
            and np.unique(region).size != region.size):
        raise RuntimeError(_OVERLAP)  # the written-to elements of an expanded view repeat
    if not _is_host(base._data):
        # The key's index arrays are on the device: so go the positions (an upload, no sync).
        positions = kernels_of(base._data).upload(positions)
        region = _basic(positions, key)
    if not tracked:
        written = _gather(positions, key) if key.adv is not None else region
        _put_into(kernels_for((base,)), base._data, _base_key(written, base), values._data,
                  accumulate)
        return
    write_view(view, key, values, accumulate)


def _base_key(positions, base: Tensor) -> Key:
    """The advanced key reaching the flat ``positions`` of ``base`` (host or device arrays, as
    ``positions``)."""
    if base._data.ndim == 0:  # (every position is 0: the base unsqueezed, indexed by them)
        return Key((None,), (positions,))
    if _is_host(positions):
        return Key((), np.unravel_index(positions, base._data.shape))
    return Key((), kernels_of(positions).unravel_index(positions, base._data.shape))


# ------------------------------------------------------------------ public functions
def _on_cuda(t: Tensor) -> bool:
    return not isinstance(t._data, np.ndarray)


@export(function=False, method=True)
def __getitem__(self: Tensor, index) -> Tensor:
    """``self[index]`` with ints, slices, None, ``...``, integer tensors (or lists) and boolean
    masks, as in PyTorch: a view sharing storage for basic indexing, a copy for advanced."""
    return take(self, parse_index(index, self._data.shape, _on_cuda(self)))


@export(function=False, method=True)
def __setitem__(self: Tensor, index, value) -> None:
    """``self[index] = value`` in place, ``value`` (a tensor or a number) broadcast to
    ``self[index]``'s shape and cast to ``self``'s dtype."""
    key = parse_index(index, self._data.shape, _on_cuda(self))
    # PyTorch writes through the view its basic ops make (CopySlices), if they make one.
    _write(self, key, value, IndexPut if key.adv is not None and key.first == ALIAS else CopySlices)


def _check_put(input: Tensor, values) -> None:
    if not isinstance(values, Tensor):
        raise TypeError(
            f"index_put(): argument 'values' must be Tensor, not {type(values).__name__}")


def _check_put_dtype(t: Tensor, values: Tensor, key: Key, accumulate: bool) -> None:
    """PyTorch's index_put_ needs ``values`` in ``t``'s dtype, except where it becomes a
    masked_fill (no accumulation, one boolean mask, one value on the host), which casts it."""
    if values._data.dtype == t._data.dtype:
        return
    if (key.mask and not accumulate and values._data.size == 1
            and isinstance(values._data, np.ndarray)):
        return
    raise RuntimeError(
        "Index put requires the source and destination dtypes match, got "
        f"{_tensor_kind(t)} for the destination and {_tensor_kind(values)} for the source."
    )


@export(method=True)
def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` put at ``input[indices]`` (``indices``: a tuple of
    index tensors, one per leading dimension); with ``accumulate``, added there instead, indices
    that repeat adding up."""
    _check_put(input, values)
    key = _indices_key(indices, input._data.shape, _on_cuda(input))
    _check_put_dtype(input, values, key, bool(accumulate))
    if values.device != input.device:
        values = _on_device_of(input, values, key, False, bool(accumulate))
    values = _fit_value(values, _indexed_shape(input._data, key), key, input)
    return _put(IndexPut, input, key, values, bool(accumulate))


@export(method=True)
def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """``index_put`` in place."""
    _check_put(input, values)
    return _write(input, _indices_key(indices, input._data.shape, _on_cuda(input)), values, IndexPut,
                  bool(accumulate))


# ------------------------------------------------------------------ embedding
@register
class Embedding(Op):
    """``weight[indices]`` for int64 ``indices`` of any shape: the rows they name. Its backward
    is one scatter-add kernel (``K.embedding_backward``) of the gradient's rows into the weight's
    gradient, none at ``padding_idx`` (-1: none), each divided by its index's count in
    ``indices`` with ``scale_grad_by_freq``."""

    name, node = "embedding", "EmbeddingBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, w: m.nn.functional.embedding(
            m.tensor([[0, 2], [3, 2]], device=w.device), w), ((4, 3),)),
        Sample(lambda m, w: m.nn.functional.embedding(m.tensor(0, device=w.device), w,
                                                      padding_idx=-1), ((3, 5),)),
        # (PyTorch's gradients there are not the derivative: compared with PyTorch's in
        # tests/test_embedding_layer_norm.py)
        Sample(lambda m, w: m.nn.functional.embedding(
            m.tensor([1, 1, 0, 3, 1], device=w.device), w, padding_idx=0,
            scale_grad_by_freq=True), ((4, 2),), grad=False),
    )

    @staticmethod
    def forward(K, weight, *, indices, padding_idx, scale_grad_by_freq, sparse):
        return K.embedding_forward(weight, indices)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (apply(EmbeddingDenseBackward, (grad,), (grad._data,), indices=p["indices"],
                      num_weights=ctx.input_shapes[0][0], padding_idx=p["padding_idx"],
                      scale_grad_by_freq=p["scale_grad_by_freq"]),)


@register
class EmbeddingDenseBackward(Op):
    """The embedding's gradient, ``K.embedding_backward`` (one scatter-add kernel), as an op:
    linear in ``grad``; its own backward is PyTorch's ``embedding_dense_double_backward``, the
    rows of the gradient's gradient that the indices name, zero at ``padding_idx`` (not divided
    by the counts, as PyTorch's is not)."""

    name, node = "embedding_dense_backward", "EmbeddingDenseBackwardBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, w, g: m.autograd.grad(m.nn.functional.embedding(
            m.tensor([[2, 0, 2]], device=w.device), w, padding_idx=0), w, g,
            create_graph=True)[0], ((3, 2), (1, 3, 2))),
    )

    @staticmethod
    def forward(K, grad, *, indices, num_weights, padding_idx, scale_grad_by_freq):
        return K.embedding_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        out = apply(Embedding, (grad,), (grad._data,), indices=p["indices"], padding_idx=-1,
                    scale_grad_by_freq=False, sparse=False)
        if p["padding_idx"] < 0:
            return (out,)
        K = kernels_of(grad._data)
        idx = p["indices"]
        keep = K.cast(K.binary(K.NE, idx, np.int64(p["padding_idx"]), np.bool_),
                      grad._data.dtype)  # (a bool comparison: the compile check's signature)
        return (out * Tensor._wrap(K.reshape_view(keep, tuple(idx.shape) + (1,))),)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int, scale_grad_by_freq: bool,
              sparse: bool = False) -> Tensor:
    """The ``Embedding`` op (``nn.functional.embedding`` checked the arguments; ``padding_idx``
    non-negative, or -1 for none)."""
    K = kernels_for((weight, indices), Embedding)
    idx = indices._data
    if idx.dtype != np.int64:
        idx = K.cast(idx, np.int64)
    return apply(Embedding, (weight,), (weight._data,), indices=idx, padding_idx=int(padding_idx),
                 scale_grad_by_freq=bool(scale_grad_by_freq), sparse=bool(sparse))
