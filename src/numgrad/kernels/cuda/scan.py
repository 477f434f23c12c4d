"""Scans along one dimension on CUDA (``cumulative``, ``cumprod_backward``, ``cum_extreme``:
cummax/cummin, ``logcumsumexp_dim``), with the CPU module's interface and arithmetic: one thread
per line of the ``(outer, n, inner)`` view (the scanned dimension in the middle, C-contiguous),
the running value kept in float64 for floats (int64 for integers) as on the CPU, so both devices
round alike.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .elementwise import copy as copy_of
from .layout import full
from .memory import empty, launch
from .layout import ascontiguous, flat


@cuda.jit
def _scan_k(x, out, n, inner, mul, reverse, acc0):
    lines = x.size // n
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
        acc = acc0
        for k in range(n):
            j = n - 1 - k if reverse else k
            p = base + j * inner
            if mul:
                acc = acc * x[p]
            else:
                acc = acc + x[p]
            out[p] = acc


@cuda.jit
def _cumprod_grad_k(x, out, g, res, n, inner):
    """The CPU's ``_cumprod_grad_k`` (kernels/cpu/scan.py), one thread per line."""
    lines = x.size // n
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
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
            before = 1.0
            if z > 0:
                before = out[base + (z - 1) * inner]
            res[base + z * inner] = before * total
            for k in range(z + 1, n):
                res[base + k * inner] = 0


@cuda.jit
def _cum_extreme_k(x, values, indices, n, inner, take_max):
    """The CPU's ``_cum_extreme_k``, one thread per line."""
    lines = x.size // n
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
        best = x[base]
        at = 0
        for k in range(n):
            p = base + k * inner
            v = x[p]
            if v != v:  # noqa: PLR0124  (a NaN test that works for ints)
                best = v
                at = k
            elif best == best:  # noqa: PLR0124
                better = v <= best
                if take_max:
                    better = v >= best
                if better:
                    best = v
                    at = k
            values[p] = best
            indices[p] = at


@cuda.jit
def _logcumsumexp_k(x, out, n, inner):
    """The CPU's ``_logcumsumexp_k`` (float64 running value), one thread per line."""
    lines = x.size // n
    for line in range(cuda.grid(1), lines, cuda.gridsize(1)):
        base = (line // inner) * n * inner + line % inner
        acc = -math.inf
        for k in range(n):
            p = base + k * inner
            v = np.float64(x[p])
            lo = min(acc, v)
            hi = max(acc, v)
            if v != v or acc != acc:  # noqa: PLR0124
                acc = math.nan
            elif lo != hi or math.isfinite(lo):
                acc = hi + math.log1p(math.exp(lo - hi))
            else:
                acc = v
            out[p] = acc


def _lines(shape: tuple, dim: int):
    return shape[dim], math.prod(shape[dim + 1:])


def cumulative(x, dim: int, mul: bool, reverse: bool):
    """The running sum (``mul``: product) of ``x`` along ``dim`` (from the end with
    ``reverse``), a new C-contiguous array of ``x``'s dtype."""
    if x.ndim == 0:
        return copy_of(x)
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    if a.size:
        n, inner = _lines(tuple(a.shape), dim)
        acc0 = np.float64(mul) if a.dtype.kind == "f" else np.int64(mul)
        launch(_scan_k, a.size // n)(flat(a), flat(out), n, inner, bool(mul), bool(reverse),
                                     acc0)
    return out


def cumprod_backward(x, out, grad, dim: int):
    """The gradient of ``out = cumprod(x, dim)`` given the output's ``grad``, exact where ``x``
    holds zeros."""
    if x.ndim == 0:
        return copy_of(grad)
    a, o, g = (ascontiguous(v) for v in (x, out, grad))
    res = empty(tuple(x.shape), grad.dtype)
    if x.size:
        n, inner = _lines(tuple(x.shape), dim)
        launch(_cumprod_grad_k, x.size // n)(flat(a), flat(o), flat(g), flat(res), n, inner)
    return res


def cum_extreme(x, dim: int, take_max: bool) -> tuple:
    """``(values, int64 indices)`` of cummax (``take_max``) or cummin of ``x`` along ``dim``."""
    if x.ndim == 0:
        return copy_of(x), full((), 0, np.int64)
    a = ascontiguous(x)
    values = empty(tuple(a.shape), a.dtype)
    indices = empty(tuple(a.shape), np.int64)
    if a.size:
        n, inner = _lines(tuple(a.shape), dim)
        launch(_cum_extreme_k, a.size // n)(flat(a), flat(values), flat(indices), n, inner,
                                            bool(take_max))
    return values, indices


def logcumsumexp_dim(x, dim: int):
    """The running ``log(sum(exp(x)))`` of the float array ``x`` along ``dim``."""
    if x.ndim == 0:
        return copy_of(x)
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    if a.size:
        n, inner = _lines(tuple(a.shape), dim)
        launch(_logcumsumexp_k, a.size // n)(flat(a), flat(out), n, inner)
    return out
