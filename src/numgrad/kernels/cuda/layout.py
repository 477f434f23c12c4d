"""Strided device views and the kernels that read and write through them.

A CUDA tensor's data is a device array that may be a *view* of another one's memory, as on the
CPU: a shape, element strides (non-negative; 0 for an expanded dimension) and a start. ``strided``
makes such a view; it shares memory, so a write through it lands in the base. On a GPU it is a
``DeviceNDArray`` over the base's ``gpu_data`` (moved to the view's first element); in Numba's
CUDA simulator, a ``FakeCUDAArray`` over a NumPy view of the base's ``_ary``. Every other function
here is built on ``strided`` and so runs the same on both.

Kernels take flat, C-contiguous 1-D arrays. A strided operand is passed as its *buffer* (the
1-D contiguous run of memory from its first element to its last) and read through the int64
"meta" array [ndim, shape, strides of operand 0, 1, …] that maps each element's C-order index to
its offset in that buffer; broadcasting is a stride of 0 there. ``ascontiguous`` is that gather
into a new array; ``assign`` writes through a strided destination.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda
from numpy.lib.stride_tricks import as_strided

from .memory import _SIMULATOR, empty, launch

if _SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

# ------------------------------------------------------------------ views


def strides_of(a) -> tuple:
    """``a``'s strides in elements."""
    item = a.dtype.itemsize
    return tuple(s // item for s in a.strides)


def _c_strides(shape) -> list:
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    return strides


def strided(a, shape, strides, offset: int = 0):
    """A view of ``a``'s memory: element ``(i, j, …)`` of the view is the element ``offset +
    i * strides[0] + j * strides[1] + …`` counted (in elements) from ``a``'s first element.
    Strides are non-negative; the view must lie within ``a``'s memory (the caller checks)."""
    shape = tuple(int(n) for n in shape)
    size = math.prod(shape)
    if not size:
        return empty(shape, a.dtype)  # nothing to share
    # A size-1 dimension gets its C stride: Numba calls any 0 stride a broadcast (not
    # contiguous) even where it is never stepped along.
    c = _c_strides(shape)
    item = a.dtype.itemsize
    nbytes = tuple((c[d] if n == 1 else int(s)) * item
                   for d, (n, s) in enumerate(zip(shape, strides)))
    if _SIMULATOR:
        base = a._ary
        start = as_strided(base, (int(offset) + 1,), (item,))[int(offset):] if offset else base
        return FakeCUDAArray(as_strided(start, shape, nbytes), stream=a.stream)
    gpu_data = a.gpu_data.view(int(offset) * item) if offset else a.gpu_data
    return DeviceNDArray(shape, nbytes, a.dtype, stream=a.stream, gpu_data=gpu_data)


def is_contiguous(a) -> bool:
    return a.is_c_contiguous()


def buffer(a):
    """The 1-D contiguous run of ``a``'s memory from its first element to its last."""
    if a.is_c_contiguous():
        return flat(a)
    extent = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides_of(a))) if a.size else 0
    return strided(a, (extent,), (1,))


def layout(a) -> tuple:
    """(shape, element strides or None where C-contiguous): how the meta describes ``a``."""
    return (tuple(a.shape), None) if a.is_c_contiguous() else (tuple(a.shape), strides_of(a))


def operand(a) -> tuple:
    """(the array a kernel reads, its layout)."""
    if a.is_c_contiguous():
        return flat(a), (tuple(a.shape), None)
    return buffer(a), (tuple(a.shape), strides_of(a))


def address(a) -> int:
    """The address of ``a``'s first element (device memory; host memory in the simulator)."""
    if not a.size:
        return 0
    if _SIMULATOR:
        return a._ary.__array_interface__["data"][0]
    return a.device_ctypes_pointer.value or 0


def _extent(a) -> tuple:
    start = address(a)
    return start, start + (1 + sum((n - 1) * s for n, s in zip(a.shape, a.strides))
                           // a.dtype.itemsize) * a.dtype.itemsize


def may_share_memory(a, b) -> bool:
    """Whether the memory spans of device arrays ``a`` and ``b`` overlap."""
    if _is_host(a) or _is_host(b) or not a.size or not b.size:
        return False
    (a0, a1), (b0, b1) = _extent(a), _extent(b)
    return a0 < b1 and b0 < a1


def is_writeable(a) -> bool:
    """False for an expanded view (two of its elements share memory), as NumPy marks its
    broadcast views read-only. An empty array has no elements to share: writeable."""
    return not a.size or all(s or n <= 1 for n, s in zip(a.shape, a.strides))


def _reshape_strides(shape, strides, newshape):
    """Element strides giving ``newshape`` over the same elements as (``shape``, ``strides``),
    or None where no view can (NumPy's ``_attempt_nocopy_reshape``)."""
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    new = list(newshape)
    out = [0] * len(new)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        if new[ni] == 1:
            ni += 1
            continue
        np_, op_ = new[ni], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op_:
            if np_ < op_:
                np_ *= new[nj]
                nj += 1
            else:
                op_ *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            out[k - 1] = out[k] * new[k]
        ni, oi = nj, oj
    c = _c_strides(new)
    return tuple(c[d] if n == 1 else out[d] for d, n in enumerate(new))


def reshape_view(a, shape: tuple):
    """``a`` with another shape, sharing memory; ValueError where that needs a copy."""
    shape = tuple(shape)
    if a.is_c_contiguous():
        return a.reshape(shape)
    if math.prod(shape) != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
    strides = _reshape_strides(a.shape, strides_of(a), shape)
    if strides is None:
        raise ValueError("the reshape needs a copy")
    return strided(a, shape, strides)


def broadcast_to(a, shape: tuple):
    """``a`` broadcast to ``shape`` (checked by the caller): a view, stride 0 where it repeats."""
    lead = len(shape) - a.ndim
    own = strides_of(a)
    strides = [0 if i < lead or a.shape[i - lead] == 1 else own[i - lead]
               for i in range(len(shape))]
    return strided(a, shape, strides)


def permute(a, dims: tuple):
    """``a`` with its dimensions reordered (a view)."""
    own = strides_of(a)
    return strided(a, [a.shape[d] for d in dims], [own[d] for d in dims])


def transpose(a, dim0: int, dim1: int):
    dims = list(range(a.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return permute(a, dims)


def squeeze(a, dims: tuple):
    """``a`` without the size-1 dimensions ``dims`` (a view)."""
    own = strides_of(a)
    keep = [d for d in range(a.ndim) if d not in dims]
    return strided(a, [a.shape[d] for d in keep], [own[d] for d in keep])


def unsqueeze(a, dim: int):
    """``a`` with a size-1 dimension inserted at ``dim`` (a view)."""
    shape, strides = list(a.shape), list(strides_of(a))
    shape.insert(dim, 1)
    strides.insert(dim, 0)
    return strided(a, shape, strides)


def view_index(a, index: tuple):
    """``a[index]`` for a tuple of ints, slices (positive steps), None and ``...`` (a view)."""
    own = strides_of(a)
    shape, strides = [], []
    offset = d = 0
    fill = a.ndim - sum(1 for i in index if i is not None and i is not Ellipsis)
    for item in index:
        if item is None:
            shape.append(1)
            strides.append(0)
        elif item is Ellipsis:
            shape.extend(a.shape[d:d + fill])
            strides.extend(own[d:d + fill])
            d += fill
            fill = 0
        elif isinstance(item, slice):
            start, stop, step = item.indices(a.shape[d])
            n = len(range(start, stop, step))
            if n:
                offset += start * own[d]
            shape.append(n)
            strides.append(own[d] * step)
            d += 1
        else:
            i = int(item)
            offset += (i + a.shape[d] if i < 0 else i) * own[d]
            d += 1
    shape.extend(a.shape[d:])
    strides.extend(own[d:])
    return strided(a, shape, strides, offset)


# ------------------------------------------------------------------ the meta array
@cuda.jit(device=True)
def _offset(i, meta, operand):
    """The element offset in operand ``operand``'s buffer of output element ``i``."""
    nd = meta[0]
    base = 1 + nd * (operand + 1)
    offset = 0
    for d in range(nd - 1, -1, -1):
        n = meta[1 + d]
        offset += (i % n) * meta[base + d]
        i //= n
    return offset


_META_CACHE: dict = {}


def meta(shape: tuple, *layouts):
    """The device meta array for operands of ``layouts`` ((shape, element strides), strides None
    for C-contiguous) broadcast to ``shape``: a broadcast dimension gets stride 0."""
    key = (shape, layouts)
    m = _META_CACHE.get(key)
    if m is None:
        nd = max(len(shape), 1)
        rows = [nd, *(shape or (1,))]
        for s, given in layouts:
            own = list(given) if given is not None else _c_strides(s)
            pad = nd - len(s)
            s = (1,) * pad + tuple(s)
            own = [0] * pad + own
            rows.extend(0 if s[d] == 1 else own[d] for d in range(nd))
        if len(_META_CACHE) > 1024:
            _META_CACHE.clear()
        # (small and cached, so outside the pool; the upload, which waits for the GPU, happens
        # only on the first use of a layout)
        m = _META_CACHE[key] = cuda.to_device(np.array(rows, np.int64))
    return m


# ------------------------------------------------------------------ kernels
@cuda.jit
def _copy_k(x, meta, out):
    """``out`` = ``x`` read through ``meta`` (strided, broadcast), converted to ``out``'s dtype."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[_offset(i, meta, 0)]


@cuda.jit
def _assign_k(out, x, meta, n):
    """``out`` (operand 0 of ``meta``) = ``x`` (operand 1), both read through ``meta``."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[_offset(i, meta, 0)] = x[_offset(i, meta, 1)]


@cuda.jit
def _fill_k(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


def _is_host(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


def convert(x, shape: tuple, dtype):
    """A new C-contiguous array of ``shape`` and ``dtype``: ``x`` (any layout) broadcast and
    converted."""
    out = empty(shape, dtype)
    if out.size:
        buf, lay = operand(x)
        launch(_copy_k, out.size)(buf, meta(tuple(shape), lay), flat(out))
    return out


def contiguous_copy(a):
    """A C-contiguous copy of ``a`` (a strided gather on the device)."""
    return convert(a, tuple(a.shape), a.dtype)


def ascontiguous(a):
    """``a`` if it is C-contiguous, else a C-contiguous copy: every kernel reads flat arrays, so
    each entry point calls this on device arrays that may be strided views."""
    return a if a.is_c_contiguous() else contiguous_copy(a)


def flat(a):
    """A 1-D view of a C-contiguous device array; of a strided one (a view), a contiguous copy, so
    a kernel that forgot ``ascontiguous`` still reads it right (but must not write to it)."""
    if not a.is_c_contiguous():
        a = contiguous_copy(a)
    return a.reshape(a.size) if a.ndim != 1 else a


def broadcast_copy(a, shape: tuple, dtype):
    """``a`` broadcast to ``shape`` and cast to ``dtype``, in new memory."""
    return convert(a, tuple(shape), dtype)


def full(shape: tuple, value, dtype):
    """A new array of ``shape`` filled with ``value``."""
    out = empty(tuple(shape), dtype)
    if out.size:
        launch(_fill_k, out.size)(flat(out), np.dtype(dtype).type(value))
    return out


def zeros(shape: tuple, dtype):
    return full(shape, 0, dtype)


def assign(dst, src) -> None:
    """``dst[...] = src`` in place: ``src`` (a device array, or a host number) broadcast to
    ``dst``'s shape and converted to its dtype; ``dst`` may be any view."""
    n = dst.size
    if not n:
        return
    if _is_host(src):
        if dst.is_c_contiguous():
            launch(_fill_k, n)(flat(dst), dst.dtype.type(src[()] if isinstance(src, np.ndarray) else src))
            return
        src = full((), src[()] if isinstance(src, np.ndarray) else src, dst.dtype)
    elif may_share_memory(dst, src):
        src = contiguous_copy(src)
    shape = tuple(dst.shape)
    if dst.is_c_contiguous():
        buf, lay = operand(src)
        launch(_copy_k, n)(buf, meta(shape, lay), flat(dst))
        return
    dbuf, dlay = operand(dst)
    sbuf, slay = operand(src)
    launch(_assign_k, n)(dbuf, sbuf, meta(shape, dlay, slay), n)


def cat(arrays, dim: int):
    """``arrays`` (one dtype, shapes equal but along ``dim``) joined along ``dim``."""
    shape = list(arrays[0].shape)
    shape[dim] = sum(a.shape[dim] for a in arrays)
    out = empty(tuple(shape), arrays[0].dtype)
    start = 0
    lead = (slice(None),) * dim
    for a in arrays:
        n = a.shape[dim]
        if n:
            assign(view_index(out, lead + (slice(start, start + n),)), a)
        start += n
    return out


def stack(arrays, dim: int):
    """``arrays`` (one shape and dtype) stacked along a new dimension ``dim``."""
    return cat([unsqueeze(a, dim) for a in arrays], dim)


def repeat(a, repeats: tuple):
    """``a`` tiled ``repeats`` times along each dimension (leading ones added)."""
    lead = len(repeats) - a.ndim
    shape = (1,) * lead + tuple(a.shape)
    own = (0,) * lead + strides_of(a)
    split_shape, split_strides = [], []
    for r, n, s in zip(repeats, shape, own):
        split_shape += [r, n]
        split_strides += [0, s]
    tiled = convert(strided(a, split_shape, split_strides), tuple(split_shape), a.dtype)
    return tiled.reshape(tuple(r * n for r, n in zip(repeats, shape)))
