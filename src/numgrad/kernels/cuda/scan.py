"""Scans along one dimension on CUDA (``cumulative``, ``cumprod_backward``, ``cum_extreme``:
cummax/cummin, ``logcumsumexp_dim``), with the CPU module's interface and arithmetic: one thread
per line of the ``(outer, n, inner)`` view (the scanned dimension in the middle, C-contiguous)
runs the CPU's line body (``kernels/lines.py``, in the kernel generated from
``cuda/templates/lines.py``), the running value kept in float64 for floats (int64 for integers)
as on the CPU, so both devices round alike.
"""
from __future__ import annotations

import math

import numpy as np

from .. import codegen
from .elementwise import copy as copy_of
from .layout import full
from .memory import empty, launch
from .layout import ascontiguous, flat


def _per_line(body: str, dim: int, arrays: tuple, *args):
    """``lines.<body>`` on each line along ``dim`` of ``arrays`` (C-contiguous, of one shape; the
    first is the operand), one thread per line (``cuda/templates/lines.py``'s ``each_line_k``): with
    their flat views, ``n``, ``inner``, ``args``, then the number of lines. Nothing is launched for an empty operand."""
    shape = tuple(arrays[0].shape)
    if arrays[0].size:
        n, inner = shape[dim], math.prod(shape[dim + 1:])
        lines = arrays[0].size // n
        kernel = codegen.load("cuda/lines", f"cuda.lines:{body}").each_line_k
        launch(kernel, lines)(*(flat(v) for v in arrays), n, inner, *args, lines)


def cumulative(x, dim: int, mul: bool, reverse: bool):
    """The running sum (``mul``: product) of ``x`` along ``dim`` (from the end with
    ``reverse``), a new C-contiguous array of ``x``'s dtype."""
    if x.ndim == 0:
        return copy_of(x)
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    acc0 = np.float64(mul) if a.dtype.kind == "f" else np.int64(mul)
    _per_line("scan_line", dim, (a, out), bool(mul), bool(reverse), acc0)
    return out


def cumprod_backward(x, out, grad, dim: int):
    """The gradient of ``out = cumprod(x, dim)`` given the output's ``grad``, exact where ``x``
    holds zeros."""
    if x.ndim == 0:
        return copy_of(grad)
    a, o, g = (ascontiguous(v) for v in (x, out, grad))
    res = empty(tuple(x.shape), grad.dtype)
    _per_line("cumprod_grad_line", dim, (a, o, g, res))
    return res


def cum_extreme(x, dim: int, take_max: bool) -> tuple:
    """``(values, int64 indices)`` of cummax (``take_max``) or cummin of ``x`` along ``dim``."""
    if x.ndim == 0:
        return copy_of(x), full((), 0, np.int64)
    a = ascontiguous(x)
    values = empty(tuple(a.shape), a.dtype)
    indices = empty(tuple(a.shape), np.int64)
    _per_line("cum_extreme_line", dim, (a, values, indices), bool(take_max))
    return values, indices


def logcumsumexp_dim(x, dim: int):
    """The running ``log(sum(exp(x)))`` of the float array ``x`` along ``dim``."""
    if x.ndim == 0:
        return copy_of(x)
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    _per_line("logcumsumexp_line", dim, (a, out))
    return out
