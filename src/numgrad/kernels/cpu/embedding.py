"""Embedding's CPU kernels: the forward copies the rows of ``weight`` that the indices name (and
says which index was out of range, if one was); the backward is one scatter-add of the output's
gradient rows into zeros of the weight's shape (repeated indices adding up), skipping
``padding_idx`` and, with ``scale_grad_by_freq``, dividing each row by its index's count in the
batch (counted first, in the same kernel).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _gather_rows(weight, idx, out):
    rows, width = weight.shape
    for i in range(idx.shape[0]):
        k = idx[i]
        if k < 0 or k >= rows:
            return i
        for j in range(width):
            out[i, j] = weight[k, j]
    return -1


def embedding_forward(weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``weight[indices]`` for a 2-D ``weight`` and int64 ``indices`` of any shape, with
    PyTorch's error for an index out of range (``index_select``'s)."""
    idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(-1)
    if idx.size and not weight.shape[0]:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    out = np.empty((idx.size, weight.shape[1]), weight.dtype)
    if idx.size and _gather_rows(weight, idx, out) >= 0:
        raise IndexError("index out of range in self")
    return out.reshape(tuple(indices.shape) + (weight.shape[1],))


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


__all__ = ["embedding_forward", "embedding_backward"]
