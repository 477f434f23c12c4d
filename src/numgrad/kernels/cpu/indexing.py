"""Indexing CPU kernels: the scatter-add behind advanced indexing's backward.

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


__all__ = ["index_add_flat"]
