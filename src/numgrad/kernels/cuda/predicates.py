"""The predicates' and order statistics' kernels on CUDA, with the CPU module's interface and
rules (``kernels/cpu/predicates.py``). ``mode_dim``: each line sorted by the rank sort of
``sort_dim``, then one thread per line finds the longest run of equal values (the smallest among
equally long ones, NaN equal to NaN) and the last index of that value in the original line.
``nan_to_num`` and ``isclose``: one thread per element.

``order_dim`` (the ascending stable sort that median, nanmedian, mode and unique use): the rank
sort of ``sort_dim`` for lines up to ``_BITONIC_FROM`` elements; longer lines (a median or unique
of a whole large tensor) go through a bitonic sorting network of (value, index) pairs, each line
padded to a power of two m, log2(m)·(log2(m)+1)/2 launches of one compare-exchange per element
(O(m log² m) work instead of O(m²)); ties are ordered by index, so the result is the stable
sort's, the same as the rank sort's.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..scalar import isclose_one, nan_to_num_one
from .elementwise import copy
from .layout import broadcast_copy, zeros
from .memory import empty, launch
from .layout import ascontiguous, flat
from .. import codegen
from .sorting import _dim_back, _dim_last, sort_dim


def mode_dim(x, dim: int) -> tuple:
    """``(values, int64 indices)`` of the most frequent value along ``dim`` (kept as size 1),
    new C-contiguous arrays; the dimension is not empty."""
    if x.ndim == 0:
        return copy(x), zeros((), np.int64)
    nd = x.ndim
    moved, order = _dim_last(x, dim)
    shape = tuple(moved.shape)
    ordered, _ = order_dim(moved, nd - 1)
    values = empty(shape[:nd - 1] + (1,), x.dtype)
    indices = empty(shape[:nd - 1] + (1,), np.int64)
    if values.size:
        # (``lines.mode_row``, one thread per row)
        kernel = codegen.load("cuda/lines", "cuda.lines:mode_row").each_k
        launch(kernel, values.size)(flat(ordered), flat(moved), shape[nd - 1], flat(values),
                                    flat(indices), values.size)
    return _dim_back(values, order), _dim_back(indices, order)


@cuda.jit
def _nan_to_num_k(x, nan, posinf, neginf, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = nan_to_num_one(x[i], nan, posinf, neginf)


@cuda.jit
def _isclose_k(a, b, rtol, atol, equal_nan, out):
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        out[i] = isclose_one(a[i], b[i], rtol, atol, equal_nan)


_BITONIC_FROM = 1024  # lines at least this long are sorted by the bitonic network


@cuda.jit(device=True)
def _pair_before(av, ai, bv, bi, n):
    """Whether (value ``av``, index ``ai``) sorts before (``bv``, ``bi``): NaN largest, ties by
    index; an index of ``n`` or more is padding, after everything."""
    if ai >= n:
        return False
    if bi >= n:
        return True
    if av < bv or (bv != bv and av == av):  # noqa: PLR0124
        return True
    if av > bv or (av != av and bv == bv):  # noqa: PLR0124
        return False
    return ai < bi


@cuda.jit
def _bitonic_fill_k(x, n, m, values, indices):
    for p in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        row = p // m
        i = p - row * m
        if i < n:
            values[p] = x[row * n + i]
        indices[p] = i


@cuda.jit
def _bitonic_step_k(values, indices, n, m, k, j):
    for p in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        row = p // m
        i = p - row * m
        partner = i ^ j
        if partner > i:
            q = row * m + partner
            ascending = (i & k) == 0
            if ascending:
                swap = _pair_before(values[q], indices[q], values[p], indices[p], n)
            else:
                swap = _pair_before(values[p], indices[p], values[q], indices[q], n)
            if swap:
                v = values[p]
                values[p] = values[q]
                values[q] = v
                t = indices[p]
                indices[p] = indices[q]
                indices[q] = t


@cuda.jit
def _bitonic_take_k(values, indices, n, m, out_values, out_indices):
    for p in range(cuda.grid(1), out_values.size, cuda.gridsize(1)):
        row = p // n
        q = row * m + (p - row * n)
        out_values[p] = values[q]
        out_indices[p] = indices[q]


def order_dim(x, dim: int) -> tuple:
    """``(values, int64 indices)`` of ``x`` sorted ascending along ``dim`` (stable; NaN
    largest), new C-contiguous arrays: ``sort_dim``'s result."""
    if x.ndim == 0 or tuple(x.shape)[dim] < _BITONIC_FROM:
        return sort_dim(x, dim, False)
    nd = x.ndim
    moved, order = _dim_last(x, dim)
    shape = tuple(moved.shape)
    n = shape[nd - 1]
    rows = moved.size // n
    m = 1 << (n - 1).bit_length()
    values = empty((rows * m,), x.dtype)
    indices = empty((rows * m,), np.int64)
    launch(_bitonic_fill_k, rows * m)(flat(moved), n, m, values, indices)
    step = launch(_bitonic_step_k, rows * m)
    k = 2
    while k <= m:
        j = k // 2
        while j >= 1:
            step(values, indices, n, m, k, j)
            j //= 2
        k *= 2
    out_values = empty(shape, x.dtype)
    out_indices = empty(shape, np.int64)
    launch(_bitonic_take_k, moved.size)(values, indices, n, m, flat(out_values),
                                        flat(out_indices))
    return _dim_back(out_values, order), _dim_back(out_indices, order)


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
