"""Sum reductions on CUDA: like the CPU, the array is seen as (outer, reduced, inner) and each
output element is summed in float64, whatever the input's precision. One thread per output
element; reduced dimensions that are not adjacent are summed one run at a time (intermediates in
float64). A block-parallel tree for few outputs over many elements is left for later."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .memory import ascontiguous, empty, flat, launch


@cuda.jit
def _sum_k(x, k, inner, out):
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        base = (o // inner) * k * inner + o % inner
        acc = 0.0
        for j in range(k):
            acc += x[base + j * inner]
        out[o] = acc


def _runs(dims: tuple) -> list:
    """``dims`` (sorted) split into runs of adjacent dimensions, last run first."""
    runs = []
    for d in dims:
        if runs and runs[-1][1] == d:
            runs[-1][1] = d + 1
        else:
            runs.append([d, d + 1])
    return runs[::-1]


def sum_dims(x, dims: tuple, keepdim: bool):
    """Sum of ``x`` over ``dims`` (normalised, sorted, unique), keeping them as size 1 if asked."""
    x = ascontiguous(x)
    final = (tuple(1 if d in dims else n for d, n in enumerate(x.shape)) if keepdim
             else tuple(n for d, n in enumerate(x.shape) if d not in dims))
    shape = list(x.shape)
    dtype = x.dtype
    runs = _runs(dims)
    for i, (start, stop) in enumerate(runs):
        outer, k, inner = (math.prod(shape[:start]), math.prod(shape[start:stop]),
                           math.prod(shape[stop:]))
        out = empty((outer * inner,), dtype if i == len(runs) - 1 else np.float64)
        if out.size:
            launch(_sum_k, out.size)(flat(x), k, inner, out)
        shape[start:stop] = [1] * (stop - start)
        x = out.reshape(tuple(shape))
    if not runs:  # no dims: a copy
        from .elementwise import copy

        return copy(x).reshape(final)
    return x.reshape(final)
