"""Sorting along one dimension on the CPU (``sort``, ``argsort``, ``topk``): a stable merge sort of
each line's indices, with PyTorch's order: NaN is the largest value (last ascending, first
descending) and equal values keep their order (descending too: ties are not reversed). ``topk``
with a small ``k`` keeps a sorted buffer of ``k`` per line instead of sorting it.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _before(a, b, descending):
    """Whether ``a`` sorts strictly before ``b`` (NaN largest)."""
    if descending:
        return a > b or (a != a and b == b)  # noqa: PLR0124 (a NaN test that works for ints)
    return a < b or (b != b and a == a)  # noqa: PLR0124


@njit(cache=True)
def _sort_rows_k(x, rows, n, descending, values, indices):
    """Each row of ``x`` (``rows`` × ``n``, flat) sorted into ``values`` and ``indices``: a
    bottom-up merge sort of the row's indices (stable)."""
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(rows):
        base = r * n
        for i in range(n):
            idx[i] = i
        width = 1
        while width < n:
            lo = 0
            while lo < n:
                mid = min(lo + width, n)
                hi = min(lo + 2 * width, n)
                i, j, k = lo, mid, lo
                while i < mid and j < hi:
                    if _before(x[base + idx[j]], x[base + idx[i]], descending):
                        tmp[k] = idx[j]
                        j += 1
                    else:
                        tmp[k] = idx[i]
                        i += 1
                    k += 1
                while i < mid:
                    tmp[k] = idx[i]
                    i += 1
                    k += 1
                while j < hi:
                    tmp[k] = idx[j]
                    j += 1
                    k += 1
                lo = hi
            for i in range(n):
                idx[i] = tmp[i]
            width *= 2
        for i in range(n):
            indices[base + i] = idx[i]
            values[base + i] = x[base + idx[i]]


@njit(cache=True)
def _topk_rows_k(x, rows, n, k, descending, values, indices):
    """The first ``k`` of each row's stable order (``rows`` × ``n``, flat) into ``values`` and
    ``indices`` (``rows`` × ``k``): an insertion into a sorted buffer of ``k``, for small ``k``
    (an element enters only if it sorts strictly before the buffer's last: ties keep the first)."""
    for r in range(rows):
        base = r * n
        out = r * k
        filled = 0
        for i in range(n):
            v = x[base + i]
            if filled == k and not _before(v, values[out + k - 1], descending):
                continue
            j = filled if filled < k else k - 1
            while j > 0 and _before(v, values[out + j - 1], descending):
                values[out + j] = values[out + j - 1]
                indices[out + j] = indices[out + j - 1]
                j -= 1
            values[out + j] = v
            indices[out + j] = i
            if filled < k:
                filled += 1


_INSERTION_K = 16  # up to this k, topk inserts into a buffer of k; beyond it, it sorts


def topk_dim(x: np.ndarray, k: int, dim: int, largest: bool) -> tuple:
    """``(values, indices)`` of the first ``k`` elements along ``dim`` of the stable order
    (descending if ``largest``; NaN largest), new C-contiguous arrays."""
    if x.ndim == 0 or k > _INSERTION_K or k == 0:
        values, indices = sort_dim(x, dim, largest)
        if x.ndim:
            window = (slice(None),) * dim + (slice(0, k),)
            values = np.ascontiguousarray(values[window])
            indices = np.ascontiguousarray(indices[window])
        return values, indices
    moved = np.ascontiguousarray(np.moveaxis(x, dim, -1))
    n = moved.shape[-1]
    shape = moved.shape[:-1] + (k,)
    values = np.empty(shape, x.dtype)
    indices = np.empty(shape, np.int64)
    if values.size:
        _topk_rows_k(moved.reshape(-1), values.size // k, n, k, largest, values.reshape(-1),
                     indices.reshape(-1))
    return (np.ascontiguousarray(np.moveaxis(values, -1, dim)),
            np.ascontiguousarray(np.moveaxis(indices, -1, dim)))


def sort_dim(x: np.ndarray, dim: int, descending: bool) -> tuple:
    """``(values, indices)`` of ``x`` sorted along ``dim`` (stable; NaN largest), new
    C-contiguous arrays (indices int64)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.ascontiguousarray(np.moveaxis(x, dim, -1))
    n = moved.shape[-1]
    values = np.empty(moved.shape, x.dtype)
    indices = np.empty(moved.shape, np.int64)
    if moved.size:
        _sort_rows_k(moved.reshape(-1), moved.size // n, n, descending, values.reshape(-1),
                     indices.reshape(-1))
    return (np.ascontiguousarray(np.moveaxis(values, -1, dim)),
            np.ascontiguousarray(np.moveaxis(indices, -1, dim)))
