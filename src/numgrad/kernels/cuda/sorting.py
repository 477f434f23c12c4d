"""Sorting along one dimension on CUDA (``sort_dim``), with the CPU module's interface and order
(stable; NaN largest): a rank sort, one thread per element, which counts the elements of its row
that sort before it (equal ones before it in the row count too, which makes it stable) and writes
itself at that rank. That is O(n²) work per row of n but needs no scratch memory and no
synchronisation: meant for the short rows of sort/topk in models (a row of 10,000 costs 10⁸
comparisons), not for sorting millions of elements.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .elementwise import copy
from .layout import permute, zeros
from .memory import empty, launch
from .layout import ascontiguous, flat


@cuda.jit(device=True)
def _before(a, b, descending):
    """Whether ``a`` sorts strictly before ``b`` (NaN largest)."""
    if descending:
        return a > b or (a != a and b == b)  # noqa: PLR0124 (a NaN test that works for ints)
    return a < b or (b != b and a == a)  # noqa: PLR0124


@cuda.jit
def _rank_sort_k(x, n, k, descending, values, indices):
    """Each element's rank in its row of ``n``; those ranked under ``k`` are written to the
    row's ``k`` slots of ``values`` and ``indices`` (``k = n``: the whole sort)."""
    for p in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        row = p // n
        base = row * n
        i = p - base
        a = x[p]
        rank = 0
        for j in range(n):
            b = x[base + j]
            if _before(b, a, descending) or (j < i and not _before(a, b, descending)):
                rank += 1
        if rank < k:
            values[row * k + rank] = a
            indices[row * k + rank] = i


def _dim_last(x, dim: int) -> tuple:
    """``(x with dim moved last, C-contiguous; the permutation)``: its lines made rows."""
    order = tuple(d for d in range(x.ndim) if d != dim) + (dim,)
    return ascontiguous(permute(x, order)), order


def _dim_back(a, order: tuple):
    """``a`` (rows along the last dimension) with that dimension put back where ``order``
    (``_dim_last``'s) took it from, C-contiguous."""
    return ascontiguous(permute(a, tuple(order.index(d) for d in range(len(order)))))


def _ranked(x, dim: int, k, descending: bool) -> tuple:
    if x.ndim == 0:
        return copy(x), zeros((), np.int64)
    nd = x.ndim
    moved, order = _dim_last(x, dim)
    shape = tuple(moved.shape)
    n = shape[nd - 1]
    k = n if k is None else k
    values = empty(shape[:nd - 1] + (k,), x.dtype)
    indices = empty(shape[:nd - 1] + (k,), np.int64)
    if values.size:
        launch(_rank_sort_k, moved.size)(flat(moved), n, k, bool(descending), flat(values),
                                         flat(indices))
    return _dim_back(values, order), _dim_back(indices, order)


def sort_dim(x, dim: int, descending: bool) -> tuple:
    """``(values, indices)`` of ``x`` sorted along ``dim`` (stable; NaN largest), new
    C-contiguous arrays (indices int64)."""
    return _ranked(x, dim, None, descending)


def topk_dim(x, k: int, dim: int, largest: bool) -> tuple:
    """``(values, indices)`` of the first ``k`` elements along ``dim`` of the stable order
    (descending if ``largest``), new C-contiguous arrays."""
    return _ranked(x, dim, k, largest)
