"""Indexing on the CPU: ``index`` (a gather) and ``index_put`` (a scatter), with the scatter-add
behind advanced indexing's backward.

Reading with an index (a gather) is NumPy's fancy indexing, already a tight C loop. Its backward
must *accumulate*: an element read twice gets both gradients, which ``out[idx] += v`` (last write
wins) would lose. So the scatter works on flat arrays: the caller resolves any index expression to
the flat positions it reaches once, and one compiled loop per dtype does the adding.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .layout import may_share_memory


@njit(cache=True)
def _index_add_1d(out, positions, values):
    for i in range(positions.size):
        out[positions[i]] += values[i]


def index_add_flat(out_flat: np.ndarray, flat_indices: np.ndarray, values_flat: np.ndarray) -> None:
    """``out_flat[flat_indices[i]] += values_flat[i]`` for every ``i``, duplicates accumulating.

    ``out_flat`` is a contiguous 1-D array written in place; ``flat_indices`` (valid, non-negative
    positions) and ``values_flat`` have one entry per element to add.
    """
    if flat_indices.size == 0:
        return
    positions = np.ascontiguousarray(flat_indices, dtype=np.int64).reshape(-1)
    values = np.ascontiguousarray(values_flat, dtype=out_flat.dtype).reshape(-1)
    _index_add_1d(out_flat, positions, values)


def check_bounds(shape: tuple, adv: tuple) -> None:
    """PyTorch's IndexError for an index out of range in ``adv`` (full slices, int64 index
    arrays and bool masks, from the first dimension of a view of ``shape``). The kernels check,
    not the ops, so that a compiled replay (numgrad.compile) raises as eager does."""
    d = k = 0
    for entry in adv:
        if isinstance(entry, slice):
            d += 1
            continue
        if entry.dtype.kind == "b":
            d += entry.ndim
            k += entry.ndim
            continue
        check_index(entry, shape[d], k)
        d += 1
        k += 1


def check_index(entry: np.ndarray, size: int, k: int) -> None:
    """PyTorch's IndexError where the host index array ``entry`` (the ``k``-th index tensor)
    has an index out of range for a dimension of ``size``."""
    if entry.size:
        flat = entry.reshape(-1) if entry.flags.c_contiguous else entry.ravel()
        bad = _first_out_of_bounds(flat, size)
        if bad >= 0:
            raise IndexError(f"index {flat[bad]} is out of bounds for dimension {k} "
                             f"with size {size}")


@njit(cache=True)
def _first_out_of_bounds(flat, size):
    """The position of the first index of ``flat`` (int64) outside [-size, size), or -1."""
    for i in range(flat.size):
        j = flat[i]
        if j < -size or j >= size:
            return i
    return -1


def index(a: np.ndarray, basic: tuple, adv: tuple) -> np.ndarray:
    """``a[basic + (...,)][adv]``: a new array (``adv``: NumPy index arrays, checked here)."""
    view = a[basic + (Ellipsis,)]
    try:
        out = view[adv]  # (NumPy checks the bounds as it reads: nothing to undo)
    except IndexError:
        check_bounds(view.shape, adv)  # PyTorch's message for the index out of range
        raise
    return out if isinstance(out, np.ndarray) else np.asarray(out)  # 0-d results come as scalars


def _flat_positions(shape: tuple, basic: tuple, adv) -> np.ndarray:
    """The flat (C-order) position in an array of ``shape`` of every element of
    ``array[basic + (...,)][adv]``."""
    ids = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    view = ids[basic + (Ellipsis,)]
    return index(ids, basic, adv) if adv is not None else view


def index_put(out: np.ndarray, basic: tuple, adv, values: np.ndarray, accumulate: bool) -> None:
    """``out[basic + (...,)][adv] = values`` in place (``+=`` with ``accumulate``, repeated
    indices adding up); ``values`` broadcasts; ``adv`` None: a basic key."""
    rows = accumulate and _rows_key(out, basic, adv) and values.dtype == out.dtype
    if adv is not None and not rows:
        check_bounds(out[basic + (Ellipsis,)].shape, adv)  # (the row scatter checks its own)
    if may_share_memory(out, values):
        values = values.copy()
    if rows:
        _scatter_add_rows(out, adv, values)
        return
    if accumulate:
        positions = _flat_positions(out.shape, basic, adv)
        values = np.broadcast_to(values, positions.shape)
        dest = out if out.flags.c_contiguous else np.ascontiguousarray(out)
        index_add_flat(dest.reshape(-1), positions.reshape(-1), values.reshape(-1))
        if dest is not out:
            out[...] = dest
    elif adv is None:
        out[basic + (Ellipsis,)] = values
    else:
        out[basic + (Ellipsis,)][adv] = values


def _rows_key(out: np.ndarray, basic: tuple, adv) -> bool:
    """Whether ``out[adv] += values`` is a scatter of whole rows, done by ``_scatter_add_rows``:
    ``out`` a C-contiguous float or integer array, the basic part full slices, and ``adv`` one or
    two int64 index arrays of one shape, C-contiguous, for ``out``'s leading dimensions
    (``z[rows, target]``'s backward, an embedding's)."""
    n = len(adv)
    if not 0 < n <= 2 or not out.flags.c_contiguous or out.ndim < n or out.dtype.kind not in "fiu":
        return False
    for s in basic:
        if s != _FULL:
            return False
    first = adv[0]
    for e in adv:
        if (type(e) is not np.ndarray or e.dtype != np.int64 or e.shape != first.shape
                or not e.flags.c_contiguous):
            return False
    return True


_FULL = slice(None)


def _scatter_add_rows(out: np.ndarray, adv, values: np.ndarray) -> None:
    """``out[adv] += values`` in one compiled pass, where ``_rows_key`` holds and ``values`` has
    ``out``'s dtype and broadcasts to the indexed shape. PyTorch's IndexError, before anything is
    written, for an index out of range."""
    n = len(adv)
    inner = 1
    for size in out.shape[n:]:
        inner *= size
    shape = adv[0].shape + out.shape[n:]
    if values.size == 1 or (values.size and not any(values.strides)):  # one value repeated
        values = values[(slice(0, 1),) * values.ndim].reshape(1)
        step = 0
    else:
        if values.shape != shape or not values.flags.c_contiguous:
            values = np.ascontiguousarray(np.broadcast_to(values, shape))
        values = values.reshape(-1)
        step = 1
    i0 = adv[0].reshape(-1)
    two = n == 2
    i1 = adv[1].reshape(-1) if two else i0
    n1 = out.shape[1] if two else 1
    bad = _scatter_add_1or2(out.reshape(-1), i0, out.shape[0], i1, n1, two, inner, values, step)
    if bad >= 0:  # (nothing was written: the kernel checks every index first)
        k = bad % 2
        raise IndexError(f"index {adv[k].reshape(-1)[bad // 2]} is out of bounds for dimension "
                         f"{k} with size {out.shape[k]}")


@njit(cache=True)
def _scatter_add_1or2(out, i0, n0, i1, n1, two, inner, values, step):
    """``out[(i0[i] * n1 + i1[i]) * inner + t] += values[(i * inner + t) * step]`` (``two``;
    else ``out[i0[i] * inner + t]``), negative indices counted from the end; every index checked
    before any write: returns ``2 * i + k`` for index ``k`` of row ``i`` out of range, else -1."""
    for i in range(i0.size):
        j = i0[i]
        if j < -n0 or j >= n0:
            return 2 * i
        if two:
            j = i1[i]
            if j < -n1 or j >= n1:
                return 2 * i + 1
    for i in range(i0.size):
        j = i0[i]
        if j < 0:
            j += n0
        if two:
            k = i1[i]
            if k < 0:
                k += n1
            j = j * n1 + k
        base = j * inner
        src = i * inner
        for t in range(inner):
            out[base + t] += values[(src + t) * step]
    return -1


@njit(cache=True)
def _rows_in_bounds(i0, n0, i1, n1, two):
    """Whether every index of a row scatter (``_scatter_add_1or2``'s) is in range."""
    for i in range(i0.size):
        j = i0[i]
        if j < -n0 or j >= n0:
            return False
        if two:
            j = i1[i]
            if j < -n1 or j >= n1:
                return False
    return True


__all__ = ["index_add_flat", "index", "index_put"]


def nonzero(mask: np.ndarray) -> tuple:
    """The coordinates of ``mask``'s True elements (C order), one int64 array per dimension."""
    return tuple(c.astype(np.int64, copy=False) for c in np.nonzero(mask))


def unravel_index(positions: np.ndarray, shape: tuple) -> tuple:
    """Flat (C-order) positions as one int64 array of coordinates per dimension of ``shape``."""
    return tuple(c.astype(np.int64, copy=False) for c in np.unravel_index(positions, shape))
