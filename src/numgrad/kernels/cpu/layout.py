"""Layout and data movement on the CPU: views (NumPy's, sharing memory), copies, joins, fills.

The CUDA module (``kernels/cuda/layout.py``) has the same functions on strided device arrays, so
the ops call ``K.permute``, ``K.cat`` … and run on either device.
"""
from __future__ import annotations

import numpy as np

from ... import _lazy, _pool
from ..._lowp import cast, f32_to_bf16


def ascontiguous(a: np.ndarray) -> np.ndarray:
    """``a`` if it is C-contiguous, else a C-contiguous copy (a large one in a pooled buffer)."""
    if a.flags.c_contiguous:
        return a
    if a.nbytes < _pool.POOL_FROM:
        return np.ascontiguousarray(a)
    out = _pool.empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def is_contiguous(a: np.ndarray) -> bool:
    return a.flags.c_contiguous


def empty(shape: tuple, dtype) -> np.ndarray:
    return _pool.empty(shape, dtype)


def upload(a: np.ndarray) -> np.ndarray:
    """A copy of the host array ``a`` (on the CPU, a plain C-contiguous copy)."""
    return np.array(a, order="C", copy=True)


def to_device(a: np.ndarray, device: str):
    """A copy of ``a`` on ``device`` ("cpu" or "cuda"), and that device's kernel module."""
    if device == "cuda":
        K = _lazy.module("cuda").kernels()
        return K.upload(a), K
    return upload(a), _lazy.module("kernels.cpu")  # (this package, which imports this module)


def check_errors() -> None:
    """Nothing to check: the CPU kernels raise an index out of range at once."""


def permute(a: np.ndarray, dims: tuple) -> np.ndarray:
    return a.transpose(dims)


def transpose(a: np.ndarray, dim0: int, dim1: int) -> np.ndarray:
    return a.swapaxes(dim0, dim1)


def squeeze(a: np.ndarray, dims: tuple) -> np.ndarray:
    """``a`` without its size-1 dimensions ``dims`` (a new view, also when ``dims`` is empty)."""
    return a.squeeze(dims) if dims else a.view()


def unsqueeze(a: np.ndarray, dim: int) -> np.ndarray:
    return np.expand_dims(a, dim)


def view_index(a: np.ndarray, index: tuple) -> np.ndarray:
    """``a[index]`` for ints, slices, None and ``...`` (a view)."""
    return a[index]


def cat(arrays, dim: int) -> np.ndarray:
    first = arrays[0]
    size = sum(a.shape[dim] for a in arrays) if first.ndim else 0
    if first.ndim and first.nbytes // max(first.shape[dim], 1) * size >= _pool.POOL_FROM and \
            all(a.dtype == first.dtype for a in arrays):  # (large: into a pooled buffer)
        shape = list(first.shape)
        shape[dim] = size
        return np.concatenate(arrays, axis=dim, out=_pool.empty(tuple(shape), first.dtype))
    return np.concatenate(arrays, axis=dim)


def stack(arrays, dim: int) -> np.ndarray:
    return np.stack(arrays, axis=dim)


def repeat(a: np.ndarray, repeats: tuple) -> np.ndarray:
    """``a`` tiled ``repeats`` times along each dimension (leading ones added)."""
    lead = len(repeats) - a.ndim
    return np.tile(a.reshape((1,) * lead + a.shape), repeats)


def zeros(shape: tuple, dtype) -> np.ndarray:
    return _pool.zeros(shape, dtype)


def full(shape: tuple, value, dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "V" and not isinstance(value, np.void):
        # (bfloat16, ``numgrad._lowp``: NumPy's V2 reads no number; a value already its bits,
        # as ``creation`` makes them, is written as it is)
        return np.full(shape, f32_to_bf16(np.float32(value))[()], dtype)
    return np.full(shape, value, dtype)


def broadcast_copy(a: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """``a`` broadcast to ``shape`` and cast to ``dtype``, in new memory (large copies in a
    pooled buffer: ``numgrad._pool``)."""
    source = np.broadcast_to(a, shape)
    target = source.dtype if dtype is None else np.dtype(dtype)
    if source.size * target.itemsize < _pool.POOL_FROM or "V" in (target.kind, source.dtype.kind):
        return np.array(source, dtype=target)
    out = _pool.empty(source.shape, target)
    np.copyto(out, source, casting="unsafe")
    return out


def assign(dst: np.ndarray, src) -> None:
    """``dst[...] = src`` in place, ``src`` broadcast and cast (unsafely) to ``dst``'s dtype."""
    if dst.dtype.kind == "V" or getattr(src, "dtype", dst.dtype).kind == "V":  # (bfloat16)
        src = cast(src, dst.dtype)
    np.copyto(dst, src, casting="unsafe")


def address(a: np.ndarray) -> int:
    """The address of ``a``'s first element."""
    return a.__array_interface__["data"][0]


def may_share_memory(a, b) -> bool:
    ra, rb = a, b
    while ra.base is not None and type(ra.base) is np.ndarray:
        ra = ra.base
    while rb.base is not None and type(rb.base) is np.ndarray:
        rb = rb.base
    if ra is not rb and ra.base is None and rb.base is None:
        return False  # (views of two arrays that own their memory: np.may_share_memory's 1 µs)
    return np.may_share_memory(a, b)


def is_writeable(a: np.ndarray) -> bool:
    """False for a broadcast (expanded) view, which NumPy marks read-only."""
    return a.flags.writeable


__all__ = ["ascontiguous", "is_contiguous", "empty", "upload", "to_device", "check_errors", "permute", "transpose", "squeeze", "unsqueeze", "view_index", "cat",
           "stack", "repeat", "zeros", "full", "broadcast_copy", "assign", "address",
           "may_share_memory", "is_writeable"]
