"""Embedding's backward on the CPU: the gradient of ``weight[indices]`` as one scatter-add of the
output's gradient rows into zeros of the weight's shape (repeated indices adding up), skipping
``padding_idx`` and, with ``scale_grad_by_freq``, dividing each row by its index's count in the
batch (counted first, in the same kernel). The forward is ``index_select`` along dimension 0.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def _scatter_rows(g2, idx, padding_idx, scale, out):
    rows, width = g2.shape
    counts = np.zeros(out.shape[0] if scale else 0, np.int64)
    if scale:
        for i in range(rows):
            counts[idx[i]] += 1
    for i in range(rows):
        k = idx[i]
        if k == padding_idx:
            continue
        if scale:
            f = 1.0 / counts[k]
            for j in range(width):
                out[k, j] += g2[i, j] * f
        else:
            for j in range(width):
                out[k, j] += g2[i, j]


def embedding_backward(grad: np.ndarray, indices: np.ndarray, num_weights: int,
                       padding_idx: int, scale_grad_by_freq: bool) -> np.ndarray:
    """(num_weights, D): the rows of ``grad`` (``indices.shape + (D,)``) added into the rows of
    the weight's gradient that ``indices`` (int64, in range) name; none for ``padding_idx``
    (-1: none); each divided by its index's count where ``scale_grad_by_freq``."""
    width = grad.shape[-1] if grad.ndim else 1
    g2 = np.ascontiguousarray(grad).reshape(-1, width)
    idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(-1)
    out = np.zeros((num_weights, width), grad.dtype)
    if idx.size and width:
        _scatter_rows(g2, idx, int(padding_idx), bool(scale_grad_by_freq), out)
    return out


__all__ = ["embedding_backward"]
