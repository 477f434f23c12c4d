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


@njit(cache=True)
def _scan_k(x, out, outer, n, inner, mul, reverse, acc0):
    """``out`` = the running sum (``mul``: product) of ``x`` along the middle axis of
    ``(outer, n, inner)``, from the end with ``reverse``; ``acc0`` (0 or 1, of the accumulation
    type) starts each line."""
    for o in range(outer):
        for i in range(inner):
            base = o * n * inner + i
            acc = acc0
            for k in range(n):
                j = n - 1 - k if reverse else k
                p = base + j * inner
                if mul:
                    acc = acc * x[p]
                else:
                    acc = acc + x[p]
                out[p] = acc


@njit(cache=True)
def _cumprod_grad_k(x, out, g, res, outer, n, inner):
    """The gradient of ``out = cumprod(x)`` along the middle axis, exact where ``x`` has zeros
    (PyTorch's formula): before a line's first zero ``z``, ``sum_{j>=i, j<z} g[j] out[j] / x[i]``;
    at ``z``, ``out[z-1] * sum_{z<=j<z2} g[j] prod_{z<l<=j} x[l]`` (``z2`` the next zero); after
    it, 0."""
    for o in range(outer):
        for i in range(inner):
            base = o * n * inner + i
            z = n
            for k in range(n):
                if x[base + k * inner] == 0:
                    z = k
                    break
            acc = 0.0
            for k in range(z - 1, -1, -1):
                p = base + k * inner
                acc += g[p] * out[p]
                res[p] = acc / x[p]
            if z < n:
                total = 0.0
                running = 1.0
                for k in range(z, n):
                    p = base + k * inner
                    if k > z:
                        if x[p] == 0:
                            break
                        running *= x[p]
                    total += g[p] * running
                before = 1.0 if z == 0 else out[base + (z - 1) * inner]
                res[base + z * inner] = before * total
                for k in range(z + 1, n):
                    res[base + k * inner] = 0


@njit(cache=True)
def _cum_extreme_k(x, values, indices, outer, n, inner, take_max):
    """PyTorch's cummax (``take_max``) / cummin along the middle axis: the running extreme and
    the index where it was last reached (ties take the later index); a NaN, once met, is the
    extreme from there on, each later NaN taking its index."""
    for o in range(outer):
        for i in range(inner):
            base = o * n * inner + i
            best = x[base]
            at = 0
            for k in range(n):
                p = base + k * inner
                v = x[p]
                if v != v:  # noqa: PLR0124  (a NaN test that works for ints)
                    best = v
                    at = k
                elif best == best:  # noqa: PLR0124, SIM102
                    if (v >= best) if take_max else (v <= best):
                        best = v
                        at = k
                values[p] = best
                indices[p] = at


@njit(cache=True)
def _logcumsumexp_k(x, out, outer, n, inner):
    """The running ``log(sum(exp(x)))`` along the middle axis, kept in float64 (PyTorch's CPU
    accumulation type), each element rounded to the result's dtype as it is written."""
    for o in range(outer):
        for i in range(inner):
            base = o * n * inner + i
            acc = -np.inf
            for k in range(n):
                p = base + k * inner
                v = np.float64(x[p])
                lo = min(acc, v)
                hi = max(acc, v)
                if v != v or acc != acc:  # noqa: PLR0124
                    acc = np.nan
                elif lo != hi or math.isfinite(lo):
                    acc = hi + math.log1p(math.exp(lo - hi))
                else:
                    acc = v
                out[p] = acc


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
