"""Convolution CPU kernels (``K.conv``): im2col (unfold) into a BLAS matrix product, forward and
backward, for 2-D and 3-D convolutions (1-D ones arrive as 2-D on a unit height). A 3-D
convolution (5-D arrays, ``padding`` six numbers, ``stride`` and ``dilation`` triples) goes
through ``_im2col3`` / ``_col2im3``, the same loops with a depth; transposed convolutions are
``conv_backward_input`` (their forward) and the other two (their gradients), composed in
``ops/conv.py``.

Shapes: input ``(N, C, H, W)``, weight ``(O, C // groups, kh, kw)``, output ``(N, O, oh, ow)``;
``padding`` is ``(top, bottom, left, right)`` (PyTorch's 'same' can need one more on the far
side), ``stride`` and ``dilation`` are ``(h, w)`` pairs. The columns are channel-major,
``(C * kh * kw, N * oh * ow)``, so each group's rows are one contiguous block and each product
is one GEMM per group over the whole batch:

- forward: ``out[g] = W[g] @ cols[g]`` (``(O/G, C/G*kh*kw) @ (C/G*kh*kw, N*oh*ow)``), then one
  pass that writes ``(O, N, L)`` as ``(N, O, L)`` and adds the bias;
- grad of the weight: ``grad[g] @ cols[g].T``, with the gradient laid out as ``(O, N*L)``;
- grad of the input: ``W[g].T @ grad[g]``, folded back (col2im, accumulating overlaps).

Measured against direct loops on the small CNN of benchmarks/conv.py (batch 64, 1→16→32
channels, 8×8 images, 3×3 kernels, padding 1), im2col into BLAS was faster for forward and
backward (the figures are in that script's docstring), so it is the one kept.

Integer dtypes go through the same code (NumPy's integer matmul instead of BLAS), as PyTorch's
CPU convolution accepts them.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .elementwise import PARALLEL_THRESHOLD, _threaded


@njit(cache=True, inline="always")
def _im2col_row(x, r, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, row):
    """Row ``r`` of the columns: ``row[n*oh*ow + y*ow + z] = x[n, c, y*sh - pt + i*dh, z*sw - pl
    + j*dw]`` (0 outside ``x``) for ``r = (c*kh + i)*kw + j``. The outputs ``z`` that read inside
    the row are found once per kernel column (``z0 <= z < z1``), so the copy has no test per
    element."""
    n_batch, channels, height, width = x.shape
    length = oh * ow
    c = r // (kh * kw)
    i = (r // kw) % kh
    j = r % kw
    shift = j * dw - pl
    z0 = min(ow, max(0, -((shift) // sw)))  # (the first z with z*sw + shift >= 0)
    z1 = max(z0, min(ow, -((shift - width) // sw)))  # (the first z with z*sw + shift >= width)
    for n in range(n_batch):
        base = n * length
        for y in range(oh):
            iy = y * sh - pt + i * dh
            at = base + y * ow
            if iy < 0 or iy >= height:
                for z in range(ow):
                    row[at + z] = 0
                continue
            src = x[n, c, iy]
            for z in range(z0):
                row[at + z] = 0
            for z in range(z0, z1):
                row[at + z] = src[z * sw + shift]
            for z in range(z1, ow):
                row[at + z] = 0


@njit(cache=True)
def _im2col(x, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols):
    """The columns of C-contiguous ``x`` ``(N, C, H, W)``: ``cols`` ``(C*kh*kw, N*oh*ow)``, a
    row each (``_im2col_row``)."""
    for r in range(cols.shape[0]):
        _im2col_row(x, r, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols[r])


@njit(cache=True, parallel=True)
def _im2col_parallel(x, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols):
    """``_im2col`` with its rows on Numba's threads (large float inputs)."""
    for r in prange(cols.shape[0]):
        _im2col_row(x, r, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols[r])


@njit(cache=True)
def _col2im(cols, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, out):
    """The adjoint of ``_im2col``: ``out`` (zeroed, ``(N, C, H, W)``) accumulates each column
    entry at the input position it was read from."""
    n_batch, channels, height, width = out.shape
    length = oh * ow
    for c in range(channels):
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
                for n in range(n_batch):
                    base = n * length
                    for y in range(oh):
                        iy = y * sh - pt + i * dh
                        if iy < 0 or iy >= height:
                            continue
                        dst = out[n, c, iy]
                        at = base + y * ow
                        for z in range(ow):
                            ix = z * sw - pl + j * dw
                            if 0 <= ix < width:
                                dst[ix] += row[at + z]


@njit(cache=True)
def _im2col3(x, kd, kh, kw, sd, sh, sw, pf, pt, pl, dd, dh, dw, od, oh, ow, cols):
    """``_im2col`` with a depth: ``cols[((c*kd + a)*kh + i)*kw + j, n*od*oh*ow + (t*oh + y)*ow
    + z] = x[n, c, t*sd - pf + a*dd, y*sh - pt + i*dh, z*sw - pl + j*dw]`` (0 outside)."""
    n_batch, channels, depth, height, width = x.shape
    length = od * oh * ow
    for c in range(channels):
        for a in range(kd):
            for i in range(kh):
                for j in range(kw):
                    row = cols[((c * kd + a) * kh + i) * kw + j]
                    for n in range(n_batch):
                        for t in range(od):
                            it = t * sd - pf + a * dd
                            for y in range(oh):
                                iy = y * sh - pt + i * dh
                                at = n * length + (t * oh + y) * ow
                                if it < 0 or it >= depth or iy < 0 or iy >= height:
                                    for z in range(ow):
                                        row[at + z] = 0
                                    continue
                                src = x[n, c, it, iy]
                                for z in range(ow):
                                    ix = z * sw - pl + j * dw
                                    if 0 <= ix < width:
                                        row[at + z] = src[ix]
                                    else:
                                        row[at + z] = 0


@njit(cache=True)
def _col2im3(cols, kd, kh, kw, sd, sh, sw, pf, pt, pl, dd, dh, dw, od, oh, ow, out):
    """The adjoint of ``_im2col3``: ``out`` (zeroed, ``(N, C, D, H, W)``) accumulates."""
    n_batch, channels, depth, height, width = out.shape
    length = od * oh * ow
    for c in range(channels):
        for a in range(kd):
            for i in range(kh):
                for j in range(kw):
                    row = cols[((c * kd + a) * kh + i) * kw + j]
                    for n in range(n_batch):
                        for t in range(od):
                            it = t * sd - pf + a * dd
                            if it < 0 or it >= depth:
                                continue
                            for y in range(oh):
                                iy = y * sh - pt + i * dh
                                if iy < 0 or iy >= height:
                                    continue
                                dst = out[n, c, it, iy]
                                at = n * length + (t * oh + y) * ow
                                for z in range(ow):
                                    ix = z * sw - pl + j * dw
                                    if 0 <= ix < width:
                                        dst[ix] += row[at + z]


@njit(cache=True)
def _to_batch_major(src, bias, out):
    """``out[n, o, l] = src[o, n, l] (+ bias[o])``; ``bias`` has 0 or O elements."""
    n_out, n_batch, length = src.shape
    with_bias = bias.shape[0] > 0
    for n in range(n_batch):
        for o in range(n_out):
            b = bias[o] if with_bias else src[0, 0, 0] * 0
            s = src[o, n]
            d = out[n, o]
            for k in range(length):
                d[k] = s[k] + b if with_bias else s[k]


@njit(cache=True)
def _to_channel_major(src, out):
    """``out[o, n, l] = src[n, o, l]``."""
    n_batch, n_out, length = src.shape
    for o in range(n_out):
        for n in range(n_batch):
            s = src[n, o]
            d = out[o, n]
            for k in range(length):
                d[k] = s[k]


def output_size(size: int, k: int, s: int, before: int, after: int, d: int) -> int:
    return (size + before + after - d * (k - 1) - 1) // s + 1


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _geometry(kernel, stride, padding, dilation, out_sp) -> tuple:
    """The kernels' scalar arguments, in their order: the kernel size, the stride, the padding
    before each dimension, the dilation and the output size (2-D or 3-D)."""
    return (tuple(kernel) + tuple(stride) + tuple(padding[0::2]) + tuple(dilation)
            + tuple(out_sp))


def _cols(x, kernel, stride, padding, dilation, out_sp):
    n, c = x.shape[0], x.shape[1]
    cols = np.empty((c * _prod(kernel), n * _prod(out_sp)), x.dtype)
    if cols.size == 0:
        return cols
    if len(kernel) == 3:
        im2col = _im2col3
    elif cols.size >= PARALLEL_THRESHOLD and _threaded(x.dtype, x.dtype):
        im2col = _im2col_parallel
    else:
        im2col = _im2col
    im2col(x, *_geometry(kernel, stride, padding, dilation, out_sp), cols)
    return cols


def _fold_back(cols, kernel, stride, padding, dilation, out_sp, out):
    """col2im of ``cols`` into ``out`` (zeroed), 2-D or 3-D."""
    col2im = _col2im if len(kernel) == 2 else _col2im3
    col2im(cols, *_geometry(kernel, stride, padding, dilation, out_sp), out)


def _out_sp(shape, kernel, stride, padding, dilation):
    return tuple(output_size(shape[2 + i], kernel[i], stride[i], padding[2 * i],
                             padding[2 * i + 1], dilation[i]) for i in range(len(kernel)))


def conv_forward(x, weight, bias, stride, padding, dilation, groups):
    """The cross-correlation of ``x`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) with ``weight``
    ``(O, C/groups, kh, kw)`` (``(O, C/groups, kd, kh, kw)``), plus ``bias`` ``(O,)`` or None:
    ``(N, O, oh, ow)`` (``(N, O, od, oh, ow)``)."""
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(weight)
    n, out_c = x.shape[0], w.shape[0]
    kernel = tuple(w.shape[2:])
    out_sp = _out_sp(x.shape, kernel, stride, padding, dilation)
    cols = _cols(x, kernel, stride, padding, dilation, out_sp)
    inner = cols.shape[0] // groups
    prod = np.matmul(w.reshape(groups, out_c // groups, inner),
                     cols.reshape(groups, inner, cols.shape[1]))
    out = np.empty((n, out_c) + out_sp, x.dtype)
    b = np.zeros(0, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    if out.size:
        length = cols.shape[1] // n
        _to_batch_major(prod.reshape(out_c, n, length), b, out.reshape(n, out_c, length))
    return out


def _grad_channel_major(grad):
    """``grad`` ``(N, O, *spatial)`` as ``(O, N * prod(spatial))``."""
    g = np.ascontiguousarray(grad)
    n, o = g.shape[0], g.shape[1]
    length = _prod(g.shape[2:])
    out = np.empty((o, n, length), g.dtype)
    if out.size:
        _to_channel_major(g.reshape(n, o, length), out)
    return out.reshape(o, n * length)


def conv_backward_input(grad, weight, input_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its input (of shape ``input_shape``),
    from the output's gradient ``grad``: ``weight.T @ grad`` per group, folded back (also the
    forward of a transposed convolution)."""
    w = np.ascontiguousarray(weight)
    out_c = w.shape[0]
    kernel = tuple(w.shape[2:])
    out_sp = tuple(grad.shape[2:])
    g = _grad_channel_major(grad)
    inner = _prod(w.shape[1:])
    wg = w.reshape(groups, out_c // groups, inner)
    cols = np.matmul(wg.transpose(0, 2, 1), g.reshape(groups, out_c // groups, g.shape[1]))
    out = np.zeros(tuple(input_shape), g.dtype)
    if out.size and cols.size:
        _fold_back(cols.reshape(-1, g.shape[1]), kernel, stride, padding, dilation, out_sp, out)
    return out


def conv_backward_weight(grad, x, weight_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its weight (of shape ``weight_shape``),
    from the output's gradient ``grad`` and the input ``x``: ``grad @ cols.T`` per group."""
    x = np.ascontiguousarray(x)
    out_c = weight_shape[0]
    kernel = tuple(weight_shape[2:])
    out_sp = tuple(grad.shape[2:])
    cols = _cols(x, kernel, stride, padding, dilation, out_sp)
    g = _grad_channel_major(grad)
    inner = cols.shape[0] // groups
    prod = np.matmul(g.reshape(groups, out_c // groups, g.shape[1]),
                     cols.reshape(groups, inner, cols.shape[1]).transpose(0, 2, 1))
    return np.ascontiguousarray(prod.reshape(tuple(weight_shape)))


def unfold(x, kernel, dilation, padding, stride):
    """``F.unfold``: ``x`` (N, C, H, W) as its sliding blocks, (N, C*kh*kw, L) (an unbatched
    (C, H, W): (C*kh*kw, L)), channel-major within a block (im2col, then each batch's columns
    gathered). The result owns its memory (no view of a larger array). Bool blocks are copied
    as bytes."""
    if x.dtype == np.bool_:
        return unfold(np.ascontiguousarray(x).view(np.uint8), kernel, dilation, padding,
                      stride).view(np.bool_)
    unbatched = x.ndim == 3
    x = np.ascontiguousarray(x)
    if unbatched:
        x = x.reshape((1,) + x.shape)
    n = x.shape[0]
    pads = (padding[0], padding[0], padding[1], padding[1])
    out_sp = _out_sp(x.shape, kernel, stride, pads, dilation)
    cols = _cols(x, kernel, stride, pads, dilation, out_sp)
    length = out_sp[0] * out_sp[1]
    rows = cols.shape[0]
    result = np.empty((rows, length) if unbatched else (n, rows, length), x.dtype)
    if result.size:
        _to_batch_major(cols.reshape(rows, n, length), np.zeros(0, x.dtype),
                        result.reshape(n, rows, length))
    return result


def fold(cols, output_size, kernel, dilation, padding, stride):
    """``F.fold``, the adjoint of ``unfold``: blocks (N, C*kh*kw, L) summed into
    (N, C, *output_size) (unbatched (C*kh*kw, L): (C, *output_size)); bool blocks are or-ed
    (PyTorch's sum in bool)."""
    if cols.dtype == np.bool_:
        total = fold(np.ascontiguousarray(cols).view(np.uint8).astype(np.int64), output_size,
                     kernel, dilation, padding, stride)
        return total != 0
    unbatched = cols.ndim == 2
    if unbatched:
        cols = cols.reshape((1,) + cols.shape)
    n, rows = cols.shape[0], cols.shape[1]
    kh, kw = kernel
    pads = (padding[0], padding[0], padding[1], padding[1])
    out_sp = _out_sp((n, 0) + tuple(output_size), kernel, stride, pads, dilation)
    g = _grad_channel_major(cols)
    c = rows // (kh * kw)
    result = np.zeros(((c,) if unbatched else (n, c)) + tuple(output_size), cols.dtype)
    out = result.reshape((n, c) + tuple(output_size))
    if out.size and g.size:
        _fold_back(g, kernel, stride, pads, dilation, out_sp, out)
    return result
