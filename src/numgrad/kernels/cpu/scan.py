"""Scans along one dimension on the CPU: cumulative sums and products (``cumsum``, ``cumprod``)
and cumprod's gradient, ``cummax``/``cummin`` (values and the index of each running extreme,
``K.cum_extreme``) and ``logcumsumexp`` (``K.logcumsumexp_dim``).

Each entry point views its operand as ``(outer, n, inner)`` (the scanned dimension in the middle,
C-contiguous) and runs a line body of ``kernels/lines.py`` on each line, in the loop generated
from ``cpu/templates/lines.py``. As PyTorch's CPU kernels, the running value is kept in float64
for floating inputs (int64 for integers) and each element rounded to the result's dtype as it is
written.
"""
from __future__ import annotations

import math

import numpy as np

from .. import codegen


_KERNELS: dict = {}  # body -> its loop, made on first use (a look-up here: 0.5 us less a call)


def _each(body: str):
    """The kernel that runs ``lines.<body>`` on each line (``cpu/templates/lines.py``'s
    ``each_line_k(*operands, outer)``)."""
    kernel = _KERNELS.get(body)
    if kernel is None:
        kernel = _KERNELS[body] = codegen.load("cpu/lines", f"lines:{body}").each_line_k
    return kernel


def _lines(shape: tuple, dim: int):
    """``(outer, n, inner)``: ``shape`` viewed with ``dim`` in the middle."""
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
        outer, n, inner = _lines(a.shape, dim)
        _each("scan_line")(a.reshape(-1), out.reshape(-1), n, inner, mul, reverse, acc0, outer)
    return out


def cumprod_backward(x: np.ndarray, out: np.ndarray, grad: np.ndarray, dim: int) -> np.ndarray:
    """The gradient of ``out = cumprod(x, dim)`` given the output's gradient ``grad`` (float
    arrays of one dtype and shape), exact where ``x`` holds zeros."""
    if x.ndim == 0:
        return grad.copy()
    a, o, g = (np.ascontiguousarray(v).reshape(-1) for v in (x, out, grad))
    res = np.empty(x.shape, grad.dtype)
    if x.size:
        outer, n, inner = _lines(x.shape, dim)
        _each("cumprod_grad_line")(a, o, g, res.reshape(-1), n, inner, outer)
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
        outer, n, inner = _lines(a.shape, dim)
        _each("cum_extreme_line")(a.reshape(-1), values.reshape(-1), indices.reshape(-1), n,
                                  inner, bool(take_max), outer)
    return values, indices


def logcumsumexp_dim(x: np.ndarray, dim: int) -> np.ndarray:
    """The running ``log(sum(exp(x)))`` of the float array ``x`` along ``dim`` (of a complex
    one: a running complex ``logaddexp``, in complex128, PyTorch's accumulation)."""
    if x.dtype.kind == "c":
        return _complex_logcumsumexp(x, dim)
    a = x if x.flags.c_contiguous else np.ascontiguousarray(x)
    out = np.empty(a.shape, a.dtype)
    if a.ndim == 0:
        out[...] = a
    elif a.size:
        outer, n, inner = _lines(a.shape, dim)
        _each("logcumsumexp_line")(a.reshape(-1), out.reshape(-1), n, inner, outer)
    return out


def _complex_logcumsumexp(x: np.ndarray, dim: int) -> np.ndarray:
    from ..formulas import Binary
    from .elementwise import binary

    if x.ndim == 0 or not x.size:
        return np.array(x, copy=True)
    moved = np.moveaxis(x, dim, 0)
    lines = np.ascontiguousarray(moved, np.complex128).reshape(moved.shape[0], -1)
    out = np.empty(lines.shape, np.complex128)
    out[0] = acc = lines[0]
    for k in range(1, lines.shape[0]):
        out[k] = acc = binary(Binary.LOGADDEXP, acc, lines[k])
    out = out.reshape(moved.shape)
    return np.ascontiguousarray(np.moveaxis(out, 0, dim).astype(x.dtype))
