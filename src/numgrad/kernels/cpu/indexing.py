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
        bad = (entry < -size) | (entry >= size)
        if bad.any():
            raise IndexError(f"index {entry[bad].flat[0]} is out of bounds for dimension {k} "
                             f"with size {size}")


def index(a: np.ndarray, basic: tuple, adv: tuple) -> np.ndarray:
    """``a[basic + (...,)][adv]``: a new array (``adv``: NumPy index arrays, checked here)."""
    view = a[basic + (Ellipsis,)]
    check_bounds(view.shape, adv)
    out = view[adv]
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
    if adv is not None:
        check_bounds(out[basic + (Ellipsis,)].shape, adv)
    if np.may_share_memory(out, values):
        values = values.copy()
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


__all__ = ["index_add_flat", "index", "index_put"]


def nonzero(mask: np.ndarray) -> tuple:
    """The coordinates of ``mask``'s True elements (C order), one int64 array per dimension."""
    return tuple(c.astype(np.int64, copy=False) for c in np.nonzero(mask))


def unravel_index(positions: np.ndarray, shape: tuple) -> tuple:
    """Flat (C-order) positions as one int64 array of coordinates per dimension of ``shape``."""
    return tuple(c.astype(np.int64, copy=False) for c in np.unravel_index(positions, shape))
