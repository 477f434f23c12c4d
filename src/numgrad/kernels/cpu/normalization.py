"""Normalisation's CPU kernels.

Batch normalisation: per-channel statistics, the normalisation and its backward, each one pass
(or two) over an ``(N, C, L)`` view of the input (``L``: the spatial elements), large ones with
their channels shared among threads (each channel on one: the values do not depend on the
number of threads).

Layer normalisation: one kernel per direction over a ``(rows, n)`` view (``n``: the elements of
the normalised dimensions), one row at a time while it is in cache: the forward computes the
row's mean and ``rstd = 1 / sqrt(var + eps)`` (kept for the backward) and writes the normalised
row; the backward computes the row's two sums and writes its gradient, adding the weight's and
the bias's gradients to its block's partial sums. Large ones share their rows among threads
(``_workers``, the machine's load permitting); the blocks of rows depend on the shape alone and
their partial sums are added in order, so the values do not depend on the number of threads.

Statistics and the backward's sums accumulate in float64 (as PyTorch's CPU kernel accumulates
float32 in double), in vector lanes (reassociated, an order fixed per machine, as
``reduction.py``'s sums); the variance is the biased one, from a second pass over the centred
values. The normalised values and the gradient of x are computed in x's dtype from the kept
statistics (float32 arithmetic for float32, as PyTorch's, twice as wide in vectors).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ... import _pool
from . import _workers


def _as_3d(x: np.ndarray) -> np.ndarray:
    """``x`` (N, C, *) as a C-contiguous (N, C, L) array (a copy where it is not contiguous)."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    n, c = x.shape[0], x.shape[1]
    return x.reshape(n, c, x.size // (n * c) if n * c else 0)


# Only reassociation is allowed in the sums (as in reduction.py; never fastmath=True: NaN and
# inf must survive): LLVM splits them into vector lanes, in an order fixed per machine.
_SUM_FLAGS = {"reassoc"}


@njit(cache=True, error_model="numpy", fastmath=_SUM_FLAGS)
def _row_sums(x2, r, m):
    """The sums over row ``r`` of ``x2`` of ``x - m`` and of its square, in float64."""
    total = squares = 0.0
    for j in range(x2.shape[1]):
        d = x2[r, j] - m
        total += d
        squares += d * d
    return total, squares


@njit(cache=True, error_model="numpy", nogil=True)
def _stats(x3, eps, mean, var, invstd, first, last):
    """Channels ``first:last``: the mean (a first pass) and the biased variance (a second, over
    the centred values), each sample's row of the channel summed by ``_row_sums``."""
    n = x3.shape[0]
    count = n * x3.shape[2]
    for c in range(first, last):
        total = 0.0
        for i in range(n):
            total += _row_sums(x3[i], c, 0.0)[0]
        m = total / count
        squares = 0.0
        for i in range(n):
            squares += _row_sums(x3[i], c, m)[1]
        v = squares / count
        mean[c] = m
        var[c] = v
        invstd[c] = 1.0 / np.sqrt(v + eps)


@njit(cache=True, error_model="numpy", nogil=True)
def _normalise(x3, mean, invstd, weight, bias, out3, first, last):
    n = x3.shape[0]
    for i in range(n):
        for c in range(first, last):
            scale = invstd[c] * weight[c]
            shift = bias[c] - mean[c] * scale
            for j in range(x3.shape[2]):
                out3[i, c, j] = x3[i, c, j] * scale + shift


@njit(cache=True, error_model="numpy", fastmath=_SUM_FLAGS)
def _channel_backward_sums(g3, x3, c, m):
    """The sums over channel ``c`` of ``g`` and of ``g * (x - m)`` (each product in x's dtype,
    ``m`` the kept mean), in float64."""
    total = dot = 0.0
    for i in range(x3.shape[0]):
        for j in range(x3.shape[2]):
            g = g3[i, c, j]
            total += g
            dot += g * (x3[i, c, j] - m)
    return total, dot


@njit(cache=True, error_model="numpy", nogil=True)
def _backward(g3, x3, mean, invstd, weight, training, gx3, gw, gb, first, last):
    n, length = x3.shape[0], x3.shape[2]
    count = n * length
    for c in range(first, last):
        m = mean[c]
        total, dot = _channel_backward_sums(g3, x3, c, m)
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


# A batch norm of this many elements, and more, shares its channels among threads (each channel
# on one thread: the same values on any number). The ResNet block's 16 x 64 x 32 x 32, two
# threads, medians of 20: the statistics 1.73 -> 0.18 ms, the backward 1.16 -> 0.33 (their sums
# had run one element at a time on one thread, without reassociation; PyTorch's 0.99 for
# statistics and normalisation, 0.20 for the backward).
CHANNELS_THREADED = 1 << 18


def _on_channels(kernel, args: tuple, channels: int, size: int) -> None:
    """``kernel(*args, first, last)`` over the channels, on threads where ``size`` is large."""
    threads = _workers.threads_for(channels, size >= CHANNELS_THREADED)
    if threads <= 1:
        kernel(*args, 0, channels)
    else:
        _workers.run(_workers.spans(channels, threads),
                     lambda span, slot: kernel(*args, *span), threads, blas=False)


def batch_norm_stats(x: np.ndarray, eps: float):
    """The mean, biased variance and ``1 / sqrt(var + eps)`` of each channel (dimension 1) of
    ``x`` (N, C, *), over every other dimension: three arrays (C,) of ``x``'s dtype."""
    x3 = _as_3d(x)
    channels = x.shape[1]
    mean, var, invstd = (np.empty(channels, x.dtype) for _ in range(3))
    if x3.size:
        _on_channels(_stats, (x3, eps, mean, var, invstd), channels, x3.size)
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
        _on_channels(_normalise, (x3, mean, invstd, weight, bias, out.reshape(x3.shape)),
                     x.shape[1], x3.size)
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
        _on_channels(_backward, (g3, x3, mean, invstd, weight, bool(training),
                                 gx.reshape(x3.shape), gw, gb), channels, x3.size)
    return gx, gw, gb


@njit(cache=True, error_model="numpy", nogil=True)
def _layer_norm_rows(x2, weight, bias, eps, out2, mean, rstd, start, stop):
    """Rows ``start:stop``: each row's mean (a first pass), biased variance (a second, over the
    centred values) and normalised values."""
    n = x2.shape[1]
    for r in range(start, stop):
        m = _row_sums(x2, r, 0.0)[0] / n
        s = 1.0 / np.sqrt(_row_sums(x2, r, m)[1] / n + eps)
        mean[r] = m
        rstd[r] = s
        m = mean[r]  # (the statistics kept, in x's dtype: float32 arithmetic for float32,
        s = rstd[r]  # which vectorises twice as wide, and the backward's statistics)
        for j in range(n):
            out2[r, j] = (x2[r, j] - m) * s * weight[j] + bias[j]


@njit(cache=True, error_model="numpy", nogil=True, fastmath=_SUM_FLAGS)
def _layer_norm_backward_rows(g2, x2, mean, rstd, weight, need_x, gx2, partial, first, last):
    """The blocks ``first:last`` of the rows (of ``partial.shape[1]`` blocks, block ``k`` rows
    ``rows * k // blocks`` to ``rows * (k + 1) // blocks``): the gradient of x of each row
    (where ``need_x``), and block ``k``'s sums of the weight's and the bias's gradients into
    ``partial[0, k]`` and ``partial[1, k]`` (float64). Within a block those are summed in x's
    dtype, row after row, in a row-sized buffer each; the blocks are summed in float64; each
    row's sums of ``g * weight`` and ``g * weight * xhat`` are float64 sums of the products in
    x's dtype. (Summed in float64 entry by entry, a load, a conversion, an add and a store 8
    lanes wide, the tiny GPT's 1024 x 128 float32 rows took 86 us against 50 this way,
    PyTorch's 57; 2048 x 64: 117 against 63. The row's loop in a function of its own, called
    per row, took 69 and 101.)"""
    rows, n = x2.shape
    blocks = partial.shape[1]
    sum_w = np.empty_like(weight)
    sum_b = np.empty_like(weight)
    scratch = np.empty(2, x2.dtype)
    for k in range(first, last):
        sum_w[:] = 0
        sum_b[:] = 0
        for r in range(rows * k // blocks, rows * (k + 1) // blocks):
            m, s = mean[r], rstd[r]
            total = dot = 0.0
            for j in range(n):
                g = g2[r, j]
                xhat = (x2[r, j] - m) * s
                sum_w[j] += g * xhat
                sum_b[j] += g
                e = g * weight[j]
                total += e
                dot += e * xhat
            if need_x:
                scratch[0] = total / n  # (in x's dtype, as the products)
                scratch[1] = dot / n
                a, c = scratch[0], scratch[1]
                for j in range(n):
                    xhat = (x2[r, j] - m) * s
                    gx2[r, j] = (g2[r, j] * weight[j] - a - xhat * c) * s
        for j in range(n):
            partial[0, k, j] = sum_w[j]
            partial[1, k, j] = sum_b[j]


# A layer norm of this many elements, and more, shares its rows among threads (the kernels
# release the GIL); the backward's weight and bias gradients are summed per block of rows of
# about BLOCK elements, then the blocks in order: the blocks depend on the shape alone, so the
# sums are the same on any number of threads. (Counted as the elements read and written, the
# tiny GPT's 1024 x 128 float32 layer norms took two threads, and ran slower on them: forward
# 92 us against 75 on one, backward 133 against 118, alone; 162 against 115 us and 243 against
# 225 a call within its step. From 2048 x 128 two threads are as fast or faster.)
THREADED = 1 << 18
BLOCK = 1 << 14


def _rows(x: np.ndarray, n: int) -> np.ndarray:
    """``x`` as a C-contiguous (rows, n) array (a copy where it is not contiguous)."""
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return x.reshape(x.size // n if n else 0, n)


def _threads(rows: int, size: int) -> int:
    return _workers.threads_for(rows, size >= THREADED)


def layer_norm_forward(x: np.ndarray, weight, bias, eps: float, n: int):
    """``(x - mean) * rstd * weight + bias`` over the last dimensions (``n`` elements, the
    ``weight``/``bias`` arrays of that many), with each row's mean and ``rstd = 1 / sqrt(var +
    eps)`` (biased variance): ``(out, mean, rstd)``, the statistics (rows,) arrays of ``x``'s
    dtype (``n`` > 0: the op gives rows of no elements PyTorch's mean 0 and rstd NaN)."""
    x2 = _rows(x, n)
    rows = x2.shape[0]
    out = _pool.empty(x.shape, x.dtype)
    mean = np.empty(rows, x.dtype)
    rstd = np.empty(rows, x.dtype)
    if x2.size:
        args = (x2, weight.reshape(-1), bias.reshape(-1), eps, out.reshape(x2.shape), mean, rstd)
        threads = _threads(rows, x2.size)
        if threads <= 1:
            _layer_norm_rows(*args, 0, rows)
        else:
            _workers.run(_workers.spans(rows, threads), lambda span, slot:
                         _layer_norm_rows(*args, *span), threads)
    return out, mean, rstd


def layer_norm_backward(grad: np.ndarray, x: np.ndarray, mean, rstd, weight, n: int,
                        need_x: bool = True):
    """The gradients of ``layer_norm_forward`` with respect to ``x`` (None unless ``need_x``),
    ``weight`` and ``bias`` (arrays of the normalised shape flattened, (n,))."""
    x2 = _rows(x, n)
    g2 = _rows(grad if grad.dtype == x.dtype else grad.astype(x.dtype), n)
    gx = _pool.empty(x.shape, x.dtype) if need_x else None
    rows = x2.shape[0]
    sums = np.zeros((2, n), x.dtype)
    if not x2.size:
        if need_x:
            gx[...] = 0
        return gx, sums[0], sums[1]
    blocks = min(rows, max(1, x2.size // BLOCK))
    partial = np.zeros((2, blocks, n), np.float64)
    args = (g2, x2, mean, rstd, weight.reshape(-1), bool(need_x),
            gx.reshape(x2.shape) if need_x else x2, partial)
    threads = _threads(blocks, x2.size)
    if threads <= 1:
        _layer_norm_backward_rows(*args, 0, blocks)
    else:
        _workers.run(_workers.spans(blocks, threads), lambda span, slot:
                     _layer_norm_backward_rows(*args, *span), threads)
    _sum_blocks(partial, sums)
    return gx, sums[0], sums[1]


@njit(cache=True, error_model="numpy")
def _sum_blocks(partial, sums):
    """``sums[i]``: the sum of the blocks ``partial[i]``, added in order."""
    for i in range(partial.shape[0]):
        for j in range(partial.shape[2]):
            total = 0.0
            for k in range(partial.shape[1]):
                total += partial[i, k, j]
            sums[i, j] = total


__all__ = ["batch_norm_stats", "batch_norm_forward", "batch_norm_backward", "layer_norm_forward",
           "layer_norm_backward"]
