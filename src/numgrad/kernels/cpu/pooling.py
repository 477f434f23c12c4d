"""Pooling and padding CPU kernels (``K.pooling``), on planes: every entry point takes an array
whose last two dimensions are pooled (or padded) and whose leading dimensions are planes (a 1-D
op is the 2-D one on a height of 1, as PyTorch's), and returns one of the same leading shape;
the 3-D poolings (``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d`` and their backward)
pool the last three dimensions the same way.

Each kernel follows the loop of PyTorch's CPU kernel, so ties, NaN, windows clipped by padding and
the order of the additions are PyTorch's:

- max pooling (and adaptive max): the first maximum of a window wins; a NaN wins over everything
  (the last NaN of the window); the index is into the plane (``h * W + w``), as PyTorch's;
- average pooling: the sum of the window clipped to the input, divided by the window's size
  clipped to the padded input (``count_include_pad``), by the clipped window (without it), or by
  ``divisor_override``; int64 inputs divide as C++ (truncating);
- adaptive average pooling: window ``[floor(i * H / OH), ceil((i + 1) * H / OH))``, its sum divided
  by the window's height, then by its width;
- the backward of each, a scatter of the output's gradient to the input (by the saved indices for
  max pooling), and the gather by saved indices that is the derivative of that scatter (an index
  outside the plane, of a window left empty, takes and gives nothing);
- reflection and replication padding of the last two dimensions (negative pads crop), and their
  backward, which adds each output's gradient to the element it was copied from.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ... import _pool
from ..scalar import pad_source
from . import _workers
# Interpolation (``F.interpolate``) lives in upsample.py and is reached as ``K.pooling.*``, the
# module ``numgrad.compile``'s tracer records.
from .upsample import interpolate, interpolate_backward  # noqa: F401
from .upsample import interpolate_aa, interpolate_aa_backward  # noqa: F401

REFLECT, REPLICATE = 0, 1  # padding modes
THREADED = 1 << 18  # poolings reading and writing this many elements in all, and more, share
# their planes among threads (the kernels release the GIL)


def _on_planes(planes: int, size: int, call) -> None:
    """``call(start, stop)`` (a kernel on planes ``start:stop``) over all ``planes``: at once,
    or in parts shared among threads where ``size`` (the elements read and written) is large.
    Planes are independent, so the values are the same either way."""
    threads = _workers.threads_for(planes, size >= THREADED)
    if threads <= 1:
        call(0, planes)
        return
    _workers.run(_workers.spans(planes, 4 * threads),
                 lambda span, slot: call(*span), threads)


def _lowest(dtype):
    """-inf of a float dtype, the smallest value of an integer one, as a NumPy scalar."""
    dtype = np.dtype(dtype)
    return dtype.type(-np.inf) if dtype.kind == "f" else dtype.type(np.iinfo(dtype).min)


def _planes(x: np.ndarray) -> np.ndarray:
    """``x`` (..., H, W) as a C-contiguous (P, H, W) array."""
    h, w = x.shape[-2], x.shape[-1]
    planes = 1
    for s in x.shape[:-2]:
        planes *= s
    return np.ascontiguousarray(x).reshape(planes, h, w)


# The window arithmetic of one dimension, shared by the 2-D and 3-D kernels (Numba inlines it).
# A 2-D pooling is not the 3-D kernel on a depth of 1: measured, that costs 30-60% on 2-D max and
# average pooling (one thread), so each has its loops.
@njit(cache=True)
def _max_span(o, stride, pad, kernel, dilation, size):
    """(first, end) of max pooling window ``o`` along one dimension: its first position inside
    the input (``dilation`` apart from the padded start), its end clipped to the input."""
    start = o * stride - pad
    end = min(start + (kernel - 1) * dilation + 1, size)
    while start < 0:
        start += dilation
    return start, end


@njit(cache=True)
def _avg_span(o, stride, pad, kernel, size):
    """(first, end, padded size) of average pooling window ``o`` along one dimension: clipped
    to the input, and its size clipped to the padded input."""
    start = o * stride - pad
    end = min(start + kernel, size + pad)
    return max(start, 0), min(end, size), end - start


@njit(cache=True)
def _adaptive_span(o, size, osize):
    """Adaptive window ``o`` of ``osize`` over ``size``: ``[floor(o*size/osize),
    ceil((o+1)*size/osize))``."""
    return (o * size) // osize, -((-(o + 1) * size) // osize)


@njit(cache=True)
def _idivide(total, divisor):
    q = abs(total) // abs(divisor)
    return q if (total >= 0) == (divisor >= 0) else -q


@njit(cache=True, nogil=True)
def _max_pool(x, kh, kw, sh, sw, ph, pw, dh, dw, lowest, out, idx):
    """``lowest`` is -inf (the smallest integer for integers): a window that the padding and the
    dilation leave empty gives it, with the index of its first position, as PyTorch's."""
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            h0, h1 = _max_span(oh, sh, ph, kh, dh, height)
            for ow in range(out.shape[2]):
                w0, w1 = _max_span(ow, sw, pw, kw, dw, width)
                best = h0 * width + w0
                value = lowest
                for h in range(h0, h1, dh):
                    for w in range(w0, w1, dw):
                        v = x[p, h, w]
                        if v > value or v != v:
                            value = v
                            best = h * width + w
                out[p, oh, ow] = value
                idx[p, oh, ow] = best
    return 0


@njit(cache=True, nogil=True)
def _max_pool_2x2(x, lowest, out, idx):
    """``_max_pool`` for 2x2 windows at stride 2, no padding or dilation, inside ``x`` (the
    MNIST CNN's ``MaxPool2d(2)``), with its values and indices: the first maximum, or where the
    window holds a NaN its last NaN. Without branches on the data: the maximum ``m`` by three
    comparisons, the window's first entry equal to it found by arithmetic on the comparisons,
    the value loaded from there (so -0.0 before 0.0 stays -0.0); only a window with a NaN (rare,
    so predicted) takes a branch. A chain of data-dependent selects, which LLVM turns into
    branches, took 9.2 ms for 64x64x24x24 float32 on one thread, mispredicted half the time on
    real data (1.7 ms on zeros); this 2.8 ms (PyTorch: 14.6)."""
    width = x.shape[2]
    for p in range(x.shape[0]):
        plane = x[p].ravel()
        for oh in range(out.shape[1]):
            r0 = x[p, 2 * oh]
            r1 = x[p, 2 * oh + 1]
            o = out[p, oh]
            ix = idx[p, oh]
            base = 2 * oh * width
            for ow in range(out.shape[2]):
                w = 2 * ow
                a = r0[w]
                b = r0[w + 1]
                c = r1[w]
                d = r1[w + 1]
                m1 = a if a >= b else b
                m2 = c if c >= d else d
                m = m1 if m1 >= m2 else m2
                past_a = a != m
                past_b = past_a & (b != m)
                at = past_a + past_b * (width - 1) + (past_b & (c != m))  # (0, 1, W or W+1)
                if (a != a) | (b != b) | (c != c) | (d != d):
                    at = width + 1 if d != d else (width if c != c else (1 if b != b else 0))
                at += base + w
                o[ow] = plane[at]
                ix[ow] = at
    return 0


@njit(cache=True)
def _avg_window(oh, ow, kh, kw, sh, sw, ph, pw, height, width, count_include_pad,
                divisor_override):
    """(h0, h1, w0, w1, divisor) of an average pooling window (PyTorch's formula)."""
    h0, h1, hp = _avg_span(oh, sh, ph, kh, height)
    w0, w1, wp = _avg_span(ow, sw, pw, kw, width)
    if divisor_override != 0:
        divisor = divisor_override
    elif count_include_pad:
        divisor = hp * wp
    else:
        divisor = (h1 - h0) * (w1 - w0)
    return h0, h1, w0, w1, divisor


@njit(cache=True, nogil=True)
def _avg_pool(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override, out):
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            for ow in range(out.shape[2]):
                # (the window arithmetic written out: through _avg_window this loop measured
                # 10% slower with count_include_pad=False, float32 and float64, one thread)
                h0 = oh * sh - ph
                w0 = ow * sw - pw
                h1 = min(h0 + kh, height + ph)
                w1 = min(w0 + kw, width + pw)
                pool_size = (h1 - h0) * (w1 - w0)
                h0 = max(h0, 0)
                w0 = max(w0, 0)
                h1 = min(h1, height)
                w1 = min(w1, width)
                if h0 >= h1 or w0 >= w1:
                    out[p, oh, ow] = 0
                    continue
                if divisor_override != 0:
                    divisor = divisor_override
                elif count_include_pad:
                    divisor = pool_size
                else:
                    divisor = (h1 - h0) * (w1 - w0)
                total = x.dtype.type(0)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        total += x[p, h, w]
                out[p, oh, ow] = total / x.dtype.type(divisor)
    return 0


@njit(cache=True, nogil=True)
def _avg_pool_int(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override, out):
    """``_avg_pool`` for integer inputs (C++'s truncating division, in int64)."""
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            for ow in range(out.shape[2]):
                h0, h1, w0, w1, divisor = _avg_window(oh, ow, kh, kw, sh, sw, ph, pw, height,
                                                      width, count_include_pad, divisor_override)
                if h0 >= h1 or w0 >= w1:
                    out[p, oh, ow] = 0
                    continue
                total = 0
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        total += np.int64(x[p, h, w])
                out[p, oh, ow] = _idivide(total, np.int64(divisor))
    return 0


@njit(cache=True, nogil=True)
def _avg_pool_backward(grad, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override, out):
    """``out`` (P, H, W) arrives zeroed: each output's gradient / its divisor is added to every
    input element of its window."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            for ow in range(grad.shape[2]):
                h0, h1, w0, w1, divisor = _avg_window(oh, ow, kh, kw, sh, sw, ph, pw, height,
                                                      width, count_include_pad, divisor_override)
                delta = grad[p, oh, ow] / grad.dtype.type(divisor)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        out[p, h, w] += delta
    return 0


@njit(cache=True, nogil=True)
def _avg_pool_backward_int(grad, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override,
                           out):
    """``_avg_pool_backward`` for int64 gradients (each share divided as C++, truncating)."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            for ow in range(grad.shape[2]):
                h0, h1, w0, w1, divisor = _avg_window(oh, ow, kh, kw, sh, sw, ph, pw, height,
                                                      width, count_include_pad, divisor_override)
                delta = _idivide(np.int64(grad[p, oh, ow]), np.int64(divisor))
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        out[p, h, w] += delta
    return 0


@njit(cache=True, nogil=True)
def _adaptive_avg_pool(x, out):
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            h0, h1 = _adaptive_span(oh, height, out.shape[1])
            for ow in range(out.shape[2]):
                w0, w1 = _adaptive_span(ow, width, out.shape[2])
                total = x.dtype.type(0)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        total += x[p, h, w]
                out[p, oh, ow] = total / x.dtype.type(h1 - h0) / x.dtype.type(w1 - w0)
    return 0


@njit(cache=True, nogil=True)
def _adaptive_avg_pool_backward(grad, out):
    """``out`` (P, H, W) arrives zeroed."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            h0, h1 = _adaptive_span(oh, height, grad.shape[1])
            for ow in range(grad.shape[2]):
                w0, w1 = _adaptive_span(ow, width, grad.shape[2])
                delta = grad[p, oh, ow] / grad.dtype.type(h1 - h0) / grad.dtype.type(w1 - w0)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        out[p, h, w] += delta
    return 0


# The 3-D kernels: the same loops with a depth, on (P, D, H, W) volumes (PyTorch's 3-D CPU
# kernels; the max index is into the volume, ``(d * H + h) * W + w``); ``g`` holds the geometry
# (kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw).
@njit(cache=True, nogil=True)
def _max_pool3d(x, g, lowest, out, idx):
    """``_max_pool``'s loop with a depth (the window arithmetic written out: through
    ``_max_span`` it measured 3-8% slower, one thread)."""
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = (g[0], g[1], g[2], g[3], g[4], g[5], g[6],
                                                      g[7], g[8], g[9], g[10], g[11])
    for p in range(x.shape[0]):
        for od in range(out.shape[1]):
            t0 = od * sd - pd
            t1 = min(t0 + (kd - 1) * dd + 1, depth)
            while t0 < 0:
                t0 += dd
            for oh in range(out.shape[2]):
                h0 = oh * sh - ph
                h1 = min(h0 + (kh - 1) * dh + 1, height)
                while h0 < 0:
                    h0 += dh
                for ow in range(out.shape[3]):
                    w0 = ow * sw - pw
                    w1 = min(w0 + (kw - 1) * dw + 1, width)
                    while w0 < 0:
                        w0 += dw
                    best = (t0 * height + h0) * width + w0
                    value = lowest
                    for t in range(t0, t1, dd):
                        for h in range(h0, h1, dh):
                            for w in range(w0, w1, dw):
                                v = x[p, t, h, w]
                                if v > value or v != v:
                                    value = v
                                    best = (t * height + h) * width + w
                    out[p, od, oh, ow] = value
                    idx[p, od, oh, ow] = best
    return 0


@njit(cache=True)
def _adaptive_max_pool(x, out, idx):
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            h0, h1 = _adaptive_span(oh, height, out.shape[1])
            for ow in range(out.shape[2]):
                w0, w1 = _adaptive_span(ow, width, out.shape[2])
                best = h0 * width + w0
                value = x[p, h0, w0]
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        v = x[p, h, w]
                        if v > value or v != v:
                            value = v
                            best = h * width + w
                out[p, oh, ow] = value
                idx[p, oh, ow] = best
    return 0


@njit(cache=True)
def _avg_window3d(od, oh, ow, g, depth, height, width, count_include_pad, divisor_override):
    """(t0, t1, h0, h1, w0, w1, divisor) of an average pooling window (PyTorch's formula)."""
    t0, t1, tp = _avg_span(od, g[3], g[6], g[0], depth)
    h0, h1, hp = _avg_span(oh, g[4], g[7], g[1], height)
    w0, w1, wp = _avg_span(ow, g[5], g[8], g[2], width)
    if divisor_override != 0:
        divisor = divisor_override
    elif count_include_pad:
        divisor = tp * hp * wp
    else:
        divisor = (t1 - t0) * (h1 - h0) * (w1 - w0)
    return t0, t1, h0, h1, w0, w1, divisor


@njit(cache=True, nogil=True)
def _avg_pool3d(x, g, count_include_pad, divisor_override, out):
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    for p in range(x.shape[0]):
        for od in range(out.shape[1]):
            for oh in range(out.shape[2]):
                for ow in range(out.shape[3]):
                    t0, t1, h0, h1, w0, w1, divisor = _avg_window3d(
                        od, oh, ow, g, depth, height, width, count_include_pad,
                        divisor_override)
                    if t0 >= t1 or h0 >= h1 or w0 >= w1:
                        out[p, od, oh, ow] = 0
                        continue
                    total = x.dtype.type(0)
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                total += x[p, t, h, w]
                    out[p, od, oh, ow] = total / x.dtype.type(divisor)
    return 0


@njit(cache=True, nogil=True)
def _avg_pool3d_int(x, g, count_include_pad, divisor_override, out):
    """``_avg_pool3d`` for integers (the sum in int64, C++'s truncating division)."""
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    for p in range(x.shape[0]):
        for od in range(out.shape[1]):
            for oh in range(out.shape[2]):
                for ow in range(out.shape[3]):
                    t0, t1, h0, h1, w0, w1, divisor = _avg_window3d(
                        od, oh, ow, g, depth, height, width, count_include_pad,
                        divisor_override)
                    if t0 >= t1 or h0 >= h1 or w0 >= w1:
                        out[p, od, oh, ow] = 0
                        continue
                    total = 0
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                total += np.int64(x[p, t, h, w])
                    out[p, od, oh, ow] = _idivide(total, np.int64(divisor))
    return 0


@njit(cache=True, nogil=True)
def _avg_pool3d_backward(grad, g, count_include_pad, divisor_override, out):
    """``out`` (P, D, H, W) arrives zeroed: each output's gradient / its divisor is added to
    every input element of its window."""
    depth, height, width = out.shape[1], out.shape[2], out.shape[3]
    for p in range(grad.shape[0]):
        for od in range(grad.shape[1]):
            for oh in range(grad.shape[2]):
                for ow in range(grad.shape[3]):
                    t0, t1, h0, h1, w0, w1, divisor = _avg_window3d(
                        od, oh, ow, g, depth, height, width, count_include_pad,
                        divisor_override)
                    delta = grad[p, od, oh, ow] / grad.dtype.type(divisor)
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                out[p, t, h, w] += delta
    return 0


@njit(cache=True, nogil=True)
def _adaptive_avg_pool3d(x, out):
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    for p in range(x.shape[0]):
        for od in range(out.shape[1]):
            t0, t1 = _adaptive_span(od, depth, out.shape[1])
            for oh in range(out.shape[2]):
                h0, h1 = _adaptive_span(oh, height, out.shape[2])
                for ow in range(out.shape[3]):
                    w0, w1 = _adaptive_span(ow, width, out.shape[3])
                    total = x.dtype.type(0)
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                total += x[p, t, h, w]
                    out[p, od, oh, ow] = (total / x.dtype.type(t1 - t0) / x.dtype.type(h1 - h0)
                                          / x.dtype.type(w1 - w0))
    return 0


@njit(cache=True, nogil=True)
def _adaptive_avg_pool3d_backward(grad, out):
    """``out`` (P, D, H, W) arrives zeroed."""
    depth, height, width = out.shape[1], out.shape[2], out.shape[3]
    for p in range(grad.shape[0]):
        for od in range(grad.shape[1]):
            t0, t1 = _adaptive_span(od, depth, grad.shape[1])
            for oh in range(grad.shape[2]):
                h0, h1 = _adaptive_span(oh, height, grad.shape[2])
                for ow in range(grad.shape[3]):
                    w0, w1 = _adaptive_span(ow, width, grad.shape[3])
                    delta = (grad[p, od, oh, ow] / grad.dtype.type(t1 - t0)
                             / grad.dtype.type(h1 - h0) / grad.dtype.type(w1 - w0))
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                out[p, t, h, w] += delta
    return 0


@njit(cache=True, nogil=True)
def _scatter(grad, idx, out):
    """``out[p, idx[p, j]] += grad[p, j]`` (``out`` (P, H*W) arrives zeroed). An index outside
    the plane (a window that padding and dilation left empty) takes nothing."""
    size = out.shape[1]
    for p in range(grad.shape[0]):
        for j in range(grad.shape[1]):
            i = idx[p, j]
            if i >= 0 and i < size:
                out[p, i] += grad[p, j]
    return 0


@njit(cache=True)
def _gather(x, idx, out):
    """``out[p, j] = x[p, idx[p, j]]`` (0 for an index outside the plane)."""
    size = x.shape[1]
    for p in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            i = idx[p, j]
            out[p, j] = x[p, i] if i >= 0 and i < size else 0
    return 0


@njit(cache=True)
def _pad(x, top, left, mode, out):
    height, width = x.shape[1], x.shape[2]
    cols = np.empty(out.shape[2], np.int64)
    for ow in range(out.shape[2]):
        cols[ow] = pad_source(ow, width, left, mode)
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            h = pad_source(oh, height, top, mode)
            for ow in range(out.shape[2]):
                out[p, oh, ow] = x[p, h, cols[ow]]
    return 0


@njit(cache=True)
def _pad_backward(grad, top, left, mode, out):
    """``out`` (P, H, W) arrives zeroed."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            h = pad_source(oh, height, top, mode)
            for ow in range(grad.shape[2]):
                w = pad_source(ow, width, left, mode)
                out[p, h, w] += grad[p, oh, ow]
    return 0


# ---------------------------------------------------------------------- entry points
# One Python layer for 2-D and 3-D (``n``, the pooled dimensions, is the length of the sizes):
# the 2-D kernels take the geometry as scalars, the 3-D ones as an int64 array ``g``.
def _volumes(x: np.ndarray, n: int) -> np.ndarray:
    """``x`` (..., last ``n`` dimensions) as a C-contiguous (P, ...) array (IndexError for
    fewer dimensions, as PyTorch's)."""
    if x.ndim < n:
        raise IndexError("tuple index out of range")
    planes = 1
    for s in x.shape[:x.ndim - n]:
        planes *= s
    return np.ascontiguousarray(x).reshape((planes,) + tuple(x.shape[x.ndim - n:]))


def _geometry(*values):
    """The kernels' geometry arguments from the per-dimension tuples ``values``: scalars in 2-D,
    one int64 array in 3-D."""
    flat = tuple(int(v) for t in values for v in t)
    return flat if len(values[0]) == 2 else (np.array(flat, np.int64),)


def _max_pool_nd(n, x, kernel, stride, padding, dilation, out_size):
    v = _volumes(x, n)
    out = _pool.empty((v.shape[0],) + tuple(out_size), x.dtype)
    idx = _pool.empty(out.shape, np.int64)
    if out.size and n == 2 and tuple(kernel) == (2, 2) and tuple(stride) == (2, 2) and \
            tuple(padding) == (0, 0) and tuple(dilation) == (1, 1) and \
            2 * out.shape[1] <= v.shape[1] and 2 * out.shape[2] <= v.shape[2]:
        lowest = _lowest(x.dtype)  # (MaxPool2d(2): its windows unrolled)
        _on_planes(v.shape[0], v.size + out.size, lambda a, b: _max_pool_2x2(
            v[a:b], lowest, out[a:b], idx[a:b]))
    elif out.size:
        kernel_fn, geometry = (_max_pool if n == 2 else _max_pool3d), _geometry(
            kernel, stride, padding, dilation)
        lowest = _lowest(x.dtype)
        _on_planes(v.shape[0], v.size + out.size, lambda a, b: kernel_fn(
            v[a:b], *geometry, lowest, out[a:b], idx[a:b]))
    shape = x.shape[:x.ndim - n] + tuple(out_size)
    return out.reshape(shape), idx.reshape(shape)


_AVG = {(2, True): _avg_pool, (2, False): _avg_pool_int, (3, True): _avg_pool3d,
        (3, False): _avg_pool3d_int}
_AVG_BACKWARD = {(2, True): _avg_pool_backward, (2, False): _avg_pool_backward_int,
                 (3, True): _avg_pool3d_backward, (3, False): _avg_pool3d_backward}


def _avg(table, n, x, shape, kernel, stride, padding, count_include_pad, divisor_override,
         fill=np.empty):
    """Average pooling (``table`` ``_AVG``) or its gradient (``_AVG_BACKWARD``, ``fill``
    ``np.zeros``) of ``x``, a result of last ``n`` dimensions ``shape``."""
    v = _volumes(x, n)
    out = fill((v.shape[0],) + tuple(shape), x.dtype)
    if v.size and out.size:
        kernel_fn, geometry = table[n, x.dtype.kind == "f"], _geometry(kernel, stride, padding)
        options = (bool(count_include_pad), int(divisor_override))
        _on_planes(v.shape[0], v.size + out.size, lambda a, b: kernel_fn(
            v[a:b], *geometry, *options, out[a:b]))
    return out.reshape(x.shape[:x.ndim - n] + tuple(shape))


def _adaptive(kernel_fn, n, x, shape, fill=np.empty):
    v = _volumes(x, n)
    out = fill((v.shape[0],) + tuple(shape), x.dtype)
    if v.size and out.size:
        _on_planes(v.shape[0], v.size + out.size, lambda a, b: kernel_fn(v[a:b], out[a:b]))
    return out.reshape(x.shape[:x.ndim - n] + tuple(shape))


def max_pool2d(x, kernel, stride, padding, dilation, out_size):
    """(values, int64 indices into each plane) of max pooling ``x`` (..., H, W) to ``out_size``."""
    return _max_pool_nd(2, x, kernel, stride, padding, dilation, out_size)


def max_pool3d(x, kernel, stride, padding, dilation, out_size):
    """(values, int64 indices into each volume) of max pooling ``x`` (..., D, H, W)."""
    return _max_pool_nd(3, x, kernel, stride, padding, dilation, out_size)


def adaptive_max_pool2d(x, out_size):
    x3 = _planes(x)
    out = np.empty((x3.shape[0],) + tuple(out_size), x.dtype)
    idx = np.empty(out.shape, np.int64)
    if out.size:
        _adaptive_max_pool(x3, out, idx)
    shape = x.shape[:-2] + tuple(out_size)
    return out.reshape(shape), idx.reshape(shape)


def avg_pool2d(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    """Average pooling of ``x`` (..., H, W); ``divisor_override`` 0 for none."""
    return _avg(_AVG, 2, x, out_size, kernel, stride, padding, count_include_pad, divisor_override)


def avg_pool3d(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    """Average pooling of ``x`` (..., D, H, W); ``divisor_override`` 0 for none."""
    return _avg(_AVG, 3, x, out_size, kernel, stride, padding, count_include_pad, divisor_override)


def avg_pool2d_backward(grad, in_size, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """The gradient of ``avg_pool2d`` for an input of last dimensions ``in_size``."""
    return _avg(_AVG_BACKWARD, 2, grad, in_size, kernel, stride, padding, count_include_pad,
                divisor_override, np.zeros)


def avg_pool3d_backward(grad, in_size, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """The gradient of ``avg_pool3d`` for an input of last dimensions ``in_size``."""
    return _avg(_AVG_BACKWARD, 3, grad, in_size, kernel, stride, padding, count_include_pad,
                divisor_override, np.zeros)


def adaptive_avg_pool2d(x, out_size):
    return _adaptive(_adaptive_avg_pool, 2, x, out_size)


def adaptive_avg_pool3d(x, out_size):
    return _adaptive(_adaptive_avg_pool3d, 3, x, out_size)


def adaptive_avg_pool2d_backward(grad, in_size):
    return _adaptive(_adaptive_avg_pool_backward, 2, grad, in_size, np.zeros)


def adaptive_avg_pool3d_backward(grad, in_size):
    return _adaptive(_adaptive_avg_pool3d_backward, 3, grad, in_size, np.zeros)


def _flat_planes(a, n: int):
    """``a`` (..., last ``n`` dims) as a C-contiguous (P, prod(last n)) array."""
    size = 1
    for s in a.shape[a.ndim - n:]:
        size *= s
    lead = a.shape[:a.ndim - n]
    planes = 1
    for s in lead:
        planes *= s
    return np.ascontiguousarray(a).reshape(planes, size)


def max_pool_scatter(grad, indices, in_size):
    """The gradient of max pooling: ``grad`` (..., OH, OW) (3-D: (..., OD, OH, OW)) added at
    ``indices`` into zeroed planes of last dimensions ``in_size``."""
    n = len(in_size)
    g2 = _flat_planes(grad, n)
    i2 = _flat_planes(indices, n)
    size = 1
    for s in in_size:
        size *= int(s)
    out = _pool.zeros((g2.shape[0], size), grad.dtype)
    if g2.size:  # (on this thread: ``out``'s zeroed pages are first written here, and two
        # threads faulting them in took longer than one: the MNIST CNN's 64x64x24x24 float32,
        # 4.7 ms against 2.8 in a step (quiet), 3.4 against 1.6 alone (under load))
        _scatter(g2, i2, out)
    return out.reshape(grad.shape[:-n] + tuple(in_size))


def max_pool_gather(x, indices):
    """``x`` (..., H, W) read at ``indices`` (..., OH, OW) of each plane."""
    x2 = _flat_planes(x, 2)
    i2 = _flat_planes(indices, 2)
    out = np.empty(i2.shape, x.dtype)
    if i2.size:
        _gather(x2, i2, out)
    return out.reshape(indices.shape)


def pad2d(x, pads, mode: int):
    """``x`` (..., H, W) padded by ``pads`` = (left, right, top, bottom) by reflection
    (``REFLECT``) or replication (``REPLICATE``)."""
    left, right, top, bottom = pads
    x3 = _planes(x)
    oh = x3.shape[1] + top + bottom
    ow = x3.shape[2] + left + right
    out = np.empty((x3.shape[0], oh, ow), x.dtype)
    if out.size:
        _pad(x3, top, left, mode, out)
    return out.reshape(x.shape[:-2] + (oh, ow))


def pad2d_backward(grad, in_size, pads, mode: int):
    left, right, top, bottom = pads
    g3 = _planes(grad)
    out = np.zeros((g3.shape[0],) + tuple(in_size), grad.dtype)
    if g3.size:
        _pad_backward(g3, top, left, mode, out)
    return out.reshape(grad.shape[:-2] + tuple(in_size))
