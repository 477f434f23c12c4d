"""Reduction CPU kernels: a tensor is viewed as (outer, reduced, inner) and reduced over the middle.

Float sums accumulate in float64 whatever the input's precision, so float32 sums of millions of
elements stay accurate without pairwise summation; integer sums in int64, exactly. ``PROD``,
``MAX`` and ``MIN`` share one op-coded kernel; ``MAX``/``MIN`` propagate NaN, as PyTorch does. ``ARGMAX``/``ARGMIN`` give the first index of the
extreme value (or of the first NaN).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from ... import _lowp
from ..formulas import ArgReduce, Reduce
from . import _workers
from .elementwise import PARALLEL_THRESHOLD


def _accumulator(v):
    """The zero to sum elements like ``v`` from: int64 for integers and bools (exact, as
    PyTorch), float64 for floats (so float32 sums of millions of elements stay accurate),
    complex128 for complex numbers. In compiled code the overload below, which chooses by
    ``v``'s type as it types the call: ``isinstance`` tests in the body had Numba type the
    branches of the other kinds too (a float32 ``_sum_3d`` compiled ``np.full`` for complex128,
    0.5 s of its 1.1 s first compilation)."""
    if isinstance(v, (bool, int, np.bool_, np.integer)):
        return np.int64(0)
    if isinstance(v, (complex, np.complexfloating)):
        return 0j
    return 0.0


@overload(_accumulator, inline="always")
def _accumulator_typed(v):
    if isinstance(v, (types.Integer, types.Boolean)):
        return lambda v: np.int64(0)
    if isinstance(v, types.Complex):
        return lambda v: 0j
    return lambda v: 0.0


# Only reassociation is allowed (never fastmath=True: NaN and inf must survive): it lets LLVM
# split a sum into vector lanes. The order is then fixed per machine, so results repeat.
_SUM_FLAGS = {"reassoc"}


@njit(cache=True, error_model="numpy", fastmath=_SUM_FLAGS)
def _sum_rows(x, out):
    """``out[a]`` = the sum of row ``a`` of the C-contiguous 2-D ``x`` (rows not empty): SIMD
    adds of widened float32, 3x the strict sequential loop."""
    rows, k = x.shape
    for a in range(rows):
        row = x[a]
        acc = _accumulator(row[0])
        for j in range(k):
            acc += row[j]
        out[a] = acc


@njit(cache=True, error_model="numpy", fastmath=_SUM_FLAGS, nogil=True)
def _sum_part(x, partials, c):
    """``partials[c]`` = the sum of the contiguous 1-D ``x`` (not empty), a part of a long sum,
    on one of numgrad's worker threads (``_sum_flat``)."""
    acc = _accumulator(x[0])
    for j in range(x.size):
        acc += x[j]
    partials[c] = acc


def _sum_flat(x: np.ndarray):
    """The sum of the long contiguous 1-D ``x``: one partial sum per thread over a contiguous
    span (sliced, so that each loop vectorises; on numgrad's worker threads, ``_workers``,
    unless the machine is busy), then the partials in order. The spans are ``_workers.count()``
    whether or not threads compute them, so that the load does not change the sum's last
    bits."""
    parts = _workers.spans(x.size, _workers.count())
    partials = accumulators(len(parts), x.dtype)  # (each written by its part)
    _workers.run(list(enumerate(parts)),
                 lambda item, slot: _sum_part(x[item[1][0]:item[1][1]], partials, item[0]),
                 _workers.threads_for(len(parts), True), False)
    total = partials.dtype.type(0)
    with np.errstate(all="ignore"):  # (an integer sum wraps around and a float one may reach
        for partial in partials:     # inf, silently, as in the kernels; in order, from zero)
            total += partial
    return total


def accumulators(n: int, dtype) -> np.ndarray:
    """``n`` accumulators for sums of ``dtype``'s elements (``_accumulator``'s type: float64,
    complex128 or int64), uninitialised: ``_sum_3d``'s row of them, made by its callers (made in
    the kernel, they compiled NumPy's full and empty with it, 0.3-0.6 s of a first training
    step with an empty cache)."""
    kind = np.dtype(dtype).kind
    return np.empty(n, np.float64 if kind == "f" else np.complex128 if kind == "c" else np.int64)


@njit(cache=True, error_model="numpy", fastmath=_SUM_FLAGS)
def _sum_3d(x, out, acc):
    """``out[a, i]`` = the sum of ``x[a, :, i]`` (``x`` C-contiguous, not empty), in ``acc``
    (``accumulators(inner, x.dtype)``); the inner loop runs along contiguous memory."""
    outer, k, inner = x.shape
    for a in range(outer):
        acc[:] = 0
        for j in range(k):
            for i in range(inner):
                acc[i] += x[a, j, i]
        for i in range(inner):
            out[a, i] = acc[i]


# The kernels take the op as a plain int (an IntEnum member would be a type of its own to Numba).
PROD, MAX, MIN = (int(op) for op in Reduce)
ARGMAX, ARGMIN = (int(op) for op in ArgReduce)


@njit(cache=True, error_model="numpy")
def _reduce_3d(op, x, out):
    outer, k, inner = x.shape
    for a in range(outer):
        for i in range(inner):
            acc = x[a, 0, i]
            for j in range(1, k):
                v = x[a, j, i]
                if op == PROD:
                    acc = acc * v
                elif op == MAX:
                    if v > acc or v != v:
                        acc = v
                elif v < acc or v != v:  # MIN
                    acc = v
                if op != PROD and acc != acc:
                    break
            out[a, i] = acc


@njit(cache=True, error_model="numpy")
def _arg_reduce_3d(op, x, out):
    outer, k, inner = x.shape
    for a in range(outer):
        for i in range(inner):
            best = x[a, 0, i]
            index = 0
            for j in range(1, k):
                if best != best:
                    break
                v = x[a, j, i]
                if v != v or (v > best if op == ARGMAX else v < best):
                    best = v
                    index = j
            out[a, i] = index


def _as_3d(x: np.ndarray, dims: tuple[int, ...], keepdim: bool):
    """``x`` as a contiguous (outer, reduced, inner) array, and the shape of the result."""
    nd = x.ndim
    if keepdim:
        shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
    else:
        shape = tuple(n for d, n in enumerate(x.shape) if d not in dims)
    if len(dims) == nd and x.flags.c_contiguous:  # everything: the common case, made cheap
        return x.reshape(1, x.size, 1), shape
    if dims and dims != tuple(range(dims[0], dims[-1] + 1)):
        # Make the reduced dimensions one contiguous block by moving them to the end.
        kept = [d for d in range(nd) if d not in dims]
        x = x.transpose(kept + list(dims))
        first = len(kept)
    else:
        first = dims[0] if dims else nd
    last = first + len(dims)
    x = np.ascontiguousarray(x)
    outer = math.prod(x.shape[:first])
    k = math.prod(x.shape[first:last])
    inner = math.prod(x.shape[last:])
    return x.reshape(outer, k, inner), shape


def reduce_dims(op: int, x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """``PROD``, ``MAX`` or ``MIN`` of ``x`` over ``dims`` (MAX/MIN need a non-empty slice)."""
    x3, shape = _as_3d(x, dims, keepdim)
    if x3.shape[1] == 0:
        if op != PROD:
            raise IndexError(
                "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument."
            )
        return np.ones(shape, x.dtype)
    if x.dtype.kind == "c":  # (PROD alone takes complex elements: NumPy's product)
        return np.ascontiguousarray(np.prod(x3, axis=1)).reshape(shape)
    out = np.empty((x3.shape[0], x3.shape[2]), x.dtype)
    if out.size:
        _reduce_3d(int(op), x3, out)
    return out.reshape(shape)


def arg_reduce_dims(op: int, x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """Indices (int64) of the ``ARGMAX``/``ARGMIN`` over one dimension (or all, flattened)."""
    x3, shape = _as_3d(x, dims, keepdim)
    if x3.shape[1] == 0:
        raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
    out = np.empty((x3.shape[0], x3.shape[2]), np.int64)
    if out.size:
        _arg_reduce_3d(int(op), x3, out)
    return out.reshape(shape)


def sum_dims(x: np.ndarray, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """Sum of ``x`` over ``dims`` (normalised, sorted, unique), keeping them as size 1 if asked."""
    if x.dtype.num in _lowp.NARROW:  # (float16, bfloat16, small integers: summed wider)
        return _lowp.wider(sum_dims, x, dims, keepdim)
    if len(dims) == x.ndim and not keepdim and x.flags.c_contiguous and 0 < x.size < PARALLEL_THRESHOLD:
        out = np.empty(1, x.dtype)  # (all of a contiguous array: the row loop, without _as_3d)
        _sum_rows(x.reshape(1, x.size), out)
        return out.reshape(())
    if dims == (0,) and x.ndim > 1 and x.flags.c_contiguous and x.shape[0] < x.size < \
            PARALLEL_THRESHOLD:  # (over the leading dimension: a bias's gradient, as _as_3d's
        k = x.shape[0]       # (1, k, inner) would give it, without its Python)
        out = np.empty(x.size // k, x.dtype)
        _sum_3d(x.reshape(1, k, out.size), out.reshape(1, out.size),
                accumulators(out.size, x.dtype))
        return out.reshape(((1,) if keepdim else ()) + x.shape[1:])
    if len(dims) == x.ndim - 1 and x.flags.c_contiguous and x.size and dims[0] == 0 \
            and dims[-1] == x.ndim - 1:
        return _sum_but_one(x, dims, keepdim)
    x3, shape = _as_3d(x, dims, keepdim)
    outer, k, inner = x3.shape
    out = np.empty((outer, inner), x.dtype)
    if k == 0:
        out.fill(0)
    elif out.size:
        if outer == 1 and inner == 1 and k >= PARALLEL_THRESHOLD:
            out[0, 0] = _sum_flat(x3.reshape(k))
        elif inner == 1:
            _sum_rows(x3.reshape(outer, k), out.reshape(outer))
        else:
            _sum_3d(x3, out, accumulators(inner, x.dtype))
    return out.reshape(shape)


@njit(cache=True, error_model="numpy", fastmath=_SUM_FLAGS, nogil=True)
def _sum_middle(x, out, start, stop):
    """``out[c]`` = the sum of ``x[:, c, :]`` for ``start <= c < stop`` (``x`` C-contiguous
    ``(outer, C, inner)``, not empty): the sum of each contiguous row ``x[a, c]``, then of the
    rows' sums in order of ``a``."""
    for c in range(start, stop):
        total = _accumulator(x[0, 0, 0])
        for a in range(x.shape[0]):
            row = x[a, c]
            acc = _accumulator(row[0])
            for i in range(row.size):
                acc += row[i]
            total += acc
        out[c] = total


def _sum_but_one(x: np.ndarray, dims: tuple, keepdim: bool) -> np.ndarray:
    """The sum of the C-contiguous, non-empty ``x`` over every dimension but one middle one (a
    convolution's or a norm's bias gradient, ``(N, C, H, W)`` over ``(0, 2, 3)``), read in place
    where ``_as_3d`` would copy it transposed; the channels shared among the worker threads
    (each channel's sum is one thread's, in the same order, whatever their number)."""
    kept = next(d for d in range(x.ndim) if d not in dims)
    channels = x.shape[kept]
    x3 = x.reshape(math.prod(x.shape[:kept]), channels, -1)
    out = np.empty(channels, x.dtype)
    parts = _workers.spans(channels, _workers.count())
    _workers.run(parts, lambda span, slot: _sum_middle(x3, out, span[0], span[1]),
                 _workers.threads_for(len(parts), x.size >= PARALLEL_THRESHOLD), False)
    shape = tuple(n if d == kept else 1 for d, n in enumerate(x.shape)) if keepdim else (channels,)
    return out.reshape(shape)


# ------------------------------------------------------------------ for backward formulas and
# stable forms (the CUDA module has the same functions, so the ops call no NumPy on device data)
def one_hot_dim(indices: np.ndarray, shape: tuple, dim: int, dtype) -> np.ndarray:
    """An array of ``shape`` and ``dtype``: 1 where the position along ``dim`` equals
    ``indices`` (``shape`` with ``dim`` of size 1), else 0 (max/min's gradient mask)."""
    position = np.arange(shape[dim]).reshape((-1,) + (1,) * (len(shape) - dim - 1))
    return (position == indices).astype(dtype)


def extreme_share(x: np.ndarray, extreme: np.ndarray, dims: tuple, nan_equal: bool) -> np.ndarray:
    """``1 / count`` where ``x`` equals its slice's ``extreme`` (kept dims), ``count`` the ties in
    the slice, else 0: how amax/amin share their gradient. A NaN extreme matches nothing (the
    slice is NaN throughout, 0 / 0), or, with ``nan_equal`` (max()/min()), the NaNs."""
    hit = x == extreme
    if nan_equal:
        hit |= np.isnan(x) & np.isnan(extreme)
    hit = hit.astype(x.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return hit / hit.sum(axis=dims, keepdims=True)


def any_equal(x: np.ndarray, value) -> bool:
    """Whether an element of ``x`` equals ``value``."""
    return bool((x == value).any())


def any_equal_device(x: np.ndarray, value) -> np.ndarray:
    """Whether an element of ``x`` equals ``value``, as a 0-d bool array (the CUDA module's
    interface, where the answer stays on the device)."""
    return np.array(any_equal(x, value))


def product_of_others(x: np.ndarray, dims: tuple) -> np.ndarray:
    """For each element, the product of the other elements of its slice over ``dims``."""
    if x.size == 0:
        return np.zeros(x.shape, x.dtype)
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, kept + list(dims))
    flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    others = (left * right).reshape(moved.shape)
    return np.transpose(others, np.argsort(kept + list(dims)))


def finite_or_zero(x: np.ndarray) -> np.ndarray:
    """``x`` with every infinity and NaN replaced by 0."""
    return np.where(np.isfinite(x), x, 0).astype(x.dtype)


def inf_where_zero(x: np.ndarray) -> np.ndarray:
    """+inf where ``x`` is 0 and 0 elsewhere, in ``x``'s dtype."""
    return np.where(x == 0, np.inf, 0).astype(x.dtype)
