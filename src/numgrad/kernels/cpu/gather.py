"""``gather``, ``scatter`` / ``scatter_add`` and ``index_select`` along one dimension, on the CPU.

The index array decides the loop: for each of its elements (``p``, at coordinates ``c``) the
element of the other operand at ``c`` with ``c[dim]`` replaced by ``index[p]`` is read (gather)
or written (scatter). The operand is read or written through its C strides, so an index smaller
than it in the other dimensions (PyTorch allows that) needs no copy. Writes run in index order, so
repeated indices accumulate in ``scatter_add`` and the last one wins in ``scatter``. An index out
of ``[0, size)`` raises PyTorch's error (no wrapping of negative indices, as PyTorch).
"""
from __future__ import annotations

import numpy as np
from numba import njit

SET, ADD, MULTIPLY, AMAX, AMIN = 0, 1, 2, 3, 4  # scatter's modes


@njit(cache=True)
def _offset(p, shape, strides, dim):
    """The offset, through ``strides``, of element ``p`` of ``shape`` with ``dim``'s coordinate
    left out."""
    off = 0
    for d in range(shape.size - 1, -1, -1):
        c = p % shape[d]
        p //= shape[d]
        if d != dim:
            off += c * strides[d]
    return off


@njit(cache=True)
def _gather_k(x, strides, idx, shape, dim, size, out):
    """``out[p] = x[offset of p with idx[p] at dim]``; returns the first bad position (-1)."""
    for p in range(idx.size):
        v = idx[p]
        if v < 0 or v >= size:
            return p
        out[p] = x[_offset(p, shape, strides, dim) + v * strides[dim]]
    return -1


@njit(cache=True)
def _scatter_k(out, strides, idx, shape, dim, size, src, mode):
    """``out[offset of p with idx[p] at dim] (=, +=, *=) src[p]``; the first bad position."""
    for p in range(idx.size):
        v = idx[p]
        if v < 0 or v >= size:
            return p
        o = _offset(p, shape, strides, dim) + v * strides[dim]
        if mode == 1:
            out[o] += src[p]
        elif mode == 2:
            out[o] *= src[p]
        elif mode == 3:  # (the larger; a NaN wins)
            if src[p] > out[o] or src[p] != src[p]:
                out[o] = src[p]
        elif mode == 4:  # (the smaller; a NaN wins)
            if src[p] < out[o] or src[p] != src[p]:
                out[o] = src[p]
        else:
            out[o] = src[p]
    return -1


def _strides(a: np.ndarray) -> np.ndarray:
    return np.array([s // a.itemsize for s in a.strides] or [1], np.int64)


def _index(index: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(index, dtype=np.int64).reshape(-1)


def _shape(index: np.ndarray) -> np.ndarray:
    return np.array(index.shape or (1,), np.int64)


def _out_of_bounds(index: np.ndarray, bad: int, dim: int, size: int):
    return RuntimeError(f"index {index.reshape(-1)[bad]} is out of bounds for dimension {dim} "
                        f"with size {size}")


def gather_dim(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    """``out[c] = x[c with c[dim] = index[c]]`` for each position ``c`` of ``index`` (an integer
    array of ``x``'s number of dimensions, no larger than ``x`` apart from ``dim``)."""
    a = np.ascontiguousarray(x)
    out = np.empty(index.shape, x.dtype)
    size = a.shape[dim] if a.ndim else 1
    if out.size:
        bad = _gather_k(a.reshape(-1), _strides(a), _index(index), _shape(index), dim, size,
                        out.reshape(-1))
        if bad >= 0:
            raise _out_of_bounds(index, bad, dim, size)
    return out


def index_select_dim(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    """``x`` at the positions ``index`` (1-D) along ``dim``: a gather by ``index`` broadcast
    along the other dimensions."""
    if x.ndim == 0:
        shape = (index.size,)
        view = x.reshape(1)
    else:
        shape = x.shape[:dim] + (index.size,) + x.shape[dim + 1:]
        view = x
    wide = np.broadcast_to(np.asarray(index, np.int64).reshape(
        (1,) * dim + (index.size,) + (1,) * (len(shape) - dim - 1)), shape)
    flat = index.reshape(-1)
    if flat.size and ((flat < 0) | (flat >= view.shape[dim])).any():  # (an empty result too)
        raise _index_select_error(x, dim, index)
    out = gather_dim(view, dim, wide)
    return out.reshape(shape if x.ndim else (index.size,) if index.ndim else ())


def _index_select_error(x: np.ndarray, dim: int, index: np.ndarray) -> Exception:
    """PyTorch's CPU error for an index out of range in ``index_select``, which depends on the
    path its kernel takes: vectors, axes of size 0, ``dim=1`` and empty inputs, the rest."""
    size = x.shape[dim] if x.ndim else 1
    if x.ndim <= 1:
        return IndexError("index out of range in self")
    if size == 0:
        return RuntimeError("index_select(): self indexing axis dim should be positive")
    if dim != 1 and x.size:
        return IndexError("index out of range in self")
    flat = index.reshape(-1)
    bad = flat[(flat < 0) | (flat >= size)][0]
    return RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")


def scatter_dim(x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray, mode: int):
    """A copy of ``x`` with ``src[c]`` written (``mode`` ADD: added, MULTIPLY: multiplied, AMAX /
    AMIN: the larger / smaller kept) at
    ``c`` with ``c[dim] = index[c]``, for each position ``c`` of ``index``; ``src`` holds at
    least ``index``'s shape (its first elements are used, as PyTorch). Complex ``x`` (SET and
    ADD): the real and imaginary parts scattered each."""
    if x.dtype.kind == "c" and mode in (SET, ADD):
        src = np.asarray(src, x.dtype)
        out = np.empty(x.shape, x.dtype)
        out.real = scatter_dim(x.real, dim, index, src.real, mode)
        out.imag = scatter_dim(x.imag, dim, index, src.imag, mode)
        return out
    out = np.array(x, order="C", copy=True)
    if index.size:
        part = np.ascontiguousarray(
            src[tuple(slice(0, n) for n in index.shape)] if src.ndim else src.reshape(1),
            dtype=x.dtype)
        size = out.shape[dim] if out.ndim else 1
        bad = _scatter_k(out.reshape(-1), _strides(out), _index(index), _shape(index), dim, size,
                         part.reshape(-1), mode)
        if bad >= 0:
            raise _out_of_bounds(index, bad, dim, size)
    return out
