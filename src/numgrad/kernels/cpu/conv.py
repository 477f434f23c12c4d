"""Convolution CPU kernels (``K.conv``): im2col (unfold) into a BLAS matrix product, forward and
backward, for 2-D convolutions (1-D ones arrive as 2-D on a unit height).

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
from numba import njit


@njit(cache=True)
def _im2col(x, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow, cols):
    """``cols[(c*kh + i)*kw + j, n*oh*ow + y*ow + z] = x[n, c, y*sh - pt + i*dh, z*sw - pl +
    j*dw]`` (0 outside ``x``): ``x`` is C-contiguous ``(N, C, H, W)``. (A test per element
    measured faster than splitting each row at its valid range, or than reading a zero-padded
    copy: the rows of small images are short.)"""
    n_batch, channels, height, width = x.shape
    length = oh * ow
    for c in range(channels):
        for i in range(kh):
            for j in range(kw):
                row = cols[(c * kh + i) * kw + j]
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
                        for z in range(ow):
                            ix = z * sw - pl + j * dw
                            if 0 <= ix < width:
                                row[at + z] = src[ix]
                            else:
                                row[at + z] = 0


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


def _cols(x, kernel, stride, padding, dilation, oh, ow):
    n, c = x.shape[0], x.shape[1]
    kh, kw = kernel
    cols = np.empty((c * kh * kw, n * oh * ow), x.dtype)
    if cols.size:
        _im2col(x, kh, kw, stride[0], stride[1], padding[0], padding[2], dilation[0],
                dilation[1], oh, ow, cols)
    return cols


def _out_hw(shape, kernel, stride, padding, dilation):
    return (output_size(shape[2], kernel[0], stride[0], padding[0], padding[1], dilation[0]),
            output_size(shape[3], kernel[1], stride[1], padding[2], padding[3], dilation[1]))


def conv_forward(x, weight, bias, stride, padding, dilation, groups):
    """The 2-D cross-correlation of ``x`` ``(N, C, H, W)`` with ``weight``
    ``(O, C/groups, kh, kw)``, plus ``bias`` ``(O,)`` or None: ``(N, O, oh, ow)``."""
    x = np.ascontiguousarray(x)
    w = np.ascontiguousarray(weight)
    n, out_c = x.shape[0], w.shape[0]
    kernel = (w.shape[2], w.shape[3])
    oh, ow = _out_hw(x.shape, kernel, stride, padding, dilation)
    cols = _cols(x, kernel, stride, padding, dilation, oh, ow)
    inner = cols.shape[0] // groups
    prod = np.matmul(w.reshape(groups, out_c // groups, inner),
                     cols.reshape(groups, inner, cols.shape[1]))
    out = np.empty((n, out_c, oh, ow), x.dtype)
    b = np.zeros(0, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    if out.size:
        _to_batch_major(prod.reshape(out_c, n, oh * ow), b, out.reshape(n, out_c, oh * ow))
    return out


def _grad_channel_major(grad):
    """``grad`` ``(N, O, oh, ow)`` as ``(O, N * oh * ow)``."""
    g = np.ascontiguousarray(grad)
    n, o = g.shape[0], g.shape[1]
    length = g.shape[2] * g.shape[3]
    out = np.empty((o, n, length), g.dtype)
    if out.size:
        _to_channel_major(g.reshape(n, o, length), out)
    return out.reshape(o, n * length)


def conv_backward_input(grad, weight, input_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its input (of shape ``input_shape``),
    from the output's gradient ``grad``: ``weight.T @ grad`` per group, folded back."""
    w = np.ascontiguousarray(weight)
    out_c, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    oh, ow = grad.shape[2], grad.shape[3]
    g = _grad_channel_major(grad)
    wg = w.reshape(groups, out_c // groups, w.shape[1] * kh * kw)
    cols = np.matmul(wg.transpose(0, 2, 1), g.reshape(groups, out_c // groups, g.shape[1]))
    out = np.zeros(tuple(input_shape), g.dtype)
    if out.size and cols.size:
        _col2im(cols.reshape(-1, g.shape[1]), kh, kw, stride[0], stride[1], padding[0],
                padding[2], dilation[0], dilation[1], oh, ow, out)
    return out


def conv_backward_weight(grad, x, weight_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its weight (of shape ``weight_shape``),
    from the output's gradient ``grad`` and the input ``x``: ``grad @ cols.T`` per group."""
    x = np.ascontiguousarray(x)
    out_c = weight_shape[0]
    kernel = (weight_shape[2], weight_shape[3])
    oh, ow = grad.shape[2], grad.shape[3]
    cols = _cols(x, kernel, stride, padding, dilation, oh, ow)
    g = _grad_channel_major(grad)
    inner = cols.shape[0] // groups
    prod = np.matmul(g.reshape(groups, out_c // groups, g.shape[1]),
                     cols.reshape(groups, inner, cols.shape[1]).transpose(0, 2, 1))
    return np.ascontiguousarray(prod.reshape(tuple(weight_shape)))
