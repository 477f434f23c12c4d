"""Loss CPU kernels: ``nll_loss`` gathers one log-probability per row by its class index (forward)
and scatters the gradient back to that index (backward). The two are adjoint, so each is the
other's derivative, and a handful of compilations (one per dtype) serve both orders.

The kernels take a ``(N, C)`` input, ``(N,)`` int64 targets and a ``(C,)`` weight vector (ones when
the caller gives none); sums accumulate in float64 whatever the input's precision.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ... import _pool
from . import _workers
from .mathfuncs import fast_exp


@njit(cache=True)
def _nll_gather(x, target, weight, ignore_index, losses):
    """``losses[n] = -weight[t] * x[n, t]`` with ``t = target[n]`` (0 where ``t == ignore_index``).
    Returns the sum of the losses, the sum of the weights used, and the row of the first target
    out of ``[0, C)`` (-1 if none), so the caller can raise without a second pass."""
    n_classes = x.shape[1]
    total = 0.0
    total_weight = 0.0
    for n in range(x.shape[0]):
        t = target[n]
        if t == ignore_index:
            losses[n] = 0
            continue
        if t < 0 or t >= n_classes:
            return total, total_weight, n
        w = weight[t]
        losses[n] = -w * x[n, t]
        total += losses[n]
        total_weight += w
    return total, total_weight, -1


@njit(cache=True)
def _total_weight(target, weight, ignore_index):
    """The sum of the weights of the targets that are not ignored, and the row of the first
    target out of ``[0, C)`` (-1 if none)."""
    total = 0.0
    for n in range(target.shape[0]):
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= weight.shape[0]:
                return total, n
            total += weight[t]
    return total, -1


@njit(cache=True, error_model="numpy", nogil=True)  # a zero total weight: nan, as PyTorch
def _nll_scatter(grad, grad_stride, target, weight, ignore_index, divisor, out, start, stop):
    """Rows ``start:stop`` of ``out`` (uninitialised) written: zeros but ``out[n, t] =
    weight[t] * -(grad[n] / divisor)`` (PyTorch's order of operations). ``grad_stride`` is 0
    for a reduced (scalar) gradient, 1 for one per row. Returns the first of these rows whose
    target is out of ``[0, C)`` (-1 if none): nothing is written out of bounds."""
    n_classes = out.shape[1]
    zero = out.dtype.type(0)
    for n in range(start, stop):
        row = out[n]
        for j in range(n_classes):
            row[j] = zero
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= n_classes:
                return n
            row[t] = weight[t] * -(grad[n * grad_stride] / divisor)
    return -1


@njit(cache=True, error_model="numpy", nogil=True)
def _nll_log_softmax_rows(grad, grad_stride, target, weight, ignore_index, divisor, out,
                          result, start, stop):
    """Rows ``start:stop`` of ``result``: log_softmax's backward
    (``softmax._log_softmax_backward_row``: ``g - exp(out) * g.sum()``) of the row ``g`` that
    ``_nll_scatter`` writes (zeros but ``weight[t] * -(grad[n] / divisor)`` at the target ``t``),
    computed as the two compute it, operation for operation, without writing ``g``. Returns the
    first of these rows whose target is out of ``[0, C)`` (-1 if none; the rows before it
    written)."""
    n_classes = out.shape[1]
    zero = out.dtype.type(0)
    for n in range(start, stop):
        t = target[n]
        c = zero
        if t != ignore_index:
            if t < 0 or t >= n_classes:
                return n
            c = weight[t] * -(grad[n * grad_stride] / divisor)
        o = out[n]
        dst = result[n]
        # (the row's sum: its one entry plus zeros, so -0.0 sums to 0.0; in float64, as the
        # log-softmax backward's sum of a short row in the dtype is converted too)
        total = np.float64(zero + c)
        for j in range(n_classes):  # (``g``'s entry a select: the loop vectorises)
            dst[j] = (c if j == t else zero) - fast_exp(o[j]) * total
    return -1


# From this many elements, ``nll_loss_backward``'s rows (zeroed, one entry written: a memset
# of the word-LM's 700 x 10k float32 took 1.7 ms on one thread) are shared among numgrad's
# worker threads; each row is written alone, so the values do not depend on the split.
SCATTER_THREADED = 1 << 19


def _as_rows(x: np.ndarray, target: np.ndarray):
    """A 1-D input (one sample of C classes) as one row, and the target as a 1-D int64 array."""
    x2 = np.ascontiguousarray(x.reshape(1, -1) if x.ndim == 1 else x)
    t1 = np.ascontiguousarray(target.reshape(-1), dtype=np.int64)
    return x2, t1


def _weights(weight, n_classes: int, dtype) -> np.ndarray:
    if weight is None:
        return np.ones(n_classes, dtype)
    return np.ascontiguousarray(weight, dtype=dtype)


def nll_loss_forward(x: np.ndarray, target: np.ndarray, weight, ignore_index: int,
                     reduction: str) -> np.ndarray:
    """``-weight[t] * x[n, t]`` for each row, reduced by ``reduction`` ('none', 'sum', or 'mean':
    divided by the sum of the weights of the targets that are not ignored, as PyTorch)."""
    x2, t1 = _as_rows(x, target)
    w = _weights(weight, x2.shape[1], x2.dtype)
    losses = np.empty(x2.shape[0], x2.dtype)
    total, total_weight, bad = _nll_gather(x2, t1, w, ignore_index, losses)
    if bad >= 0:
        raise IndexError(f"Target {t1[bad]} is out of bounds.")
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return np.array(total, x.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: 0/0 is nan, as PyTorch
        return np.array(np.float64(total) / np.float64(total_weight), x.dtype)


def _scatter_arguments(grad, n_classes, target, weight, ignore_index, reduction, total_weight):
    """(the gradient flat, its stride per row, the targets, the weights, the divisor in the
    gradient's dtype, the first bad row or -1) of nll_loss's backward."""
    t1 = np.ascontiguousarray(target.reshape(-1), dtype=np.int64)
    w = _weights(weight, n_classes, grad.dtype)
    divisor, bad = 1.0, -1
    if reduction == "mean" and total_weight is None:
        divisor, bad = _total_weight(t1, w, ignore_index)
    elif reduction == "mean":  # (a number or a 0-d array, ATen's total_weight)
        divisor = float(np.asarray(total_weight).reshape(-1)[0])
    g = np.ascontiguousarray(grad.reshape(-1))
    stride = 0 if reduction != "none" else 1
    return g, stride, t1, w, grad.dtype.type(divisor), bad


def nll_loss_backward(grad: np.ndarray, shape: tuple, target: np.ndarray, weight,
                      ignore_index: int, reduction: str, total_weight=None) -> np.ndarray:
    """The gradient of ``nll_loss_forward`` with respect to its input of shape ``shape``: ``grad``
    (one value per row for 'none', else a scalar) scattered to each row's target class."""
    n_classes = shape[-1]
    out = _pool.empty((int(np.prod(shape[:-1], dtype=np.int64)), n_classes), grad.dtype)
    g, stride, t1, w, divisor, bad = _scatter_arguments(grad, n_classes, target, weight,
                                                        ignore_index, reduction, total_weight)
    if bad < 0:
        bad = _by_row_spans(_nll_scatter, out, (g, stride, t1, w, ignore_index, divisor, out))
    if bad >= 0:
        raise IndexError(f"Target {t1[bad]} is out of bounds.")
    return out.reshape(shape)


def nll_log_softmax_backward(grad: np.ndarray, out: np.ndarray, target: np.ndarray, weight,
                             ignore_index: int, reduction: str) -> np.ndarray:
    """The gradient of ``nll_loss(log_softmax(x, -1), ...)`` with respect to ``x``, from the
    loss's gradient and the log-softmax's output ``out`` (C-contiguous, of ``grad``'s float
    dtype, (N, C) or (C,)): nll_loss's backward and then log_softmax's, in one pass over each
    row (``_nll_log_softmax_rows``), the same values."""
    rows = out.reshape(-1, out.shape[-1])
    result = _pool.empty(rows.shape, out.dtype)
    g, stride, t1, w, divisor, bad = _scatter_arguments(grad, rows.shape[1], target, weight,
                                                        ignore_index, reduction, None)
    if bad < 0:
        bad = _by_row_spans(_nll_log_softmax_rows, result,
                            (g, stride, t1, w, ignore_index, divisor, rows, result))
    if bad >= 0:
        raise IndexError(f"Target {t1[bad]} is out of bounds.")
    return result.reshape(out.shape)


def _by_row_spans(kernel, out, args) -> int:
    """``kernel(*args, start, stop)`` over all of ``out``'s rows, in spans on numgrad's worker
    threads where ``out`` is large: the first bad row of all (-1 if none)."""
    rows = out.shape[0]
    spans = _workers.spans(rows, _workers.count())
    threads = _workers.threads_for(len(spans), out.size >= SCATTER_THREADED)
    if threads <= 1:
        return kernel(*args, 0, rows)
    bad = [-1] * len(spans)
    items = list(enumerate(spans))

    def part(item, slot):
        k, (start, stop) = item
        bad[k] = kernel(*args, start, stop)

    _workers.run(items, part, threads, blas=False)
    return next((b for b in bad if b >= 0), -1)


# ------------------------------------------------------------------ pointwise losses
# The losses PyTorch computes elementwise and then reduces, each one node there and here:
# ``kind`` picks the formula (one compilation per dtype serves them all). ``x``, ``t`` and the
# optional elementwise weights arrive flat, contiguous and of one length; ``w``/``pw`` of length
# 0 mean none.
HUBER, SMOOTH_L1, BCE, BCE_LOGITS = 0, 1, 2, 3
_EPSILON = float(np.float32(1e-12))  # (PyTorch's BCE backward bound: a float, 1e-12 rounded)


@njit(cache=True, error_model="numpy")
def _pointwise(kind, x, t, w, pw, param, out):
    """``out[i]`` = the loss of element ``i``, as PyTorch's CPU kernels compute it. Returns -1,
    or for ``BCE`` the position of the first input (``i``) or target (``n + i``) outside
    [0, 1]."""
    n = out.size
    zero = x.dtype.type(0)
    one = x.dtype.type(1)
    half = x.dtype.type(0.5)
    p = x.dtype.type(param)
    for i in range(n):
        a = x[i]
        b = t[i]
        if kind == HUBER:
            z = abs(a - b)
            v = half * z * z if z < p else p * (z - half * p)
        elif kind == SMOOTH_L1:
            z = abs(a - b)
            v = half * z * z / p if z < p else z - half * p
        elif kind == BCE:
            if not (a >= zero and a <= one):
                return i
            if not (b >= zero and b <= one):
                return n + i
            v = (b - one) * max(np.log1p(-a), x.dtype.type(-100)) - b * max(
                np.log(a), x.dtype.type(-100))
        else:  # BCE_LOGITS: (1 - t) x - log_weight * log_sigmoid(x)
            log_sigmoid = min(zero, a) - np.log1p(np.exp(-abs(a)))
            if pw.size:
                log_sigmoid = log_sigmoid * ((pw[i] - one) * b + one)
            v = (one - b) * a - log_sigmoid
        if w.size:
            v = v * w[i]
        out[i] = v
    return -1


@njit(cache=True, error_model="numpy")
def _pointwise_backward(kind, g, g_stride, x, t, w, param, norm, out):
    """The gradient of ``_pointwise`` with respect to ``x`` for ``HUBER``, ``SMOOTH_L1`` and
    ``BCE``, in PyTorch's order of operations (``norm`` is 1, or 1/N for 'mean'); ``g`` is one
    value per element (``g_stride`` 1) or one for all (0)."""
    one = x.dtype.type(1)
    p = param
    nv = x.dtype.type(norm)
    for i in range(out.size):
        gi = g[i * g_stride]
        d = x[i] - t[i]
        if kind == HUBER:
            if d <= -p:
                v = -nv * gi * p
            elif d >= p:
                v = nv * gi * p
            else:
                v = nv * d * gi
        elif kind == SMOOTH_L1:
            if d <= -p:
                v = -nv * gi
            elif d >= p:
                v = nv * gi
            else:
                v = nv * d * gi / p
        else:  # BCE: grad (x - t) / max((1 - x) x, eps), times the weight, then the mean's 1/N
            a = x[i]
            v = gi * d / max((one - a) * a, x.dtype.type(_EPSILON))
            if w.size:
                v = v * w[i]
            v = v * nv
        out[i] = v


@njit(cache=True)
def _flat_sum(values):
    total = 0.0
    for i in range(values.size):
        total += values[i]
    return total


def _flat(a, shape, dtype):
    """``a`` (None, or an array broadcasting to ``shape``) flat and contiguous in ``dtype``."""
    if a is None:
        return np.empty(0, dtype)
    a = np.asarray(a, dtype)
    if a.shape != tuple(shape):
        a = np.broadcast_to(a, shape)
    return np.ascontiguousarray(a).reshape(-1)


_RANGE_ERROR = "all elements of {} should be between 0 and 1"


def pointwise_loss(kind: int, x: np.ndarray, t: np.ndarray, w, pw, param: float,
                   reduction: str) -> np.ndarray:
    """The elementwise loss ``kind`` of ``x`` and ``t`` (one shape), weighted by ``w`` (BCE, BCE
    with logits) and ``pw`` (BCE with logits' ``pos_weight``), both broadcasting to it, reduced
    by ``reduction`` (the sum accumulates in float64)."""
    shape = x.shape
    out = np.empty(x.size, x.dtype)
    bad = _pointwise(kind, _flat(x, shape, x.dtype), _flat(t, shape, x.dtype),
                     _flat(w, shape, x.dtype), _flat(pw, shape, x.dtype), float(param), out)
    if bad >= 0:
        raise RuntimeError(_RANGE_ERROR.format("input" if bad < x.size else "target"))
    if reduction == "none":
        return out.reshape(shape)
    total = _flat_sum(out)
    if reduction == "sum":
        return np.array(total, x.dtype)
    return np.array(total / out.size if out.size else np.nan, x.dtype)


def pointwise_loss_backward(kind: int, g: np.ndarray, x: np.ndarray, t: np.ndarray, w,
                            param: float, reduction: str) -> np.ndarray:
    """The gradient of ``pointwise_loss`` with respect to ``x`` (``HUBER``, ``SMOOTH_L1``,
    ``BCE``), from ``g``: one value per element ('none'), else one."""
    shape = x.shape
    out = np.empty(x.size, x.dtype)
    norm = 1.0 / x.size if reduction == "mean" and x.size else 1.0
    if reduction == "none":
        gf, stride = _flat(g, shape, x.dtype), 1
    else:
        gf, stride = np.ascontiguousarray(g, x.dtype).reshape(-1), 0
    if out.size:
        # (``param`` in the input's float type; for integers a float, as PyTorch's CPU kernel
        # compares and divides by it)
        p = x.dtype.type(param) if x.dtype.kind == "f" else float(param)
        _pointwise_backward(kind, gf, stride, _flat(x, shape, x.dtype), _flat(t, shape, x.dtype),
                            _flat(w, shape, x.dtype), p, norm, out)
    return out.reshape(shape)
