"""Batch normalisation on CUDA, with the CPU module's entry points (``kernels/cpu/normalization.py``),
built from this package's reductions and generated elementwise kernels: the statistics are
``sum_dims`` over every dimension but the channel's, the normalisation and the backward are
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


__all__ = ["batch_norm_stats", "batch_norm_forward", "batch_norm_backward"]
