"""Line bodies that compile for both devices: what one CPU loop iteration and one CUDA thread do
to one line (a scan along the middle axis of an ``(outer, n, inner)`` view, a sorted row, a binary
search), written once.

Each is a ``numba.njit(inline="always")`` function, as the scalar formulas of ``scalar.py`` are,
whose first argument says where it works: ``f(i, *operands)`` with ``i`` a row's or a value's
number (``mode_row``, ``search_one``), or ``f(base, *operands)`` with ``base`` the first element
of a line of the C-contiguous ``(outer, n, inner)`` view in the flat arrays (the scans, whose
operands include ``n`` and ``inner``, the stride between a line's elements). Their loops are
generated as the elementwise kernels are (``codegen.py``): ``cpu/templates/lines.py`` calls the
body for each row or line in turn (Numba inlines it; ``each_k`` and ``each_line_k``),
``cuda/templates/lines.py`` from a grid-stride loop, one thread per row or line (numba-cuda
compiles the body as a device function, ``cuda/lines.py``), so both devices run one formula and
round alike; ``cpu/scan.py``, ``cpu/predicates.py``, ``cpu/counting.py`` and their CUDA twins keep
only the launch. The bodies use only arithmetic, comparisons, ``min``/``max`` and the ``math``
module (what numba-cuda lowers in kernels).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(inline="always")
def line_base(line, n, inner):
    """The first element of line ``line`` of the C-contiguous ``(outer, n, inner)`` view."""
    return (line // inner) * n * inner + line % inner


@njit(inline="always")
def scan_line(base, x, out, n, inner, mul, reverse, acc0):
    """``out`` = the running sum (``mul``: product) of ``x`` along one line, from the end with
    ``reverse``; ``acc0`` (0 or 1, of the accumulation type: float64 or int64) starts it."""
    acc = acc0
    for k in range(n):
        j = n - 1 - k if reverse else k
        p = base + j * inner
        if mul:
            acc = acc * x[p]
        else:
            acc = acc + x[p]
        out[p] = acc


@njit(inline="always")
def cumprod_grad_line(base, x, out, g, res, n, inner):
    """The gradient of ``out = cumprod(x)`` along one line, exact where ``x`` has zeros
    (PyTorch's formula): before the line's first zero ``z``, ``sum_{j>=i, j<z} g[j] out[j] /
    x[i]``; at ``z``, ``out[z-1] * sum_{z<=j<z2} g[j] prod_{z<l<=j} x[l]`` (``z2`` the next zero);
    after it, 0."""
    z = n
    for k in range(n):
        if x[base + k * inner] == 0:
            z = k
            break
    acc = 0.0
    for k in range(z - 1, -1, -1):
        p = base + k * inner
        acc += g[p] * out[p]
        res[p] = acc / x[p]
    if z < n:
        total = 0.0
        running = 1.0
        for k in range(z, n):
            p = base + k * inner
            if k > z:
                if x[p] == 0:
                    break
                running *= x[p]
            total += g[p] * running
        before = 1.0
        if z > 0:
            before = out[base + (z - 1) * inner]
        res[base + z * inner] = before * total
        for k in range(z + 1, n):
            res[base + k * inner] = 0


@njit(inline="always")
def cum_extreme_line(base, x, values, indices, n, inner, take_max):
    """PyTorch's cummax (``take_max``) / cummin along one line: the running extreme and the index
    where it was last reached (ties take the later index); a NaN, once met, is the extreme from
    there on, each later NaN taking its index."""
    best = x[base]
    at = 0
    for k in range(n):
        p = base + k * inner
        v = x[p]
        if v != v:  # noqa: PLR0124  (a NaN test that works for ints)
            best = v
            at = k
        elif best == best:  # noqa: PLR0124
            better = v <= best
            if take_max:
                better = v >= best
            if better:
                best = v
                at = k
        values[p] = best
        indices[p] = at


@njit(inline="always")
def logcumsumexp_line(base, x, out, n, inner):
    """The running ``log(sum(exp(x)))`` along one line, kept in float64 (PyTorch's CPU
    accumulation type), each element rounded to the result's dtype as it is written."""
    acc = -math.inf
    for k in range(n):
        p = base + k * inner
        v = np.float64(x[p])
        lo = min(acc, v)
        hi = max(acc, v)
        if v != v or acc != acc:  # noqa: PLR0124
            acc = math.nan
        elif lo != hi or math.isfinite(lo):
            acc = hi + math.log1p(math.exp(lo - hi))
        else:
            acc = v
        out[p] = acc


@njit(inline="always")
def same(a, b):
    """Equality with NaN equal to NaN."""
    return a == b or (a != a and b != b)  # noqa: PLR0124 (a NaN test that works for ints)


@njit(inline="always")
def mode_row(r, s, x, n, values, indices):
    """Row ``r`` of ``n`` elements (``s``: the rows of ``x`` sorted ascending): the longest run of
    equal values (the first, so the smallest, among equally long ones) into ``values[r]``, and the
    last index of that value in ``x``'s row into ``indices[r]``."""
    base = r * n
    best = s[base]
    best_count = 0
    count = 0
    for i in range(n):
        v = s[base + i]
        if i == 0 or not same(v, s[base + i - 1]):
            count = 1
        else:
            count += 1
        if count > best_count:
            best_count = count
            best = v
    index = 0
    for j in range(n - 1, -1, -1):
        if same(x[base + j], best):
            index = j
            break
    values[r] = best
    indices[r] = index


@njit(inline="always")
def search_one(j, bounds, values, sorter, use_sorter, m, per_line, right, out):
    """Value ``j``'s position in its line of ``bounds`` (lines of ``m``; one line for all values
    when ``per_line`` is 0, else line ``j // per_line``), read through ``sorter`` with
    ``use_sorter``: the first position whose bound is ``>= value`` (``right``: ``> value``),
    PyTorch's lower and upper bounds (a NaN value goes last); into ``out[j]``."""
    line = 0
    if per_line != 0:
        line = j // per_line
    first = line * m
    v = values[j]
    start = 0
    end = m
    while start < end:
        mid = start + ((end - start) >> 1)
        if use_sorter:
            b = bounds[first + sorter[first + mid]]
        else:
            b = bounds[first + mid]
        if right:
            go_right = not (b > v)
        else:
            go_right = not (b >= v)
        if go_right:
            start = mid + 1
        else:
            end = mid
    out[j] = start
