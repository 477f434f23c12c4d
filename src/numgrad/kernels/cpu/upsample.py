"""Interpolation CPU kernels (``K.upsample``): ``F.interpolate``'s nearest, nearest-exact,
linear (linear, bilinear, trilinear) and bicubic modes, forward and backward, over the last one
to three dimensions of an array whose leading dimensions are planes.

Each mode is separable: for every spatial dimension, ``tables`` gives each output index its
source indices and weights (one tap for the nearest modes, two for linear, four for cubic),
computed as PyTorch's CPU kernels compute them (``area_pixel_compute_scale``,
``area_pixel_compute_source_index``, the cubic convolution coefficients with ``A = -0.75``), in
the input's precision (float32 for float32 inputs). The kernels then sum the taps, the last
dimension innermost (PyTorch's order); the backward scatters each output's gradient, times the
same weights, back to its sources. A 1-D or 2-D interpolation runs as 3-D on unit depth (and
height), with one tap of weight 1 there.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

NEAREST, NEAREST_EXACT, LINEAR, CUBIC = 0, 1, 2, 3  # the modes (ops/upsample.py passes them)


def _float(dtype):
    dtype = np.dtype(dtype)
    return dtype.type if dtype.kind == "f" else np.float32


def tables(in_size: int, out_size: int, mode: int, align_corners: bool, scale, dtype):
    """``(indices (out_size, taps) int64, weights (out_size, taps) of dtype)`` for one
    dimension; ``scale`` is the user's scale factor for it (None or a number)."""
    ft = _float(dtype)
    i = np.arange(out_size)
    if mode in (NEAREST, NEAREST_EXACT):
        s = np.float32(1.0 / scale) if scale is not None and scale > 0 else \
            np.float32(in_size) / np.float32(out_size)
        if mode == NEAREST:
            if out_size == in_size:
                src = i
            elif out_size == 2 * in_size:
                src = i >> 1
            else:
                src = np.floor(i.astype(np.float32) * s).astype(np.int64)
        else:
            src = np.floor(((i + 0.5) * np.float64(s)).astype(np.float32)).astype(np.int64)
        src = np.minimum(src, in_size - 1)
        return src.reshape(out_size, 1).astype(np.int64), np.ones((out_size, 1), dtype)
    if align_corners:
        ratio = ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0)
    else:
        ratio = ft(1.0 / scale) if scale is not None and scale > 0 else \
            ft(in_size) / ft(out_size)
    f = i.astype(ft)
    if align_corners:
        real = ratio * f
    else:
        real = ratio * (f + ft(0.5)) - ft(0.5)
        if mode == LINEAR:
            real = np.maximum(real, ft(0))
    real = real.astype(ft)
    index = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    lam = np.minimum(np.maximum(real - index.astype(ft), ft(0)), ft(1)).astype(ft)
    if mode == LINEAR:
        if out_size == in_size:  # (PyTorch's copy: both taps at the same index)
            index, lam = i.astype(np.int64), np.zeros(out_size, ft)
            idx = np.stack([index, index], 1)
        else:
            idx = np.stack([index, index + (index < in_size - 1)], 1)
        w = np.stack([ft(1) - lam, lam], 1)
        return idx.astype(np.int64), w.astype(dtype)
    a = ft(-0.75)

    def cc1(x):
        return ((a + ft(2)) * x - (a + ft(3))) * x * x + ft(1)

    def cc2(x):
        return ((a * x - ft(5) * a) * x + ft(8) * a) * x - ft(4) * a

    w = np.stack([cc2(lam + ft(1)), cc1(lam), cc1(ft(1) - lam), cc2(ft(2) - lam)], 1)
    idx = np.clip(index[:, None] - 1 + np.arange(4)[None, :], 0, in_size - 1)
    return idx.astype(np.int64), w.astype(dtype)


@njit(cache=True)
def _resample(x, id0, w0, id1, w1, id2, w2, out):
    """``out[p, i, j, k] = sum_a w0[i, a] * sum_b w1[j, b] * sum_c w2[k, c] * x[p, id0[i, a],
    id1[j, b], id2[k, c]]``: ``x`` (P, D, H, W), ``out`` (P, OD, OH, OW)."""
    for p in range(x.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                for k in range(out.shape[3]):
                    acc = out.dtype.type(0)
                    for a in range(id0.shape[1]):
                        plane = out.dtype.type(0)
                        for b in range(id1.shape[1]):
                            row = out.dtype.type(0)
                            src = x[p, id0[i, a], id1[j, b]]
                            for c in range(id2.shape[1]):
                                row += w2[k, c] * src[id2[k, c]]
                            plane += w1[j, b] * row
                        acc += w0[i, a] * plane
                    out[p, i, j, k] = acc


@njit(cache=True)
def _nearest(x, id0, id1, id2, out):
    """The one-tap case of ``_resample``: a copy of each output's source element."""
    for p in range(x.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                src = x[p, id0[i, 0], id1[j, 0]]
                dst = out[p, i, j]
                for k in range(out.shape[3]):
                    dst[k] = src[id2[k, 0]]


@njit(cache=True)
def _nearest_backward(grad, id0, id1, id2, out):
    """The adjoint of ``_nearest``: each gradient added at its source (``out`` zeroed)."""
    for p in range(grad.shape[0]):
        for i in range(grad.shape[1]):
            for j in range(grad.shape[2]):
                src = grad[p, i, j]
                dst = out[p, id0[i, 0], id1[j, 0]]
                for k in range(grad.shape[3]):
                    dst[id2[k, 0]] += src[k]


@njit(cache=True)
def _resample_backward(grad, id0, w0, id1, w1, id2, w2, out):
    """The adjoint of ``_resample``: ``out`` (P, D, H, W) arrives zeroed."""
    for p in range(grad.shape[0]):
        for i in range(grad.shape[1]):
            for j in range(grad.shape[2]):
                for k in range(grad.shape[3]):
                    g = grad[p, i, j, k]
                    for a in range(id0.shape[1]):
                        ga = w0[i, a] * g
                        for b in range(id1.shape[1]):
                            gb = w1[j, b] * ga
                            dst = out[p, id0[i, a], id1[j, b]]
                            for c in range(id2.shape[1]):
                                dst[id2[k, c]] += w2[k, c] * gb


@njit(cache=True)
def _bilinear(x, ih, wh, iw, ww, out):
    """``_resample`` for two taps along H and W (bilinear): ``x`` (P, H, W), ``out``
    (P, OH, OW); the same sums in the same order, unrolled."""
    for p in range(x.shape[0]):
        for i in range(out.shape[1]):
            r0 = x[p, ih[i, 0]]
            r1 = x[p, ih[i, 1]]
            l0 = wh[i, 0]
            l1 = wh[i, 1]
            dst = out[p, i]
            for k in range(out.shape[2]):
                c0 = iw[k, 0]
                c1 = iw[k, 1]
                m0 = ww[k, 0]
                m1 = ww[k, 1]
                dst[k] = l0 * (m0 * r0[c0] + m1 * r0[c1]) + l1 * (m0 * r1[c0] + m1 * r1[c1])


@njit(cache=True)
def _bilinear_backward(grad, ih, wh, iw, ww, out):
    """The adjoint of ``_bilinear``: ``out`` (P, H, W) arrives zeroed."""
    for p in range(grad.shape[0]):
        for i in range(grad.shape[1]):
            r0 = out[p, ih[i, 0]]
            r1 = out[p, ih[i, 1]]
            l0 = wh[i, 0]
            l1 = wh[i, 1]
            src = grad[p, i]
            for k in range(grad.shape[2]):
                c0 = iw[k, 0]
                c1 = iw[k, 1]
                m0 = ww[k, 0]
                m1 = ww[k, 1]
                g0 = l0 * src[k]
                g1 = l1 * src[k]
                r0[c0] += m0 * g0
                r0[c1] += m1 * g0
                r1[c0] += m0 * g1
                r1[c1] += m1 * g1


def _as_3d(shape, dims: int):
    """``shape`` (..., *spatial) as (P, D, H, W), the spatial sizes padded with ones."""
    lead = tuple(shape[:len(shape) - dims])
    planes = 1
    for s in lead:
        planes *= s
    return lead, (planes,) + (1,) * (3 - dims) + tuple(shape[len(shape) - dims:])


def _all_tables(in_sp, out_sp, mode, align_corners, scales, dtype):
    dims = len(in_sp)
    result = []
    for d in range(3 - dims):
        result += [np.zeros((1, 1), np.int64), np.ones((1, 1), dtype)]
    for d in range(dims):
        result += list(tables(in_sp[d], out_sp[d], mode, align_corners, scales[d], dtype))
    return result


def interpolate(x, out_size, mode, align_corners, scales):
    """``x`` (..., *spatial) resampled to ``(..., *out_size)`` (1 to 3 spatial dimensions);
    ``scales``: the user's scale factor per dimension (or None each). An integer ``x`` is a uint8
    image widened (PyTorch's only integer input of these modes): the nearest modes copy, bilinear
    and bicubic take PyTorch's fixed-point path (``interpolate_uint8``)."""
    if x.dtype.kind in "iu" and mode in (LINEAR, CUBIC):  # (uint8, widened: bilinear, bicubic)
        return interpolate_uint8(x, out_size, mode == CUBIC, False, align_corners, scales)
    dims = len(out_size)
    lead, shape3 = _as_3d(x.shape, dims)
    a = np.ascontiguousarray(x).reshape(shape3)
    out = np.empty((shape3[0],) + (1,) * (3 - dims) + tuple(out_size), x.dtype)
    t = _all_tables(tuple(x.shape[-dims:]), tuple(out_size), mode, align_corners, scales,
                    x.dtype)
    if out.size:
        if mode in (NEAREST, NEAREST_EXACT):
            _nearest(a, t[0], t[2], t[4], out)
        elif mode == LINEAR and dims == 2:
            _bilinear(a[:, 0], t[2], t[3], t[4], t[5], out[:, 0])
        else:
            _resample(a, *t, out)
    return out.reshape(lead + tuple(out_size))


def interpolate_backward(grad, in_size, mode, align_corners, scales):
    """The gradient of ``interpolate`` with respect to its input of spatial size ``in_size``."""
    dims = len(in_size)
    lead, shape3 = _as_3d(grad.shape, dims)
    g = np.ascontiguousarray(grad).reshape(shape3)
    out = np.zeros((shape3[0],) + (1,) * (3 - dims) + tuple(in_size), grad.dtype)
    t = _all_tables(tuple(in_size), tuple(grad.shape[-dims:]), mode, align_corners, scales,
                    grad.dtype)
    if out.size and g.size:
        if mode in (NEAREST, NEAREST_EXACT):
            _nearest_backward(g, t[0], t[2], t[4], out)
        elif mode == LINEAR and dims == 2:
            _bilinear_backward(g[:, 0], t[2], t[3], t[4], t[5], out[:, 0])
        else:
            _resample_backward(g, *t, out)
    return out.reshape(lead + tuple(in_size))


# ---------------------------------------------------------------------- anti-aliased
def aa_tables(in_size: int, out_size: int, align_corners: bool, scale, dtype,
              cubic: bool = False):
    """``(first (out_size,) int64, count (out_size,) int64, weights (out_size, width))`` of
    anti-aliased bilinear (bicubic) interpolation along one dimension, PyTorch's (Pillow's):
    output ``i`` averages the ``count[i]`` inputs from ``first[i]`` under a triangle (Keys'
    cubic, ``a = -0.5``) centred at ``s (i + 1/2)``, stretched by ``s`` when shrinking, its
    weights normalised."""
    if align_corners:
        s = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
    half = 2.0 if cubic else 1.0  # (half the filter's taps: its support at scale 1)
    support, inv = (half * s, 1.0 / s) if s >= 1.0 else (half, 1.0)
    width = int(np.ceil(support)) * 2 + 1
    first = np.zeros(out_size, np.int64)
    count = np.zeros(out_size, np.int64)
    weights = np.zeros((out_size, width))
    for i in range(out_size):
        center = s * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)  # (int(): C's truncation, as PyTorch's)
        n = min(max(min(int(center + support + 0.5), in_size) - lo, 0), width)
        w = np.array([_kernel_weight((j + lo - center + 0.5) * inv, cubic, -0.5)
                      for j in range(n)])
        total = w.sum()
        first[i], count[i], weights[i, :n] = lo, n, w / total if total != 0.0 else w
    return first, count, weights.astype(_float(dtype))


@njit(cache=True)
def _aa_rows(x, first, count, w, out):
    """``out[r, i] = sum_j w[i, j] x[r, first[i] + j]`` (j < count[i]) for each row ``r``."""
    for r in range(x.shape[0]):
        for i in range(out.shape[1]):
            acc = x.dtype.type(0)
            for j in range(count[i]):
                acc += w[i, j] * x[r, first[i] + j]
            out[r, i] = acc


@njit(cache=True)
def _aa_rows_adjoint(g, first, count, w, out):
    """``out[r, first[i] + j] += w[i, j] g[r, i]``: ``_aa_rows``'s adjoint (``out`` zeros)."""
    for r in range(g.shape[0]):
        for i in range(g.shape[1]):
            for j in range(count[i]):
                out[r, first[i] + j] += w[i, j] * g[r, i]


def _aa_pass(x, table, size: int, adjoint: bool):
    """One separable pass over the last dimension of ``x``, to ``size`` there."""
    first, count, w = table
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = (np.zeros if adjoint else np.empty)((rows.shape[0], size), x.dtype)
    if out.size and rows.size:
        (_aa_rows_adjoint if adjoint else _aa_rows)(rows, first, count, w, out)
    return out.reshape(x.shape[:-1] + (size,))


def _aa_both(x, sizes, tables, adjoint: bool):
    """Along W, then H (PyTorch's order), each pass skipped where ``tables`` has None (a new
    array all the same: the result never shares the input's memory)."""
    if tables == [None, None]:
        return np.array(x, order="C", copy=True)
    if tables[1] is not None:
        x = _aa_pass(x, tables[1], sizes[1], adjoint)
    if tables[0] is not None:
        x = np.swapaxes(_aa_pass(np.swapaxes(x, -1, -2), tables[0], sizes[0], adjoint), -1, -2)
    return np.ascontiguousarray(x)


def interpolate_aa(x, out_size, align_corners, scales, cubic=False):
    """Anti-aliased bilinear (``cubic``: bicubic) interpolation of ``x`` (..., H, W) to
    ``out_size``, a pass skipped where the size does not change, as PyTorch's (whatever the
    scale factor); an integer ``x`` is a uint8 image widened (``interpolate_uint8``)."""
    if x.dtype.kind in "iu":
        return interpolate_uint8(x, out_size, cubic, True, align_corners, scales)
    tables = [None if i == o else aa_tables(i, o, align_corners, s, x.dtype, cubic)
              for i, o, s in zip(x.shape[-2:], out_size, scales)]
    return _aa_both(x, tuple(out_size), tables, False)


def interpolate_aa_backward(grad, in_size, align_corners, scales, cubic=False):
    """The gradient of ``interpolate_aa`` with respect to its input of size ``in_size``:
    PyTorch's (each output's window, no pass skipped)."""
    tables = [aa_tables(i, o, align_corners, s, grad.dtype, cubic)
              for i, o, s in zip(in_size, grad.shape[-2:], scales)]
    return _aa_both(grad, tuple(in_size), tables, True)


# ---------------------------------------------------------------------- uint8 images
# PyTorch resizes a uint8 image (bilinear, bicubic, with or without antialias) as Pillow does, in
# fixed point: per dimension, each output's weights over its window of inputs are computed in
# double, scaled by 2**precision and rounded to int16 (``precision`` as large as the largest
# weight allows); the sum of pixel times weight, plus half of 2**precision, is shifted right by
# ``precision`` and clamped to [0, 255]. Width first, then height, each pass rounded to uint8
# and skipped where the size does not change. The arrays here are that image widened to int32.
def _scale(in_size: int, out_size: int, align_corners: bool, scale) -> float:
    """PyTorch's ``area_pixel_compute_scale`` in double."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _kernel_weight(x: float, cubic: bool, a: float) -> float:
    """The triangle (bilinear) or Keys' cubic with parameter ``a`` (bicubic), at ``x``."""
    x = abs(x)
    if not cubic:
        return 1.0 - x if x < 1.0 else 0.0
    if x < 1.0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2.0:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def uint8_tables(in_size: int, out_size: int, cubic: bool, antialias: bool,
                 align_corners: bool, scale):
    """``(first, count, weights (out_size, width) int64, precision)`` of one dimension: output
    ``i`` is ``(sum_j weights[i, j] x[first[i] + j] + 2**(precision - 1)) >> precision``
    (``j < count[i]``), clamped. Antialias: the filter (Keys' ``a = -0.5`` for bicubic) stretched
    by the scale when shrinking, normalised; else the interpolation's own taps (``a = -0.75``),
    those outside the input added to the nearest inside, as the float kernels clamp the index."""
    s = _scale(in_size, out_size, align_corners, scale)
    taps = 4 if cubic else 2
    a = -0.5 if antialias else -0.75
    if antialias:
        support = taps * 0.5 * s if s >= 1.0 else taps * 0.5
        width = int(math.ceil(support)) * 2 + 1
        inv = 1.0 / s if s >= 1.0 else 1.0
    else:
        half = taps // 2
        width = taps
    first = np.zeros(out_size, np.int64)
    count = np.zeros(out_size, np.int64)
    w = np.zeros((out_size, width))
    w_max = 0.0
    for i in range(out_size):
        if antialias:
            center = s * (i + 0.5)
            lo = max(int(center - support + 0.5), 0)  # (int(): C's truncation, as PyTorch's)
            n = min(max(min(int(center + support + 0.5), in_size) - lo, 0), width)
            total = 0.0
            for j in range(n):
                w[i, j] = _kernel_weight((j + lo - center + 0.5) * inv, cubic, a)
                total += w[i, j]
            if total != 0.0:
                for j in range(n):
                    w[i, j] /= total
                    w_max = max(w_max, w[i, j])
        else:
            real = s * i if align_corners else s * (i + 0.5) - 0.5
            if not cubic and real < 0.0:
                real = 0.0
            index = min(math.floor(np.float32(real)), in_size - 1)  # (C's floorf)
            lam = min(max(real - index, 0.0), 1.0)
            lo_unbound = index - half + 1
            lo = max(lo_unbound, 0)
            n = min(max(min(index + half + 1, in_size) - lo, 0), width)
            k = 0
            for j in range(taps):  # (taps outside the input: onto the first or last inside)
                if lo_unbound + j <= 0:
                    k = 0
                elif lo_unbound + j >= in_size - 1:
                    k = n - 1
                w[i, k] += _kernel_weight(float(j + 1 - half) - lam, cubic, a)
                w_max = max(w_max, w[i, k])
                k += 1
        first[i], count[i] = lo, n
    precision = 0
    while precision < 22 and int(0.5 + w_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = w * (1 << precision)
    weights = np.trunc(np.where(v < 0, v - 0.5, v + 0.5)).astype(np.int64)
    return first, count, weights, precision


@njit(cache=True)
def _uint8_rows(x, first, count, w, precision, out):
    """``out[r, i]``: row ``r`` of ``x`` convolved as ``uint8_tables`` says, rounded, clamped."""
    half = 1 << (precision - 1)
    for r in range(x.shape[0]):
        for i in range(out.shape[1]):
            acc = half
            for j in range(count[i]):
                acc += x[r, first[i] + j] * w[i, j]
            v = acc >> precision
            out[r, i] = 0 if v < 0 else (255 if v > 255 else v)


def _uint8_pass(x, table, size: int):
    first, count, w, precision = table
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty((rows.shape[0], size), x.dtype)
    if out.size:
        _uint8_rows(rows, first, count, w, precision, out)
    return out.reshape(x.shape[:-1] + (size,))


def interpolate_uint8(x, out_size, cubic: bool, antialias: bool, align_corners: bool, scales):
    """A uint8 image ``x`` (..., H, W; widened) resized to ``out_size`` by bilinear (bicubic)
    interpolation, with or without antialias, as PyTorch's CPU kernels: in fixed point, along W,
    then H, each pass rounded to uint8, a pass skipped where the size does not change."""
    h, w = x.shape[-2:]
    oh, ow = (int(v) for v in out_size)
    out = x
    if ow != w:
        out = _uint8_pass(out, uint8_tables(w, ow, cubic, antialias, align_corners, scales[1]), ow)
    if oh != h:
        t = uint8_tables(h, oh, cubic, antialias, align_corners, scales[0])
        out = np.swapaxes(_uint8_pass(np.swapaxes(out, -1, -2), t, oh), -1, -2)
    return np.array(out, order="C", copy=True) if out is x else np.ascontiguousarray(out)
