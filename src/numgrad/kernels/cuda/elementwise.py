"""Elementwise CUDA kernels: one kernel per family, the op chosen by the CPU's op codes.

Operands are flat C-contiguous device arrays. A host number (a NumPy scalar, or a 0-d NumPy array
that ``binary_operands`` made of a Python number) is passed to the kernel by value. Broadcasting
goes through one kernel that maps each output index to each operand's offset through a small
int64 "meta" array [ndim, shape, strides of operand 0, 1, 2], uploaded once per shape
combination and cached.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..cpu.elementwise import (
    _SWAPPED, EXP, LOG, SIGMOID, TANH, _one, binary_scalar, unary_portable,
)
from .memory import empty, flat, launch


@cuda.jit(device=True)
def _unary_device(op, x):
    if op == EXP:
        return math.exp(x)
    if op == LOG:
        return math.log(x)
    if op == TANH:
        return math.tanh(x)
    if op == SIGMOID:
        return _one(x) / (_one(x) + math.exp(-x))
    return unary_portable(op, x)


@cuda.jit
def _unary_k(op, x, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = _unary_device(op, x[i])


@cuda.jit
def _binary_k(op, a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = binary_scalar(op, a[i], b[i])


@cuda.jit
def _binary_scalar_k(op, a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = binary_scalar(op, a[i], b)


@cuda.jit(device=True)
def _offset(i, meta, operand):
    """The element offset in operand ``operand`` of output element ``i``."""
    nd = meta[0]
    base = 1 + nd * (operand + 1)
    offset = 0
    for d in range(nd - 1, -1, -1):
        n = meta[1 + d]
        offset += (i % n) * meta[base + d]
        i //= n
    return offset


@cuda.jit
def _binary_bcast_k(op, a, b, meta, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = binary_scalar(op, a[_offset(i, meta, 0)], b[_offset(i, meta, 1)])


@cuda.jit
def _where_k(cond, a, b, meta, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[_offset(i, meta, 1)] if cond[_offset(i, meta, 0)] else b[_offset(i, meta, 2)]


@cuda.jit
def _copy_k(x, meta, out):
    """``out`` = ``x`` broadcast (through ``meta``) and converted to ``out``'s dtype."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[_offset(i, meta, 0)]


# ------------------------------------------------------------------ helpers
def _is_host(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


def _number(x, dtype):
    """A host number (NumPy scalar or 0-d array) as a NumPy scalar of ``dtype``."""
    return np.dtype(dtype).type(x[()] if isinstance(x, np.ndarray) else x)


def _broadcast_shape(*shapes) -> tuple:
    return np.broadcast_shapes(*shapes)


_META_CACHE: dict = {}


def _meta(shape: tuple, *operand_shapes):
    """The device meta array for operands of ``operand_shapes`` (C-contiguous) broadcast to
    ``shape``: a broadcast dimension gets stride 0."""
    key = (shape, operand_shapes)
    meta = _META_CACHE.get(key)
    if meta is None:
        nd = max(len(shape), 1)
        shape1 = tuple(shape) if shape else (1,)
        rows = [[nd, *shape1]]
        for s in operand_shapes:
            s = (1,) * (nd - len(s)) + tuple(s)
            strides, step = [0] * nd, 1
            for d in range(nd - 1, -1, -1):
                strides[d] = 0 if s[d] == 1 else step
                step *= s[d]
            rows.append(strides)
        if len(_META_CACHE) > 1024:
            _META_CACHE.clear()
        meta = _META_CACHE[key] = cuda.to_device(np.array(sum(rows, []), np.int64))
    return meta


def upload(a: np.ndarray):
    """A device copy of a host array."""
    if not a.flags.c_contiguous:
        a = a.copy()  # (not ascontiguousarray, which makes 0-d arrays 1-d)
    return cuda.to_device(a)


def _device_value(x, dtype):
    """A host number as a 0-d device array of ``dtype``."""
    return upload(np.array(_number(x, dtype)))


# ------------------------------------------------------------------ entry points
def unary(op: int, x):
    """``op`` applied to every element of ``x``; a new array."""
    out = empty(x.shape, x.dtype)
    if out.size:
        launch(_unary_k, out.size)(op, flat(x), flat(out))
    return out


def binary(op: int, a, b, out_dtype=None):
    """``op(a, b)`` with broadcasting; ``a``/``b`` are device arrays or host numbers of one
    dtype; the result has it too unless ``out_dtype`` is given (bool for comparisons)."""
    if _is_host(a) and op in _SWAPPED and not _is_host(b):
        a, b, op = b, a, _SWAPPED[op]
    if _is_host(a):
        a = _device_value(a, b.dtype)
    dt = a.dtype if out_dtype is None else np.dtype(out_dtype)
    if _is_host(b):
        out = empty(a.shape, dt)
        if out.size:
            launch(_binary_scalar_k, out.size)(op, flat(a), _number(b, a.dtype), flat(out))
        return out
    if a.shape == b.shape:
        out = empty(a.shape, dt)
        if out.size:
            launch(_binary_k, out.size)(op, flat(a), flat(b), flat(out))
        return out
    shape = _broadcast_shape(a.shape, b.shape)
    out = empty(shape, dt)
    if out.size:
        launch(_binary_bcast_k, out.size)(op, flat(a), flat(b), _meta(shape, a.shape, b.shape), flat(out))
    return out


def binary_into(op: int, out, b) -> None:
    """``out = op(out, b)`` in place; ``b`` (a device array or a host number) broadcasts."""
    if not out.size:
        return
    if _is_host(b):
        launch(_binary_scalar_k, out.size)(op, flat(out), _number(b, out.dtype), flat(out))
    elif b.shape == out.shape:
        launch(_binary_k, out.size)(op, flat(out), flat(cast(b, out.dtype)), flat(out))
    else:
        meta = _meta(out.shape, out.shape, b.shape)
        launch(_binary_bcast_k, out.size)(op, flat(out), flat(cast(b, out.dtype)), meta, flat(out))


def where(cond, a, b):
    """``a`` where ``cond`` else ``b``, broadcast together; ``a``, ``b`` share a dtype."""
    dt = b.dtype if _is_host(a) else a.dtype
    a = _device_value(a, dt) if _is_host(a) else a
    b = _device_value(b, dt) if _is_host(b) else b
    shape = _broadcast_shape(cond.shape, a.shape, b.shape)
    out = empty(shape, dt)
    if out.size:
        meta = _meta(shape, cond.shape, a.shape, b.shape)
        launch(_where_k, out.size)(flat(cond), flat(a), flat(b), meta, flat(out))
    return out


def _convert(x, shape, dtype):
    out = empty(shape, dtype)
    if out.size:
        launch(_copy_k, out.size)(flat(x), _meta(shape, x.shape), flat(out))
    return out


def cast(a, dtype):
    """A copy of ``a`` in ``dtype`` (``a`` itself if it has that dtype already)."""
    if a.dtype == np.dtype(dtype):
        return a
    return _convert(a, a.shape, dtype)


def copy(a):
    """A copy of ``a`` in new memory."""
    return _convert(a, a.shape, a.dtype)


def reshape_view(a, shape: tuple):
    """``a`` with another shape, sharing memory (CUDA data is always C-contiguous)."""
    return a.reshape(shape)


def broadcast_to(a, shape: tuple):
    """``a`` broadcast to ``shape``: materialised in this first slice (no strided device views)."""
    return _convert(a, shape, a.dtype)


def to_host(a) -> np.ndarray:
    """A host (NumPy) copy of the device array ``a``."""
    return a.copy_to_host()
