"""Fused log-softmax kernels for the CPU: rows along the last, contiguous dimension, one pass to
find each row's max and one to sum and write (the composite takes six kernels and five
temporaries). The op falls back to the composite for other dimensions and on CUDA.

As PyTorch's: each row is shifted by its max, so a row holding NaN or ``+inf``, or only ``-inf``,
comes out NaN. The sums of a row shorter than PyTorch's vector loop (16 elements) accumulate in
the input's dtype one by one, as PyTorch's scalar loop does (a float32 log(1 + 2e-3) then rounds
as PyTorch's, 3e-5 off a float64 sum's); longer rows accumulate in float64, which PyTorch's SIMD
lanes come closer to than a float32 sum in order would.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from .elementwise import PARALLEL_THRESHOLD, _threaded
from .mathfuncs import fast_exp

# Numba's cache keys a kernel on its own file only; these inline mathfuncs.py, so this digest of
# it (checked by tests/test_mathfuncs.py, like elementwise.py's) invalidates the cache with it.
MATHFUNCS_DIGEST = "9fb3bd72168999de"


def _zero_of(v):
    """0 in ``v``'s float type (the overload below, in compiled code; here, in Python)."""
    return type(v)(0)


@overload(_zero_of, inline="always")
def _zero_of_typed(v):
    if v == types.float32:
        return lambda v: np.float32(0)
    return lambda v: 0.0


_SHORT = 16  # rows shorter than this are summed in their own dtype, in order


@njit(cache=True, error_model="numpy", inline="always")
def _log_softmax_row(x, r, out):
    row = x[r]
    n = row.shape[0]
    m = row[0]
    for j in range(1, n):
        v = row[j]
        if v > m or v != v:
            m = v
    if n < _SHORT:
        short = _zero_of(m)
        for j in range(n):
            short += fast_exp(row[j] - m)
        lse = np.log(short)
    else:
        total = 0.0
        for j in range(n):
            total += fast_exp(row[j] - m)
        lse = np.log(total)
    for j in range(n):
        out[r, j] = (row[j] - m) - lse  # (PyTorch's order: -0.0 - -0.0 - 0 is 0.0)


@njit(cache=True, error_model="numpy")
def _log_softmax_rows(x, out):
    for r in range(x.shape[0]):
        _log_softmax_row(x, r, out)


@njit(cache=True, error_model="numpy", parallel=True)
def _log_softmax_rows_parallel(x, out):
    for r in prange(x.shape[0]):
        _log_softmax_row(x, r, out)


@njit(cache=True, error_model="numpy", inline="always")
def _log_softmax_backward_row(grad, out, r, result):
    """``grad - exp(out) * grad.sum(-1, keepdim=True)`` of row ``r``."""
    g = grad[r]
    n = g.shape[0]
    if n < _SHORT:
        short = _zero_of(g[0])
        for j in range(n):
            short += g[j]
        total = short
    else:
        total = 0.0
        for j in range(n):
            total += g[j]
    for j in range(n):
        result[r, j] = g[j] - fast_exp(out[r, j]) * total


@njit(cache=True, error_model="numpy")
def _log_softmax_backward_rows(grad, out, result):
    for r in range(grad.shape[0]):
        _log_softmax_backward_row(grad, out, r, result)


@njit(cache=True, error_model="numpy", parallel=True)
def _log_softmax_backward_rows_parallel(grad, out, result):
    for r in prange(grad.shape[0]):
        _log_softmax_backward_row(grad, out, r, result)


def _threads(a: np.ndarray) -> bool:
    """Whether the rows of ``a`` are worth Numba's threads (large float arrays of several rows,
    where the threading layer allows)."""
    return a.size >= PARALLEL_THRESHOLD and a.shape[0] > 1 and _threaded(a.dtype, a.dtype)


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])


def log_softmax_last(a: np.ndarray) -> np.ndarray:
    """log_softmax over the last dimension of a C-contiguous, non-empty array."""
    out = np.empty(a.shape, a.dtype)
    rows = _rows(a)
    (_log_softmax_rows_parallel if _threads(rows) else _log_softmax_rows)(rows, _rows(out))
    return out


def log_softmax_backward_last(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The gradient of log_softmax over the last dimension, from its output (both C-contiguous,
    one dtype)."""
    result = np.empty(out.shape, out.dtype)
    rows = _rows(grad)
    kernel = _log_softmax_backward_rows_parallel if _threads(rows) else _log_softmax_backward_rows
    kernel(rows, _rows(out), _rows(result))
    return result
