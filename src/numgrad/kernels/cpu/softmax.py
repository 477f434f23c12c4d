"""Fused log-softmax kernels for the CPU: rows along the last, contiguous dimension, one pass to
find each row's max and one to sum and write (the composite takes six kernels and five
temporaries). The op falls back to the composite for other dimensions and on CUDA.

As PyTorch's: each row is shifted by its max, so a row holding NaN or ``+inf``, or only ``-inf``,
comes out NaN. The sums of a row shorter than PyTorch's vector loop (16 elements) accumulate in
the input's dtype one by one, as PyTorch's scalar loop does (a float32 log(1 + 2e-3) then rounds
as PyTorch's, 3e-5 off a float64 sum's); longer rows accumulate in float64, which PyTorch's SIMD
lanes come closer to than a float32 sum in order would, in four lanes (``_lane_sum``: the
exps and the sum vectorise; a 700 x 10k float32 log_softmax took 29 ms one element at a time).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from ... import _pool
from .elementwise import PARALLEL_THRESHOLD, _split, _threaded
from .mathfuncs import fast_exp



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
def _lane_sum(a):
    """The sum of ``a`` (1-D) in float64, as four interleaved partial sums added in a fixed
    order: independent additions, which vectorise, where one running sum waits on each."""
    n = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    full = n - n % 4
    for j in range(0, full, 4):
        s0 += a[j]
        s1 += a[j + 1]
        s2 += a[j + 2]
        s3 += a[j + 3]
    tail = 0.0
    for j in range(full, n):
        tail += a[j]
    return ((s0 + s1) + (s2 + s3)) + tail


@njit(cache=True, error_model="numpy", inline="always")
def _first_max(row):
    """The maximum of ``row``, its first of equal values (of 0.0 and -0.0, the first), NaN if
    it holds one."""
    m = row[0]
    for j in range(1, row.shape[0]):
        v = row[j]
        if v > m or v != v:
            m = v
    return m


@njit(cache=True, error_model="numpy", inline="always")
def _lane_max(row):
    """The maximum of ``row`` in four lanes (vectorises). A NaN may be skipped, which the
    callers' results do not show (it makes the row's sum NaN); a zero maximum is
    ``_first_max``'s, whose sign the result can show."""
    n = row.shape[0]
    m0 = m1 = m2 = m3 = row[0]
    full = n - n % 4
    for j in range(0, full, 4):
        v0, v1, v2, v3 = row[j], row[j + 1], row[j + 2], row[j + 3]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
    for j in range(full, n):
        v = row[j]
        m0 = v if v > m0 else m0
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m = m2 if m2 > m0 else m0
    return _first_max(row) if m == 0 else m


@njit(cache=True, error_model="numpy", inline="always")
def _log_softmax_row(x, r, out):
    row = x[r]
    o = out[r]
    n = row.shape[0]
    m = _lane_max(row)
    for j in range(n):  # (the exps first, into the output: they vectorise, and so does the sum)
        o[j] = fast_exp(row[j] - m)
    if n < _SHORT:
        short = _zero_of(m)
        for j in range(n):
            short += o[j]
        lse = np.log(short)
    else:
        lse = np.log(_lane_sum(o))
    for j in range(n):
        o[j] = (row[j] - m) - lse  # (PyTorch's order: -0.0 - -0.0 - 0 is 0.0)


@njit(cache=True, error_model="numpy", nogil=True)
def _log_softmax_rows(x, out):
    for r in range(x.shape[0]):
        _log_softmax_row(x, r, out)


@njit(cache=True, error_model="numpy", inline="always")
def _log_softmax_backward_row(grad, out, r, result):
    """``grad - exp(out) * grad.sum(-1, keepdim=True)`` of row ``r``."""
    g = grad[r]
    o = out[r]
    dst = result[r]
    n = g.shape[0]
    if n < _SHORT:
        short = _zero_of(g[0])
        for j in range(n):
            short += g[j]
        total = short
    else:
        total = _lane_sum(g)
    for j in range(n):
        dst[j] = g[j] - fast_exp(o[j]) * total


@njit(cache=True, error_model="numpy", nogil=True)
def _log_softmax_backward_rows(grad, out, result):
    for r in range(grad.shape[0]):
        _log_softmax_backward_row(grad, out, r, result)


def _by_rows(kernel, *arrays) -> None:
    """``kernel(*arrays)`` (2-D arrays of one number of rows, each row computed alone): the rows
    of large float arrays shared among numgrad's worker threads (``elementwise._split``), one
    contiguous span each; the values do not depend on the split."""
    a = arrays[0]
    rows = a.shape[0]
    if a.size < PARALLEL_THRESHOLD or rows < 2 or not _threaded(a.dtype, a.dtype):
        kernel(*arrays)
        return
    _split(rows, lambda i, j: kernel(*(x[i:j] for x in arrays)))


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])


def log_softmax_last(a: np.ndarray) -> np.ndarray:
    """log_softmax over the last dimension of a C-contiguous, non-empty array."""
    out = _pool.empty(a.shape, a.dtype)
    rows = _rows(a)
    _by_rows(_log_softmax_rows, rows, _rows(out))
    return out


def log_softmax_backward_last(grad: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The gradient of log_softmax over the last dimension, from its output (both C-contiguous,
    one dtype)."""
    result = _pool.empty(out.shape, out.dtype)
    rows = _rows(grad)
    _by_rows(_log_softmax_backward_rows, rows, _rows(out), _rows(result))
    return result
