"""Embedding on CUDA, with the CPU module's entry points and formulas
(``kernels/cpu/embedding.py``): the forward is ``index_select`` along dimension 0 (an index out of
range raised at the next sync); in the backward the gradient rows scaled by their index's count (counted by an
atomic scatter-add of ones) and masked at ``padding_idx``, then scatter-added into zeros of the
weight's shape by the atomic ``index_put``. Nothing is read back to the host."""
from __future__ import annotations

import numpy as np

from ..formulas import OP_CODES
from .elementwise import binary, cast
from .gather import index_select_dim
from .indexing import index, index_put
from .layout import ascontiguous, full, reshape_view, zeros

DIV, MUL, NE = OP_CODES["DIV"], OP_CODES["MUL"], OP_CODES["NE"]


def embedding_forward(weight, indices):
    flat = reshape_view(ascontiguous(indices), (indices.size,))
    out = index_select_dim(weight, 0, flat)
    return reshape_view(out, tuple(indices.shape) + (weight.shape[1],))


def embedding_backward(grad, indices, num_weights: int, padding_idx: int,
                       scale_grad_by_freq: bool):
    width = grad.shape[grad.ndim - 1] if grad.ndim else 1
    dt = np.dtype(grad.dtype)
    g2 = reshape_view(ascontiguous(grad), (grad.size // width if width else 0, width))
    idx = reshape_view(ascontiguous(indices), (indices.size,))
    out = zeros((num_weights, width), dt)
    if not idx.size or not width:
        return out
    if scale_grad_by_freq:
        counts = zeros((num_weights,), dt)
        index_put(counts, (), (idx,), full((idx.size,), 1.0, dt), True)
        per_row = index(counts, (), (idx,))
        g2 = binary(DIV, g2, reshape_view(per_row, (idx.size, 1)))
    if padding_idx >= 0:
        keep = cast(binary(NE, idx, np.int64(padding_idx), np.bool_), dt)
        g2 = binary(MUL, g2, reshape_view(keep, (idx.size, 1)))
    index_put(out, (), (idx,), g2, True)
    return out


__all__ = ["embedding_forward", "embedding_backward"]
