"""Fused optimizer updates for the CPU (``optim/adam.py``, ``optim/sgd.py``): one pass over a
parameter and its state per step where the op-by-op update makes a dozen, element for element
the same operations in the same order and dtype (so the same roundings: the tests compare both
paths bit for bit). The scalars are rounded to the parameter's dtype, as the op-by-op path
rounds them.

``adam_step`` and ``sgd_step`` are the optimizers' entry points, eager and traced alike: their
arguments are the tensors' arrays as they are and the options as Python numbers, and what
depends on values (Adam's step count and its bias corrections, the negated gradient of
``maximize``) is computed here, so that ``numgrad.compile`` records a step as one call of the
kernel that eager runs (``compiler/ir.py``'s ``WRITES``: they write into their first argument's
arrays), which replays the same values.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import _workers

# Parameters of this many elements in all, and more, are updated on several threads (never on
# a busy machine: ``_workers.busy``, where a helper thread waiting for a core made the GPT's
# 0.8M-element AdamW step 18 ms on two threads against 1.5 on one); a part is at least PART
# elements of one parameter. At 2^20 the tiny GPT's AdamW (818K elements in 53 parameters,
# 0.72 ms of CPU at one thread) never took the second thread; 2^18 elements take about 0.15
# ms on one, against some 20 us to start and join a job.
THREADED = 1 << 18
PART = 1 << 16


@njit(cache=True, error_model="numpy", inline="always")
def _moments(p, g, m, v, i, decay_mode, decay, weight, beta2, one_minus_beta2):
    """Element ``i``: the weight-decayed parameter, and the new moments (written)."""
    gi = g[i]
    pi = p[i]
    if decay_mode == 1:
        gi = gi + pi * decay
    elif decay_mode == 2:
        pi = pi * decay
    mi = m[i] + weight * (gi - m[i])
    vi = v[i] * beta2 + gi * one_minus_beta2 * gi
    m[i] = mi
    v[i] = vi
    return pi, mi, vi


@njit(cache=True, error_model="numpy", nogil=True)
def _adam(p, g, m, v, vmax, decay_mode, decay, weight, beta2, one_minus_beta2, neg_step_size,
          bias_correction2_sqrt, eps):
    """Adam's update of ``p`` (flat, C-contiguous; ``vmax`` empty unless amsgrad) as
    ``optim.Adam.step`` writes it op by op (``g`` already negated where it maximizes):
    ``decay_mode`` 1 is L2 weight decay (``g + p * decay``), 2 decoupled (``p * decay``
    first), 0 none. Each loop vectorises (indices from 0: no wraparound test; the amsgrad
    test outside the loop)."""
    if vmax.size == 0:
        for i in range(p.size):
            pi, mi, vi = _moments(p, g, m, v, i, decay_mode, decay, weight, beta2,
                                  one_minus_beta2)
            p[i] = pi + mi * neg_step_size / (np.sqrt(vi) / bias_correction2_sqrt + eps)
    else:
        for i in range(p.size):
            pi, mi, vi = _moments(p, g, m, v, i, decay_mode, decay, weight, beta2,
                                  one_minus_beta2)
            top = vmax[i]
            if vi > top or vi != vi:  # (maximum: NaN wins)
                top = vi
            vmax[i] = top
            p[i] = pi + mi * neg_step_size / (np.sqrt(top) / bias_correction2_sqrt + eps)


def adam(params: list, scalars: list) -> None:
    """One Adam step over ``params``, a list of ``(p, g, m, v, vmax)`` flat C-contiguous arrays
    of one dtype (``vmax`` of size 0 without amsgrad), each with its ``scalars`` (the options of
    ``_adam`` after ``vmax``, as a tuple)."""
    _foreach(_adam, params, scalars)


def _foreach(kernel, params: list, scalars: list) -> None:
    """``kernel(*arrays, *scalars)`` for each parameter's arrays and scalars: large parameters
    cut into parts (the arrays of size 0 passed whole), and the parts shared among threads."""
    items = []
    total = 0
    for k, arrays in enumerate(params):
        n = arrays[0].size
        total += n
        for start, stop in _workers.spans(n, n // PART):
            items.append((k, start, stop))

    def work(item, slot):
        k, start, stop = item
        kernel(*[a[start:stop] if a.size else a for a in params[k]], *scalars[k])

    _workers.run(items, work, _workers.threads_for(len(items), total >= THREADED))


@njit(cache=True, error_model="numpy", nogil=True)
def _sgd(p, g, buf, decay_mode, decay, momentum_mode, momentum, dampened, nesterov, neg_lr):
    """SGD's update of ``p`` (flat, C-contiguous) as ``optim.SGD.step`` writes it op by op
    (``g`` already negated where it maximizes): ``g + p * decay`` where ``decay_mode`` is 1 (0:
    no weight decay, not even a decay that rounded to 0), then with
    ``momentum_mode`` 1 the new buffer ``buf = g`` (the first step), with 2 ``buf = buf *
    momentum + g * dampened`` (``dampened`` is ``1 - dampening``: 1 leaves ``g`` exact), ``g =
    g + buf * momentum`` if ``nesterov`` else ``buf``; 0 is no momentum (``buf`` empty). Last
    ``p + g * neg_lr``. Each loop vectorises (the modes tested outside it)."""
    if momentum_mode == 0:
        if decay_mode == 0:
            for i in range(p.size):
                p[i] = p[i] + g[i] * neg_lr
        else:
            for i in range(p.size):
                p[i] = p[i] + (g[i] + p[i] * decay) * neg_lr
    elif momentum_mode == 1:
        for i in range(p.size):
            gi = g[i]
            if decay_mode != 0:
                gi = gi + p[i] * decay
            buf[i] = gi
            if nesterov:
                gi = gi + gi * momentum
            p[i] = p[i] + gi * neg_lr
    else:
        for i in range(p.size):
            gi = g[i]
            if decay_mode != 0:
                gi = gi + p[i] * decay
            bi = buf[i] * momentum + gi * dampened
            buf[i] = bi
            if nesterov:
                gi = gi + bi * momentum
            else:
                gi = bi
            p[i] = p[i] + gi * neg_lr


def sgd(params: list, scalars: list) -> None:
    """One SGD step over ``params``, a list of ``(p, g, buf)`` flat C-contiguous arrays of one
    dtype (``buf`` of size 0 without momentum), each with its ``scalars`` (the options of
    ``_sgd`` after ``buf``, as a tuple)."""
    _foreach(_sgd, params, scalars)


_EMPTY = {np.dtype(np.float32): np.empty(0, np.float32),
          np.dtype(np.float64): np.empty(0, np.float64)}


@njit(cache=True, error_model="numpy", nogil=True)
def _adam_scalars(count, options, out):
    """Advances Adam's step count (a 1-element float array) by one and writes the scalars of
    ``_adam`` after its mode for the new count into ``out`` (7 elements of the parameter's
    dtype: the decay, ``1 - beta1``, ``beta2``, ``1 - beta2``, ``-step_size``, the square root
    of the second bias correction, ``eps``), from ``options`` (float64: lr, beta1, beta2, eps,
    weight_decay, and 1.0 where the decay is decoupled): computed in float64, as the op-by-op
    update computes them, then rounded to the dtype. Returns the decay mode."""
    count[0] += 1
    s = np.float64(count[0])
    lr, beta1, beta2, eps, weight_decay = options[0], options[1], options[2], options[3], \
        options[4]
    mode = 0 if weight_decay == 0 else 2 if options[5] != 0 else 1
    out[0] = 1 - lr * weight_decay if mode == 2 else weight_decay
    out[1] = 1 - beta1
    out[2] = beta2
    out[3] = 1 - beta2
    out[4] = -(lr / (1 - beta1 ** s))
    out[5] = np.sqrt(1 - beta2 ** s)  # (numgrad's x ** 0.5 is sqrt)
    out[6] = eps
    return mode


@njit(cache=True, error_model="numpy", nogil=True)
def adam_param(p, g, m, v, vmax, count, options, maximize):
    """One parameter's Adam step, whole, on this thread (``adam_step``'s, as a compiled
    program calls it from Numba: ``compiler/whole.py``): flat arrays, ``count`` a 1-element
    array, ``options`` as ``_adam_scalars`` takes them."""
    out = np.empty(7, p.dtype)
    mode = _adam_scalars(count, options, out)
    _adam(p, -g if maximize else g, m, v, vmax, mode, out[0], out[1], out[2], out[3], out[4],
          out[5], out[6])


def _gradient(g: np.ndarray, maximize: bool) -> np.ndarray:
    flat = g.reshape(-1)
    return np.negative(flat) if maximize else flat  # (as -p.grad: NaN's sign bit flipped too)


def adam_options(lr, beta1, beta2, eps, weight_decay, decoupled) -> np.ndarray:
    """The options of ``_adam_scalars``."""
    return np.array([lr, beta1, beta2, eps, weight_decay, float(decoupled)], np.float64)


def adam_step(targets: tuple, grads: tuple, lr: float, beta1: float, beta2: float, eps: float,
              weight_decay: float, decoupled: bool, maximize: bool) -> None:
    """One Adam step (``optim.Adam``'s fused update) of a parameter group: its parameters given
    as ``targets``, a ``(p, m, v, vmax or None, step)`` tuple each, written: the parameter and
    its moments (C-contiguous, of one float dtype and shape) and its step count (a 0-d float
    array), which advances by one; ``grads`` their gradients (C-contiguous, read); the group's
    options as Python numbers (floats where a program takes them at each call: a scheduler's
    learning rate). The bias corrections come from the advanced count as the op-by-op update
    computes them (``_adam_scalars``)."""
    options = adam_options(lr, beta1, beta2, eps, weight_decay, decoupled)
    params, scalars = [], []
    for (p, m, v, vmax, count), g in zip(targets, grads):
        out = np.empty(7, p.dtype)
        mode = _adam_scalars(count.reshape(1), options, out)
        params.append((p.reshape(-1), _gradient(g, maximize), m.reshape(-1), v.reshape(-1),
                       _EMPTY[p.dtype] if vmax is None else vmax.reshape(-1)))
        scalars.append((mode, *out))
    adam(params, scalars)


def sgd_scalars(dtype, lr, momentum, dampening, weight_decay, nesterov, first) -> tuple:
    """The scalars of ``_sgd`` (after its arrays) for one parameter of ``dtype``."""
    dt = np.dtype(dtype).type
    mode = 0 if momentum == 0 else 1 if first else 2
    return (int(weight_decay != 0), dt(weight_decay), mode, dt(momentum), dt(1 - dampening),
            bool(nesterov), dt(-lr))


def sgd_step(targets: tuple, grads: tuple, lr: float, momentum: float, dampening: float,
             weight_decay: float, nesterov: bool, maximize: bool, firsts: tuple) -> None:
    """One SGD step (``optim.SGD``'s fused update) of a parameter group: its parameters given
    as ``targets``, a ``(p, buf or None)`` tuple each, written: the parameter and its momentum
    buffer (C-contiguous, of one float dtype and shape; None without momentum); ``grads`` their
    gradients (read); the group's options as Python numbers, and ``firsts``: for each
    parameter whether its buffer is new (it becomes the gradient)."""
    params, scalars = [], []
    for (p, buf), g, first in zip(targets, grads, firsts):
        params.append((p.reshape(-1), _gradient(g, maximize),
                       _EMPTY[p.dtype] if buf is None else buf.reshape(-1)))
        scalars.append(sgd_scalars(p.dtype, lr, momentum, dampening, weight_decay, nesterov,
                                   first))
    sgd(params, scalars)
