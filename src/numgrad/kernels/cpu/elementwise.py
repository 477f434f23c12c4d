"""Elementwise CPU kernels.

Each family (unary, binary) is one compiled loop per dtype whose scalar body is chosen by an integer
op code. The op code is a loop-invariant branch that LLVM hoists out of the loop, so each op still
gets a tight, vectorised loop, while the number of Numba compilations stays at a handful: one per
(kernel, dtype), not one per op, ndim or layout. Adding an op is one code below and one branch in
``_unary``/``unary_portable``/``binary_scalar``.
"""
from __future__ import annotations


import numpy as np
from numba import get_num_threads, njit, prange
from numpy.lib.stride_tricks import as_strided

from .mathfuncs import fast_exp, fast_log, fast_sigmoid, fast_tanh

# Numba's cache keys a kernel on its own file only; the kernels here inline mathfuncs.py, so this
# digest of it (checked by tests/test_mathfuncs.py) changes this file, and the cache, with it.
MATHFUNCS_DIGEST = "cb6511b6e2808e80"

# From this many elements the kernels split their loop over threads (numba.prange), one
# contiguous chunk per thread: on this 2-core machine a 1M-element float32 tanh or mul then runs
# in about half the time. They would gain from 64K elements already, but after each parallel
# region OpenMP's threads spin for a while, and BLAS's threads (NumPy's matmul) spin too: mixed
# with matrix products (an MLP's 200K-element weights, a 512x512 sum), smaller parallel kernels
# made those workloads 2-5x slower. Making OpenMP wait passively costs ~80 us per region, and its
# settings (OMP_WAIT_POLICY, GOMP_SPINCOUNT) are process-wide, PyTorch's too; so only large
# arrays, where the work dwarfs that, go parallel. Only float arrays (with a float result) do:
# each multi-threaded variant of the op-switch loops takes 5-9 s to compile per signature, and
# integer, boolean and comparison kernels at this size are rare enough not to pay for that in
# every cold start and in ``python -m numgrad warmup``.
PARALLEL_THRESHOLD = 1 << 19


def _threaded(dtype, out_dtype) -> bool:
    """Whether elementwise kernels of ``dtype`` have multi-threaded variants (float in, the same
    float out); the caller tests the size against ``PARALLEL_THRESHOLD`` first."""
    return dtype.kind == "f" and out_dtype == dtype


# Unary op codes.
NEG, EXP, LOG, TANH, SIGMOID, RELU, SQRT, RECIPROCAL = range(8)
LOG1P, EXPM1, RSQRT, ABS, SIN, COS, TAN, SIGN, FLOOR, CEIL, ROUND = range(8, 19)
# Binary op codes; the *_BWD ones are fused backward formulas taking (grad, saved).
ADD, SUB, MUL, DIV, POW, RSUB, RPOW, TANH_BWD, SIGMOID_BWD, RELU_BWD = range(10)
# Comparisons: written to a bool output, so 1/0 become True/False.
EQ, NE, LT, LE, GT, GE = range(10, 16)
MAXIMUM, MINIMUM = range(16, 18)  # NaN-propagating, as torch.maximum/minimum


@njit(inline="always")
def _one(x):
    """1 in ``x``'s type: a bare ``1`` would make float32 arithmetic float64 (and unvectorised)."""
    if isinstance(x, np.float32):
        return np.float32(1)
    return 1.0


@njit(inline="always")
def _zero(x):
    if isinstance(x, np.float32):
        return np.float32(0)
    return 0.0


@njit(inline="always")
def _unary(op, x):
    if op == EXP:
        return fast_exp(x)
    if op == LOG:
        return fast_log(x)
    if op == TANH:
        return fast_tanh(x)
    if op == SIGMOID:
        return fast_sigmoid(x)
    return unary_portable(op, x)


# The scalar bodies below use nothing CPU-specific, so the CUDA kernels call these very functions
# (numba-cuda compiles an ``njit`` function called from a kernel as a device function): one
# formula per op for both devices. Only EXP/LOG/TANH/SIGMOID differ: their fast_* versions use
# CPU LLVM intrinsics, so kernels/cuda gives them its own (libdevice) formulas.
@njit(inline="always")
def unary_portable(op, x):
    """``op`` of one element, for every unary op but EXP, LOG, TANH and SIGMOID."""
    if op == NEG:
        return -x
    if op == RELU:
        return x if x > 0 else _zero(x)
    if op == SQRT:
        return np.sqrt(x)
    if op == RECIPROCAL:
        return _one(x) / x
    if op == LOG1P:
        return np.log1p(x)
    if op == EXPM1:
        return np.expm1(x)
    if op == RSQRT:
        return _one(x) / np.sqrt(x)
    if op == ABS:
        return abs(x)
    if op == SIN:
        return np.sin(x)
    if op == COS:
        return np.cos(x)
    if op == TAN:
        return np.tan(x)
    if op == SIGN:
        return np.sign(x)
    if op == FLOOR:
        return np.floor(x)
    if op == CEIL:
        return np.ceil(x)
    return np.rint(x)  # ROUND: half to even, as PyTorch


@njit(inline="always")
def binary_scalar(op, a, b):
    """``op(a, b)`` of two elements (shared with the CUDA kernels)."""
    if op == ADD:
        return a + b
    if op == SUB:
        return a - b
    if op == MUL:
        return a * b
    if op == DIV:
        return a / b
    if op == POW:
        return a**b
    if op == RSUB:
        return b - a
    if op == RPOW:
        return b**a
    if op == TANH_BWD:  # grad * (1 - tanh²), from the saved output
        return a * (_one(b) - b * b)
    if op == SIGMOID_BWD:  # grad * σ (1 - σ), from the saved output
        return a * (b * (_one(b) - b))
    if op == EQ:
        return 1 if a == b else 0
    if op == NE:
        return 1 if a != b else 0
    if op == LT:
        return 1 if a < b else 0
    if op == LE:
        return 1 if a <= b else 0
    if op == GT:
        return 1 if a > b else 0
    if op == GE:
        return 1 if a >= b else 0
    if op == MAXIMUM:
        return a if (a > b or a != a) else b
    if op == MINIMUM:
        return a if (a < b or a != a) else b
    # RELU_BWD: grad where the saved output is positive
    return a if b > 0 else _zero(a)


@njit(inline="always")
def _unary_loop(op, x, out, start, stop):
    # The transcendental ops get loops of their own: LLVM does not split one loop over a switch
    # of ~20 ops into one vectorised loop per op, so without this they would run scalar.
    if op == EXP:
        for i in range(start, stop):
            out[i] = fast_exp(x[i])
    elif op == LOG:
        for i in range(start, stop):
            out[i] = fast_log(x[i])
    elif op == TANH:
        for i in range(start, stop):
            out[i] = fast_tanh(x[i])
    elif op == SIGMOID:
        for i in range(start, stop):
            out[i] = fast_sigmoid(x[i])
    elif op == RELU:  # (in the switch it runs scalar, and branches on the sign: 15x slower)
        for i in range(start, stop):
            out[i] = unary_portable(RELU, x[i])
    elif op == NEG:
        for i in range(start, stop):
            out[i] = -x[i]
    else:
        for i in range(start, stop):
            out[i] = _unary(op, x[i])


@njit(cache=True, error_model="numpy")
def _unary_1d(op, x, out):
    _unary_loop(op, x, out, 0, out.size)


# The ops that carry most of the traffic get loops of their own, with the op code a constant in
# each so that it folds away: one loop over the whole ~20-op switch is not unswitched by LLVM and
# runs scalar (3x slower than NumPy). The other ops share the generic loop.
@njit(inline="always")
def _binary_loop(op, a, b, out, start, stop):
    if op == ADD:
        for i in range(start, stop):
            out[i] = binary_scalar(ADD, a[i], b[i])
    elif op == SUB:
        for i in range(start, stop):
            out[i] = binary_scalar(SUB, a[i], b[i])
    elif op == MUL:
        for i in range(start, stop):
            out[i] = binary_scalar(MUL, a[i], b[i])
    elif op == DIV:
        for i in range(start, stop):
            out[i] = binary_scalar(DIV, a[i], b[i])
    elif op == TANH_BWD:
        for i in range(start, stop):
            out[i] = binary_scalar(TANH_BWD, a[i], b[i])
    elif op == SIGMOID_BWD:
        for i in range(start, stop):
            out[i] = binary_scalar(SIGMOID_BWD, a[i], b[i])
    elif op == RELU_BWD:
        for i in range(start, stop):
            out[i] = binary_scalar(RELU_BWD, a[i], b[i])
    else:
        for i in range(start, stop):
            out[i] = binary_scalar(op, a[i], b[i])


@njit(inline="always")
def _binary_scalar_loop(op, a, b, out, start, stop):
    """``_binary_loop`` with ``b`` one number."""
    if op == ADD:
        for i in range(start, stop):
            out[i] = binary_scalar(ADD, a[i], b)
    elif op == SUB:
        for i in range(start, stop):
            out[i] = binary_scalar(SUB, a[i], b)
    elif op == MUL:
        for i in range(start, stop):
            out[i] = binary_scalar(MUL, a[i], b)
    elif op == DIV:
        for i in range(start, stop):
            out[i] = binary_scalar(DIV, a[i], b)
    elif op == RSUB:
        for i in range(start, stop):
            out[i] = binary_scalar(RSUB, a[i], b)
    else:
        for i in range(start, stop):
            out[i] = binary_scalar(op, a[i], b)


@njit(cache=True, error_model="numpy")
def _binary_1d(op, a, b, out):
    _binary_loop(op, a, b, out, 0, out.size)


@njit(cache=True, error_model="numpy")
def _binary_1d_scalar(op, a, b, out):
    _binary_scalar_loop(op, a, b, out, 0, out.size)


# The same loops split over threads, one contiguous chunk each (the chunk count is the number of
# threads). Each chunk is sliced and its loop runs from 0: a loop over ``range(start, stop)``
# indexes with a possibly negative number, which Numba wraps around, and that keeps LLVM from
# vectorising it (it then ran slower on two threads than on one).
@njit(cache=True, error_model="numpy", parallel=True)
def _unary_1d_parallel(op, x, out, chunks):
    n = out.size
    for c in prange(chunks):
        part = out[c * n // chunks:(c + 1) * n // chunks]
        _unary_loop(op, x[c * n // chunks:(c + 1) * n // chunks], part, 0, part.size)


@njit(cache=True, error_model="numpy", parallel=True)
def _binary_1d_parallel(op, a, b, out, chunks):
    n = out.size
    for c in prange(chunks):
        start, stop = c * n // chunks, (c + 1) * n // chunks
        part = out[start:stop]
        _binary_loop(op, a[start:stop], b[start:stop], part, 0, part.size)


@njit(cache=True, error_model="numpy", parallel=True)
def _binary_1d_scalar_parallel(op, a, b, out, chunks):
    n = out.size
    for c in prange(chunks):
        start, stop = c * n // chunks, (c + 1) * n // chunks
        part = out[start:stop]
        _binary_scalar_loop(op, a[start:stop], b, part, 0, part.size)


@njit(cache=True, error_model="numpy")
def _binary_strided(op, a, a_strides, b, b_strides, shape, out):
    """The general path: ``a`` and ``b`` are 1-D views of their buffers, addressed through element
    strides (0 along broadcast dimensions); ``out`` is contiguous. Iterates the last dimension in
    the inner loop and advances an odometer over the others."""
    nd = shape.size
    inner = shape[nd - 1]
    sa = a_strides[nd - 1]
    sb = b_strides[nd - 1]
    index = np.zeros(nd, np.int64)
    pa = 0
    pb = 0
    for start in range(0, out.size, inner):
        # Rows that are contiguous in both operands (a bias added to each row), or contiguous in
        # ``a`` against one value of ``b`` (a per-row max subtracted) take the per-op loops.
        if sa == 1 and sb == 1:
            _binary_loop(op, a[pa:pa + inner], b[pb:pb + inner], out[start:start + inner], 0, inner)
        elif sa == 1 and sb == 0:
            _binary_scalar_loop(op, a[pa:pa + inner], b[pb], out[start:start + inner], 0, inner)
        else:
            for j in range(inner):
                out[start + j] = binary_scalar(op, a[pa + j * sa], b[pb + j * sb])
        d = nd - 2
        while d >= 0:
            index[d] += 1
            pa += a_strides[d]
            pb += b_strides[d]
            if index[d] < shape[d]:
                break
            pa -= a_strides[d] * shape[d]
            pb -= b_strides[d] * shape[d]
            index[d] = 0
            d -= 1


def unary(op: int, x: np.ndarray) -> np.ndarray:
    """``op`` applied to every element of ``x``; the result is a new C-contiguous array."""
    out = np.empty(x.shape, x.dtype)
    if not x.flags.c_contiguous:
        x = x.copy()  # (not ascontiguousarray, which makes 0-d arrays 1-d)
    if out.size < PARALLEL_THRESHOLD or not _threaded(x.dtype, x.dtype):
        _unary_1d(op, x.reshape(-1), out.reshape(-1))
    else:
        _unary_1d_parallel(op, x.reshape(-1), out.reshape(-1), get_num_threads())
    return out


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
    dt = a.dtype if out_dtype is None else out_dtype
    a_flat = a.flags.c_contiguous
    if a_flat and b.ndim == 0:  # tensor ⊕ number: the commonest case after equal shapes
        out = np.empty(a.shape, dt)
        if a.size < PARALLEL_THRESHOLD or not _threaded(a.dtype, dt):
            _binary_1d_scalar(op, a.reshape(-1), b[()], out.reshape(-1))
        else:
            _binary_1d_scalar_parallel(op, a.reshape(-1), b[()], out.reshape(-1), get_num_threads())
        return out
    b_flat = b.flags.c_contiguous
    if a.shape == b.shape and a_flat and b_flat:
        out = np.empty(a.shape, dt)
        if a.size < PARALLEL_THRESHOLD or not _threaded(a.dtype, dt):
            _binary_1d(op, a.reshape(-1), b.reshape(-1), out.reshape(-1))
        else:
            _binary_1d_parallel(op, a.reshape(-1), b.reshape(-1), out.reshape(-1), get_num_threads())
        return out
    shape = a.shape if a.shape == b.shape else _broadcast_shape(a.shape, b.shape)
    one_a, one_b = _single_value(a, shape), _single_value(b, shape)
    if one_a and one_b:  # e.g. an expanded gradient times a number: one value, filled
        value = np.empty(1, dt)
        _binary_1d(op, a.reshape(-1)[:1] if a_flat else a.flat[:1], b.reshape(-1)[:1] if b_flat else b.flat[:1], value)
        return np.full(shape, value[0], dt)
    if one_b and a_flat and a.shape == shape:
        return binary(op, a, b.reshape(-1)[:1].reshape(()) if b_flat else b[(0,) * b.ndim], out_dtype)
    if one_a and b_flat and b.shape == shape and op in _SWAPPED:
        return binary(_SWAPPED[op], b, a.reshape(-1)[:1].reshape(()) if a_flat else a[(0,) * a.ndim], out_dtype)
    out = np.empty(shape, dt)
    if out.size == 0:
        return out
    if out.ndim == 0:
        _binary_1d(op, a.reshape(1), b.reshape(1), out.reshape(1))
        return out
    a1, sa = _strided_view(a, shape)
    b1, sb = _strided_view(b, shape)
    _binary_strided(op, a1, sa, b1, sb, np.array(shape, np.int64), out.reshape(-1))
    return out


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


# op(s, x) == swapped_op(x, s): lets a scalar on the left take the fast scalar path.
_SWAPPED = {
    ADD: ADD, MUL: MUL, SUB: RSUB, RSUB: SUB, POW: RPOW, RPOW: POW,
    EQ: EQ, NE: NE, LT: GT, GT: LT, LE: GE, GE: LE, MAXIMUM: MAXIMUM, MINIMUM: MINIMUM,
}



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


@njit(cache=True, error_model="numpy", parallel=True)
def _add_scaled_1d_parallel(out, b, alpha, chunks):
    n = out.size
    for c in prange(chunks):
        start, stop = c * n // chunks, (c + 1) * n // chunks
        part, other = out[start:stop], b[start:stop]
        for i in range(part.size):
            part[i] = part[i] + alpha * other[i]


def binary_into(op: int, out: np.ndarray, b: np.ndarray, alpha=None) -> None:
    """``out = op(out, b)`` in place; ``b`` (an array or a number) broadcasts to ``out``'s shape.
    With ``alpha`` (a number of ``out``'s dtype; ``op`` ADD or SUB), ``out = op(out, alpha * b)``:
    one pass where the shapes match (an optimiser's ``p.add_(grad, alpha=-lr)``), with the
    values of the two passes (``alpha * b`` rounded, then added)."""
    if alpha is not None:
        if op == SUB:
            op, alpha = ADD, -alpha  # (exact: a - x*b is a + (-x)*b, bit for bit)
        if (out.flags.c_contiguous and b.ndim and b.shape == out.shape and b.dtype == out.dtype
                and b.flags.c_contiguous):
            flat = out.reshape(-1)
            if out.size < PARALLEL_THRESHOLD or not _threaded(out.dtype, out.dtype):
                _add_scaled_1d(flat, b.reshape(-1), alpha)
            else:
                _add_scaled_1d_parallel(flat, b.reshape(-1), alpha, get_num_threads())
            return
        b = binary(MUL, np.asarray(b, out.dtype), out.dtype.type(alpha))
    if out.flags.c_contiguous and b.ndim == 0:
        flat = out.reshape(-1)
        _binary_1d_scalar(op, flat, out.dtype.type(b[()]), flat)
    elif out.flags.c_contiguous and b.shape == out.shape:
        b = np.ascontiguousarray(b, out.dtype)
        flat = out.reshape(-1)
        _binary_1d(op, flat, b.reshape(-1), flat)
    else:
        out[...] = binary(op, out, np.asarray(b, out.dtype))


def cast(a: np.ndarray, dtype) -> np.ndarray:
    """A copy of ``a`` in ``dtype``."""
    return a.astype(dtype)


def copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a``."""
    return np.array(a, order="C", copy=True)


def reshape_view(a: np.ndarray, shape: tuple) -> np.ndarray:
    """``a`` viewed with ``shape``; ValueError where that needs a copy."""
    return np.reshape(a, shape, copy=False)


def broadcast_to(a: np.ndarray, shape: tuple) -> np.ndarray:
    """A read-only view of ``a`` broadcast to ``shape`` (already checked by the caller)."""
    if a.flags.c_contiguous and a.size:
        # np.broadcast_to's checks cost 3x this.
        lead = len(shape) - a.ndim
        strides = tuple(0 if i < lead or a.shape[i - lead] == 1 else a.strides[i - lead]
                        for i in range(len(shape)))
        out = np.ndarray(shape, a.dtype, buffer=a, strides=strides)
        out.flags.writeable = False
        return out
    return np.broadcast_to(a, shape)


def to_host(a: np.ndarray) -> np.ndarray:
    """The data as a NumPy array (on the CPU: itself)."""
    return a


OP_CODES = {name: value for name, value in globals().items() if name.isupper() and isinstance(value, int)}
__all__ = ["unary", "binary", "binary_into", "where", "cast", "copy", "reshape_view", "broadcast_to",
           "to_host", *OP_CODES]
