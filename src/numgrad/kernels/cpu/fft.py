"""The discrete Fourier transform of the rows of a complex128 matrix, for any row length.

A power-of-two length runs an iterative radix-2 transform in place; any other length runs
Bluestein's algorithm: the DFT as a convolution with a chirp, computed by radix-2 transforms of
a power-of-two length m >= 2n - 1. The twiddles and the chirp are computed from exactly reduced
angles (``k * j mod n``, ``k^2 mod 2n`` in integers), so the error grows as log n, as in
FFTPACK-style libraries, not with the size of the angles. Everything runs in complex128 (the
caller casts complex64 in and out).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _radix2(a, sign):
    """``a`` (complex128, a power-of-two length) replaced by its unnormalised DFT, with the
    exponent's sign ``sign`` (-1 forward, +1 inverse)."""
    n = a.shape[0]
    j = 0
    for i in range(1, n):  # (bit-reversed order)
        bit = n >> 1
        while j & bit:
            j ^= bit
            bit >>= 1
        j |= bit
        if i < j:
            t = a[i]
            a[i] = a[j]
            a[j] = t
    length = 2
    while length <= n:
        half = length // 2
        step = sign * 2.0 * math.pi / length
        for k in range(half):
            w = complex(math.cos(step * k), math.sin(step * k))
            for start in range(0, n, length):
                u = a[start + k]
                v = a[start + k + half] * w
                a[start + k] = u + v
                a[start + k + half] = u - v
        length *= 2


@njit(cache=True)
def dft_rows(x, sign):
    """The unnormalised DFT of each row of ``x`` (complex128, C-contiguous rows x n), with the
    exponent's sign ``sign``: a new array."""
    rows, n = x.shape
    out = np.empty((rows, n), np.complex128)
    if n == 0 or rows == 0:
        return out
    if n & (n - 1) == 0:
        for r in range(rows):
            out[r] = x[r]
            _radix2(out[r], sign)
        return out
    m = 1
    while m < 2 * n - 1:
        m *= 2
    chirp = np.empty(n, np.complex128)  # exp(sign i pi k^2 / n)
    for k in range(n):
        angle = math.pi * ((k * k) % (2 * n)) / n
        chirp[k] = complex(math.cos(angle), sign * math.sin(angle))
    kernel = np.zeros(m, np.complex128)  # the conjugate chirp, wrapped around
    kernel[0] = 1.0
    for k in range(1, n):
        kernel[k] = kernel[m - k] = chirp[k].conjugate()
    _radix2(kernel, -1)
    work = np.empty(m, np.complex128)
    for r in range(rows):
        for k in range(n):
            work[k] = x[r, k] * chirp[k]
        for k in range(n, m):
            work[k] = 0.0
        _radix2(work, -1)
        for k in range(m):
            work[k] *= kernel[k]
        _radix2(work, 1)
        for k in range(n):
            out[r, k] = work[k] * chirp[k] / m
    return out


def fft_c2c(a: np.ndarray, dim: int, forward: bool, scale: float) -> np.ndarray:
    """``scale`` times the DFT of complex ``a`` along ``dim`` (the exponent negative when
    ``forward``), in ``a``'s dtype."""
    moved = np.moveaxis(a, dim, -1)
    shape = moved.shape
    rows = np.ascontiguousarray(moved.reshape(-1, shape[-1]), dtype=np.complex128)
    out = dft_rows(rows, -1 if forward else 1)
    if scale != 1.0:
        out *= scale
    return np.moveaxis(out.reshape(shape).astype(a.dtype, copy=False), -1, dim)
