"""The searching and counting ops on CUDA (``K.search_sorted``, ``K.bincount``, ``K.histc``),
with the CPU module's interface and arithmetic (``kernels/cpu/counting.py``): ``search``
(searchsorted/bucketize) one thread per value; ``bincount`` and ``histc`` one thread per element,
adding with atomics. ``bincount``'s length comes from its caller (which reads the largest value
back, a sync, as PyTorch's).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from .. import codegen
from .layout import full
from .memory import empty, launch
from .layout import ascontiguous, flat


@cuda.jit
def _bincount_k(x, weights, use_weights, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if use_weights:
            cuda.atomic.add(out, x[i], weights[i])
        else:
            cuda.atomic.add(out, x[i], 1)


@cuda.jit
def _histc_k(x, lo, hi, bins, out):
    """The CPU's ``_histc_k``, one thread per element, counted with atomics."""
    nb = out.size
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        if v >= lo and v <= hi:
            pos = int((v - lo) * bins / (hi - lo))
            if pos >= nb:
                pos = nb - 1
            cuda.atomic.add(out, pos, 1)


def search_sorted(bounds, values, sorter, right: bool, out_dtype):
    """``searchsorted(bounds, values)``, as the CPU's ``search_sorted``."""
    b = flat(ascontiguous(bounds)) if bounds.ndim else ascontiguous(bounds).reshape(1)
    v = ascontiguous(values)
    out = empty(tuple(v.shape), out_dtype)
    m = tuple(bounds.shape)[-1] if bounds.ndim else 1
    per_line = 0 if bounds.ndim <= 1 else (tuple(values.shape)[-1] if values.ndim else 1)
    if sorter is None:
        s = full((1,), 0, np.int64)
    else:
        s = ascontiguous(sorter)
        s = flat(s) if s.ndim else s.reshape(1)
    if v.size:
        # (``lines.search_one``, one thread per value)
        kernel = codegen.load("cuda/lines", "cuda.lines:search_one").each_k
        launch(kernel, v.size)(b, flat(v) if v.ndim else v.reshape(1), s, sorter is not None,
                               m, per_line, bool(right), flat(out) if v.ndim else out.reshape(1),
                               v.size)
    return out


def bincount(x, weights, length: int, out_dtype):
    """The count (with ``weights``: the sum of the weights) of each value of the non-negative
    1-D int64 array ``x``, in an array of ``length``."""
    out = full((length,), 0, out_dtype)
    if x.size:
        w = full((1,), 0, out_dtype) if weights is None else flat(ascontiguous(weights))
        launch(_bincount_k, x.size)(flat(ascontiguous(x)), w, weights is not None, out)
    return out


def histc(x, bins: int, lo, hi):
    """The histogram of the float array ``x`` in ``bins`` bins over ``[lo, hi]``, as the CPU's."""
    out = full((bins,), 0, x.dtype)
    if x.size:
        a = ascontiguous(x)
        t = np.dtype(x.dtype).type
        launch(_histc_k, a.size)(flat(a) if a.ndim else a.reshape(1), t(lo), t(hi), t(bins), out)
    return out
