"""Kernels of the predicates and order statistics on the CPU.

``mode_dim``: the most frequent value along a dimension, PyTorch's rules (among equally frequent
values the smallest, NaN equal to NaN; its index the last position holding it). Each line is
sorted by ``sort_dim`` (NaN largest), then one pass over the sorted line finds the longest run,
and one pass from the end of the original line finds the index.

``nan_to_num`` and ``isclose`` (floating-point operands): one pass each, PyTorch's formulas
(``isclose``: equal, or both NaN with ``equal_nan``, or a finite ``|a - b|`` within
``atol + |rtol * b|``, computed in the operands' dtype).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .. import codegen
from ..scalar import isclose_one, nan_to_num_one
from .sorting import sort_dim


def order_dim(x: np.ndarray, dim: int) -> tuple:
    """``(values, int64 indices)`` of ``x`` sorted ascending along ``dim`` (stable; NaN largest):
    ``sort_dim``'s (CUDA sorts long lines another way, with the same result)."""
    return sort_dim(x, dim, False)


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
        # (``lines.mode_row`` on each row, ``ordered``: the rows of ``moved`` sorted)
        codegen.load("cpu/lines", "lines:mode_row").each_k(
            ordered.reshape(-1), moved.reshape(-1), n, values.reshape(-1), indices.reshape(-1),
            values.size)
    return np.expand_dims(values, dim), np.expand_dims(indices, dim)


@njit(cache=True)
def _nan_to_num_k(x, nan, posinf, neginf, out):
    for i in range(x.size):
        out[i] = nan_to_num_one(x[i], nan, posinf, neginf)


@njit(cache=True)
def _isclose_k(a, b, rtol, atol, equal_nan, out):
    for i in range(a.size):
        out[i] = isclose_one(a[i], b[i], rtol, atol, equal_nan)


def nan_to_num(x: np.ndarray, nan, posinf, neginf) -> np.ndarray:
    """A copy of the float array ``x`` with NaN, +inf and -inf replaced (C-contiguous)."""
    a = np.array(x, order="C", copy=None)  # (ascontiguousarray makes a 0-d array 1-d)
    out = np.empty(a.shape, a.dtype)
    if a.size:
        t = a.dtype.type
        with np.errstate(over="ignore"):
            _nan_to_num_k(a.reshape(-1), t(nan), t(posinf), t(neginf), out.reshape(-1))
    return out


def isclose(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """Whether ``a`` and ``b`` (float arrays of one dtype, broadcast together) are close, bool."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    x = np.array(np.broadcast_to(a, shape), order="C", copy=None)
    y = np.array(np.broadcast_to(b, shape), order="C", copy=None)
    out = np.empty(shape, np.bool_)
    if out.size:
        t = x.dtype.type
        _isclose_k(x.reshape(-1), y.reshape(-1), t(rtol), t(atol), bool(equal_nan),
                   out.reshape(-1))
    return out
