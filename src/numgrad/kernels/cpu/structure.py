"""Structure kernels on the CPU (``K.structure``): triangles (``tril``/``triu``), diagonals (a
strided view, and the zeros-with-a-diagonal of ``diag_embed`` and diagonal's backward), the
sliding windows of ``unfold`` (a strided view) and the index remapping of ``flip`` and ``roll``.

Each kernel reads a C-contiguous operand flat and writes a new C-contiguous array; the CUDA module
(``kernels/cuda/structure.py``) has the same functions.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numpy.lib.stride_tricks import as_strided


@njit(cache=True)
def _tri_k(x, n, m, k, upper, out):
    """``out`` = ``x`` (flat, ``(..., n, m)``) with the elements off the kept triangle zeroed:
    kept are ``col - row >= k`` (``upper``) or ``col - row <= k``."""
    for i in range(x.size):
        d = i % m - (i // m) % n
        if (d >= k) if upper else (d <= k):
            out[i] = x[i]
        else:
            out[i] = 0


@njit(cache=True)
def _remap_k(x, shape, flip, shift, out):
    """``out[i] = x[source(i)]`` over C-contiguous arrays of ``shape``: along each dimension the
    source coordinate is mirrored (``flip``) or moved back by ``shift`` (``roll``, wrapping)."""
    nd = shape.size
    for i in range(out.size):
        rest = i
        src = 0
        step = 1
        for d in range(nd - 1, -1, -1):
            n = shape[d]
            c = rest % n
            rest //= n
            if flip[d]:
                c = n - 1 - c
            else:
                c = (c - shift[d]) % n
            src += c * step
            step *= n
        out[i] = x[src]


@njit(cache=True)
def _embed_k(x, shape, strides, start, out):
    """``out[start + sum(i_d * strides[d])] = x[i]`` for each element ``i`` of the C-contiguous
    ``x`` of ``shape`` (``out`` flat): the writing of a diagonal."""
    nd = shape.size
    for i in range(x.size):
        rest = i
        dst = start
        for d in range(nd - 1, -1, -1):
            dst += (rest % shape[d]) * strides[d]
            rest //= shape[d]
        out[dst] = x[i]


def _flat(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's elements, flat (bool as uint8: the kernels copy bytes)."""
    f = a.reshape(-1)
    return f.view(np.uint8) if f.dtype == np.bool_ else f


def tri(x: np.ndarray, k: int, upper: bool) -> np.ndarray:
    """The lower (``upper``: upper) triangle of the last two dimensions of ``x``, from diagonal
    ``k`` on; the rest zeros. A new C-contiguous array of ``x``'s dtype."""
    a = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # (NumPy's makes 0-d 1-d)
    out = np.empty(a.shape, a.dtype)
    if a.size:
        n, m = a.shape[-2:]
        _tri_k(_flat(a), n, m, int(k), bool(upper), _flat(out))
    return out


def remap(x: np.ndarray, flip: tuple, shift: tuple) -> np.ndarray:
    """``x`` flipped along the dimensions where ``flip`` is set and rolled by ``shift`` (each in
    ``[0, size)``) along the others; a new C-contiguous array."""
    a = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # (NumPy's makes 0-d 1-d)
    out = np.empty(a.shape, a.dtype)
    if a.size:
        _remap_k(_flat(a), np.array(a.shape, np.int64), np.array(flip, np.bool_),
                 np.array(shift, np.int64), _flat(out))
    return out


def diagonal_geometry(shape: tuple, strides: tuple, offset: int, dim1: int, dim2: int):
    """(shape, strides, start) in elements of the diagonal ``offset`` of dimensions ``dim1`` and
    ``dim2`` of an array of ``shape`` and element ``strides``: the other dimensions in order,
    then the diagonal."""
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = offset * strides[dim2] if length else 0
    else:
        length = max(min(n1 + offset, n2), 0)
        start = -offset * strides[dim1] if length else 0
    rest = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    return (tuple(shape[d] for d in rest) + (length,),
            tuple(strides[d] for d in rest) + (strides[dim1] + strides[dim2],), start)


def diagonal(x: np.ndarray, offset: int, dim1: int, dim2: int) -> np.ndarray:
    """The diagonal ``offset`` of dimensions ``dim1`` and ``dim2`` of ``x``, the diagonal last:
    a view sharing ``x``'s memory (writeable where ``x`` is)."""
    item = x.itemsize
    shape, strides, start = diagonal_geometry(
        x.shape, tuple(s // item for s in x.strides), offset, dim1, dim2)
    if not x.size or 0 in shape:
        return np.empty(shape, x.dtype)  # (no element to share)
    first = as_strided(x, (start + 1,), (item,))[start:]  # (its element ``start``)
    return as_strided(first, shape, tuple(s * item for s in strides))


def unfold_geometry(shape: tuple, strides: tuple, dim: int, size: int, step: int):
    """(shape, strides) in elements of ``unfold(dim, size, step)`` of an array of ``shape`` and
    element ``strides``: ``dim`` holds the windows (``step`` apart), a new last dimension the
    ``size`` elements of each. A 0-d array has one window, the last dimension alone."""
    if not shape:
        return (size,), (1,)
    count = (shape[dim] - size) // step + 1
    return (shape[:dim] + (count,) + shape[dim + 1:] + (size,),
            strides[:dim] + (strides[dim] * step,) + strides[dim + 1:] + (strides[dim],))


def unfold(x: np.ndarray, dim: int, size: int, step: int) -> np.ndarray:
    """The windows of ``size`` elements every ``step`` along ``dim`` (``unfold_geometry``): a
    view sharing ``x``'s memory (writeable where ``x`` is)."""
    item = x.itemsize
    shape, strides = unfold_geometry(x.shape, tuple(s // item for s in x.strides), dim, size,
                                     step)
    return as_strided(x, shape, tuple(s * item for s in strides))


def embed_diagonal(x: np.ndarray, shape: tuple, offset: int, dim1: int, dim2: int) -> np.ndarray:
    """Zeros of ``shape`` with ``x`` (of the diagonal view's shape) written on the diagonal
    ``offset`` of ``dim1`` and ``dim2`` (``diag_embed``; diagonal's backward)."""
    out = np.zeros(shape, x.dtype)
    if out.size:
        view, strides, start = diagonal_geometry(
            shape, tuple(s // out.itemsize for s in out.strides), offset, dim1, dim2)
        if x.shape != view:  # (broadcast to the diagonal's shape, as ATen's copy_)
            x = np.broadcast_to(x, view)
        a = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        if a.size:
            _embed_k(_flat(a), np.array(view, np.int64), np.array(strides, np.int64), start,
                     _flat(out))
    return out


def repeat_index(repeats: np.ndarray) -> np.ndarray:
    """``[0] * repeats[0] + [1] * repeats[1] + …`` as int64 (``repeat_interleave``'s index);
    PyTorch's error for a negative count."""
    r = np.ascontiguousarray(repeats, np.int64).reshape(-1)
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return _repeat_index(r, int(r.sum()))


@njit(cache=True)
def _repeat_index_k(r, out):
    p = 0
    for i in range(r.size):
        for _ in range(r[i]):
            out[p] = i
            p += 1


def _repeat_index(r: np.ndarray, total: int) -> np.ndarray:
    out = np.empty(total, np.int64)
    if total:
        _repeat_index_k(r, out)
    return out
