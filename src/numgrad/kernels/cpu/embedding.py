"""Embedding's CPU kernels: the forward copies the rows of ``weight`` that the indices name (and
says which index was out of range, if one was); the backward is one scatter-add of the output's
gradient rows into zeros of the weight's shape (repeated indices adding up), skipping
``padding_idx`` and, with ``scale_grad_by_freq``, dividing each row by its index's count in the
batch (counted first, in the same kernel).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ... import _pool
from ..bags import bag_cell as _bag_cell, bag_size as _bag_size


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
    out = _pool.empty((idx.size, weight.shape[1]), weight.dtype)
    if idx.size and _gather_rows(weight, idx, out) >= 0:
        raise IndexError("index out of range in self")
    return out.reshape(tuple(indices.shape) + (weight.shape[1],))


@njit(cache=True, error_model="numpy")
def _scatter_rows(g2, idx, padding_idx, scale, counts, out):
    """The rows of ``g2`` added into the rows of ``out`` that ``idx`` names, each divided by
    its index's count where ``scale`` (``counts``: zeros, one per row of ``out``, made by the
    caller: an array made in the kernel compiled NumPy's ``zeros`` with it, 0.4 s of a first
    language model's first step)."""
    rows, width = g2.shape
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
    out = _pool.zeros((num_weights, width), grad.dtype)
    if idx.size and width:
        scale = bool(scale_grad_by_freq)
        _scatter_rows(g2, idx, int(padding_idx), scale,
                      np.zeros(num_weights if scale else 0, np.int64), out)
    return out


__all__ = ["embedding_forward", "embedding_backward"]


# ------------------------------------------------------------------ embedding_bag


@njit(cache=True)
def _bag_forward(weight, idx, psw, weighted, starts, ends, padding_idx, mode, out, arg, size):
    for b in range(starts.shape[0]):
        size[b] = _bag_size(b, idx, starts, ends, padding_idx)
        for j in range(weight.shape[1]):
            _bag_cell(b, j, weight, idx, psw, weighted, starts, ends, padding_idx, mode, out, arg)


@njit(cache=True, error_model="numpy")
def _bag_backward(grad, idx, psw, weighted, starts, ends, padding_idx, mode, size, arg, scale,
                  out):
    width = grad.shape[1]
    counts = np.zeros(out.shape[0] if scale else 0, np.int64)
    if scale:
        for p in range(idx.shape[0]):
            counts[idx[p]] += 1
    for b in range(starts.shape[0]):
        if mode == 2:
            if size[b] > 0:
                for j in range(width):
                    out[arg[b, j], j] += grad[b, j]
            continue
        f = 1.0 / size[b] if mode == 1 and size[b] > 0 else 1.0
        for p in range(starts[b], ends[b]):
            k = idx[p]
            if k == padding_idx:
                continue
            c = f
            if weighted:
                c = c * psw[p]
            if scale:
                c = c / counts[k]
            for j in range(width):
                out[k, j] += grad[b, j] * c


@njit(cache=True)
def _bag_weights_backward(grad, weight, idx, starts, ends, padding_idx, out):
    for b in range(starts.shape[0]):
        for p in range(starts[b], ends[b]):
            k = idx[p]
            s = 0.0
            if k != padding_idx:
                for j in range(weight.shape[1]):
                    s += grad[b, j] * weight[k, j]
            out[p] = s


def bag_bounds(indices: np.ndarray, offsets, bags: int):
    """(flat int64 indices, starts, ends, offset2bag) of the bags that ``offsets`` (checked: 0
    first, none past the end) cut the 1-D ``indices`` into (None: the rows of a 2-D one), the last bag running to the end (as
    PyTorch's CPU kernel, with or without ``include_last_offset``)."""
    n = indices.size
    idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(-1)
    if offsets is None:  # (a 2-D input: each row a bag)
        offsets = np.arange(bags, dtype=np.int64) * (indices.shape[1] if indices.ndim == 2 else 0)
    if offsets.size and offsets[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offsets[0])}")
    if offsets.size and offsets[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {int(offsets[-1])}")
    starts = np.ascontiguousarray(offsets[:bags], dtype=np.int64)
    ends = np.empty(bags, np.int64)
    ends[:-1] = starts[1:]
    if bags:
        ends[-1] = n
    offset2bag = np.searchsorted(starts, np.arange(n), side="right") - 1
    np.maximum(offset2bag, 0, out=offset2bag)
    return idx, starts, np.maximum(ends, starts), offset2bag.astype(np.int64)


def embedding_bag_forward(weight, indices, offsets, bags: int, mode: int, psw, padding_idx: int):
    """(output (bags, D), offset2bag, bag_size, max_indices): PyTorch's ``_embedding_bag``'s four
    results (bag_size zeros in sum mode, max_indices the bag sizes in mean mode and zeros in sum
    mode, as its CPU kernel leaves them)."""
    idx, starts, ends, offset2bag = bag_bounds(indices, offsets, bags)
    width = weight.shape[1]
    out = np.zeros((bags, width), weight.dtype)
    arg = np.zeros((bags, width) if mode == 2 else (0, 0), np.int64)
    size = np.zeros(bags, np.int64)
    weighted = psw is not None
    w = np.ascontiguousarray(psw, dtype=weight.dtype).reshape(-1) if weighted else \
        np.zeros(0, weight.dtype)
    if bags:
        _bag_forward(weight, idx, w, weighted, starts, ends, int(padding_idx), int(mode), out,
                     arg, size)
    if mode == 0:
        size[:] = 0
        return out, offset2bag, size, np.zeros(bags, np.int64)
    return out, offset2bag, size, arg if mode == 2 else size.copy()


def _bag_inputs(grad, indices, offsets, bags, psw):
    idx, starts, ends, _ = bag_bounds(indices, offsets, bags)
    weighted = psw is not None
    w = np.ascontiguousarray(psw, dtype=grad.dtype).reshape(-1) if weighted else \
        np.zeros(0, grad.dtype)
    return np.ascontiguousarray(grad), idx, starts, ends, weighted, w


def embedding_bag_backward(grad, indices, offsets, bags: int, mode: int, psw, padding_idx: int,
                           size, arg, scale_grad_by_freq: bool, num_weights: int):
    """The weight's gradient, (num_weights, D), dense: PyTorch's ``_embedding_bag_backward``
    (``size``, ``arg``: the forward's bag sizes and max rows)."""
    g, idx, starts, ends, weighted, w = _bag_inputs(grad, indices, offsets, bags, psw)
    out = _pool.zeros((num_weights, grad.shape[1]), grad.dtype)
    if bags and grad.shape[1]:
        _bag_backward(g, idx, w, weighted, starts, ends, int(padding_idx), int(mode), size,
                      arg if mode == 2 else np.zeros((0, 0), np.int64), bool(scale_grad_by_freq),
                      out)
    return out


def embedding_bag_per_sample_weights_backward(grad, weight, indices, offsets, bags: int,
                                              psw_shape: tuple, padding_idx: int):
    """The per-sample weights' gradient (sum mode): each entry's bag's gradient dotted with its
    row of ``weight``, 0 at ``padding_idx``, PyTorch's ``_embedding_bag_per_sample_weights_backward``."""
    g, idx, starts, ends, _, _ = _bag_inputs(grad, indices, offsets, bags, None)
    out = np.zeros(psw_shape, grad.dtype)
    if bags:
        _bag_weights_backward(g, np.ascontiguousarray(weight), idx, starts, ends,
                              int(padding_idx), out.reshape(-1))
    return out


__all__ += ["embedding_bag_forward", "embedding_bag_backward",
            "embedding_bag_per_sample_weights_backward"]
