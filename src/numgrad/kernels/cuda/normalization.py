"""Batch and layer normalisation on CUDA, with the CPU module's entry points
(``kernels/cpu/normalization.py``) and formulas, built from this package's reductions and generated
elementwise kernels: the statistics are ``sum_dims`` over every dimension but the channel's (over
each row of a ``(rows, n)`` view, for layer normalisation), the normalisation and the backward are
broadcast elementwise kernels. Nothing is read back to the host."""
from __future__ import annotations

import numpy as np


def _k():
    from numgrad.kernels import cuda

    return cuda


def _dims(x) -> tuple:
    return (0,) + tuple(range(2, x.ndim))


def _per_channel(K, v, x):
    """A (C,) array viewed to broadcast against ``x`` (N, C, *)."""
    return K.reshape_view(v, (1, v.shape[0]) + (1,) * (x.ndim - 2))


def batch_norm_stats(x, eps: float):
    K = _k()
    count = x.size // x.shape[1] if x.shape[1] else 0
    dims = _dims(x)
    dt = np.dtype(x.dtype)
    mean = K.binary(K.DIV, K.sum_dims(x, dims, True), dt.type(count))
    centred = K.binary(K.SUB, x, mean)
    var = K.binary(K.DIV, K.sum_dims(K.binary(K.MUL, centred, centred), dims, False),
                   dt.type(count))
    invstd = K.unary(K.RSQRT, K.binary(K.ADD, var, dt.type(eps)))
    return K.reshape_view(mean, (x.shape[1],)), var, invstd


def batch_norm_forward(x, mean, invstd, weight, bias):
    K = _k()
    scale = K.binary(K.MUL, invstd, weight)
    shift = K.binary(K.SUB, bias, K.binary(K.MUL, mean, scale))
    return K.binary(K.ADD, K.binary(K.MUL, x, _per_channel(K, scale, x)),
                    _per_channel(K, shift, x))


def batch_norm_backward(grad, x, mean, invstd, weight, training: bool):
    K = _k()
    dt = np.dtype(x.dtype)
    if grad.dtype != x.dtype:
        grad = K.cast(grad, dt)
    dims = _dims(x)
    count = x.size // x.shape[1] if x.shape[1] else 0
    centred = K.binary(K.SUB, x, _per_channel(K, mean, x))
    total = K.sum_dims(grad, dims, False)
    dot = K.sum_dims(K.binary(K.MUL, grad, centred), dims, False)
    gw = K.binary(K.MUL, dot, invstd)
    scale = K.binary(K.MUL, invstd, weight)
    if not training:
        return K.binary(K.MUL, grad, _per_channel(K, scale, x)), gw, total
    mean_g = K.binary(K.DIV, total, dt.type(count))
    k = K.binary(K.DIV, K.binary(K.MUL, K.binary(K.MUL, dot, invstd), invstd), dt.type(count))
    inner = K.binary(K.SUB, K.binary(K.SUB, grad, _per_channel(K, mean_g, x)),
                     K.binary(K.MUL, centred, _per_channel(K, k, x)))
    return K.binary(K.MUL, inner, _per_channel(K, scale, x)), gw, total


def _rows(K, x, n: int):
    return K.reshape_view(K.ascontiguous(x), (x.size // n if n else 0, n))


def layer_norm_forward(x, weight, bias, eps: float, n: int):
    K = _k()
    dt = np.dtype(x.dtype)
    x2 = _rows(K, x, n)
    rows = x2.shape[0]
    mean = K.binary(K.DIV, K.sum_dims(x2, (1,), True), dt.type(n))
    centred = K.binary(K.SUB, x2, mean)
    var = K.binary(K.DIV, K.sum_dims(K.binary(K.MUL, centred, centred), (1,), True), dt.type(n))
    rstd = K.unary(K.RSQRT, K.binary(K.ADD, var, dt.type(eps)))
    w = K.reshape_view(weight, (1, n))
    b = K.reshape_view(bias, (1, n))
    out = K.binary(K.ADD, K.binary(K.MUL, K.binary(K.MUL, centred, rstd), w), b)
    return (K.reshape_view(out, x.shape), K.reshape_view(mean, (rows,)),
            K.reshape_view(rstd, (rows,)))


def layer_norm_backward(grad, x, mean, rstd, weight, n: int, need_x: bool = True):
    K = _k()
    dt = np.dtype(x.dtype)
    if grad.dtype != x.dtype:
        grad = K.cast(grad, dt)
    x2 = _rows(K, x, n)
    g2 = _rows(K, grad, n)
    rows = x2.shape[0]
    m = K.reshape_view(mean, (rows, 1))
    s = K.reshape_view(rstd, (rows, 1))
    xhat = K.binary(K.MUL, K.binary(K.SUB, x2, m), s)
    gw = K.sum_dims(K.binary(K.MUL, g2, xhat), (0,), False)
    gb = K.sum_dims(g2, (0,), False)
    if not need_x:
        return None, gw, gb
    gwx = K.binary(K.MUL, g2, K.reshape_view(weight, (1, n)))
    a = K.binary(K.DIV, K.sum_dims(gwx, (1,), True), dt.type(n))
    c = K.binary(K.DIV, K.sum_dims(K.binary(K.MUL, gwx, xhat), (1,), True), dt.type(n))
    gx = K.binary(K.MUL, K.binary(K.SUB, K.binary(K.SUB, gwx, a), K.binary(K.MUL, xhat, c)), s)
    return K.reshape_view(gx, x.shape), gw, gb


__all__ = ["batch_norm_stats", "batch_norm_forward", "batch_norm_backward", "layer_norm_forward",
           "layer_norm_backward"]
