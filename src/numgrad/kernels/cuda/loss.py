"""Loss kernels on CUDA, with the CPU module's interface (``nll_loss_forward``,
``nll_loss_backward``) and semantics: ``-weight[t] * x[n, t]`` gathered per row (one thread per
row), the gradient scattered back the same way; rows whose target is ``ignore_index`` count for
nothing; 'sum' and 'mean' reduce in float64 (one block, a shared-memory tree over the rows'
losses and weights), 'mean' dividing by the weights of the rows that count.

A target outside ``[0, C)`` cannot raise inside a kernel: as for an index out of range
(``indexing.py``), the kernel counts that row for nothing and records the target in the device
error array, and the next sync that the user asks for (``synchronize()``, ``.item()``, ``.cpu()``,
printing) raises the CPU's IndexError ("Target 7 is out of bounds."). Nothing is read back in
forward or backward; 'mean''s total weight, when given (ATen's ``nll_loss_backward``), may be a
device array.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from .elementwise import cast, upload
from .errors import device_errors, record_target
from .memory import _SIMULATOR, empty, launch
from .layout import ascontiguous, broadcast_copy, flat
from .reduction import block_sum, full

_THREADS = 32 if _SIMULATOR else 256


@cuda.jit
def _gather_k(x, n_classes, target, weight, ignore_index, losses, used, err):
    """``losses[n] = -weight[t] * x[n, t]`` and ``used[n] = weight[t]`` (both 0 where ``t`` is
    ignored or out of range; an out-of-range target recorded in ``err``)."""
    for n in range(cuda.grid(1), losses.size, cuda.gridsize(1)):
        t = target[n]
        if t == ignore_index:
            losses[n] = 0
            used[n] = 0
        elif t < 0 or t >= n_classes:
            losses[n] = 0
            used[n] = 0
            record_target(err, t)
        else:
            w = weight[t]
            losses[n] = -w * x[n * n_classes + t]
            used[n] = w


@cuda.jit
def _reduce_k(losses, used, mean, out):
    """One block: ``out[0]`` = the float64 sum of ``losses``, divided by that of ``used`` if
    ``mean`` (0/0 is nan, as the CPU)."""
    tid = cuda.threadIdx.x
    s = cuda.shared.array(_THREADS, float64)
    w = cuda.shared.array(_THREADS, float64)
    acc = 0.0
    acc_w = 0.0
    for n in range(tid, losses.size, _THREADS):
        acc += losses[n]
        acc_w += used[n]
    s[tid] = acc
    w[tid] = acc_w
    cuda.syncthreads()
    block_sum(s, tid, _THREADS)
    block_sum(w, tid, _THREADS)
    if tid == 0:
        if mean:
            if w[0] != 0:
                out[0] = s[0] / w[0]
            elif s[0] == 0 or s[0] != s[0]:  # every row ignored: 0/0 is nan, as the CPU
                out[0] = math.nan
            else:
                out[0] = math.inf if s[0] > 0 else -math.inf
        else:
            out[0] = s[0]


@cuda.jit
def _total_weight_k(target, weight, ignore_index, out, err):
    """One block: ``out[0]`` = the float64 sum of the weights of the targets not ignored."""
    tid = cuda.threadIdx.x
    s = cuda.shared.array(_THREADS, float64)
    acc = 0.0
    for n in range(tid, target.size, _THREADS):
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= weight.size:
                record_target(err, t)
            else:
                acc += weight[t]
    s[tid] = acc
    cuda.syncthreads()
    block_sum(s, tid, _THREADS)
    if tid == 0:
        out[0] = s[0]


@cuda.jit
def _scatter_k(grad, grad_stride, target, weight, ignore_index, divisor, n_classes, out, err):
    """``out[n, t] = weight[t] * -(grad[n] / divisor)`` (PyTorch's order of operations; ``out``
    arrives zeroed, ``divisor`` is a 1-element array of ``grad``'s dtype)."""
    for n in range(cuda.grid(1), target.size, cuda.gridsize(1)):
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= n_classes:
                record_target(err, t)
            else:
                out[n * n_classes + t] = weight[t] * -(grad[n * grad_stride] / divisor[0])


# ------------------------------------------------------------------ helpers


def _device(x):
    """A host array (a target or weight held as a parameter) as a C-contiguous device array."""
    if isinstance(x, np.ndarray):
        return upload(x)
    return ascontiguous(x)


def _targets(target):
    t = _device(target)
    t = t.reshape(t.size)
    if t.dtype != np.int64:
        t = cast(t, np.int64)
    return t


def _weights(weight, n_classes: int, dtype):
    if weight is None:
        return full((n_classes,), dtype, 1)
    w = _device(weight)
    if w.dtype != np.dtype(dtype):
        w = cast(w, dtype)
    return w


def _divisor(total_weight, dtype):
    """ATen's ``total_weight`` (a number, or a 0-d or 1-element device array) as a 1-element
    device array of ``dtype``, with no copy to the host."""
    if isinstance(total_weight, (int, float, np.number)):
        return full((1,), dtype, total_weight)
    if isinstance(total_weight, np.ndarray):
        return full((1,), dtype, total_weight.reshape(-1)[0])
    d = ascontiguous(total_weight).reshape(1)
    if d.dtype != np.dtype(dtype):
        d = cast(d, dtype)
    return d


def _one_block(kernel):
    return kernel[1, _THREADS]


# ------------------------------------------------------------------ entry points
def nll_loss_forward(x, target, weight, ignore_index: int, reduction: str):
    """``-weight[t] * x[n, t]`` for each row, reduced by ``reduction`` ('none', 'sum', or 'mean':
    divided by the sum of the weights of the targets that are not ignored, as PyTorch)."""
    x = ascontiguous(x)
    n_classes = x.shape[x.ndim - 1]
    t = _targets(target)
    w = _weights(weight, n_classes, x.dtype)
    losses = empty((t.size,), x.dtype)
    used = empty((t.size,), x.dtype)
    if t.size:
        launch(_gather_k, t.size)(flat(x), n_classes, t, w, ignore_index, losses, used,
                                  device_errors())
    if reduction == "none":
        return losses.reshape(tuple(target.shape))
    out = empty((1,), x.dtype)
    _one_block(_reduce_k)(losses, used, reduction == "mean", out)
    return out.reshape(())


def nll_loss_backward(grad, shape: tuple, target, weight, ignore_index: int, reduction: str,
                      total_weight=None):
    """The gradient of ``nll_loss_forward`` with respect to its input of shape ``shape``: ``grad``
    (one value per row for 'none', else a scalar) scattered to each row's target class."""
    grad = ascontiguous(grad)
    n_classes = shape[-1]
    rows = math.prod(shape[:-1])
    out = full((rows, n_classes), grad.dtype, 0)
    t = _targets(target)
    w = _weights(weight, n_classes, grad.dtype)
    err = device_errors()
    if reduction == "mean" and total_weight is None:
        divisor = empty((1,), grad.dtype)
        _one_block(_total_weight_k)(t, w, ignore_index, divisor, err)
    elif reduction == "mean":
        divisor = _divisor(total_weight, grad.dtype)
    else:
        divisor = full((1,), grad.dtype, 1.0)
    if t.size:
        stride = 0 if reduction != "none" else 1
        launch(_scatter_k, t.size)(flat(grad), stride, t, w, ignore_index, divisor, n_classes,
                                   flat(out), err)
    return out.reshape(tuple(shape))


# ------------------------------------------------------------------ pointwise losses
# The CPU module's ``pointwise_loss`` / ``pointwise_loss_backward``: one thread per element, the
# formula picked by ``kind`` (the CPU's constants), 'sum'/'mean' reduced in float64 by one block.
# A BCE input or target outside [0, 1] cannot raise inside a kernel (PyTorch's CUDA kernel
# asserts on the device): its loss is computed as it comes (NaN below 0 or above 1).
HUBER, SMOOTH_L1, BCE, BCE_LOGITS = 0, 1, 2, 3
_EPSILON = float(np.float32(1e-12))  # (PyTorch's BCE backward bound: a float, 1e-12 rounded)


@cuda.jit
def _pointwise_k(kind, x, t, w, has_w, pw, has_pw, param, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        a = x[i]
        b = t[i]
        if kind == HUBER:
            z = abs(a - b)
            v = 0.5 * z * z if z < param else param * (z - 0.5 * param)
        elif kind == SMOOTH_L1:
            z = abs(a - b)
            v = 0.5 * z * z / param if z < param else z - 0.5 * param
        elif kind == BCE:
            # (log(0) and log1p(-1) spelled out as -inf: the simulator's Python math raises)
            log_a = math.log(a) if a > 0.0 else (-math.inf if a == 0.0 else math.nan)
            log_1ma = math.log1p(-a) if a < 1.0 else (-math.inf if a == 1.0 else math.nan)
            v = (b - 1.0) * max(log_1ma, -100.0) - b * max(log_a, -100.0)
        else:
            log_sigmoid = min(0.0, a) - math.log1p(math.exp(-abs(a)))
            if has_pw:
                log_sigmoid = log_sigmoid * ((pw[i] - 1.0) * b + 1.0)
            v = (1.0 - b) * a - log_sigmoid
        if has_w:
            v = v * w[i]
        out[i] = v


@cuda.jit
def _pointwise_backward_k(kind, g, g_stride, x, t, w, has_w, param, norm, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        gi = g[i * g_stride]
        d = x[i] - t[i]
        if kind == HUBER:
            if d <= -param:
                v = -norm * gi * param
            elif d >= param:
                v = norm * gi * param
            else:
                v = norm * d * gi
        elif kind == SMOOTH_L1:
            if d <= -param:
                v = -norm * gi
            elif d >= param:
                v = norm * gi
            else:
                v = norm * d * gi / param
        else:
            a = x[i]
            v = gi * d / max((1.0 - a) * a, _EPSILON)
            if has_w:
                v = v * w[i]
            v = v * norm
        out[i] = v


@cuda.jit
def _scaled_sum_k(values, scale, out):
    """One block: ``out[0]`` = the float64 sum of ``values`` times ``scale``."""
    tid = cuda.threadIdx.x
    s = cuda.shared.array(_THREADS, float64)
    acc = 0.0
    for n in range(tid, values.size, _THREADS):
        acc += values[n]
    s[tid] = acc
    cuda.syncthreads()
    block_sum(s, tid, _THREADS)
    if tid == 0:
        out[0] = s[0] * scale


def _flat_operand(a, shape, dtype):
    """``a`` (None, a host array held as a parameter, or a device array broadcasting to
    ``shape``) as a flat C-contiguous device array of ``dtype`` (a 1-element one for None), and
    whether it was given."""
    if a is None:
        return full((1,), dtype, 0), False
    a = _device(a)
    if tuple(a.shape) != tuple(shape) or a.dtype != np.dtype(dtype):
        a = broadcast_copy(a, tuple(shape), dtype)
    return flat(a), True


def pointwise_loss(kind: int, x, t, w, pw, param: float, reduction: str):
    """The CPU module's ``pointwise_loss`` on device arrays."""
    shape = tuple(x.shape)
    out = empty(shape, x.dtype)
    xf, _ = _flat_operand(x, shape, x.dtype)
    tf, _ = _flat_operand(t, shape, x.dtype)
    wf, has_w = _flat_operand(w, shape, x.dtype)
    pwf, has_pw = _flat_operand(pw, shape, x.dtype)
    if out.size:
        launch(_pointwise_k, out.size)(kind, xf, tf, wf, has_w, pwf, has_pw, float(param),
                                       flat(out))
    if reduction == "none":
        return out
    total = empty((1,), x.dtype)
    scale = 1.0 if reduction == "sum" else (1.0 / out.size if out.size else math.nan)
    _one_block(_scaled_sum_k)(flat(out), scale, total)
    return total.reshape(())


def pointwise_loss_backward(kind: int, g, x, t, w, param: float, reduction: str):
    """The CPU module's ``pointwise_loss_backward`` on device arrays."""
    shape = tuple(x.shape)
    out = empty(shape, x.dtype)
    norm = 1.0 / out.size if reduction == "mean" and out.size else 1.0
    if reduction == "none":
        gf, _ = _flat_operand(g, shape, x.dtype)
        stride = 1
    else:
        gf, stride = flat(ascontiguous(_device(g)).reshape(1)), 0
    xf, _ = _flat_operand(x, shape, x.dtype)
    tf, _ = _flat_operand(t, shape, x.dtype)
    wf, has_w = _flat_operand(w, shape, x.dtype)
    if out.size:
        launch(_pointwise_backward_k, out.size)(kind, gf, stride, xf, tf, wf, has_w,
                                                float(param), norm, flat(out))
    return out
