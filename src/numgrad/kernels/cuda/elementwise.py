"""Elementwise CUDA kernels, generated per formula from the formula table (``kernels/formulas.py``,
``kernels/codegen.py``), as on the CPU: each op's kernels call its CUDA scalar function, and a
first use compiles that op's kernel for that dtype only.

Operands are device arrays of any layout (strided views included) or host numbers. A host
number (a NumPy scalar, or a 0-d NumPy array that ``binary_operands`` made of a Python number) is
passed to the kernel by value. Contiguous operands of one shape take the flat kernels; any other
combination (broadcasting, strided views) goes through one kernel that reads each operand's
buffer through a small int64 "meta" array [ndim, shape, strides of operand 0, 1, 2] (0 where it
broadcasts; ``layout.meta``), uploaded once per combination and cached.
"""
from __future__ import annotations


import numpy as np
from numba import cuda

from ... import _lazy
from .. import codegen
from .. import cpu as cpu_kernels
from ..formulas import SWAPPED, Binary
from .layout import _copy_k, _offset, ascontiguous, convert, meta, operand  # noqa: F401
from .layout import address, assign, may_share_memory
from .layout import broadcast_to, reshape_view  # noqa: F401  (entry points)
from .errors import check_errors
from .layout import flat, full
from .memory import empty, launch


def _kernels(op, dtype, unary: bool = False):
    """The generated kernels of ``op`` (unary if ``unary``, else binary or a comparison) for
    ``dtype``, from the CUDA function of its formula (``kernels/codegen.py``), as on the CPU."""
    key = (op, dtype, unary)
    module = _LOADED.get(key)
    if module is None:
        module = _LOADED[key] = codegen.formula_kernels("cuda", op, dtype, unary)
    return module


_LOADED: dict = {}


@cuda.jit
def _where_k(cond, a, b, meta, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[_offset(i, meta, 1)] if cond[_offset(i, meta, 0)] else b[_offset(i, meta, 2)]


# ------------------------------------------------------------------ helpers
def _is_host(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


def _number(x, dtype):
    """A host number (NumPy scalar or 0-d array) as a NumPy scalar of ``dtype``."""
    return np.dtype(dtype).type(x[()] if isinstance(x, np.ndarray) else x)


def _broadcast_shape(*shapes) -> tuple:
    return np.broadcast_shapes(*shapes)


def _meta(shape: tuple, *operand_shapes):
    """The meta array for C-contiguous operands of ``operand_shapes`` broadcast to ``shape``."""
    return meta(tuple(shape), *((tuple(s), None) for s in operand_shapes))


def upload(a: np.ndarray):
    """A device copy of a host array, in memory from numgrad's pool (``memory.empty``): counted
    by ``numgrad.cuda.memory_allocated()`` and reused once freed, as kernel outputs are."""
    if not a.flags.c_contiguous:
        a = a.copy()  # (not ascontiguousarray, which makes 0-d arrays 1-d)
    out = empty(a.shape, a.dtype)
    if out.size:
        out.copy_to_device(a)
    return out


def _device_value(x, dtype):
    """A host number as a 0-d device array of ``dtype``: filled by a kernel that gets the number
    by value (an upload from pageable host memory would wait for the GPU)."""
    return full((), _number(x, dtype), dtype)


# ------------------------------------------------------------------ entry points
def unary(op: int, x):
    """``op`` applied to every element of ``x``; a new array."""
    x = ascontiguous(x)
    kernel = _kernels(op, x.dtype, True).map_k
    out = empty(x.shape, x.dtype)
    if out.size:
        launch(kernel, out.size)(flat(x), flat(out))
    return out


def unary_into(op: int, x) -> None:
    """``x = op(x)`` in place: one pass where ``x`` is contiguous, else out of place and
    copied back (``layout.assign``)."""
    if x.is_c_contiguous():
        if x.size:
            launch(_kernels(op, x.dtype, True).map_k, x.size)(flat(x), flat(x))
        return
    assign(x, unary(op, x))


def binary(op: int, a, b, out_dtype=None):
    """``op(a, b)`` with broadcasting; ``a``/``b`` are device arrays (any layout) or host numbers
    of one dtype; the result has it too unless ``out_dtype`` is given (bool for comparisons)."""
    if _is_host(a) and op in SWAPPED and not _is_host(b):
        a, b, op = b, a, SWAPPED[op]
    if _is_host(a):
        a = _device_value(a, b.dtype)
    kernels = _kernels(op, a.dtype)
    dt = a.dtype if out_dtype is None else np.dtype(out_dtype)
    if _is_host(b):
        a = ascontiguous(a)
        out = empty(a.shape, dt)
        if out.size:
            launch(kernels.zip_scalar_k, out.size)(flat(a), _number(b, a.dtype), flat(out))
        return out
    if a.shape == b.shape and a.is_c_contiguous() and b.is_c_contiguous():
        out = empty(a.shape, dt)
        if out.size:
            launch(kernels.zip_k, out.size)(flat(a), flat(b), flat(out))
        return out
    shape = tuple(_broadcast_shape(a.shape, b.shape))
    out = empty(shape, dt)
    if out.size:
        (abuf, alay), (bbuf, blay) = operand(a), operand(b)
        launch(kernels.zip_bcast_k, out.size)(abuf, bbuf, meta(shape, alay, blay), flat(out))
    return out


def binary_into(op: int, out, b, alpha=None) -> None:
    """``out = op(out, b)`` in place; ``b`` (a device array or a host number) broadcasts. ``out``
    may be a strided view: the result lands in the memory it shares. With ``alpha`` (ADD or SUB),
    ``out = op(out, alpha * b)``."""
    n = out.size
    if not n:
        return
    if alpha is not None:
        if _is_host(b):
            b = out.dtype.type(_number(b, out.dtype) * alpha)
        else:
            b = binary(Binary.MUL, b, _number(alpha, out.dtype))
    if not _is_host(b):
        b = cast(b, out.dtype)
        if b is not out and may_share_memory(out, b) and not (
                address(b) == address(out) and b.shape == out.shape and b.strides == out.strides):
            b = copy(b)  # (each element of out read before written only where they coincide)
    kernels = _kernels(op, out.dtype)
    if out.is_c_contiguous():
        if _is_host(b):
            launch(kernels.zip_scalar_k, n)(flat(out), _number(b, out.dtype), flat(out))
        elif b.shape == out.shape and b.is_c_contiguous():
            launch(kernels.zip_k, n)(flat(out), flat(b), flat(out))
        else:
            bbuf, blay = operand(b)
            m = meta(tuple(out.shape), (tuple(out.shape), None), blay)
            launch(kernels.zip_bcast_k, n)(flat(out), bbuf, m, flat(out))
        return
    if _is_host(b):
        b = _device_value(b, out.dtype)
    (obuf, olay), (bbuf, blay) = operand(out), operand(b)
    launch(kernels.zip_into_k, n)(obuf, bbuf, meta(tuple(out.shape), olay, blay), n)


def where(cond, a, b):
    """``a`` where ``cond`` else ``b``, broadcast together; ``a``, ``b`` share a dtype."""
    dt = b.dtype if _is_host(a) else a.dtype
    a = _device_value(a, dt) if _is_host(a) else a
    b = _device_value(b, dt) if _is_host(b) else b
    shape = tuple(_broadcast_shape(cond.shape, a.shape, b.shape))
    out = empty(shape, dt)
    if out.size:
        (cbuf, clay), (abuf, alay), (bbuf, blay) = operand(cond), operand(a), operand(b)
        launch(_where_k, out.size)(cbuf, abuf, bbuf, meta(shape, clay, alay, blay), flat(out))
    return out


def cast(a, dtype):
    """A copy of ``a`` in ``dtype`` (``a`` itself if it has that dtype already)."""
    if a.dtype == np.dtype(dtype):
        return a
    return convert(a, tuple(a.shape), dtype)


def copy(a):
    """A C-contiguous copy of ``a`` in new memory."""
    return convert(a, tuple(a.shape), a.dtype)


def to_device(a, device: str):
    """A copy of ``a`` on ``device`` ("cpu" or "cuda"), and that device's kernel module."""
    if device == "cpu":
        return to_host(a), cpu_kernels
    return copy(a), _lazy.module("kernels.cuda")  # (this package, which imports this module)


def to_host(a) -> np.ndarray:
    """A host (NumPy) copy of the device array ``a``: a sync, where an index found out of range
    by an earlier kernel is raised (``errors.check_errors``)."""
    check_errors()
    return ascontiguous(a).copy_to_host()
