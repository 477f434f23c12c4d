"""Loss CPU kernels: ``nll_loss`` gathers one log-probability per row by its class index (forward)
and scatters the gradient back to that index (backward). The two are adjoint, so each is the
other's derivative, and a handful of compilations (one per dtype) serve both orders.

The kernels take a ``(N, C)`` input, ``(N,)`` int64 targets and a ``(C,)`` weight vector (ones when
the caller gives none); sums accumulate in float64 whatever the input's precision.
"""
from __future__ import annotations

import numpy as np
from numba import njit


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


@njit(cache=True, error_model="numpy")  # a zero total weight gives nan, as PyTorch, not an error
def _nll_scatter(grad, grad_stride, target, weight, ignore_index, divisor, out):
    """``out[n, t] = weight[t] * -(grad[n] / divisor)`` (PyTorch's order of operations); ``out``
    arrives zeroed. ``grad_stride`` is 0 for a reduced (scalar) gradient, 1 for one per row.
    Returns the row of the first target out of ``[0, C)`` (-1 if none): nothing is written out
    of bounds."""
    n_classes = out.shape[1]
    for n in range(out.shape[0]):
        t = target[n]
        if t != ignore_index:
            if t < 0 or t >= n_classes:
                return n
            out[n, t] = weight[t] * -(grad[n * grad_stride] / divisor)
    return -1


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


def nll_loss_backward(grad: np.ndarray, shape: tuple, target: np.ndarray, weight,
                      ignore_index: int, reduction: str, total_weight=None) -> np.ndarray:
    """The gradient of ``nll_loss_forward`` with respect to its input of shape ``shape``: ``grad``
    (one value per row for 'none', else a scalar) scattered to each row's target class."""
    n_classes = shape[-1]
    out = np.zeros((int(np.prod(shape[:-1], dtype=np.int64)), n_classes), grad.dtype)
    t1 = np.ascontiguousarray(target.reshape(-1), dtype=np.int64)
    w = _weights(weight, n_classes, grad.dtype)
    divisor, bad = 1.0, -1
    if reduction == "mean" and total_weight is None:
        divisor, bad = _total_weight(t1, w, ignore_index)
    elif reduction == "mean":  # (a number or a 0-d array, ATen's total_weight)
        divisor = float(np.asarray(total_weight).reshape(-1)[0])
    g = np.ascontiguousarray(grad.reshape(-1))
    stride = 0 if reduction != "none" else 1
    if bad < 0:
        bad = _nll_scatter(g, stride, t1, w, ignore_index, grad.dtype.type(divisor), out)
    if bad >= 0:
        raise IndexError(f"Target {t1[bad]} is out of bounds.")
    return out.reshape(shape)
