"""The predicates' and order statistics' kernels on CUDA, with the CPU module's interface and
rules (``kernels/cpu/predicates.py``). ``mode_dim``: each line sorted by the rank sort of
``sort_dim``, then one thread per line finds the longest run of equal values (the smallest among
equally long ones, NaN equal to NaN) and the last index of that value in the original line.
``nan_to_num`` and ``isclose``: one thread per element.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .elementwise import copy
from .layout import broadcast_copy, permute, zeros
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


@cuda.jit
def _nan_to_num_k(x, nan, posinf, neginf, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        if v != v:  # noqa: PLR0124
            out[i] = nan
        elif v == math.inf:
            out[i] = posinf
        elif v == -math.inf:
            out[i] = neginf
        else:
            out[i] = v


@cuda.jit
def _isclose_k(a, b, rtol, atol, equal_nan, out):
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        x = a[i]
        y = b[i]
        if x == y:
            out[i] = True
        elif equal_nan and x != x and y != y:  # noqa: PLR0124
            out[i] = True
        else:
            diff = abs(x - y)
            out[i] = diff - diff == 0 and diff <= atol + abs(rtol * y)


def nan_to_num(x, nan, posinf, neginf):
    """A copy of the float array ``x`` with NaN, +inf and -inf replaced (C-contiguous)."""
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    if out.size:
        t = a.dtype.type
        with np.errstate(over="ignore"):
            values = t(nan), t(posinf), t(neginf)
        launch(_nan_to_num_k, out.size)(flat(a), *values, flat(out))
    return out


def isclose(a, b, rtol: float, atol: float, equal_nan: bool):
    """Whether ``a`` and ``b`` (float arrays of one dtype, broadcast together) are close, bool."""
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    x = ascontiguous(a) if tuple(a.shape) == shape else broadcast_copy(a, shape, a.dtype)
    y = ascontiguous(b) if tuple(b.shape) == shape else broadcast_copy(b, shape, b.dtype)
    out = empty(shape, np.bool_)
    if out.size:
        t = x.dtype.type
        launch(_isclose_k, out.size)(flat(x), flat(y), t(rtol), t(atol), bool(equal_nan),
                                     flat(out))
    return out
