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


def xor_rows(words: np.ndarray) -> np.ndarray:
    """The exclusive or of each row of ``words`` (``(rows, n)`` uint64; 0 for an empty row)."""
    out = np.zeros(words.shape[0], np.uint64)
    if words.size:
        _xor_rows(np.ascontiguousarray(words), out)
    return out
