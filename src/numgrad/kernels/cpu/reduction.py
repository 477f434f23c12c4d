"""Reduction CPU kernels: a tensor is viewed as (outer, reduced, inner) and summed over the middle.

Accumulation is in float64 whatever the input's precision, so float32 sums of millions of elements
stay accurate without pairwise summation.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _sum_3d(x, out):
    outer, k, inner = x.shape
    acc = np.zeros(inner, np.float64)
    for a in range(outer):
        acc[:] = 0.0
        if inner == 1:
            # Four independent partial sums break the add latency chain.
            s0 = s1 = s2 = s3 = 0.0
            j = 0
            while j + 4 <= k:
                s0 += x[a, j, 0]
                s1 += x[a, j + 1, 0]
                s2 += x[a, j + 2, 0]
                s3 += x[a, j + 3, 0]
                j += 4
            while j < k:
                s0 += x[a, j, 0]
                j += 1
            acc[0] = (s0 + s1) + (s2 + s3)
        else:
            for j in range(k):
                for i in range(inner):
                    acc[i] += x[a, j, i]
        for i in range(inner):
            out[a, i] = acc[i]


def sum_dims(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """Sum of ``x`` over ``dims`` (normalised, sorted, unique), keeping them as size 1 if asked."""
    nd = x.ndim
    if keepdim:
        shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    else:
        shape = tuple(n for d, n in enumerate(x.shape) if d not in dims)
    if dims and dims != tuple(range(dims[0], dims[-1] + 1)):
        # Make the reduced dimensions one contiguous block by moving them to the end.
        kept = [d for d in range(nd) if d not in dims]
        x = x.transpose(kept + list(dims))
        first = len(kept)
    else:
        first = dims[0] if dims else nd
    last = first + len(dims)
    x = np.ascontiguousarray(x)
    outer = int(np.prod(x.shape[:first], dtype=np.int64))
    k = int(np.prod(x.shape[first:last], dtype=np.int64))
    inner = int(np.prod(x.shape[last:], dtype=np.int64))
    out = np.empty((outer, inner), x.dtype)
    if out.size:
        _sum_3d(x.reshape(outer, k, inner), out)
    return out.reshape(shape)
