"""Kernels of the order statistics beyond sorting on the CPU: ``mode_dim`` (the most frequent
value along a dimension, PyTorch's rules: among equally frequent values the smallest, NaN equal
to NaN; its index the last position holding it). Each line is sorted by ``sort_dim`` (NaN
largest), then one pass over the sorted line finds the longest run, and one pass from the end of
the original line finds the index.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .sorting import sort_dim


@njit(cache=True)
def _same(a, b):
    """Equality with NaN equal to NaN."""
    return a == b or (a != a and b != b)  # noqa: PLR0124 (a NaN test that works for ints)


@njit(cache=True)
def _mode_rows_k(s, x, rows, n, values, indices):
    """For each row of ``n`` (``s``: the rows of ``x`` sorted ascending), the longest run of
    equal values (the first, so the smallest, among equally long ones) into ``values``, and the
    last index of that value in ``x``'s row into ``indices``."""
    for r in range(rows):
        base = r * n
        best = s[base]
        best_count = 0
        count = 0
        for i in range(n):
            v = s[base + i]
            if i == 0 or not _same(v, s[base + i - 1]):
                count = 1
            else:
                count += 1
            if count > best_count:
                best_count = count
                best = v
        index = 0
        for j in range(n - 1, -1, -1):
            if _same(x[base + j], best):
                index = j
                break
        values[r] = best
        indices[r] = index


def mode_dim(x: np.ndarray, dim: int) -> tuple:
    """``(values, int64 indices)`` of the most frequent value along ``dim`` (kept as size 1),
    new arrays; the dimension is not empty."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.ascontiguousarray(np.moveaxis(x, dim, -1))
    n = moved.shape[-1]
    ordered, _ = sort_dim(moved, moved.ndim - 1, False)
    values = np.empty(moved.shape[:-1], x.dtype)
    indices = np.empty(moved.shape[:-1], np.int64)
    if values.size:
        _mode_rows_k(ordered.reshape(-1), moved.reshape(-1), values.size, n, values.reshape(-1),
                     indices.reshape(-1))
    return np.expand_dims(values, dim), np.expand_dims(indices, dim)
