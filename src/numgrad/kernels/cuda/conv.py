"""Convolution kernels on CUDA (``K.conv``), with the CPU module's interface and layout: im2col
(one thread per column entry) into the tiled GEMM of ``linalg.py``, the product's ``(O, N, L)``
rewritten as ``(N, O, L)`` with the bias added; the weight's gradient is ``grad @ cols.T`` per
group (the GEMM reads the transpose in place), the input's ``W.T @ grad`` folded back by col2im.

col2im gathers instead of scattering: one thread per input element sums the column entries that
read it (those ``(i, y)`` with ``y * s - p + i * d`` at its row, and the same along the width),
so there are no atomics and the sums come in one fixed order.

A 3-D convolution (5-D arrays) runs through ``_im2col3_k`` / ``_col2im3_k``, the same index
arithmetic with a depth; transposed convolutions are composed of these entry points in
``ops/conv.py``, as on the CPU.

Shapes as on the CPU: input ``(N, C, H, W)``, weight ``(O, C/G, kh, kw)``, padding ``(top,
bottom, left, right)``, stride and dilation ``(h, w)``. Floats only (the GEMM's dtypes).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .linalg import matmul
from .memory import empty, launch
from .layout import ascontiguous, flat
from .reduction import full

_TYPE_NAMES = {"int64": "Long", "int32": "Int", "bool": "Bool", "int16": "Short", "int8": "Char",
               "uint8": "Byte"}


@cuda.jit(device=True)
def _tap(at, pad, k, dil, stride, size):
    """Along one dimension, the output position whose window reads input position ``at`` with
    its tap ``k`` (``y * stride - pad + k * dil == at``), or -1 where there is none."""
    t = at + pad - k * dil
    if t < 0 or t % stride != 0:
        return -1
    y = t // stride
    return y if y < size else -1


@cuda.jit(device=True)
def _unpack3(geometry):
    """The 3-D kernels' ``geometry`` array as its 20 numbers."""
    return (geometry[0], geometry[1], geometry[2], geometry[3], geometry[4], geometry[5],
            geometry[6], geometry[7], geometry[8], geometry[9], geometry[10], geometry[11],
            geometry[12], geometry[13], geometry[14], geometry[15], geometry[16], geometry[17],
            geometry[18], geometry[19])


@cuda.jit
def _im2col_k(x, n_batch, channels, height, width, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow,
              cols):
    """``cols[(c*kh + i)*kw + j, n*oh*ow + y*ow + z] = x[n, c, y*sh - pt + i*dh, z*sw - pl +
    j*dw]`` (0 outside ``x``), all flat and C-contiguous."""
    length = oh * ow
    columns = n_batch * length
    for e in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
        row = e // columns
        col = e - row * columns
        j = row % kw
        i = (row // kw) % kh
        c = row // (kw * kh)
        n = col // length
        rest = col - n * length
        y = rest // ow
        z = rest - y * ow
        iy = y * sh - pt + i * dh
        ix = z * sw - pl + j * dw
        if 0 <= iy < height and 0 <= ix < width:
            cols[e] = x[((n * channels + c) * height + iy) * width + ix]
        else:
            cols[e] = 0


@cuda.jit
def _col2im_k(cols, n_batch, channels, height, width, kh, kw, sh, sw, pt, pl, dh, dw, oh, ow,
              out):
    """The adjoint of ``_im2col_k``: ``out[n, c, iy, ix]`` (flat) is the sum of the column
    entries read from there."""
    length = oh * ow
    columns = n_batch * length
    for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        ix = e % width
        iy = (e // width) % height
        c = (e // (width * height)) % channels
        n = e // (width * height * channels)
        acc = cols[0] * 0
        for i in range(kh):
            y = _tap(iy, pt, i, dh, sh, oh)
            if y < 0:
                continue
            for j in range(kw):
                z = _tap(ix, pl, j, dw, sw, ow)
                if z < 0:
                    continue
                acc += cols[((c * kh + i) * kw + j) * columns + n * length + y * ow + z]
        out[e] = acc


@cuda.jit
def _im2col3_k(x, geometry, cols):
    """``_im2col_k`` with a depth; ``geometry`` holds (N, C, D, H, W, kd, kh, kw, sd, sh, sw,
    pf, pt, pl, dd, dh, dw, od, oh, ow)."""
    (n_batch, channels, depth, height, width, kd, kh, kw, sd, sh, sw, pf, pt, pl, dd, dh, dw,
     od, oh, ow) = _unpack3(geometry)
    length = od * oh * ow
    columns = n_batch * length
    for e in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
        row = e // columns
        col = e - row * columns
        j = row % kw
        i = (row // kw) % kh
        a = (row // (kw * kh)) % kd
        c = row // (kw * kh * kd)
        n = col // length
        rest = col - n * length
        t = rest // (oh * ow)
        y = (rest // ow) % oh
        z = rest % ow
        it = t * sd - pf + a * dd
        iy = y * sh - pt + i * dh
        ix = z * sw - pl + j * dw
        if 0 <= it < depth and 0 <= iy < height and 0 <= ix < width:
            cols[e] = x[(((n * channels + c) * depth + it) * height + iy) * width + ix]
        else:
            cols[e] = 0


@cuda.jit
def _col2im3_k(cols, geometry, out):
    """The adjoint of ``_im2col3_k``, gathered: one thread per element of ``out`` (flat)."""
    (n_batch, channels, depth, height, width, kd, kh, kw, sd, sh, sw, pf, pt, pl, dd, dh, dw,
     od, oh, ow) = _unpack3(geometry)
    length = od * oh * ow
    columns = n_batch * length
    for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        ix = e % width
        iy = (e // width) % height
        it = (e // (width * height)) % depth
        c = (e // (width * height * depth)) % channels
        n = e // (width * height * depth * channels)
        acc = cols[0] * 0
        for a in range(kd):
            t = _tap(it, pf, a, dd, sd, od)
            if t < 0:
                continue
            for i in range(kh):
                y = _tap(iy, pt, i, dh, sh, oh)
                if y < 0:
                    continue
                for j in range(kw):
                    z = _tap(ix, pl, j, dw, sw, ow)
                    if z < 0:
                        continue
                    acc += cols[(((c * kd + a) * kh + i) * kw + j) * columns + n * length
                                + (t * oh + y) * ow + z]
        out[e] = acc


@cuda.jit
def _to_batch_major_k(src, bias, with_bias, n_out, n_batch, length, out):
    """``out[n, o, l] = src[o, n, l] (+ bias[o])``, flat."""
    for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = e % length
        o = (e // length) % n_out
        n = e // (length * n_out)
        v = src[(o * n_batch + n) * length + k]
        if with_bias:
            v += bias[o]
        out[e] = v


@cuda.jit
def _to_channel_major_k(src, n_out, n_batch, length, out):
    """``out[o, n, l] = src[n, o, l]``, flat."""
    for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = e % length
        n = (e // length) % n_batch
        o = e // (length * n_batch)
        out[e] = src[(n * n_out + o) * length + k]


def output_size(size: int, k: int, s: int, before: int, after: int, d: int) -> int:
    return (size + before + after - d * (k - 1) - 1) // s + 1


def _check_dtype(a) -> None:
    if a.dtype not in (np.float32, np.float64):
        name = _TYPE_NAMES.get(a.dtype.name, a.dtype.name)
        raise NotImplementedError(
            f"numgrad's CUDA convolution takes float32 and float64 tensors, not '{name}'")


def _prod(values) -> int:
    return math.prod(int(v) for v in values)


_GEOMETRY: dict = {}


def _values(shape, kernel, stride, padding, dilation, out_sp) -> tuple:
    """The kernels' geometry, in their order: the shape, the kernel size, the stride, the
    padding before each dimension, the dilation and the output size (2-D or 3-D)."""
    return tuple(int(v) for v in tuple(shape) + tuple(kernel) + tuple(stride)
                 + tuple(padding[0::2]) + tuple(dilation) + tuple(out_sp))


def _geometry(shape, kernel, stride, padding, dilation, out_sp):
    """The 3-D kernels' int64 geometry array, uploaded once per geometry (cached)."""
    values = _values(shape, kernel, stride, padding, dilation, out_sp)
    m = _GEOMETRY.get(values)
    if m is None:
        if len(_GEOMETRY) > 256:
            _GEOMETRY.clear()
        m = _GEOMETRY[values] = cuda.to_device(np.array(values, np.int64))
    return m


def _launch(kernel_2d, kernel_3d, src, dst, shape, kernel, stride, padding, dilation, out_sp):
    """``kernel_2d`` (its geometry as scalars) or ``kernel_3d`` (as ``_geometry``'s array) from
    ``src`` into ``dst``, one thread per element of ``dst`` (both flat)."""
    if len(kernel) == 2:
        launch(kernel_2d, dst.size)(src, *_values(shape, kernel, stride, padding, dilation,
                                                  out_sp), dst)
    else:
        launch(kernel_3d, dst.size)(src, _geometry(shape, kernel, stride, padding, dilation,
                                                   out_sp), dst)


def _cols(x, kernel, stride, padding, dilation, out_sp):
    n, c = int(x.shape[0]), int(x.shape[1])
    cols = empty((c * _prod(kernel), n * _prod(out_sp)), x.dtype)
    if not cols.size:
        return cols
    _launch(_im2col_k, _im2col3_k, flat(x), cols.reshape(cols.size), x.shape, kernel, stride,
            padding, dilation, out_sp)
    return cols


def _grad_channel_major(grad):
    """``grad`` ``(N, O, *spatial)`` as ``(O, N * prod(spatial))``."""
    g = ascontiguous(grad)
    n, o = int(g.shape[0]), int(g.shape[1])
    length = _prod(g.shape[2:])
    out = empty((o, n * length), g.dtype)
    if out.size:
        launch(_to_channel_major_k, out.size)(flat(g), o, n, length, out.reshape(out.size))
    return out


def conv_forward(x, weight, bias, stride, padding, dilation, groups):
    """The cross-correlation of ``x`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) with ``weight``
    ``(O, C/groups, *kernel)``, plus ``bias`` ``(O,)`` or None."""
    _check_dtype(x)
    x, w = ascontiguous(x), ascontiguous(weight)
    n, out_c = int(x.shape[0]), int(w.shape[0])
    kernel = tuple(int(v) for v in w.shape[2:])
    out_sp = tuple(output_size(int(x.shape[2 + i]), kernel[i], stride[i], padding[2 * i],
                               padding[2 * i + 1], dilation[i]) for i in range(len(kernel)))
    out = empty((n, out_c) + out_sp, x.dtype)
    if not out.size:
        return out
    length = _prod(out_sp)
    cols = _cols(x, kernel, stride, padding, dilation, out_sp)
    inner = cols.shape[0] // groups
    if inner == 0:
        prod = full((out_c, n * length), x.dtype, 0)
    else:
        prod = matmul(w.reshape(groups, out_c // groups, inner),
                      cols.reshape(groups, inner, n * length))
    b = full((1,), x.dtype, 0) if bias is None else flat(ascontiguous(bias))
    launch(_to_batch_major_k, out.size)(prod.reshape(prod.size), b, bias is not None, out_c, n,
                                        length, out.reshape(out.size))
    return out


def conv_backward_input(grad, weight, input_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its input (of shape ``input_shape``),
    from the output's gradient ``grad``: ``weight.T @ grad`` per group, folded back (also the
    forward of a transposed convolution)."""
    _check_dtype(grad)
    w = ascontiguous(weight)
    out_c = int(w.shape[0])
    kernel = tuple(int(v) for v in w.shape[2:])
    out_sp = tuple(int(v) for v in grad.shape[2:])
    n, c = int(input_shape[0]), int(input_shape[1])
    length = _prod(out_sp)
    inner = (c // groups) * _prod(kernel)
    if _prod(input_shape) == 0 or out_c * n * length == 0 or inner == 0:
        return full(tuple(input_shape), grad.dtype, 0)
    g = _grad_channel_major(grad)
    cols = matmul(w.reshape(groups, out_c // groups, inner),
                  g.reshape(groups, out_c // groups, n * length), True, False)
    out = empty(tuple(input_shape), grad.dtype)
    _launch(_col2im_k, _col2im3_k, cols.reshape(cols.size), out.reshape(out.size), input_shape,
            kernel, stride, padding, dilation, out_sp)
    return out


def conv_backward_weight(grad, x, weight_shape, stride, padding, dilation, groups):
    """The gradient of ``conv_forward`` with respect to its weight (of shape ``weight_shape``),
    from the output's gradient ``grad`` and the input ``x``: ``grad @ cols.T`` per group."""
    _check_dtype(grad)
    x = ascontiguous(x)
    out_c = int(weight_shape[0])
    kernel = tuple(int(v) for v in weight_shape[2:])
    out_sp = tuple(int(v) for v in grad.shape[2:])
    n = int(x.shape[0])
    length = _prod(out_sp)
    inner = int(weight_shape[1]) * _prod(kernel)
    if n * length == 0 or out_c * inner == 0:
        return full(tuple(weight_shape), grad.dtype, 0)
    cols = _cols(x, kernel, stride, padding, dilation, out_sp)
    g = _grad_channel_major(grad)
    prod = matmul(g.reshape(groups, out_c // groups, n * length),
                  cols.reshape(groups, inner, n * length), False, True)
    return prod.reshape(tuple(weight_shape))


def unfold(x, kernel, dilation, padding, stride):
    """``F.unfold``: ``x`` (N, C, H, W) as its sliding blocks, (N, C*kh*kw, L) (an unbatched
    (C, H, W): (C*kh*kw, L))."""
    _check_dtype(x)
    x = ascontiguous(x)
    if len(x.shape) == 3:
        out = unfold(x.reshape((1,) + tuple(x.shape)), kernel, dilation, padding, stride)
        return out.reshape(tuple(out.shape)[1:])
    n = int(x.shape[0])
    pads = (padding[0], padding[0], padding[1], padding[1])
    out_sp = tuple(output_size(int(x.shape[2 + i]), kernel[i], stride[i], pads[2 * i],
                               pads[2 * i + 1], dilation[i]) for i in range(2))
    cols = _cols(x, kernel, stride, pads, dilation, out_sp)
    length = out_sp[0] * out_sp[1]
    rows = int(cols.shape[0])
    out = empty((n, rows, length), x.dtype)
    if out.size:
        launch(_to_batch_major_k, out.size)(cols.reshape(cols.size), full((1,), x.dtype, 0),
                                            False, rows, n, length, out.reshape(out.size))
    return out


def fold(cols, output_size_, kernel, dilation, padding, stride):
    """``F.fold``, the adjoint of ``unfold``: blocks (N, C*kh*kw, L) summed into
    (N, C, *output_size) (unbatched (C*kh*kw, L): (C, *output_size))."""
    _check_dtype(cols)
    if len(cols.shape) == 2:
        cols = ascontiguous(cols)
        out = fold(cols.reshape((1,) + tuple(cols.shape)), output_size_, kernel, dilation,
                   padding, stride)
        return out.reshape(tuple(out.shape)[1:])
    n, rows = int(cols.shape[0]), int(cols.shape[1])
    kh, kw = kernel
    h, w = (int(v) for v in output_size_)
    pads = (padding[0], padding[0], padding[1], padding[1])
    oh = output_size(h, kh, stride[0], pads[0], pads[1], dilation[0])
    ow = output_size(w, kw, stride[1], pads[2], pads[3], dilation[1])
    c = rows // (kh * kw)
    if n * c * h * w == 0 or not cols.size:
        return full((n, c, h, w), cols.dtype, 0)
    g = _grad_channel_major(cols)
    out = empty((n, c, h, w), cols.dtype)
    _launch(_col2im_k, _col2im3_k, g.reshape(g.size), out.reshape(out.size), (n, c, h, w),
            kernel, stride, pads, dilation, (oh, ow))
    return out
