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

from .lines import (cum_extreme_line, cumprod_grad_line, line_base, logcumsumexp_line,
                    scan_line)

from .elementwise import copy as copy_of
from .layout import full
from .memory import empty, launch
from .layout import ascontiguous, flat


@cuda.jit
def _scan_k(x, out, n, inner, mul, reverse, acc0):
    """``lines.scan_line``, one thread per line."""
    for line in range(cuda.grid(1), x.size // n, cuda.gridsize(1)):
        scan_line(x, out, line_base(line, n, inner), n, inner, mul, reverse, acc0)


@cuda.jit
def _cumprod_grad_k(x, out, g, res, n, inner):
    """``lines.cumprod_grad_line``, one thread per line."""
    for line in range(cuda.grid(1), x.size // n, cuda.gridsize(1)):
        cumprod_grad_line(x, out, g, res, line_base(line, n, inner), n, inner)


@cuda.jit
def _cum_extreme_k(x, values, indices, n, inner, take_max):
    """``lines.cum_extreme_line``, one thread per line."""
    for line in range(cuda.grid(1), x.size // n, cuda.gridsize(1)):
        cum_extreme_line(x, values, indices, line_base(line, n, inner), n, inner, take_max)


@cuda.jit
def _logcumsumexp_k(x, out, n, inner):
    """``lines.logcumsumexp_line`` (float64 running value), one thread per line."""
    for line in range(cuda.grid(1), x.size // n, cuda.gridsize(1)):
        logcumsumexp_line(x, out, line_base(line, n, inner), n, inner)


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
