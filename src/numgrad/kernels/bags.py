"""Bag bodies that compile for both devices (``embedding_bag``): what one CPU loop iteration and
one CUDA thread do for one bag or one (bag, column) cell, written once, as ``kernels/lines.py``'s
line bodies are: ``cpu/embedding.py`` inlines them in its loops, ``cuda/embedding.py`` compiles
them as device functions (``cuda.jit(device=True)`` of the same Python), one thread per cell.

A bag ``b`` is the positions ``starts[b] <= p < ends[b]`` of the flat indices ``idx``; an entry
equal to ``padding_idx`` (-1: none) is left out of the bag, and of its size. ``mode`` is
PyTorch's: 0 sum, 1 mean, 2 max.
"""
from __future__ import annotations

from numba import njit


@njit(inline="always")
def bag_size(b, idx, starts, ends, padding_idx):
    """The number of entries of bag ``b`` other than ``padding_idx``."""
    n = 0
    for p in range(starts[b], ends[b]):
        if idx[p] != padding_idx:
            n += 1
    return n


@njit(inline="always")
def bag_cell(b, j, weight, idx, psw, weighted, starts, ends, padding_idx, mode, out, arg):
    """Column ``j`` of bag ``b`` into ``out[b, j]``: the sum (each row times its per-sample
    weight where ``weighted``), the mean, or the max of ``weight[idx[p], j]`` over the bag (0 for
    an empty bag); for max, ``arg[b, j]`` the row that gave it (0 for an empty bag). The max
    keeps the first row of a tie and takes a later value only where it is greater (so a NaN
    after the first entry is skipped), as PyTorch's CPU kernel."""
    out[b, j] = 0
    n = 0
    best = 0
    for p in range(starts[b], ends[b]):
        k = idx[p]
        if k == padding_idx:
            continue
        v = weight[k, j]
        if mode == 2:
            if n == 0 or v > out[b, j]:
                out[b, j] = v
                best = k
        elif weighted:
            out[b, j] += v * psw[p]
        else:
            out[b, j] += v
        n += 1
    if mode == 1 and n > 0:
        out[b, j] = out[b, j] / n
    if mode == 2:
        arg[b, j] = best
