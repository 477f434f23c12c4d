"""Embedding on CUDA, with the CPU module's entry points and formulas
(``kernels/cpu/embedding.py``): the forward is ``index_select`` along dimension 0 (an index out of
range raised at the next sync); in the backward the gradient rows scaled by their index's count (counted by an
atomic scatter-add of ones) and masked at ``padding_idx``, then scatter-added into zeros of the
weight's shape by the atomic ``index_put``. Nothing is read back to the host."""
from __future__ import annotations

import numpy as np


def embedding_forward(weight, indices):
    from numgrad.kernels import cuda as K

    flat = K.reshape_view(K.ascontiguous(indices), (indices.size,))
    out = K.index_select_dim(weight, 0, flat)
    return K.reshape_view(out, tuple(indices.shape) + (weight.shape[1],))


def embedding_backward(grad, indices, num_weights: int, padding_idx: int,
                       scale_grad_by_freq: bool):
    from numgrad.kernels import cuda as K

    width = grad.shape[grad.ndim - 1] if grad.ndim else 1
    dt = np.dtype(grad.dtype)
    g2 = K.reshape_view(K.ascontiguous(grad), (grad.size // width if width else 0, width))
    idx = K.reshape_view(K.ascontiguous(indices), (indices.size,))
    out = K.zeros((num_weights, width), dt)
    if not idx.size or not width:
        return out
    if scale_grad_by_freq:
        counts = K.zeros((num_weights,), dt)
        K.index_put(counts, (), (idx,), K.full((idx.size,), 1.0, dt), True)
        per_row = K.index(counts, (), (idx,))
        g2 = K.binary(K.DIV, g2, K.reshape_view(per_row, (idx.size, 1)))
    if padding_idx >= 0:
        keep = K.cast(K.binary(K.NE, idx, np.int64(padding_idx), np.bool_), dt)
        g2 = K.binary(K.MUL, g2, K.reshape_view(keep, (idx.size, 1)))
    K.index_put(out, (), (idx,), g2, True)
    return out


__all__ = ["embedding_forward", "embedding_backward"]
