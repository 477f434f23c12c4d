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
from .indexing import device_errors, record_target
from .memory import _SIMULATOR, ascontiguous, empty, flat, launch
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
