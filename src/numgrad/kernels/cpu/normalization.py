"""Normalisation's CPU kernels.

Batch normalisation: per-channel statistics, the normalisation and its backward, each one pass
(or two) over an ``(N, C, L)`` view of the input (``L``: the spatial elements).

Layer normalisation: one kernel per direction over a ``(rows, n)`` view (``n``: the elements of
the normalised dimensions), one row at a time while it is in cache: the forward computes the
row's mean and ``rstd = 1 / sqrt(var + eps)`` (kept for the backward) and writes the normalised
row; the backward computes the row's two sums and writes its gradient, adding up the weight's
and the bias's gradients as it goes.

Statistics accumulate in float64 (as PyTorch's CPU kernel accumulates float32 in double); the
variance is the biased one, from a second pass over the centred values.
"""
from __future__ import annotations

import numpy as np
from numba import njit


def _as_3d(x: np.ndarray) -> np.ndarray:
    """``x`` (N, C, *) as a C-contiguous (N, C, L) array (a copy where it is not contiguous)."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    n, c = x.shape[0], x.shape[1]
    return x.reshape(n, c, x.size // (n * c) if n * c else 0)


@njit(cache=True, error_model="numpy")
def _stats(x3, eps, mean, var, invstd):
    n, channels, length = x3.shape
    count = n * length
    for c in range(channels):
        total = 0.0
        for i in range(n):
            for j in range(length):
                total += x3[i, c, j]
        m = total / count
        squares = 0.0
        for i in range(n):
            for j in range(length):
                d = x3[i, c, j] - m
                squares += d * d
        v = squares / count
        mean[c] = m
        var[c] = v
        invstd[c] = 1.0 / np.sqrt(v + eps)


@njit(cache=True, error_model="numpy")
def _normalise(x3, mean, invstd, weight, bias, out3):
    n, channels, length = x3.shape
    for i in range(n):
        for c in range(channels):
            scale = invstd[c] * weight[c]
            shift = bias[c] - mean[c] * scale
            for j in range(length):
                out3[i, c, j] = x3[i, c, j] * scale + shift


@njit(cache=True, error_model="numpy")
def _backward(g3, x3, mean, invstd, weight, training, gx3, gw, gb):
    n, channels, length = x3.shape
    count = n * length
    for c in range(channels):
        total = 0.0
        dot = 0.0
        m = mean[c]
        for i in range(n):
            for j in range(length):
                g = g3[i, c, j]
                total += g
                dot += g * (x3[i, c, j] - m)
        s = invstd[c]
        gw[c] = dot * s
        gb[c] = total
        scale = s * weight[c]
        if training:
            mean_g = total / count
            k = dot * s * s / count
            for i in range(n):
                for j in range(length):
                    gx3[i, c, j] = (g3[i, c, j] - mean_g - (x3[i, c, j] - m) * k) * scale
        else:
            for i in range(n):
                for j in range(length):
                    gx3[i, c, j] = g3[i, c, j] * scale


def batch_norm_stats(x: np.ndarray, eps: float):
    """The mean, biased variance and ``1 / sqrt(var + eps)`` of each channel (dimension 1) of
    ``x`` (N, C, *), over every other dimension: three arrays (C,) of ``x``'s dtype."""
    x3 = _as_3d(x)
    channels = x.shape[1]
    mean, var, invstd = (np.empty(channels, x.dtype) for _ in range(3))
    if x3.size:
        _stats(x3, eps, mean, var, invstd)
    else:  # (no elements: PyTorch's NaN statistics)
        mean.fill(np.nan)
        var.fill(np.nan)
        invstd.fill(np.nan)
    return mean, var, invstd


def batch_norm_forward(x: np.ndarray, mean, invstd, weight, bias) -> np.ndarray:
    """``(x - mean) * invstd * weight + bias`` per channel (``weight``, ``bias``: (C,) arrays)."""
    x3 = _as_3d(x)
    out = np.empty(x.shape, x.dtype)
    if x3.size:
        _normalise(x3, mean, invstd, weight, bias, out.reshape(x3.shape))
    return out


def batch_norm_backward(grad: np.ndarray, x: np.ndarray, mean, invstd, weight, training: bool):
    """The gradients of ``batch_norm_forward`` with respect to ``x``, ``weight`` and ``bias``,
    the statistics being the batch's own (``training``: their dependence on ``x`` included) or
    fixed (the running ones)."""
    x3 = _as_3d(x)
    g3 = _as_3d(grad if grad.dtype == x.dtype else grad.astype(x.dtype))
    gx = np.empty(x.shape, x.dtype)
    channels = x.shape[1]
    gw = np.zeros(channels, x.dtype)
    gb = np.zeros(channels, x.dtype)
    if x3.size:
        _backward(g3, x3, mean, invstd, weight, bool(training), gx.reshape(x3.shape), gw, gb)
    return gx, gw, gb


@njit(cache=True, error_model="numpy")
def _layer_norm_rows(x2, weight, bias, eps, out2, mean, rstd):
    rows, n = x2.shape
    for r in range(rows):
        total = 0.0
        for j in range(n):
            total += x2[r, j]
        m = total / n
        squares = 0.0
        for j in range(n):
            d = x2[r, j] - m
            squares += d * d
        s = 1.0 / np.sqrt(squares / n + eps)
        mean[r] = m
        rstd[r] = s
        for j in range(n):
            out2[r, j] = (x2[r, j] - m) * s * weight[j] + bias[j]


@njit(cache=True, error_model="numpy")
def _layer_norm_backward_rows(g2, x2, mean, rstd, weight, need_x, gx2, gw, gb):
    rows, n = x2.shape
    for r in range(rows):
        m = np.float64(mean[r])
        s = np.float64(rstd[r])
        total = 0.0  # sum of grad * weight over the row
        dot = 0.0  # sum of grad * weight * xhat
        for j in range(n):
            g = np.float64(g2[r, j])
            xhat = (x2[r, j] - m) * s
            gw[j] += g * xhat
            gb[j] += g
            gwj = g * weight[j]
            total += gwj
            dot += gwj * xhat
        if need_x:
            a = total / n
            c = dot / n
            for j in range(n):
                xhat = (x2[r, j] - m) * s
                gx2[r, j] = (np.float64(g2[r, j]) * weight[j] - a - xhat * c) * s


def _rows(x: np.ndarray, n: int) -> np.ndarray:
    """``x`` as a C-contiguous (rows, n) array (a copy where it is not contiguous)."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return x.reshape(x.size // n if n else 0, n)


def layer_norm_forward(x: np.ndarray, weight, bias, eps: float, n: int):
    """``(x - mean) * rstd * weight + bias`` over the last dimensions (``n`` elements, the
    ``weight``/``bias`` arrays of that many), with each row's mean and ``rstd = 1 / sqrt(var +
    eps)`` (biased variance): ``(out, mean, rstd)``, the statistics (rows,) arrays of ``x``'s
    dtype (``n`` > 0: the op gives rows of no elements PyTorch's mean 0 and rstd NaN)."""
    x2 = _rows(x, n)
    rows = x2.shape[0]
    out = np.empty(x.shape, x.dtype)
    mean = np.empty(rows, x.dtype)
    rstd = np.empty(rows, x.dtype)
    if x2.size:
        _layer_norm_rows(x2, weight.reshape(-1), bias.reshape(-1), eps, out.reshape(x2.shape),
                         mean, rstd)
    return out, mean, rstd


def layer_norm_backward(grad: np.ndarray, x: np.ndarray, mean, rstd, weight, n: int,
                        need_x: bool = True):
    """The gradients of ``layer_norm_forward`` with respect to ``x`` (None unless ``need_x``),
    ``weight`` and ``bias`` (arrays of the normalised shape flattened, (n,))."""
    x2 = _rows(x, n)
    g2 = _rows(grad if grad.dtype == x.dtype else grad.astype(x.dtype), n)
    gx = np.empty(x.shape, x.dtype) if need_x else None
    gw = np.zeros(n, np.float64)
    gb = np.zeros(n, np.float64)
    if x2.size:
        _layer_norm_backward_rows(g2, x2, mean, rstd, weight.reshape(-1), bool(need_x),
                                  gx.reshape(x2.shape) if need_x else x2, gw, gb)
    elif need_x:
        gx[...] = 0
    return gx, gw.astype(x.dtype), gb.astype(x.dtype)


__all__ = ["batch_norm_stats", "batch_norm_forward", "batch_norm_backward", "layer_norm_forward",
           "layer_norm_backward"]
