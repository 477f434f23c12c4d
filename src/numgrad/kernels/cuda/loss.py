"""Loss kernels on CUDA, with the CPU module's interface (``nll_loss_forward``,
``nll_loss_backward``) and semantics: ``-weight[t] * x[n, t]`` gathered per row (one thread per
row), the gradient scattered back the same way; rows whose target is ``ignore_index`` count for
nothing; 'sum' and 'mean' reduce in float64 (one block, a shared-memory tree over the rows'
losses and weights), 'mean' dividing by the weights of the rows that count.

A target outside ``[0, C)`` raises the CPU's IndexError: the kernels record the first such row
(an atomic min) and the host reads that one number back before returning.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from .elementwise import cast, upload
from .memory import _SIMULATOR, ascontiguous, empty, flat, launch
from .reduction import full

_THREADS = 32 if _SIMULATOR else 256


@cuda.jit
def _gather_k(x, n_classes, target, weight, ignore_index, losses, used, bad):
    """``losses[n] = -weight[t] * x[n, t]`` and ``used[n] = weight[t]`` (both 0 where ``t`` is
    ignored); the first row with an out-of-range target in ``bad[0]``."""
    for n in range(cuda.grid(1), losses.size, cuda.gridsize(1)):
        t = target[n]
        if t == ignore_index:
            losses[n] = 0
            used[n] = 0
        elif t < 0 or t >= n_classes:
            losses[n] = 0
            used[n] = 0
            cuda.atomic.min(bad, 0, n)
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
    step = _THREADS // 2
    while step > 0:
        if tid < step:
            s[tid] += s[tid + step]
            w[tid] += w[tid + step]
        cuda.syncthreads()
        step //= 2
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
def _total_weight_k(target, weight, ignore_index, out, bad):
    """One block: ``out[0]`` = the float64 sum of the weights of the targets not ignored."""
    tid = cuda.threadIdx.x
    s = cuda.shared.array(_THREADS, float64)
    acc = 0.0
    for n in range(tid, target.size, _THREADS):
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= weight.size:
                cuda.atomic.min(bad, 0, n)
            else:
                acc += weight[t]
    s[tid] = acc
    cuda.syncthreads()
    step = _THREADS // 2
    while step > 0:
        if tid < step:
            s[tid] += s[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        out[0] = s[0]


@cuda.jit
def _scatter_k(grad, grad_stride, target, weight, ignore_index, divisor, n_classes, out, bad):
    """``out[n, t] = weight[t] * -(grad[n] / divisor)`` (PyTorch's order of operations; ``out``
    arrives zeroed, ``divisor`` is a 1-element array of ``grad``'s dtype)."""
    for n in range(cuda.grid(1), target.size, cuda.gridsize(1)):
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= n_classes:
                cuda.atomic.min(bad, 0, n)
            else:
                out[n * n_classes + t] = weight[t] * -(grad[n * grad_stride] / divisor[0])


# ------------------------------------------------------------------ helpers
_NO_ROW = np.iinfo(np.int64).max
_ONES: dict = {}


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


def _raise_if_bad(bad, target) -> None:
    row = int(bad.copy_to_host()[0])
    if row != _NO_ROW:
        value = int(target[row:row + 1].copy_to_host()[0])
        raise IndexError(f"Target {value} is out of bounds.")


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
    bad = full((1,), np.int64, _NO_ROW)
    if t.size:
        launch(_gather_k, t.size)(flat(x), n_classes, t, w, ignore_index, losses, used, bad)
    _raise_if_bad(bad, t)
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
    bad = full((1,), np.int64, _NO_ROW)
    if reduction == "mean" and total_weight is None:
        divisor = empty((1,), grad.dtype)
        _one_block(_total_weight_k)(t, w, ignore_index, divisor, bad)
    else:
        divisor = full((1,), grad.dtype, 1.0 if reduction != "mean" else total_weight)
    if t.size:
        stride = 0 if reduction != "none" else 1
        launch(_scatter_k, t.size)(flat(grad), stride, t, w, ignore_index, divisor, n_classes,
                                   flat(out), bad)
    _raise_if_bad(bad, t)
    return out.reshape(tuple(shape))
