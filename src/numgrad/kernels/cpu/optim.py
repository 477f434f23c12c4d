"""Fused optimizer updates for the CPU (``optim/adam.py``): one pass over a parameter and its
state per step where the op-by-op update makes a dozen, element for element the same
operations in the same order and dtype (so the same roundings: the tests compare both paths
bit for bit). The scalars arrive in the parameter's dtype, as the op-by-op path rounds them.
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
