"""Elementwise CPU kernels.

Each op's loops are generated from its formula in the table (``kernels/formulas.py``) by
``kernels/codegen.py``, one small module per formula: a first use compiles that op's loop for that
dtype only, and each op gets its own tight, vectorised loop. The entry points here pick the loop
for the operands' layout: contiguous arrays of one shape, an array and a number, or the general
broadcast/strided path, each split over threads for large float arrays.
"""
from __future__ import annotations


import numpy as np
from numba import njit
from numpy.lib.stride_tricks import as_strided

from ... import _lowp, _pool
from .. import codegen
from ..formulas import SWAPPED, Binary
from . import _workers
from ._cache import light_cache as _light_cache

# From this many elements the kernels split their loop over threads, one contiguous part per
# thread: on this 2-core machine a 1M-element float32 tanh or mul then runs in about half the
# time. The threads are numgrad's own (``_workers``: Python threads, each calling the loop's
# ``nogil`` variant on its part), never Numba's ``parallel=True``: after each parallel region
# OpenMP's threads (Numba's default layer) spin for milliseconds, and so do BLAS's; on 2 cores
# each pool then stole the other's core, and a tiny GPT's step, whose GELU runs on 512K
# elements between matrix products, took 2x its time. A part costs a thread's wake-up (~20 us),
# so only large arrays, where the work dwarfs that, are split. Only float arrays (with a float
# result) are: integer, boolean and comparison kernels at this size are rare enough not to pay
# for compiling a second variant in every cold start and in ``python -m numgrad warmup``.
PARALLEL_THRESHOLD = 1 << 19


def _threaded(dtype, out_dtype) -> bool:
    """Whether elementwise kernels of ``dtype`` have variants for threads (float in, the same
    float out); the caller tests the size against ``PARALLEL_THRESHOLD`` first. Not on a busy
    machine (``_workers.busy``: these kernels' values are the same on any number of threads)."""
    return dtype.kind == "f" and out_dtype == dtype and not _workers.busy()


def _split(n: int, part) -> None:
    """``part(start, stop)`` over ``range(n)``, one contiguous span per thread, on as many of
    numgrad's worker threads (``_workers``; this one included)."""
    threads = _workers.count()
    _workers.run(_workers.spans(n, threads), lambda span, slot: part(*span), threads, False)


_SAFE = None  # parallel_safe(), once found


def parallel_safe() -> bool:
    """Whether the compiler's generated loops may run multi-threaded (``parallel=True``):
    whether the threading layer Numba uses, or will choose, survives two Python threads entering
    parallel code at once (TBB or OpenMP). Numba's ``default`` takes TBB, else OpenMP, else
    workqueue, which aborts the process then; numgrad leaves the layer as the user has it (it is
    process-wide) and, where it is or would be workqueue, runs those loops on one thread."""
    global _SAFE
    if _SAFE is None:
        import importlib

        import numba
        from numba.np.ufunc import parallel

        if getattr(parallel, "_is_initialized", False):
            _SAFE = numba.threading_layer() in ("tbb", "omp")
        elif numba.config.THREADING_LAYER == "default":
            _SAFE = False
            for name in ("tbbpool", "omppool"):
                try:
                    importlib.import_module(f"numba.np.ufunc.{name}")
                except ImportError:
                    continue
                _SAFE = True
                break
        else:  # (tbb, omp, threadsafe and safe: Numba raises where it has none, as for any code)
            _SAFE = numba.config.THREADING_LAYER in ("tbb", "omp", "threadsafe", "safe")
    return _SAFE


def _kernels(op, dtype, unary: bool = False):
    """The generated kernels of ``op`` (a unary op if ``unary``, else a binary one or a
    comparison) for ``dtype``, from its formula (``kernels/codegen.py``): made and imported on
    first use. ValueError for an id of another family, PyTorch's error where no formula of
    ``op`` takes ``dtype``."""
    key = (op, dtype, unary)
    module = _LOADED.get(key)
    if module is None:
        module = codegen.formula_kernels("cpu", op, dtype, unary)
        _light_cache(module)
        _LOADED[key] = module
    return module


_LOADED: dict = {}


def unary(op: int, x: np.ndarray) -> np.ndarray:
    """``op`` applied to every element of ``x``; the result is a new C-contiguous array."""
    dt = x.dtype
    kernels = _LOADED.get((op, dt, True))
    if kernels is None:
        if dt.num in _lowp.NARROW:  # (float16, bfloat16, small integers: computed wider)
            return _lowp.wider(unary, op, x)
        kernels = _kernels(op, dt, True)
    if not x.flags.c_contiguous:
        x = x.copy()  # (not ascontiguousarray, which makes 0-d arrays 1-d)
    n = x.size
    empty = np.empty if n * dt.itemsize < _pool.ADAPT_FROM else _pool.empty  # (``_pool``)
    if x.ndim == 1:
        out = flat_out = empty(n, dt)
        flat = x
    else:  # (1-D views for the kernels: ravel, of a C-contiguous array, is half a reshape)
        out = empty(x.shape, dt)
        flat, flat_out = x.ravel(), out.ravel()
    if n < PARALLEL_THRESHOLD or not _threaded(dt, dt):
        kernels.map_1d(flat, flat_out)
    else:
        _split(n, lambda i, j: kernels.map_1d_nogil(flat[i:j], flat_out[i:j]))
    return out


def unary_into(op: int, x: np.ndarray) -> None:
    """``x = op(x)`` in place, in one pass where ``x`` is contiguous (the loop reads and writes
    each element at one index); else computed out of place and written back."""
    kernels = _LOADED.get((op, x.dtype, True))
    if kernels is None and x.dtype.num in _lowp.NARROW:
        x[...] = unary(op, x)
        return
    kernels = kernels or _kernels(op, x.dtype, True)
    if not x.flags.c_contiguous:
        x[...] = unary(op, x)
        return
    flat = x.reshape(-1)
    if flat.size < PARALLEL_THRESHOLD or not _threaded(x.dtype, x.dtype):
        kernels.map_1d(flat, flat)
    else:
        _split(flat.size, lambda i, j: kernels.map_1d_nogil(flat[i:j], flat[i:j]))


def _strided_view(a: np.ndarray, shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """A 1-D view of ``a``'s buffer and its element strides once broadcast to ``shape`` (which
    the caller has checked ``a`` broadcasts to)."""
    size = a.itemsize
    lead = len(shape) - a.ndim
    strides = np.zeros(len(shape), np.int64)
    for i, (n, st) in enumerate(zip(a.shape, a.strides)):
        if n != 1:
            strides[lead + i] = st // size
    if a.flags.c_contiguous:
        return a.reshape(-1), strides
    extent = 1 + sum((n - 1) * st for n, st in zip(a.shape, a.strides)) // size
    return as_strided(a, (extent,), (size,)), strides


def binary(op: int, a: np.ndarray, b: np.ndarray, out_dtype=None) -> np.ndarray:
    """``op(a, b)`` with NumPy/PyTorch broadcasting. ``a`` and ``b`` (arrays or NumPy scalars)
    share one dtype; the result has it too unless ``out_dtype`` is given (bool for comparisons)."""
    da = a.dtype
    kernels = _LOADED.get((op, da, False))
    if kernels is None:
        if da.num in _lowp.NARROW:  # (float16, bfloat16, small integers: computed wider)
            return _lowp.wider(binary, op, a, b, out_dtype=out_dtype)
        kernels = _kernels(op, da)
    dt = da if out_dtype is None else out_dtype
    # The two commonest cases, an array and a number and two arrays of one shape, flat (the
    # kernels take 1-D arrays; a reshape costs as much as the kernel call on small arrays).
    if a.flags.c_contiguous:
        n = a.size
        empty = np.empty if n * a.itemsize < _pool.ADAPT_FROM else _pool.empty  # (``_pool``)
        if b.ndim == 0:
            if isinstance(b, np.ndarray):
                b = b[()]  # (a 0-d array's number; a NumPy number is passed as it is)
            if a.ndim == 1:
                out = dest = empty(n, dt)
            else:  # (1-D views for the kernels: ravel, of a C-contiguous array, is half a reshape)
                out = empty(a.shape, dt)
                a, dest = a.ravel(), out.ravel()
            if n < PARALLEL_THRESHOLD or not _threaded(da, dt):
                kernels.zip_1d_scalar(a, b, dest)
            else:
                _split(n, lambda i, j: kernels.zip_1d_scalar_nogil(a[i:j], b, dest[i:j]))
            return out
        if a.shape == b.shape and b.flags.c_contiguous:
            if a.ndim == 1:
                out = dest = empty(n, dt)
            else:
                out = empty(a.shape, dt)
                a, b, dest = a.ravel(), b.ravel(), out.ravel()
            if n < PARALLEL_THRESHOLD or not _threaded(da, dt):
                kernels.zip_1d(a, b, dest)
            else:
                _split(n, lambda i, j: kernels.zip_1d_nogil(a[i:j], b[i:j], dest[i:j]))
            return out
        if 0 < b.ndim <= a.ndim and 1 < b.size < n and b.flags.c_contiguous and \
                (a.shape[-1] == b.shape[0] if b.ndim == 1 else _repeats(a.shape, b.shape)):
            # a row added to each row (a bias; or a block of rows to each block, a (T, C)
            # position embedding to a (B, T, C) batch): the row loop
            out = empty(a.shape, dt)
            width = b.size
            rows = n // width
            a2, out2, b = a.reshape(rows, width), out.reshape(rows, width), b.reshape(width)
            if n < PARALLEL_THRESHOLD or rows < 2 or not _threaded(da, dt):
                kernels.zip_rows(a2, b, out2)
            else:  # (the rows shared among the threads: the same loop on each row)
                _split(rows, lambda i, j: kernels.zip_rows_nogil(a2[i:j], b, out2[i:j]))
            return out
    elif a.ndim == 1 and b.ndim > 1 and a.shape[0] == b.shape[-1] > 1 and b.size and \
            a.flags.c_contiguous and b.flags.c_contiguous:  # (the row first)
        out = np.empty(b.shape, dt)
        dims, sa, sb = _row_plan(b.size // a.shape[0], a.shape[0], True)
        kernels.zip_strided(a, sa, b.ravel(), sb, dims, out.ravel())
        return out
    return _binary_general(op, kernels, a, b, dt, out_dtype)


def _repeats(shape: tuple, block: tuple) -> bool:
    """Whether ``block`` (more than one element), its leading 1s aside, ends ``shape``: an
    array of that shape holds it once per index of its leading dimensions."""
    first = 0
    while block[first] == 1:
        first += 1
    return shape[len(shape) - len(block) + first:] == block[first:]


_ROW_PLANS: dict = {}


def _row_plan(rows: int, n: int, row_first: bool) -> tuple:
    """``zip_strided``'s shape and element strides for ``rows`` rows of ``n`` against one row
    (the second operand, or the first with ``row_first``), made once per size (what
    ``_coalesce`` would compute, without its NumPy calls)."""
    key = (rows, n, row_first)
    plan = _ROW_PLANS.get(key)
    if plan is None:
        if len(_ROW_PLANS) > 512:
            _ROW_PLANS.clear()
        full, row = np.array([n, 1], np.int64), np.array([0, 1], np.int64)
        plan = _ROW_PLANS[key] = (np.array([rows, n], np.int64),) + (
            (row, full) if row_first else (full, row))
    return plan


def _first(x: np.ndarray) -> np.ndarray:
    """A 1-element, 1-D view of ``x``'s first element."""
    return x.reshape(1) if x.ndim == 0 else x[(slice(0, 1),) * x.ndim].reshape(1)


def _binary_general(op, kernels, a, b, dt, out_dtype):
    """``binary`` where the operands broadcast, are strided, or are one value repeated."""
    if a.shape == b.shape or b.ndim == 0:
        shape = a.shape
    else:
        shape = b.shape if a.ndim == 0 else _broadcast_shape(a.shape, b.shape)
    one_a, one_b = _single_value(a, shape), _single_value(b, shape)
    if one_a and one_b:  # e.g. an expanded gradient times a number: one value, filled
        value = np.empty(1, dt)
        kernels.zip_1d(_first(a), _first(b), value)
        out = _pool.empty(shape, dt)
        out.fill(value[0])  # (np.full's Python layers cost more than the fill)
        return out
    a_flat, b_flat = a.flags.c_contiguous, b.flags.c_contiguous
    if one_b and a_flat and a.shape == shape:
        return binary(op, a, _first(b).reshape(()), out_dtype)
    if one_a and b_flat and b.shape == shape:  # (one value against an array: a broadcast
        # gradient times or through a saved tensor, in a backward)
        if op in SWAPPED:
            return binary(SWAPPED[op], b, _first(a).reshape(()), out_dtype)
        out = _pool.empty(b.size, dt)
        kernels.zip_1d_scalar_first(_first(a)[0], b.reshape(-1), out)
        return out.reshape(shape)
    out = _pool.empty(shape, dt)
    if out.size == 0:
        return out
    if out.ndim == 0:
        kernels.zip_1d(a.reshape(1), b.reshape(1), out.reshape(1))
        return out
    a1, sa = _strided_view(a, shape)
    b1, sb = _strided_view(b, shape)
    dims, sa, sb = _coalesce(shape, sa, sb)
    kernels.zip_strided(a1, sa, b1, sb, dims, out.reshape(-1))
    return out


def _coalesce(shape: tuple, sa: np.ndarray, sb: np.ndarray):
    """``shape`` and both operands' element strides with adjacent dimensions merged wherever
    both operands step through them as through one (PyTorch's TensorIterator coalescing), and
    dimensions of size 1 dropped: ``zip_strided`` then runs fewer, longer rows, in its vectorised
    loops (``(32, 16, 8, 8) * (1, 16, 1, 1)``: rows of 64 instead of 8). The output's C order
    is unchanged, as only neighbours merge."""
    dims, ka, kb = [], [], []
    for n, x, y in zip(shape, sa.tolist(), sb.tolist()):
        if n == 1:
            continue
        if dims and ka[-1] == x * n and kb[-1] == y * n:
            dims[-1] *= n
            ka[-1], kb[-1] = x, y
        else:
            dims.append(n)
            ka.append(x)
            kb.append(y)
    if not dims:  # (every dimension of size 1)
        dims, ka, kb = [1], [0], [0]
    return np.array(dims, np.int64), np.array(ka, np.int64), np.array(kb, np.int64)


def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    """The broadcast shape of two shapes (np.broadcast_shapes costs 4 µs)."""
    n = len(a) - len(b)
    if n > 0:
        b = (1,) * n + b
    elif n < 0:
        a = (1,) * -n + a
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {a} and {b} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


def _single_value(x: np.ndarray, shape: tuple) -> bool:
    """Whether ``x`` is one value repeated (size 1, or all strides 0) broadcasting to ``shape``."""
    return x.size == 1 or (x.size > 0 and not any(x.strides))


@njit(cache=True, error_model="numpy")
def _where_1d(cond, a, b, out):
    for i in range(out.size):
        out[i] = a[i] if cond[i] else b[i]


def where(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` where ``cond`` else ``b``, all three broadcast together; ``a``, ``b`` share a dtype."""
    shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
    out = np.empty(shape, a.dtype)
    flat = [np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1) for x in (cond, a, b)]
    _where_1d(flat[0], flat[1], flat[2], out.reshape(-1))
    return out


@njit(cache=True, error_model="numpy")
def _add_scaled_1d(out, b, alpha):
    for i in range(out.size):
        out[i] = out[i] + alpha * b[i]


@njit(cache=True, error_model="numpy", nogil=True)
def _add_scaled_1d_nogil(out, b, alpha):  # (a part of a large array, on a worker thread)
    for i in range(out.size):
        out[i] = out[i] + alpha * b[i]


def binary_into(op: int, out: np.ndarray, b: np.ndarray, alpha=None) -> None:
    """``out = op(out, b)`` in place; ``b`` (an array or a number) broadcasts to ``out``'s shape.
    With ``alpha`` (a number of ``out``'s dtype; ``op`` ADD or SUB), ``out = op(out, alpha * b)``:
    one pass where the shapes match (an optimiser's ``p.add_(grad, alpha=-lr)``), with the
    values of the two passes (``alpha * b`` rounded, then added)."""
    if out.dtype.num in _lowp.NARROW:  # (float16: computed wider, each step rounded)
        if alpha is not None:
            b = binary(Binary.MUL, np.asarray(b, out.dtype), out.dtype.type(alpha))
        out[...] = binary(op, out, np.asarray(b, out.dtype))
        return
    if alpha is not None:
        if op == Binary.SUB:
            op, alpha = Binary.ADD, -alpha  # (exact: a - x*b is a + (-x)*b, bit for bit)
        if (out.flags.c_contiguous and b.ndim and b.shape == out.shape and b.dtype == out.dtype
                and b.flags.c_contiguous):
            flat = out.ravel()
            if out.size < PARALLEL_THRESHOLD or not _threaded(out.dtype, out.dtype):
                _add_scaled_1d(flat, b.ravel(), alpha)
            else:
                other = b.ravel()
                _split(flat.size, lambda i, j: _add_scaled_1d_nogil(flat[i:j], other[i:j], alpha))
            return
        b = binary(Binary.MUL, np.asarray(b, out.dtype), out.dtype.type(alpha))
    # (large ones on the worker threads, as ``binary``'s: clip_grad_norm_'s ``g.mul_(coef)``,
    # a gradient accumulated into ``.grad``; each element its own, the same on any number)
    if out.flags.c_contiguous and b.ndim == 0:
        flat, kernels, number = out.ravel(), _kernels(op, out.dtype), out.dtype.type(b[()])
        if flat.size < PARALLEL_THRESHOLD or not _threaded(out.dtype, out.dtype):
            kernels.zip_1d_scalar(flat, number, flat)
        else:
            _split(flat.size, lambda i, j: kernels.zip_1d_scalar_nogil(flat[i:j], number,
                                                                       flat[i:j]))
    elif out.flags.c_contiguous and b.shape == out.shape:
        other = np.ascontiguousarray(b, out.dtype).ravel()
        flat, kernels = out.ravel(), _kernels(op, out.dtype)
        if flat.size < PARALLEL_THRESHOLD or not _threaded(out.dtype, out.dtype):
            kernels.zip_1d(flat, other, flat)
        else:
            _split(flat.size, lambda i, j: kernels.zip_1d_nogil(flat[i:j], other[i:j],
                                                                flat[i:j]))
    else:
        out[...] = binary(op, out, np.asarray(b, out.dtype))


def cast(a: np.ndarray, dtype) -> np.ndarray:
    """A copy of ``a`` in ``dtype`` (of a complex ``a`` in a real dtype: its real parts, with
    PyTorch's warning; in bool: whether it is nonzero)."""
    if a.dtype.kind == "V" or np.dtype(dtype).kind == "V":  # (bfloat16's storage: rounded)
        return _lowp.cast(a, dtype)
    if a.dtype.kind == "c" and np.dtype(dtype).kind == "b":  # (nonzero: either part)
        return np.asarray(a != 0)
    if a.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        import warnings

        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=2)
        return a.real.astype(dtype)
    if a.dtype.kind in "fc" and a.size and (np.dtype(dtype).kind in "iub" or np.dtype(
            dtype).itemsize < a.dtype.itemsize):
        # (a float beyond the narrower dtype's range is +-inf there, NaN and inf into integers
        # the machine's value, as PyTorch's casts: without NumPy's RuntimeWarning)
        with np.errstate(over="ignore", invalid="ignore"):
            return a.astype(dtype)
    return a.astype(dtype)


def copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a`` (a large one in a pooled buffer)."""
    if a.nbytes < _pool.POOL_FROM:
        return np.array(a, order="C", copy=True)
    out = _pool.empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def reshape_view(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` viewed with ``shape``; ValueError where that needs a copy."""
    if a.flags.c_contiguous:  # (always a view; ``copy=False`` costs 30 times the reshape)
        return a.reshape(shape)
    return np.reshape(a, shape, copy=False)


def broadcast_to(a: np.ndarray, shape: tuple) -> np.ndarray:
    """A read-only view of ``a`` broadcast to ``shape`` (already checked by the caller)."""
    if a.flags.c_contiguous and a.size:
        # np.broadcast_to's checks cost 3x this.
        lead = len(shape) - a.ndim
        if a.size == 1:  # (one value: every stride 0)
            strides = (0,) * len(shape)
        else:
            strides = tuple(0 if i < lead or a.shape[i - lead] == 1 else a.strides[i - lead]
                            for i in range(len(shape)))
        out = np.ndarray(shape, a.dtype, buffer=a, strides=strides)
        out.flags.writeable = False
        return out
    return np.broadcast_to(a, shape)


def to_host(a: np.ndarray) -> np.ndarray:
    """The data as a NumPy array (on the CPU: itself)."""
    return a


__all__ = ["unary", "unary_into", "binary", "binary_into", "where", "cast", "copy", "reshape_view", "broadcast_to",
           "to_host"]
