"""Pooling and padding kernels on CUDA, with the CPU module's interface (``kernels/cpu/pooling.py``)
and semantics: the last two dimensions are pooled or padded, the leading ones are planes.

One thread per output element for the forwards (max pooling's ties and NaN as PyTorch's: the
first maximum of a window, a NaN over everything). The average poolings' backwards are gathers,
one thread per input element summing the windows that cover it (as PyTorch's CUDA kernels), so
they are deterministic; max pooling's backward (a scatter by the saved indices, where windows may
share a maximum) and the paddings' backwards (edges copied more than once) add with atomics.
Nothing is read back to the host.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..cpu import pooling as cpu
from ..scalar import pad_source
from ..cpu.pooling import _lowest
from .memory import empty, launch
from .layout import ascontiguous, flat
from .reduction import full
from .upsample import interpolate, interpolate_backward  # noqa: F401

REFLECT, REPLICATE = 0, 1


# The window arithmetic of one dimension and the output coordinates of a flat index, shared by
# the 2-D and 3-D kernels.
@cuda.jit(device=True)
def _coords(i, oheight, owidth):
    """(plane, row, column) of flat index ``i`` of (P, OH, OW)."""
    return i // (owidth * oheight), (i // owidth) % oheight, i % owidth


@cuda.jit(device=True)
def _coords3d(i, odepth, oheight, owidth):
    """(volume, depth, row, column) of flat index ``i`` of (P, OD, OH, OW)."""
    plane, oh, ow = _coords(i, oheight, owidth)
    return plane // odepth, plane % odepth, oh, ow


# The CPU kernels' functions of one dimension's window, compiled as device functions.
_max_span = cuda.jit(device=True)(cpu._max_span.py_func)
_window = cuda.jit(device=True)(cpu._avg_span.py_func)  # (first, end, padded size)
_adaptive_span = cuda.jit(device=True)(cpu._adaptive_span.py_func)


@cuda.jit(device=True)
def _divisor(count, padded, count_include_pad, divisor_override):
    """An average pooling window's divisor: ``divisor_override`` if not 0, else its size within
    the padded input (``padded``, with ``count_include_pad``) or within the input (``count``)."""
    if divisor_override != 0:
        return divisor_override
    if count_include_pad:
        return padded
    return count


@cuda.jit
def _max_pool_k(x, planes, height, width, oheight, owidth, kh, kw, sh, sw, ph, pw, dh, dw,
                lowest, out, idx):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h0, h1 = _max_span(oh, sh, ph, kh, dh, height)
        w0, w1 = _max_span(ow, sw, pw, kw, dw, width)
        best = h0 * width + w0
        value = lowest
        base = p * height * width
        for h in range(h0, h1, dh):
            for w in range(w0, w1, dw):
                v = x[base + h * width + w]
                if v > value or v != v:
                    value = v
                    best = h * width + w
        out[i] = value
        idx[i] = best


@cuda.jit
def _adaptive_max_k(x, planes, height, width, oheight, owidth, out, idx):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h0, h1 = _adaptive_span(oh, height, oheight)
        w0, w1 = _adaptive_span(ow, width, owidth)
        base = p * height * width
        best = h0 * width + w0
        value = x[base + best]
        for h in range(h0, h1):
            for w in range(w0, w1):
                v = x[base + h * width + w]
                if v > value or v != v:
                    value = v
                    best = h * width + w
        out[i] = value
        idx[i] = best


@cuda.jit
def _avg_pool_k(x, planes, height, width, oheight, owidth, kh, kw, sh, sw, ph, pw,
                count_include_pad, divisor_override, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h0, h1, hp = _window(oh, sh, ph, kh, height)
        w0, w1, wp = _window(ow, sw, pw, kw, width)
        if h0 >= h1 or w0 >= w1:
            out[i] = 0
            continue
        divisor = _divisor((h1 - h0) * (w1 - w0), hp * wp, count_include_pad,
                           divisor_override)
        base = p * height * width
        total = x.dtype.type(0)
        for h in range(h0, h1):
            for w in range(w0, w1):
                total += x[base + h * width + w]
        out[i] = total / x.dtype.type(divisor)


@cuda.jit
def _avg_pool_int_k(x, planes, height, width, oheight, owidth, kh, kw, sh, sw, ph, pw,
                    count_include_pad, divisor_override, out):
    """``_avg_pool_k`` for integers: the sum in int64, divided as C++ (truncating)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h0, h1, hp = _window(oh, sh, ph, kh, height)
        w0, w1, wp = _window(ow, sw, pw, kw, width)
        if h0 >= h1 or w0 >= w1:
            out[i] = 0
            continue
        divisor = _divisor((h1 - h0) * (w1 - w0), hp * wp, count_include_pad,
                           divisor_override)
        base = p * height * width
        total = 0
        for h in range(h0, h1):
            for w in range(w0, w1):
                total += x[base + h * width + w]
        q = abs(total) // abs(divisor)
        out[i] = q if (total >= 0) == (divisor >= 0) else -q


@cuda.jit
def _avg_pool_backward_k(grad, planes, height, width, oheight, owidth, kh, kw, sh, sw, ph, pw,
                         count_include_pad, divisor_override, out):
    """One thread per input element: the sum over the windows that hold it of each window's
    gradient divided by its divisor."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, h, w = _coords(i, height, width)
        oh0 = max((h + ph - kh) // sh + 1, 0)
        oh1 = min((h + ph) // sh + 1, oheight)
        ow0 = max((w + pw - kw) // sw + 1, 0)
        ow1 = min((w + pw) // sw + 1, owidth)
        total = grad.dtype.type(0)
        base = p * oheight * owidth
        for oh in range(oh0, oh1):
            h0, h1, hp = _window(oh, sh, ph, kh, height)
            for ow in range(ow0, ow1):
                w0, w1, wp = _window(ow, sw, pw, kw, width)
                divisor = _divisor((h1 - h0) * (w1 - w0), hp * wp, count_include_pad,
                                   divisor_override)
                total += grad[base + oh * owidth + ow] / grad.dtype.type(divisor)
        out[i] = total


@cuda.jit
def _adaptive_avg_k(x, planes, height, width, oheight, owidth, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h0, h1 = _adaptive_span(oh, height, oheight)
        w0, w1 = _adaptive_span(ow, width, owidth)
        base = p * height * width
        total = x.dtype.type(0)
        for h in range(h0, h1):
            for w in range(w0, w1):
                total += x[base + h * width + w]
        out[i] = total / x.dtype.type(h1 - h0) / x.dtype.type(w1 - w0)


@cuda.jit
def _adaptive_avg_backward_k(grad, planes, height, width, oheight, owidth, out):
    """One thread per input element: the windows that hold row ``h`` are
    ``[floor(h*OH/H), ceil((h+1)*OH/H))``."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, h, w = _coords(i, height, width)
        oh0, oh1 = _adaptive_span(h, oheight, height)
        ow0, ow1 = _adaptive_span(w, owidth, width)
        total = grad.dtype.type(0)
        base = p * oheight * owidth
        for oh in range(oh0, oh1):
            h0, h1 = _adaptive_span(oh, height, oheight)
            if h < h0 or h >= h1:
                continue
            for ow in range(ow0, ow1):
                w0, w1 = _adaptive_span(ow, width, owidth)
                if w < w0 or w >= w1:
                    continue
                total += (grad[base + oh * owidth + ow] / grad.dtype.type(h1 - h0)
                          / grad.dtype.type(w1 - w0))
        out[i] = total


@cuda.jit
def _scatter_k(grad, idx, per_plane, plane_size, out):
    """``out[p, idx[p, j]] += grad[p, j]`` (atomically; an index outside the plane adds
    nothing)."""
    for i in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
        k = idx[i]
        if k >= 0 and k < plane_size:
            cuda.atomic.add(out, (i // per_plane) * plane_size + k, grad[i])


@cuda.jit
def _gather_k(x, idx, per_plane, plane_size, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = idx[i]
        if k >= 0 and k < plane_size:
            out[i] = x[(i // per_plane) * plane_size + k]
        else:
            out[i] = 0


@cuda.jit
def _pad_k(x, height, width, oheight, owidth, top, left, mode, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h = pad_source(oh, height, top, mode)
        w = pad_source(ow, width, left, mode)
        out[i] = x[(p * height + h) * width + w]


@cuda.jit
def _pad_backward_k(grad, height, width, oheight, owidth, top, left, mode, out):
    for i in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
        p, oh, ow = _coords(i, oheight, owidth)
        h = pad_source(oh, height, top, mode)
        w = pad_source(ow, width, left, mode)
        cuda.atomic.add(out, (p * height + h) * width + w, grad[i])


# ---------------------------------------------------------------------- 3-D pooling kernels
# On flat (P, D, H, W) volumes; ``g`` (an uploaded int64 array) holds (P, D, H, W, OD, OH, OW,
# kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw). The backward kernels add with atomics, one
# thread per gradient element.
@cuda.jit
def _max_pool3d_k(x, g, lowest, out, idx):
    depth, height, width = g[1], g[2], g[3]
    odepth, oheight, owidth = g[4], g[5], g[6]
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, od, oh, ow = _coords3d(i, odepth, oheight, owidth)
        t0, t1 = _max_span(od, g[10], g[13], g[7], g[16], depth)
        h0, h1 = _max_span(oh, g[11], g[14], g[8], g[17], height)
        w0, w1 = _max_span(ow, g[12], g[15], g[9], g[18], width)
        base = p * depth * height * width
        best = (t0 * height + h0) * width + w0
        value = lowest
        for t in range(t0, t1, g[16]):
            for h in range(h0, h1, g[17]):
                for w in range(w0, w1, g[18]):
                    k = (t * height + h) * width + w
                    v = x[base + k]
                    if v > value or v != v:
                        value = v
                        best = k
        out[i] = value
        idx[i] = best


@cuda.jit(device=True)
def _avg_window3d(i, g, count_include_pad, divisor_override):
    """(volume, t0, t1, h0, h1, w0, w1, divisor) of flat output ``i`` of average pooling."""
    p, od, oh, ow = _coords3d(i, g[4], g[5], g[6])
    t0, t1, tp = _window(od, g[10], g[13], g[7], g[1])
    h0, h1, hp = _window(oh, g[11], g[14], g[8], g[2])
    w0, w1, wp = _window(ow, g[12], g[15], g[9], g[3])
    divisor = _divisor((t1 - t0) * (h1 - h0) * (w1 - w0), tp * hp * wp, count_include_pad,
                       divisor_override)
    return p, t0, t1, h0, h1, w0, w1, divisor


@cuda.jit
def _avg_pool3d_k(x, g, count_include_pad, divisor_override, out):
    depth, height, width = g[1], g[2], g[3]
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, t0, t1, h0, h1, w0, w1, divisor = _avg_window3d(i, g, count_include_pad,
                                                           divisor_override)
        total = x[0] * 0
        base = p * depth * height * width
        for t in range(t0, t1):
            for h in range(h0, h1):
                for w in range(w0, w1):
                    total += x[base + (t * height + h) * width + w]
        if t0 >= t1 or h0 >= h1 or w0 >= w1:
            out[i] = 0
        else:
            out[i] = total / divisor


@cuda.jit
def _avg_pool3d_backward_k(grad, g, count_include_pad, divisor_override, out):
    """``out`` (flat, zeroed) gets each gradient / its divisor over its window (atomics)."""
    depth, height, width = g[1], g[2], g[3]
    for i in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
        p, t0, t1, h0, h1, w0, w1, divisor = _avg_window3d(i, g, count_include_pad,
                                                           divisor_override)
        delta = grad[i] / divisor
        base = p * depth * height * width
        for t in range(t0, t1):
            for h in range(h0, h1):
                for w in range(w0, w1):
                    cuda.atomic.add(out, base + (t * height + h) * width + w, delta)


@cuda.jit(device=True)
def _adaptive_window3d(i, g):
    """(volume, t0, t1, h0, h1, w0, w1) of flat output ``i`` of an adaptive 3-D pooling."""
    p, od, oh, ow = _coords3d(i, g[4], g[5], g[6])
    t0, t1 = _adaptive_span(od, g[1], g[4])
    h0, h1 = _adaptive_span(oh, g[2], g[5])
    w0, w1 = _adaptive_span(ow, g[3], g[6])
    return p, t0, t1, h0, h1, w0, w1


@cuda.jit
def _adaptive_avg3d_k(x, g, out):
    depth, height, width = g[1], g[2], g[3]
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, t0, t1, h0, h1, w0, w1 = _adaptive_window3d(i, g)
        total = x[0] * 0
        base = p * depth * height * width
        for t in range(t0, t1):
            for h in range(h0, h1):
                for w in range(w0, w1):
                    total += x[base + (t * height + h) * width + w]
        out[i] = total / (t1 - t0) / (h1 - h0) / (w1 - w0)


@cuda.jit
def _adaptive_avg3d_backward_k(grad, g, out):
    depth, height, width = g[1], g[2], g[3]
    for i in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
        p, t0, t1, h0, h1, w0, w1 = _adaptive_window3d(i, g)
        delta = grad[i] / (t1 - t0) / (h1 - h0) / (w1 - w0)
        base = p * depth * height * width
        for t in range(t0, t1):
            for h in range(h0, h1):
                for w in range(w0, w1):
                    cuda.atomic.add(out, base + (t * height + h) * width + w, delta)


# ---------------------------------------------------------------------- entry points
def _layout(a):
    """``a`` C-contiguous, its shape as a tuple (the simulator's shapes refuse negative
    indices), its number of planes, its height and its width."""
    a = ascontiguous(a)
    shape = tuple(a.shape)
    planes = 1
    for s in shape[:-2]:
        planes *= s
    return a, shape, planes, shape[-2], shape[-1]


def max_pool2d(x, kernel, stride, padding, dilation, out_size):
    """(values, int64 indices into each plane) of max pooling ``x`` (..., H, W)."""
    x, shape, planes, height, width = _layout(x)
    out = empty(shape[:-2] + tuple(out_size), x.dtype)
    idx = empty(shape[:-2] + tuple(out_size), np.int64)
    if out.size:
        launch(_max_pool_k, out.size)(
            flat(x), planes, height, width, out_size[0], out_size[1], kernel[0], kernel[1],
            stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1],
            _lowest(x.dtype), flat(out), flat(idx))
    return out, idx


def adaptive_max_pool2d(x, out_size):
    x, shape, planes, height, width = _layout(x)
    out = empty(shape[:-2] + tuple(out_size), x.dtype)
    idx = empty(shape[:-2] + tuple(out_size), np.int64)
    if out.size:
        launch(_adaptive_max_k, out.size)(flat(x), planes, height, width, out_size[0],
                                           out_size[1], flat(out), flat(idx))
    return out, idx


def avg_pool2d(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    x, shape, planes, height, width = _layout(x)
    out = empty(shape[:-2] + tuple(out_size), x.dtype)
    if out.size:
        kernel_fn = _avg_pool_k if np.dtype(x.dtype).kind == "f" else _avg_pool_int_k
        launch(kernel_fn, out.size)(
            flat(x), planes, height, width, out_size[0], out_size[1], kernel[0], kernel[1],
            stride[0], stride[1], padding[0], padding[1], bool(count_include_pad),
            int(divisor_override), flat(out))
    return out


def avg_pool2d_backward(grad, in_size, kernel, stride, padding, count_include_pad,
                        divisor_override):
    if np.dtype(grad.dtype).kind != "f":
        raise NotImplementedError("avg_pool2d_backward of integers is not implemented for CUDA "
                                  "tensors yet")
    grad, shape, planes, oheight, owidth = _layout(grad)
    out_shape = shape[:-2] + tuple(in_size)
    if not grad.size:
        return full(out_shape, grad.dtype, 0)
    out = empty(out_shape, grad.dtype)
    if out.size:
        launch(_avg_pool_backward_k, out.size)(
            flat(grad), planes, in_size[0], in_size[1], oheight, owidth, kernel[0], kernel[1],
            stride[0], stride[1], padding[0], padding[1], bool(count_include_pad),
            int(divisor_override), flat(out))
    return out


def adaptive_avg_pool2d(x, out_size):
    x, shape, planes, height, width = _layout(x)
    out = empty(shape[:-2] + tuple(out_size), x.dtype)
    if out.size:
        launch(_adaptive_avg_k, out.size)(flat(x), planes, height, width, out_size[0],
                                          out_size[1], flat(out))
    return out


def adaptive_avg_pool2d_backward(grad, in_size):
    grad, shape, planes, oheight, owidth = _layout(grad)
    out_shape = shape[:-2] + tuple(in_size)
    if not grad.size:
        return full(out_shape, grad.dtype, 0)
    out = empty(out_shape, grad.dtype)
    if out.size:
        launch(_adaptive_avg_backward_k, out.size)(flat(grad), planes, in_size[0], in_size[1],
                                                   oheight, owidth, flat(out))
    return out


def max_pool_scatter(grad, indices, in_size):
    """The gradient of max pooling: ``grad`` (..., OH, OW) (3-D: (..., OD, OH, OW)) added at
    ``indices`` into zeroed planes of last dimensions ``in_size``."""
    n = len(in_size)
    grad = ascontiguous(grad)
    shape = tuple(grad.shape)
    indices = ascontiguous(indices)
    out = full(shape[:-n] + tuple(in_size), grad.dtype, 0)
    if grad.size and out.size:
        launch(_scatter_k, grad.size)(flat(grad), flat(indices), _prod(shape[-n:]),
                                      _prod(in_size), flat(out))
    return out


def max_pool_gather(x, indices):
    """``x`` (..., H, W) read at ``indices`` (..., OH, OW) of each plane."""
    x, _, _, height, width = _layout(x)
    indices, shape, _, oheight, owidth = _layout(indices)
    out = empty(shape, x.dtype)
    if out.size:
        launch(_gather_k, out.size)(flat(x), flat(indices), oheight * owidth, height * width,
                                    flat(out))
    return out


def pad2d(x, pads, mode: int):
    """``x`` (..., H, W) padded by ``pads`` = (left, right, top, bottom) by reflection or
    replication."""
    left, right, top, bottom = pads
    x, shape, _, height, width = _layout(x)
    oheight, owidth = height + top + bottom, width + left + right
    out = empty(shape[:-2] + (oheight, owidth), x.dtype)
    if out.size:
        launch(_pad_k, out.size)(flat(x), height, width, oheight, owidth, top, left, int(mode),
                                 flat(out))
    return out


def pad2d_backward(grad, in_size, pads, mode: int):
    left, right, top, bottom = pads
    grad, shape, _, oheight, owidth = _layout(grad)
    out = full(shape[:-2] + tuple(in_size), grad.dtype, 0)
    if grad.size:
        launch(_pad_backward_k, grad.size)(flat(grad), in_size[0], in_size[1], oheight, owidth,
                                           top, left, int(mode), flat(out))
    return out


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


_GEOMETRY: dict = {}


def _geometry3d(shape, out_size, kernel=(1, 1, 1), stride=(1, 1, 1), padding=(0, 0, 0),
                dilation=(1, 1, 1)):
    """The 3-D kernels' geometry, uploaded once per geometry (cached)."""
    shape = tuple(int(v) for v in shape)
    values = (_prod(shape[:-3]),) + shape[-3:] + tuple(int(v) for v in tuple(out_size) + tuple(
        kernel) + tuple(stride) + tuple(padding) + tuple(dilation))
    m = _GEOMETRY.get(values)
    if m is None:
        if len(_GEOMETRY) > 256:
            _GEOMETRY.clear()
        m = _GEOMETRY[values] = cuda.to_device(np.array(values, np.int64))
    return m


def _float_only(a, name: str) -> None:
    if np.dtype(a.dtype).kind != "f":
        raise NotImplementedError(f"{name} of integers is not implemented for CUDA tensors yet")


def max_pool3d(x, kernel, stride, padding, dilation, out_size):
    """(values, int64 indices into each volume) of max pooling ``x`` (..., D, H, W)."""
    x = ascontiguous(x)
    shape = tuple(x.shape)
    out = empty(shape[:-3] + tuple(out_size), x.dtype)
    idx = empty(shape[:-3] + tuple(out_size), np.int64)
    if out.size:
        launch(_max_pool3d_k, out.size)(
            flat(x), _geometry3d(shape, out_size, kernel, stride, padding, dilation),
            _lowest(x.dtype), flat(out), flat(idx))
    return out, idx


def _pool3d(kernel_fn, x, out_size, *args, **geometry):
    """A 3-D forward kernel (one thread per output) on ``x``: ``kernel_fn(x, g, *args, out)``."""
    x = ascontiguous(x)
    shape = tuple(x.shape)
    out = empty(shape[:-3] + tuple(out_size), x.dtype)
    if out.size:
        launch(kernel_fn, out.size)(flat(x), _geometry3d(shape, out_size, **geometry), *args,
                                    flat(out))
    return out


def _pool3d_backward(kernel_fn, grad, in_size, *args, **geometry):
    """A 3-D backward kernel (one thread per gradient element, adding into zeros of the input's
    shape): ``kernel_fn(grad, g, *args, out)``."""
    grad = ascontiguous(grad)
    shape = tuple(grad.shape)
    out = full(shape[:-3] + tuple(in_size), grad.dtype, 0)
    if grad.size and out.size:
        launch(kernel_fn, grad.size)(
            flat(grad), _geometry3d(shape[:-3] + tuple(in_size), shape[-3:], **geometry), *args,
            flat(out))
    return out


def avg_pool3d(x, kernel, stride, padding, out_size, count_include_pad, divisor_override):
    _float_only(x, "avg_pool3d")
    return _pool3d(_avg_pool3d_k, x, out_size, bool(count_include_pad), int(divisor_override),
                   kernel=kernel, stride=stride, padding=padding)


def avg_pool3d_backward(grad, in_size, kernel, stride, padding, count_include_pad,
                        divisor_override):
    _float_only(grad, "avg_pool3d_backward")
    return _pool3d_backward(_avg_pool3d_backward_k, grad, in_size, bool(count_include_pad),
                            int(divisor_override), kernel=kernel, stride=stride,
                            padding=padding)


def adaptive_avg_pool3d(x, out_size):
    return _pool3d(_adaptive_avg3d_k, x, out_size)


def adaptive_avg_pool3d_backward(grad, in_size):
    return _pool3d_backward(_adaptive_avg3d_backward_k, grad, in_size)


# Interpolation (``F.interpolate``) lives in upsample.py and is reached as ``K.pooling.*``, as on
# the CPU.
