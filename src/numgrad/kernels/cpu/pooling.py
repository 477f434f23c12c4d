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

REFLECT, REPLICATE = 0, 1  # padding modes


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


@njit(cache=True)
def _max_pool(x, kh, kw, sh, sw, ph, pw, dh, dw, lowest, out, idx):
    """``lowest`` is -inf (the smallest integer for integers): a window that the padding and the
    dilation leave empty gives it, with the index of its first position, as PyTorch's."""
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            h0 = oh * sh - ph
            h1 = min(h0 + (kh - 1) * dh + 1, height)
            while h0 < 0:
                h0 += dh
            for ow in range(out.shape[2]):
                w0 = ow * sw - pw
                w1 = min(w0 + (kw - 1) * dw + 1, width)
                while w0 < 0:
                    w0 += dw
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


@njit(cache=True)
def _adaptive_max_pool(x, out, idx):
    height, width = x.shape[1], x.shape[2]
    oheight, owidth = out.shape[1], out.shape[2]
    for p in range(x.shape[0]):
        for oh in range(oheight):
            h0 = (oh * height) // oheight
            h1 = -((-(oh + 1) * height) // oheight)
            for ow in range(owidth):
                w0 = (ow * width) // owidth
                w1 = -((-(ow + 1) * width) // owidth)
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
def _idivide(total, divisor):
    q = abs(total) // abs(divisor)
    return q if (total >= 0) == (divisor >= 0) else -q


@njit(cache=True)
def _avg_pool(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override, out):
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            for ow in range(out.shape[2]):
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


@njit(cache=True)
def _avg_pool_int(x, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override, out):
    """``_avg_pool`` for integer inputs (C++'s truncating division, in int64)."""
    height, width = x.shape[1], x.shape[2]
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            for ow in range(out.shape[2]):
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
                total = 0
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        total += np.int64(x[p, h, w])
                out[p, oh, ow] = _idivide(total, np.int64(divisor))
    return 0


@njit(cache=True)
def _avg_pool_backward(grad, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override, out):
    """``out`` (P, H, W) arrives zeroed: each output's gradient / its divisor is added to every
    input element of its window."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            for ow in range(grad.shape[2]):
                h0 = oh * sh - ph
                w0 = ow * sw - pw
                h1 = min(h0 + kh, height + ph)
                w1 = min(w0 + kw, width + pw)
                pool_size = (h1 - h0) * (w1 - w0)
                h0 = max(h0, 0)
                w0 = max(w0, 0)
                h1 = min(h1, height)
                w1 = min(w1, width)
                if divisor_override != 0:
                    divisor = divisor_override
                elif count_include_pad:
                    divisor = pool_size
                else:
                    divisor = (h1 - h0) * (w1 - w0)
                delta = grad[p, oh, ow] / grad.dtype.type(divisor)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        out[p, h, w] += delta
    return 0


@njit(cache=True)
def _avg_pool_backward_int(grad, kh, kw, sh, sw, ph, pw, count_include_pad, divisor_override,
                           out):
    """``_avg_pool_backward`` for int64 gradients (each share divided as C++, truncating)."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            for ow in range(grad.shape[2]):
                h0 = oh * sh - ph
                w0 = ow * sw - pw
                h1 = min(h0 + kh, height + ph)
                w1 = min(w0 + kw, width + pw)
                pool_size = (h1 - h0) * (w1 - w0)
                h0 = max(h0, 0)
                w0 = max(w0, 0)
                h1 = min(h1, height)
                w1 = min(w1, width)
                if divisor_override != 0:
                    divisor = divisor_override
                elif count_include_pad:
                    divisor = pool_size
                else:
                    divisor = (h1 - h0) * (w1 - w0)
                delta = _idivide(np.int64(grad[p, oh, ow]), np.int64(divisor))
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        out[p, h, w] += delta
    return 0


@njit(cache=True)
def _adaptive_avg_pool(x, out):
    height, width = x.shape[1], x.shape[2]
    oheight, owidth = out.shape[1], out.shape[2]
    for p in range(x.shape[0]):
        for oh in range(oheight):
            h0 = (oh * height) // oheight
            h1 = -((-(oh + 1) * height) // oheight)
            for ow in range(owidth):
                w0 = (ow * width) // owidth
                w1 = -((-(ow + 1) * width) // owidth)
                total = x.dtype.type(0)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        total += x[p, h, w]
                out[p, oh, ow] = total / x.dtype.type(h1 - h0) / x.dtype.type(w1 - w0)
    return 0


@njit(cache=True)
def _adaptive_avg_pool_backward(grad, out):
    """``out`` (P, H, W) arrives zeroed."""
    height, width = out.shape[1], out.shape[2]
    oheight, owidth = grad.shape[1], grad.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(oheight):
            h0 = (oh * height) // oheight
            h1 = -((-(oh + 1) * height) // oheight)
            for ow in range(owidth):
                w0 = (ow * width) // owidth
                w1 = -((-(ow + 1) * width) // owidth)
                delta = grad[p, oh, ow] / grad.dtype.type(h1 - h0) / grad.dtype.type(w1 - w0)
                for h in range(h0, h1):
                    for w in range(w0, w1):
                        out[p, h, w] += delta
    return 0


@njit(cache=True)
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
def _source(j, size, pad, mode):
    """The input position that output position ``j`` copies along a dimension of ``size``
    padded by ``pad`` before it (PyTorch's formula; a negative ``pad`` crops)."""
    if j < pad:
        i = pad * 2 - j if mode == 0 else pad
    elif j < size + pad:
        i = j
    else:
        i = (size + pad - 1) * 2 - j if mode == 0 else size + pad - 1
    return i - max(pad, 0) + max(-pad, 0)


@njit(cache=True)
def _pad(x, top, left, mode, out):
    height, width = x.shape[1], x.shape[2]
    cols = np.empty(out.shape[2], np.int64)
    for ow in range(out.shape[2]):
        cols[ow] = _source(ow, width, left, mode)
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            h = _source(oh, height, top, mode)
            for ow in range(out.shape[2]):
                out[p, oh, ow] = x[p, h, cols[ow]]
    return 0


@njit(cache=True)
def _pad_backward(grad, top, left, mode, out):
    """``out`` (P, H, W) arrives zeroed."""
    height, width = out.shape[1], out.shape[2]
    for p in range(grad.shape[0]):
        for oh in range(grad.shape[1]):
            h = _source(oh, height, top, mode)
            for ow in range(grad.shape[2]):
                w = _source(ow, width, left, mode)
                out[p, h, w] += grad[p, oh, ow]
    return 0


# ---------------------------------------------------------------------- 3-D pooling kernels
# The same loops with a depth, on (P, D, H, W) volumes (PyTorch's 3-D CPU kernels): the max
# index is into the volume (``(d * H + h) * W + w``); ``g`` holds the geometry (kd, kh, kw, sd,
# sh, sw, pd, ph, pw, dd, dh, dw).
@njit(cache=True)
def _max_pool3d(x, g, lowest, out, idx):
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
def _avg_window3d(od, oh, ow, g, depth, height, width, count_include_pad, divisor_override):
    """(t0, t1, h0, h1, w0, w1, divisor) of an average pooling window (PyTorch's formula)."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8]
    t0 = od * sd - pd
    h0 = oh * sh - ph
    w0 = ow * sw - pw
    t1 = min(t0 + kd, depth + pd)
    h1 = min(h0 + kh, height + ph)
    w1 = min(w0 + kw, width + pw)
    pool_size = (t1 - t0) * (h1 - h0) * (w1 - w0)
    t0 = max(t0, 0)
    h0 = max(h0, 0)
    w0 = max(w0, 0)
    t1 = min(t1, depth)
    h1 = min(h1, height)
    w1 = min(w1, width)
    if divisor_override != 0:
        divisor = divisor_override
    elif count_include_pad:
        divisor = pool_size
    else:
        divisor = (t1 - t0) * (h1 - h0) * (w1 - w0)
    return t0, t1, h0, h1, w0, w1, divisor


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _avg_pool3d_backward(grad, g, count_include_pad, divisor_override, out):
    """``out`` (P, D, H, W) arrives zeroed."""
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


@njit(cache=True)
def _adaptive_avg_pool3d(x, out):
    depth, height, width = x.shape[1], x.shape[2], x.shape[3]
    od_, oh_, ow_ = out.shape[1], out.shape[2], out.shape[3]
    for p in range(x.shape[0]):
        for od in range(od_):
            t0 = (od * depth) // od_
            t1 = -((-(od + 1) * depth) // od_)
            for oh in range(oh_):
                h0 = (oh * height) // oh_
                h1 = -((-(oh + 1) * height) // oh_)
                for ow in range(ow_):
                    w0 = (ow * width) // ow_
                    w1 = -((-(ow + 1) * width) // ow_)
                    total = x.dtype.type(0)
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                total += x[p, t, h, w]
                    out[p, od, oh, ow] = (total / x.dtype.type(t1 - t0) / x.dtype.type(h1 - h0)
                                          / x.dtype.type(w1 - w0))
    return 0


@njit(cache=True)
def _adaptive_avg_pool3d_backward(grad, out):
    """``out`` (P, D, H, W) arrives zeroed."""
    depth, height, width = out.shape[1], out.shape[2], out.shape[3]
    od_, oh_, ow_ = grad.shape[1], grad.shape[2], grad.shape[3]
    for p in range(grad.shape[0]):
        for od in range(od_):
            t0 = (od * depth) // od_
            t1 = -((-(od + 1) * depth) // od_)
            for oh in range(oh_):
                h0 = (oh * height) // oh_
                h1 = -((-(oh + 1) * height) // oh_)
                for ow in range(ow_):
                    w0 = (ow * width) // ow_
                    w1 = -((-(ow + 1) * width) // ow_)
                    delta = (grad[p, od, oh, ow] / grad.dtype.type(t1 - t0)
                             / grad.dtype.type(h1 - h0) / grad.dtype.type(w1 - w0))
                    for t in range(t0, t1):
                        for h in range(h0, h1):
                            for w in range(w0, w1):
                                out[p, t, h, w] += delta
    return 0


# ---------------------------------------------------------------------- entry points
def max_pool2d(x, kernel, stride, padding, dilation, out_size):
    """(values, int64 indices into each plane) of max pooling ``x`` (..., H, W) to ``out_size``."""
    x3 = _planes(x)
    lead = x.shape[:-2]
    out = np.empty((x3.shape[0],) + tuple(out_size), x.dtype)
    idx = np.empty(out.shape, np.int64)
    if out.size:
        _max_pool(x3, kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1],
                  dilation[0], dilation[1], _lowest(x.dtype), out, idx)
    shape = lead + tuple(out_size)
    return out.reshape(shape), idx.reshape(shape)


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
    x3 = _planes(x)
    out = np.empty((x3.shape[0],) + tuple(out_size), x.dtype)
    if out.size:
        kernel_fn = _avg_pool if x.dtype.kind == "f" else _avg_pool_int
        kernel_fn(x3, kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1],
                  bool(count_include_pad), int(divisor_override), out)
    return out.reshape(x.shape[:-2] + tuple(out_size))


def avg_pool2d_backward(grad, in_size, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """The gradient of ``avg_pool2d`` for an input of last dimensions ``in_size``."""
    g3 = _planes(grad)
    out = np.zeros((g3.shape[0],) + tuple(in_size), grad.dtype)
    if g3.size:
        kernel_fn = _avg_pool_backward if grad.dtype.kind == "f" else _avg_pool_backward_int
        kernel_fn(g3, kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1],
                  bool(count_include_pad), int(divisor_override), out)
    return out.reshape(grad.shape[:-2] + tuple(in_size))


def adaptive_avg_pool2d(x, out_size):
    x3 = _planes(x)
    out = np.empty((x3.shape[0],) + tuple(out_size), x.dtype)
    if out.size:
        _adaptive_avg_pool(x3, out)
    return out.reshape(x.shape[:-2] + tuple(out_size))


def adaptive_avg_pool2d_backward(grad, in_size):
    g3 = _planes(grad)
    out = np.zeros((g3.shape[0],) + tuple(in_size), grad.dtype)
    if g3.size:
        _adaptive_avg_pool_backward(g3, out)
    return out.reshape(grad.shape[:-2] + tuple(in_size))


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
    out = np.zeros((g2.shape[0], size), grad.dtype)
    if g2.size:
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


def _volumes(x: np.ndarray) -> np.ndarray:
    """``x`` (..., D, H, W) as a C-contiguous (P, D, H, W) array."""
    planes = 1
    for s in x.shape[:-3]:
        planes *= s
    return np.ascontiguousarray(x).reshape((planes,) + tuple(x.shape[-3:]))


def _geometry3d(kernel, stride, padding, dilation=(1, 1, 1)):
    return np.array(tuple(kernel) + tuple(stride) + tuple(padding) + tuple(dilation), np.int64)


def max_pool3d(x, kernel, stride, padding, dilation, out_size):
    """(values, int64 indices into each volume) of max pooling ``x`` (..., D, H, W)."""
    x4 = _volumes(x)
    out = np.empty((x4.shape[0],) + tuple(out_size), x.dtype)
    idx = np.empty(out.shape, np.int64)
    if out.size:
        _max_pool3d(x4, _geometry3d(kernel, stride, padding, dilation), _lowest(x.dtype), out,
                    idx)
    shape = x.shape[:-3] + tuple(out_size)
    return out.reshape(shape), idx.reshape(shape)


def avg_pool3d(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    """Average pooling of ``x`` (..., D, H, W); ``divisor_override`` 0 for none."""
    x4 = _volumes(x)
    out = np.empty((x4.shape[0],) + tuple(out_size), x.dtype)
    if out.size:
        kernel_fn = _avg_pool3d if x.dtype.kind == "f" else _avg_pool3d_int
        kernel_fn(x4, _geometry3d(kernel, stride, padding), bool(count_include_pad),
                  int(divisor_override), out)
    return out.reshape(x.shape[:-3] + tuple(out_size))


def avg_pool3d_backward(grad, in_size, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """The gradient of ``avg_pool3d`` for an input of last dimensions ``in_size``."""
    g4 = _volumes(grad)
    out = np.zeros((g4.shape[0],) + tuple(in_size), grad.dtype)
    if g4.size:
        _avg_pool3d_backward(g4, _geometry3d(kernel, stride, padding), bool(count_include_pad),
                             int(divisor_override), out)
    return out.reshape(grad.shape[:-3] + tuple(in_size))


def adaptive_avg_pool3d(x, out_size):
    x4 = _volumes(x)
    out = np.empty((x4.shape[0],) + tuple(out_size), x.dtype)
    if out.size:
        _adaptive_avg_pool3d(x4, out)
    return out.reshape(x.shape[:-3] + tuple(out_size))


def adaptive_avg_pool3d_backward(grad, in_size):
    g4 = _volumes(grad)
    out = np.zeros((g4.shape[0],) + tuple(in_size), grad.dtype)
    if g4.size:
        _adaptive_avg_pool3d_backward(g4, out)
    return out.reshape(grad.shape[:-3] + tuple(in_size))


# Interpolation (``F.interpolate``) lives in upsample.py and is reached as ``K.pooling.*``, the
# module ``numgrad.compile``'s tracer records.
from .upsample import interpolate, interpolate_backward  # noqa: E402,F401
