"""Advanced indexing on CUDA: gather (``a[idx]``) and scatter (``a[idx] = v``, ``+=`` with
duplicates accumulating through atomic adds), with the index arrays on the device.

An advanced key (``adv``) holds full slices and int64 index arrays. ``ops/indexing.py`` hands
this module *device* index arrays only: a CUDA index tensor stays where it is (no copy to the
host), a host one is uploaded once when the key is made (and reused by the backward), and a mask
becomes its ``nonzero`` coordinates (``nonzero`` below: one small copy of the count to the host,
the one sync that indexing by a mask needs; PyTorch makes it too).

One kernel then computes, for each element of the result, its offset in the indexed view's
memory from the index arrays (read through their strides, broadcast together) and the view's
shape and strides, all described by a small int64 "meta" array uploaded once per layout and
cached (as ``layout.meta``). No offset table is built on the host or uploaded per call.

Bounds: a negative index wraps as on the CPU; one out of range cannot raise inside a kernel, so
the kernel skips that element and records the first bad index in a small device error array, and
``check_errors`` raises it at the next synchronisation that the user asks for
(``numgrad.cuda.synchronize()``, ``.cpu()``, ``.item()``, ``.tolist()``, printing): PyTorch's
device-side assert, with PyTorch's message for an index out of range. (Index arrays that come
from the host are still checked on the host before the upload, raising at once, as on the CPU.)
The losses' kernels record a class target out of range in the same array (``kernels/cuda/loss.py``).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..formulas import Binary
from .elementwise import binary_into, cast
from .errors import _record, check_errors, device_errors  # noqa: F401  (check_errors: K's)
from .layout import _offset, assign, broadcast_copy, buffer, flat, meta, operand, strides_of
from .layout import view_index
from .memory import _SIMULATOR, empty, launch

# ------------------------------------------------------------------ gather / scatter kernels
@cuda.jit(device=True)
def _source(i, meta, idx, err):
    """The offset in the view's buffer of result element ``i``, or -1 (recorded in ``err``)
    where one of its indices is out of range.

    ``meta`` = [nr, nidx, result shape (nr), view strides per result dim (nr; 0 for the
    broadcast index dims), then per index array: size and stride of the dimension it indexes,
    its start in ``idx``, its strides per result dim (nr; 0 outside the broadcast dims)]."""
    nr = meta[0]
    off = 0
    j = i
    for d in range(nr - 1, -1, -1):
        n = meta[2 + d]
        off += (j % n) * meta[2 + nr + d]
        j //= n
    row = 2 + 2 * nr
    for k in range(meta[1]):
        size = meta[row]
        p = meta[row + 2]
        j = i
        for d in range(nr - 1, -1, -1):
            n = meta[2 + d]
            p += (j % n) * meta[row + 3 + d]
            j //= n
        v = idx[p]
        if v < 0:
            v += size
        if v < 0 or v >= size:
            _record(err, idx[p], k, size)
            return -1
        off += v * meta[row + 1]
        row += 3 + nr
    return off


@cuda.jit
def _gather_k(x, idx, meta, err, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        o = _source(i, meta, idx, err)
        if o >= 0:
            out[i] = x[o]
        else:
            out[i] = 0


@cuda.jit
def _scatter_k(out, idx, meta, err, values):
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        o = _source(i, meta, idx, err)
        if o >= 0:
            out[o] = values[i]


@cuda.jit
def _scatter_add_k(out, idx, meta, err, values):
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        o = _source(i, meta, idx, err)
        if o >= 0:
            cuda.atomic.add(out, o, values[i])


@cuda.jit
def _scatter_or_k(out, idx, meta, err, values):
    """Accumulation into bools (``+`` of bools is ``or``, as on the CPU and in PyTorch): only
    True is written, so repeated indices need no atomics."""
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        o = _source(i, meta, idx, err)
        if o >= 0 and values[i]:
            out[o] = True


# ------------------------------------------------------------------ the key's meta
_META_CACHE: dict = {}


def _int_meta(rows: tuple):
    m = _META_CACHE.get(rows)
    if m is None:
        if len(_META_CACHE) > 1024:
            _META_CACHE.clear()
        # (small and cached, so outside the pool: an upload on the first use of a layout only;
        # a mask's count, part of its layout, makes a new one per count)
        m = _META_CACHE[rows] = cuda.to_device(np.array(rows, np.int64))
    return m


def result_shape(view_shape: tuple, adv: tuple) -> tuple:
    """The shape of ``view[adv]`` (NumPy's rules) for ``adv`` of full slices and int arrays."""
    return _plan(view_shape, None, adv)[0]


def _plan(view_shape, view_strides, adv):
    """(result shape, [(size, view stride) per result dim, None for the broadcast index dims],
    [(array, indexed dim)], broadcast shape of the index arrays)."""
    view_shape = tuple(view_shape)
    arrays = [(a, d) for d, a in enumerate(adv) if not isinstance(a, slice)]
    bshape = tuple(np.broadcast_shapes(*(tuple(a.shape) for a, _ in arrays)))
    dims = [d for _, d in arrays]
    strides = view_strides or (0,) * len(view_shape)
    rest = [(view_shape[d], strides[d]) for d in range(len(view_shape)) if d not in dims]
    bdims = [None] * len(bshape)
    if dims == list(range(dims[0], dims[0] + len(dims))):  # adjacent: in place of the first
        before = dims[0]
        layout = rest[:before] + bdims + rest[before:]
    else:
        layout = bdims + rest
    shape, b = [], 0
    for entry in layout:
        if entry is None:
            shape.append(bshape[b])
            b += 1
        else:
            shape.append(entry[0])
    return tuple(shape), layout, arrays, bshape


def _prepare(view, adv):
    """(result shape, packed index buffer, meta) for ``view[adv]``."""
    shape, layout, arrays, bshape = _plan(tuple(view.shape), strides_of(view), adv)
    nr = len(shape)
    if len(arrays) == 1:
        a = arrays[0][0]
        buf, (ashape, astrides) = operand(a)
        packed = [(ashape, astrides or _c_strides(ashape), 0)]
    else:  # one buffer for all (device copies, converting to int64 where needed)
        total = sum(a.size for a, _ in arrays)
        buf = empty((max(total, 1),), np.int64)
        packed, start = [], 0
        for a, _ in arrays:
            if a.size:
                assign(buf[start:start + a.size].reshape(tuple(a.shape)), a)
            packed.append((tuple(a.shape), _c_strides(tuple(a.shape)), start))
            start += a.size
    rows = [nr, len(arrays), *shape]
    rows += [0 if e is None else e[1] for e in layout]
    first_b = layout.index(None) if None in layout else 0
    vshape = tuple(view.shape)
    vstrides = strides_of(view)
    for (a, d), (ashape, astrides, start) in zip(arrays, packed):
        rows += [vshape[d], vstrides[d], start]
        pad = len(bshape) - len(ashape)
        per = [0] * nr
        for j, n in enumerate(ashape):
            if n != 1:
                per[first_b + pad + j] = astrides[j]
        rows += per
    return shape, buf, _int_meta(tuple(int(r) for r in rows))


def _c_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def index(a, basic: tuple, adv: tuple):
    """``a[basic + (...,)][adv]``: a new array (``adv``: full slices and device int64 arrays,
    bounds checked by the kernel)."""
    view = view_index(a, basic + (Ellipsis,))
    shape, idx, m = _prepare(view, adv)
    out = empty(shape, a.dtype)
    if out.size:
        launch(_gather_k, out.size)(buffer(view), idx, m, device_errors(), flat(out))
    return out


def index_put(out, basic: tuple, adv, values, accumulate: bool) -> None:
    """``out[basic + (...,)][adv] = values`` in place (``+=`` with ``accumulate``, repeated
    indices adding up); ``values`` (a device array) broadcasts; ``adv`` None: a basic key."""
    view = view_index(out, basic + (Ellipsis,))
    if adv is None:
        if accumulate:
            binary_into(Binary.ADD, view, values)
        else:
            assign(view, values)
        return
    shape, idx, m = _prepare(view, adv)
    if not math.prod(shape):
        return
    # (a new array: safe where ``values`` shares memory with ``out``)
    values = broadcast_copy(values, shape, out.dtype)
    if not accumulate:
        kernel = _scatter_k
    else:  # (atomic adds take numbers only)
        kernel = _scatter_or_k if out.dtype == np.bool_ else _scatter_add_k
    launch(kernel, values.size)(buffer(view), idx, m, device_errors(), flat(values))


# ------------------------------------------------------------------ masks and coordinates
# ``nonzero`` splits the mask into chunks: one thread counts each chunk, one thread turns the
# counts into each chunk's first output position (few chunks: a short serial scan), and one
# thread per chunk writes the coordinates of its True elements in order.
_CHUNKS = 32 if _SIMULATOR else 2048


@cuda.jit(device=True)
def _write_coords(out, count, k, j, meta):
    """Writes the coordinates of C-order position ``j`` (in the shape of ``meta``) as column
    ``k`` of ``out`` (a flat (ndim, count) array)."""
    nd = meta[0]
    for d in range(nd - 1, -1, -1):
        n = meta[1 + d]
        out[d * count + k] = j % n
        j //= n


@cuda.jit
def _count_k(mask, meta, n, chunk, counts):
    for c in range(cuda.grid(1), counts.size, cuda.gridsize(1)):
        s = 0
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            if mask[_offset(i, meta, 0)]:
                s += 1
        counts[c] = s


@cuda.jit
def _scan_k(counts, total):
    if cuda.grid(1) == 0:
        s = 0
        for c in range(counts.size):
            v = counts[c]
            counts[c] = s
            s += v
        total[0] = s


@cuda.jit
def _nonzero_k(mask, meta, n, chunk, counts, count, out):
    for c in range(cuda.grid(1), counts.size, cuda.gridsize(1)):
        k = counts[c]
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            if mask[_offset(i, meta, 0)]:
                _write_coords(out, count, k, i, meta)
                k += 1


@cuda.jit
def _unravel_k(flat_positions, meta, out):
    count = flat_positions.size
    for k in range(cuda.grid(1), count, cuda.gridsize(1)):
        _write_coords(out, count, k, flat_positions[k], meta)


def nonzero(mask) -> tuple:
    """The coordinates of ``mask``'s True elements (C order) as ``mask.ndim`` device int64 arrays.
    Reading the count back is a sync (the result's shape depends on it), a single int64."""
    n = mask.size
    shape = tuple(mask.shape)
    buf, lay = operand(mask)
    m = meta(shape, lay)
    chunks = max(1, min(_CHUNKS, n))
    chunk = -(-n // chunks) if n else 1
    counts = empty((chunks,), np.int64)
    total = empty((1,), np.int64)
    if n:
        launch(_count_k, chunks)(buf, m, n, chunk, counts)
        launch(_scan_k, 1)(counts, total)
        count = int(total.copy_to_host()[0])  # the one sync: the result's size
    else:
        count = 0
    out = empty((len(shape), count), np.int64)
    if count:
        launch(_nonzero_k, chunks)(buf, m, n, chunk, counts, count, flat(out))
    return tuple(out[d] for d in range(len(shape)))


def unravel_index(positions, shape: tuple) -> tuple:
    """NumPy's ``unravel_index`` on the device: the coordinates in ``shape`` of the flat C-order
    ``positions`` (a device int array of any shape) as ``len(shape)`` int64 arrays of its shape."""
    pshape = tuple(positions.shape)
    positions = flat(cast(positions, np.int64))
    count = positions.size
    out = empty((len(shape), count), np.int64)
    if count:
        launch(_unravel_k, count)(positions, meta(tuple(shape), (tuple(shape), None)), flat(out))
    return tuple(out[d].reshape(pshape) for d in range(len(shape)))
