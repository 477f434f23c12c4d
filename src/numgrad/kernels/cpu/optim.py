"""Fused optimizer updates for the CPU (``optim/adam.py``): one pass over a parameter and its
state per step where the op-by-op update makes a dozen, element for element the same
operations in the same order and dtype (so the same roundings: the tests compare both paths
bit for bit). The scalars arrive in the parameter's dtype, as the op-by-op path rounds them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import _workers

# Parameters of this many elements in all, and more, are updated on several threads; a part is
# at least PART elements of one parameter. (Below, a step is about a millisecond: on a busy
# machine a helper thread waiting for a core made the GPT's 0.8M-element AdamW step 18 ms on two
# threads against 1.5 on one.)
THREADED = 1 << 20
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
    ``_adam`` after ``vmax``, as a tuple). Large parameters are cut into parts, and the parts
    shared among threads."""
    items = []
    total = 0
    for k, arrays in enumerate(params):
        n = arrays[0].size
        total += n
        for start, stop in _workers.spans(n, n // PART):
            items.append((k, start, stop))

    def work(item, slot):
        k, start, stop = item
        p, g, m, v, vmax = params[k]
        _adam(p[start:stop], g[start:stop], m[start:stop], v[start:stop],
              vmax[start:stop] if vmax.size else vmax, *scalars[k])

    _workers.run(items, work, _workers.threads_for(len(items), total >= THREADED))
