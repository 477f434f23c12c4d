"""Kernels of the searching and counting ops on the CPU (``K.search_sorted``, ``K.bincount``,
``K.histc``): the binary search of ``searchsorted``/``bucketize``, ``bincount`` and ``histc``.
The CUDA module (``kernels/cuda/counting.py``) has the same functions.

Each kernel reads C-contiguous operands flat and writes a new C-contiguous array.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .. import codegen


@njit(cache=True)
def _bincount_k(x, weights, use_weights, out):
    for i in range(x.size):
        if use_weights:
            out[x[i]] += weights[i]
        else:
            out[x[i]] += 1


@njit(cache=True)
def _histc_k(x, lo, hi, bins, out):
    """PyTorch's histc: each element in ``[lo, hi]`` counted in bin
    ``(x - lo) * bins / (hi - lo)`` (computed in ``x``'s dtype), the right edge in the last bin;
    others (NaN included) skipped."""
    nb = out.size
    for i in range(x.size):
        v = x[i]
        if v >= lo and v <= hi:
            pos = int((v - lo) * bins / (hi - lo))
            if pos >= nb:
                pos = nb - 1
            out[pos] += 1


def search_sorted(bounds: np.ndarray, values: np.ndarray, sorter, right: bool, out_dtype) -> np.ndarray:
    """``searchsorted(bounds, values)`` of arrays of one dtype: ``bounds`` 1-D (one line for
    all) or with ``values``' leading dimensions; ``sorter`` (int64, ``bounds``' shape) or None."""
    b = np.ascontiguousarray(bounds).reshape(-1)
    v = values if values.flags.c_contiguous else np.ascontiguousarray(values)
    out = np.empty(v.shape, out_dtype)
    m = tuple(bounds.shape)[-1] if bounds.ndim else 1
    per_line = 0 if bounds.ndim <= 1 else (tuple(values.shape)[-1] if values.ndim else 1)
    s = np.zeros(1, np.int64) if sorter is None else np.ascontiguousarray(sorter, np.int64).reshape(-1)
    if v.size:
        # (``lines.search_one`` for each value: its position in its line of ``bounds``)
        codegen.load("cpu/lines", "lines:search_one").each_k(
            b, v.reshape(-1), s, sorter is not None, m, per_line, bool(right), out.reshape(-1),
            v.size)
    return out


def bincount(x: np.ndarray, weights, length: int, out_dtype) -> np.ndarray:
    """The count (with ``weights``: the sum of the weights) of each value of the non-negative
    1-D integer array ``x``, in an array of ``length``."""
    out = np.zeros(length, out_dtype)
    a = np.ascontiguousarray(x, np.int64)
    w = np.zeros(1, out_dtype) if weights is None else np.ascontiguousarray(weights, out_dtype)
    if a.size:
        _bincount_k(a, w, weights is not None, out)
    return out


def histc(x: np.ndarray, bins: int, lo, hi) -> np.ndarray:
    """The histogram of the float array ``x`` in ``bins`` equal bins over ``[lo, hi]`` (numbers
    of ``x``'s dtype, ``lo < hi``), of ``x``'s dtype."""
    out = np.zeros(bins, x.dtype)
    a = np.ascontiguousarray(x).reshape(-1)
    if a.size:
        t = x.dtype.type
        _histc_k(a, t(lo), t(hi), t(bins), out)
    return out
