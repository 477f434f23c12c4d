"""``mode_dim`` on CUDA, with the CPU module's interface and rules (``kernels/cpu/predicates.py``):
each line sorted by the rank sort of ``sort_dim``, then one thread per line finds the longest run
of equal values (the smallest among equally long ones, NaN equal to NaN) and the last index of
that value in the original line.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .elementwise import copy
from .layout import permute, zeros
from .memory import ascontiguous, empty, flat, launch
from .sorting import sort_dim


@cuda.jit(device=True)
def _same(a, b):
    return a == b or (a != a and b != b)  # noqa: PLR0124 (a NaN test that works for ints)


@cuda.jit
def _mode_rows_k(s, x, n, values, indices):
    for r in range(cuda.grid(1), values.size, cuda.gridsize(1)):
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


def mode_dim(x, dim: int) -> tuple:
    """``(values, int64 indices)`` of the most frequent value along ``dim`` (kept as size 1),
    new C-contiguous arrays; the dimension is not empty."""
    if x.ndim == 0:
        return copy(x), zeros((), np.int64)
    nd = x.ndim
    order = tuple(d for d in range(nd) if d != dim) + (dim,)
    moved = ascontiguous(permute(x, order))
    shape = tuple(moved.shape)
    ordered, _ = sort_dim(moved, nd - 1, False)
    values = empty(shape[:nd - 1] + (1,), x.dtype)
    indices = empty(shape[:nd - 1] + (1,), np.int64)
    if values.size:
        launch(_mode_rows_k, values.size)(flat(ordered), flat(moved), shape[nd - 1],
                                          flat(values), flat(indices))
    back = tuple(order.index(d) for d in range(nd))
    return ascontiguous(permute(values, back)), ascontiguous(permute(indices, back))
