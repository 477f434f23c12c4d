"""Batch and layer normalisation on CUDA, with the CPU module's entry points
(``kernels/cpu/normalization.py``) and formulas, built from this package's reductions and generated
elementwise kernels: the statistics are ``sum_dims`` over every dimension but the channel's (over
each row of a ``(rows, n)`` view, for layer normalisation), the normalisation and the backward are
broadcast elementwise kernels. Nothing is read back to the host."""
from __future__ import annotations

import numpy as np

from ..formulas import OP_CODES
from .elementwise import binary, cast, unary
from .layout import ascontiguous, reshape_view
from .reduction import sum_dims

ADD, SUB, MUL, DIV, RSQRT = (OP_CODES[n] for n in ("ADD", "SUB", "MUL", "DIV", "RSQRT"))


def _dims(x) -> tuple:
    return (0,) + tuple(range(2, x.ndim))


def _per_channel(v, x):
    """A (C,) array viewed to broadcast against ``x`` (N, C, *)."""
    return reshape_view(v, (1, v.shape[0]) + (1,) * (x.ndim - 2))


def batch_norm_stats(x, eps: float):
    count = x.size // x.shape[1] if x.shape[1] else 0
    dims = _dims(x)
    dt = np.dtype(x.dtype)
    mean = binary(DIV, sum_dims(x, dims, True), dt.type(count))
    centred = binary(SUB, x, mean)
    var = binary(DIV, sum_dims(binary(MUL, centred, centred), dims, False),
                   dt.type(count))
    invstd = unary(RSQRT, binary(ADD, var, dt.type(eps)))
    return reshape_view(mean, (x.shape[1],)), var, invstd


def batch_norm_forward(x, mean, invstd, weight, bias):
    scale = binary(MUL, invstd, weight)
    shift = binary(SUB, bias, binary(MUL, mean, scale))
    return binary(ADD, binary(MUL, x, _per_channel(scale, x)),
                    _per_channel(shift, x))


def batch_norm_backward(grad, x, mean, invstd, weight, training: bool):
    dt = np.dtype(x.dtype)
    if grad.dtype != x.dtype:
        grad = cast(grad, dt)
    dims = _dims(x)
    count = x.size // x.shape[1] if x.shape[1] else 0
    centred = binary(SUB, x, _per_channel(mean, x))
    total = sum_dims(grad, dims, False)
    dot = sum_dims(binary(MUL, grad, centred), dims, False)
    gw = binary(MUL, dot, invstd)
    scale = binary(MUL, invstd, weight)
    if not training:
        return binary(MUL, grad, _per_channel(scale, x)), gw, total
    mean_g = binary(DIV, total, dt.type(count))
    k = binary(DIV, binary(MUL, binary(MUL, dot, invstd), invstd), dt.type(count))
    inner = binary(SUB, binary(SUB, grad, _per_channel(mean_g, x)),
                     binary(MUL, centred, _per_channel(k, x)))
    return binary(MUL, inner, _per_channel(scale, x)), gw, total


def _rows(x, n: int):
    return reshape_view(ascontiguous(x), (x.size // n if n else 0, n))


def layer_norm_forward(x, weight, bias, eps: float, n: int):
    dt = np.dtype(x.dtype)
    x2 = _rows(x, n)
    rows = x2.shape[0]
    mean = binary(DIV, sum_dims(x2, (1,), True), dt.type(n))
    centred = binary(SUB, x2, mean)
    var = binary(DIV, sum_dims(binary(MUL, centred, centred), (1,), True), dt.type(n))
    rstd = unary(RSQRT, binary(ADD, var, dt.type(eps)))
    w = reshape_view(weight, (1, n))
    b = reshape_view(bias, (1, n))
    out = binary(ADD, binary(MUL, binary(MUL, centred, rstd), w), b)
    return (reshape_view(out, x.shape), reshape_view(mean, (rows,)),
            reshape_view(rstd, (rows,)))


def layer_norm_backward(grad, x, mean, rstd, weight, n: int, need_x: bool = True):
    dt = np.dtype(x.dtype)
    if grad.dtype != x.dtype:
        grad = cast(grad, dt)
    x2 = _rows(x, n)
    g2 = _rows(grad, n)
    rows = x2.shape[0]
    m = reshape_view(mean, (rows, 1))
    s = reshape_view(rstd, (rows, 1))
    xhat = binary(MUL, binary(SUB, x2, m), s)
    gw = sum_dims(binary(MUL, g2, xhat), (0,), False)
    gb = sum_dims(g2, (0,), False)
    if not need_x:
        return None, gw, gb
    gwx = binary(MUL, g2, reshape_view(weight, (1, n)))
    a = binary(DIV, sum_dims(gwx, (1,), True), dt.type(n))
    c = binary(DIV, sum_dims(binary(MUL, gwx, xhat), (1,), True), dt.type(n))
    gx = binary(MUL, binary(SUB, binary(SUB, gwx, a), binary(MUL, xhat, c)), s)
    return reshape_view(gx, x.shape), gw, gb


__all__ = ["batch_norm_stats", "batch_norm_forward", "batch_norm_backward", "layer_norm_forward",
           "layer_norm_backward"]
