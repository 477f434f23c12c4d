"""Interpolation kernels on CUDA (``K.upsample``), with the CPU module's interface: the same
per-dimension tables (``kernels/cpu/upsample.py``'s ``tables``, computed on the host from the
shapes alone and uploaded once per geometry), one thread per output element summing its taps in
the CPU's order, and a backward that adds each output's weighted gradient to its sources with
atomics (one thread per gradient element). Floats only.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..cpu.upsample import tables
from .memory import empty, launch
from .layout import ascontiguous, flat
from .reduction import full

_TYPE_NAMES = {"int64": "Long", "int32": "Int", "bool": "Bool", "int16": "Short", "int8": "Char",
               "uint8": "Byte"}


@cuda.jit
def _resample_k(x, id0, w0, t0, id1, w1, t1, id2, w2, t2, depth, height, width, odepth,
                oheight, owidth, out):
    """``out[p, i, j, k] = sum_a w0[i, a] * sum_b w1[j, b] * sum_c w2[k, c] * x[p, id0[i, a],
    id1[j, b], id2[k, c]]``, all flat (tables ``(out_len, taps)``)."""
    for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = e % owidth
        j = (e // owidth) % oheight
        i = (e // (owidth * oheight)) % odepth
        p = e // (owidth * oheight * odepth)
        base = p * depth * height * width
        acc = w0[0] * 0
        for a in range(t0):
            plane = acc * 0
            for b in range(t1):
                row = acc * 0
                at = base + (id0[i * t0 + a] * height + id1[j * t1 + b]) * width
                for c in range(t2):
                    row += w2[k * t2 + c] * x[at + id2[k * t2 + c]]
                plane += w1[j * t1 + b] * row
            acc += w0[i * t0 + a] * plane
        out[e] = acc


@cuda.jit
def _resample_backward_k(grad, id0, w0, t0, id1, w1, t1, id2, w2, t2, depth, height, width,
                         odepth, oheight, owidth, out):
    """The adjoint of ``_resample_k``: ``out`` (flat, zeroed) gets each gradient times its
    weights at its sources, atomically."""
    for e in range(cuda.grid(1), grad.size, cuda.gridsize(1)):
        k = e % owidth
        j = (e // owidth) % oheight
        i = (e // (owidth * oheight)) % odepth
        p = e // (owidth * oheight * odepth)
        base = p * depth * height * width
        g = grad[e]
        for a in range(t0):
            ga = w0[i * t0 + a] * g
            for b in range(t1):
                gb = w1[j * t1 + b] * ga
                at = base + (id0[i * t0 + a] * height + id1[j * t1 + b]) * width
                for c in range(t2):
                    cuda.atomic.add(out, at + id2[k * t2 + c], w2[k * t2 + c] * gb)


_TABLES: dict = {}


def _tables(in_sp, out_sp, mode, align_corners, scales, dtype):
    """The six flat device tables and the three tap counts (cached per geometry)."""
    key = (tuple(in_sp), tuple(out_sp), mode, bool(align_corners), tuple(scales),
           np.dtype(dtype).name)
    found = _TABLES.get(key)
    if found is None:
        if len(_TABLES) > 256:
            _TABLES.clear()
        dims = len(in_sp)
        found = []
        for _ in range(3 - dims):
            found += [cuda.to_device(np.zeros(1, np.int64)), cuda.to_device(np.ones(1, dtype)),
                      1]
        for d in range(dims):
            idx, w = tables(in_sp[d], out_sp[d], mode, align_corners, scales[d], dtype)
            found += [cuda.to_device(idx.reshape(-1)), cuda.to_device(w.reshape(-1)),
                      int(idx.shape[1])]
        _TABLES[key] = found
    return found


def _check_dtype(a) -> None:
    if a.dtype not in (np.float32, np.float64):
        name = _TYPE_NAMES.get(a.dtype.name, a.dtype.name)
        raise NotImplementedError(
            f"numgrad's CUDA interpolation takes float32 and float64 tensors, not '{name}'")


def _sizes3(shape, dims):
    sp = tuple(int(v) for v in shape[len(shape) - dims:])
    return (1,) * (3 - dims) + sp


def interpolate(x, out_size, mode, align_corners, scales):
    """``x`` (..., *spatial) resampled to ``(..., *out_size)``."""
    _check_dtype(x)
    dims = len(out_size)
    shape = tuple(int(v) for v in x.shape)
    out = empty(shape[:len(shape) - dims] + tuple(out_size), x.dtype)
    if not out.size or not x.size:
        return out
    t = _tables(shape[len(shape) - dims:], out_size, mode, align_corners, scales, x.dtype)
    d, h, w = _sizes3(shape, dims)
    od, oh, ow = _sizes3(tuple(out.shape), dims)
    launch(_resample_k, out.size)(flat(ascontiguous(x)), *t, d, h, w, od, oh, ow, flat(out))
    return out


def interpolate_backward(grad, in_size, mode, align_corners, scales):
    """The gradient of ``interpolate`` with respect to its input of spatial size ``in_size``."""
    _check_dtype(grad)
    dims = len(in_size)
    shape = tuple(int(v) for v in grad.shape)
    out = full(shape[:len(shape) - dims] + tuple(in_size), grad.dtype, 0)
    if not out.size or not grad.size:
        return out
    t = _tables(tuple(in_size), shape[len(shape) - dims:], mode, align_corners, scales,
                grad.dtype)
    d, h, w = _sizes3(tuple(out.shape), dims)
    od, oh, ow = _sizes3(shape, dims)
    launch(_resample_backward_k, grad.size)(flat(ascontiguous(grad)), *t, d, h, w, od, oh, ow,
                                            flat(out))
    return out
