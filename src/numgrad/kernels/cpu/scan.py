"""Scans along one dimension on the CPU: cumulative sums and products (``cumsum``, ``cumprod``)
and cumprod's gradient, ``cummax``/``cummin`` (values and the index of each running extreme,
``K.cum_extreme``) and ``logcumsumexp`` (``K.logcumsumexp_dim``).

Each entry point views its operand as ``(outer, n, inner)`` (the scanned dimension in the middle,
C-contiguous) and one compiled loop walks each line. As PyTorch's CPU kernels, the running value
is kept in float64 for floating inputs (int64 for integers) and each element rounded to the
result's dtype as it is written.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..lines import cum_extreme_line, cumprod_grad_line, logcumsumexp_line, scan_line


@njit(cache=True)
def _scan_k(x, out, outer, n, inner, mul, reverse, acc0):
    """``out`` = the running sum (``mul``: product) of ``x`` along the middle axis of
    ``(outer, n, inner)`` (``lines.scan_line`` on each line)."""
    for o in range(outer):
        for i in range(inner):
            scan_line(x, out, o * n * inner + i, n, inner, mul, reverse, acc0)


@njit(cache=True)
def _cumprod_grad_k(x, out, g, res, outer, n, inner):
    """The gradient of ``out = cumprod(x)`` along the middle axis (``lines.cumprod_grad_line``)."""
    for o in range(outer):
        for i in range(inner):
            cumprod_grad_line(x, out, g, res, o * n * inner + i, n, inner)


@njit(cache=True)
def _cum_extreme_k(x, values, indices, outer, n, inner, take_max):
    """cummax (``take_max``) / cummin along the middle axis (``lines.cum_extreme_line``)."""
    for o in range(outer):
        for i in range(inner):
            cum_extreme_line(x, values, indices, o * n * inner + i, n, inner, take_max)


@njit(cache=True)
def _logcumsumexp_k(x, out, outer, n, inner):
    """The running ``log(sum(exp(x)))`` along the middle axis (``lines.logcumsumexp_line``)."""
    for o in range(outer):
        for i in range(inner):
            logcumsumexp_line(x, out, o * n * inner + i, n, inner)


def _lines(shape: tuple, dim: int):
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])


def cumulative(x: np.ndarray, dim: int, mul: bool, reverse: bool) -> np.ndarray:
    """The running sum (``mul``: product) of ``x`` along ``dim`` (from the end with
    ``reverse``), a new C-contiguous array of ``x``'s dtype (float, or int64)."""
    if x.ndim == 0:
        return x.copy()
    a = np.ascontiguousarray(x)
    out = np.empty(a.shape, a.dtype)
    if a.size:
        acc0 = np.float64(mul) if a.dtype.kind == "f" else np.int64(mul)
        _scan_k(a.reshape(-1), out.reshape(-1), *_lines(a.shape, dim), mul, reverse, acc0)
    return out


def cumprod_backward(x: np.ndarray, out: np.ndarray, grad: np.ndarray, dim: int) -> np.ndarray:
    """The gradient of ``out = cumprod(x, dim)`` given the output's gradient ``grad`` (float
    arrays of one dtype and shape), exact where ``x`` holds zeros."""
    if x.ndim == 0:
        return grad.copy()
    a, o, g = (np.ascontiguousarray(v).reshape(-1) for v in (x, out, grad))
    res = np.empty(x.shape, grad.dtype)
    if x.size:
        _cumprod_grad_k(a, o, g, res.reshape(-1), *_lines(x.shape, dim))
    return res


def cum_extreme(x: np.ndarray, dim: int, take_max: bool) -> tuple:
    """``(values, int64 indices)`` of cummax (``take_max``) or cummin of ``x`` along ``dim``."""
    a = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # (NumPy's makes 0-d 1-d)
    values = np.empty(a.shape, a.dtype)
    indices = np.empty(a.shape, np.int64)
    if a.ndim == 0:
        values[...] = a
        indices[...] = 0
    elif a.size:
        _cum_extreme_k(a.reshape(-1), values.reshape(-1), indices.reshape(-1),
                       *_lines(a.shape, dim), bool(take_max))
    return values, indices


def logcumsumexp_dim(x: np.ndarray, dim: int) -> np.ndarray:
    """The running ``log(sum(exp(x)))`` of the float array ``x`` along ``dim``."""
    a = x if x.flags.c_contiguous else np.ascontiguousarray(x)
    out = np.empty(a.shape, a.dtype)
    if a.ndim == 0:
        out[...] = a
    elif a.size:
        _logcumsumexp_k(a.reshape(-1), out.reshape(-1), *_lines(a.shape, dim))
    return out
