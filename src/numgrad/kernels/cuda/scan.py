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


def _per_line(kernel, dim: int, arrays: tuple, *args):
    """``kernel`` launched with one thread per line along ``dim`` of ``arrays`` (C-contiguous,
    of one shape; the first is the operand): their flat views, ``n``, ``inner``, then ``args``.
    Nothing is launched for an empty operand."""
    shape = tuple(arrays[0].shape)
    if arrays[0].size:
        n, inner = shape[dim], math.prod(shape[dim + 1:])
        launch(kernel, arrays[0].size // n)(*(flat(v) for v in arrays), n, inner, *args)


def cumulative(x, dim: int, mul: bool, reverse: bool):
    """The running sum (``mul``: product) of ``x`` along ``dim`` (from the end with
    ``reverse``), a new C-contiguous array of ``x``'s dtype."""
    if x.ndim == 0:
        return copy_of(x)
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    acc0 = np.float64(mul) if a.dtype.kind == "f" else np.int64(mul)
    _per_line(_scan_k, dim, (a, out), bool(mul), bool(reverse), acc0)
    return out


def cumprod_backward(x, out, grad, dim: int):
    """The gradient of ``out = cumprod(x, dim)`` given the output's ``grad``, exact where ``x``
    holds zeros."""
    if x.ndim == 0:
        return copy_of(grad)
    a, o, g = (ascontiguous(v) for v in (x, out, grad))
    res = empty(tuple(x.shape), grad.dtype)
    _per_line(_cumprod_grad_k, dim, (a, o, g, res))
    return res


def cum_extreme(x, dim: int, take_max: bool) -> tuple:
    """``(values, int64 indices)`` of cummax (``take_max``) or cummin of ``x`` along ``dim``."""
    if x.ndim == 0:
        return copy_of(x), full((), 0, np.int64)
    a = ascontiguous(x)
    values = empty(tuple(a.shape), a.dtype)
    indices = empty(tuple(a.shape), np.int64)
    _per_line(_cum_extreme_k, dim, (a, values, indices), bool(take_max))
    return values, indices


def logcumsumexp_dim(x, dim: int):
    """The running ``log(sum(exp(x)))`` of the float array ``x`` along ``dim``."""
    if x.ndim == 0:
        return copy_of(x)
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    _per_line(_logcumsumexp_k, dim, (a, out))
    return out
