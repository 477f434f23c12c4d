"""The CPU kernel of ``hash_tensor`` (``K.xor_rows``): the exclusive or of each row's 64-bit
words."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _xor_rows(words, out):
    for r in range(words.shape[0]):
        acc = np.uint64(0)
        for j in range(words.shape[1]):
            acc ^= words[r, j]
        out[r] = acc


def xor_rows(x: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    """``hash_tensor``'s reduction: the exclusive or over ``dims`` of ``x``'s elements' 64-bit
    patterns, each element first widened to float64 or int64 (0 where ``dims`` hold nothing).
    The 64 bits come back as int64. (One kernel call, so that numgrad.compile records it as one:
    the widening, transposing and bit view happen on the plain array, here.)"""
    wide = x.astype(np.float64 if x.dtype.kind == "f" else np.int64).view(np.uint64)
    kept = [d for d in range(x.ndim) if d not in dims]
    rows = np.ascontiguousarray(np.transpose(wide, kept + list(dims))).reshape(
        int(np.prod([x.shape[d] for d in kept])), int(np.prod([x.shape[d] for d in dims])))
    out = np.zeros(rows.shape[0], np.uint64)
    if rows.size:
        _xor_rows(rows, out)
    shape = ([1 if d in dims else x.shape[d] for d in range(x.ndim)] if keepdim else
             [x.shape[d] for d in kept])
    return out.reshape(shape).view(np.int64)
