"""``gather``, ``scatter`` / ``scatter_add`` and ``index_select`` along one dimension on CUDA,
with the CPU module's interface (``gather_dim``, ``scatter_dim``, ``index_select_dim``): one
thread per element of the index, the other operand read or written through its C strides (a
small int64 meta array, cached per layout: [ndim, dim, size, index shape..., strides...]).

``scatter_add`` adds with atomics (repeated indices add up, in no fixed order); ``scatter``
writes (with repeated indices one write wins, unspecified which, as in PyTorch); the
``'multiply'`` reduction runs in one thread (there is no atomic multiply), in index order as on
the CPU. An index out of range cannot raise inside a kernel: the element is skipped and the index
recorded in the device error array, raised at the next sync (``indexing.check_errors``), as for
advanced indexing.
"""
from __future__ import annotations

from numba import cuda

from .elementwise import copy
from .errors import _record, device_errors
from .indexing import _int_meta
from .layout import broadcast_to, reshape_view, strides_of, view_index
from .memory import empty, launch
from .layout import ascontiguous, flat
from .elementwise import cast

SET, ADD, MULTIPLY, AMAX, AMIN = 0, 1, 2, 3, 4  # (the CPU's scatter modes)


@cuda.jit(device=True)
def _target(p, meta, v):
    """The offset of index element ``p`` with ``v`` at the meta's dimension."""
    nd = meta[0]
    dim = meta[1]
    off = 0
    q = p
    for d in range(nd - 1, -1, -1):
        n = meta[3 + d]
        c = q % n
        q //= n
        if d != dim:
            off += c * meta[3 + nd + d]
    return off + v * meta[3 + nd + dim]


@cuda.jit
def _gather_k(x, idx, meta, err, out):
    size = meta[2]
    for p in range(cuda.grid(1), idx.size, cuda.gridsize(1)):
        v = idx[p]
        if v < 0 or v >= size:
            _record(err, v, meta[1], size)
            out[p] = 0
        else:
            out[p] = x[_target(p, meta, v)]


@cuda.jit
def _scatter_k(out, idx, meta, err, src):
    size = meta[2]
    for p in range(cuda.grid(1), idx.size, cuda.gridsize(1)):
        v = idx[p]
        if v < 0 or v >= size:
            _record(err, v, meta[1], size)
        else:
            out[_target(p, meta, v)] = src[p]


@cuda.jit
def _scatter_add_k(out, idx, meta, err, src):
    size = meta[2]
    for p in range(cuda.grid(1), idx.size, cuda.gridsize(1)):
        v = idx[p]
        if v < 0 or v >= size:
            _record(err, v, meta[1], size)
        else:
            cuda.atomic.add(out, _target(p, meta, v), src[p])


@cuda.jit
def _scatter_serial_k(out, idx, meta, err, src, how):
    """One thread, in index order (no atomic multiply, max or min): each target multiplied by
    the values scattered onto it (``how`` 0), or the larger (1) or smaller (2) kept, a NaN
    winning (the CPU's order and rule)."""
    if cuda.grid(1) == 0:
        size = meta[2]
        for p in range(idx.size):
            v = idx[p]
            if v < 0 or v >= size:
                _record(err, v, meta[1], size)
            else:
                o = _target(p, meta, v)
                x = src[p]
                if how == 0:
                    out[o] = out[o] * x
                elif (x > out[o] if how == 1 else x < out[o]) or x != x:
                    out[o] = x


def _meta(a, dim: int, index_shape: tuple):
    size = a.shape[dim] if a.ndim else 1
    strides = strides_of(a) if a.ndim else (1,)
    shape = tuple(index_shape) or (1,)
    return _int_meta((len(shape), dim, size, *shape, *strides))


def _flat_index(index):
    return flat(ascontiguous(index))


def gather_dim(x, dim: int, index):
    """``out[c] = x[c with c[dim] = index[c]]`` for each position ``c`` of ``index``."""
    a = ascontiguous(x)
    out = empty(tuple(index.shape), x.dtype)
    if out.size:
        launch(_gather_k, out.size)(flat(a), _flat_index(index), _meta(a, dim, index.shape),
                                    device_errors(), flat(out))
    return out


def index_select_dim(x, dim: int, index):
    """``x`` at the positions ``index`` (1-D) along ``dim``."""
    n = index.size
    view = x if x.ndim else reshape_view(x, (1,))
    vshape = tuple(view.shape)
    shape = vshape[:dim] + (n,) + vshape[dim + 1:]
    wide = broadcast_to(reshape_view(index, tuple(n if d == dim else 1 for d in range(len(shape)))),
                        shape)
    out = gather_dim(view, dim, ascontiguous(wide))
    return reshape_view(out, shape if x.ndim else (n,) if index.ndim else ())


def scatter_dim(x, dim: int, index, src, mode: int):
    """A copy of ``x`` with ``src[c]`` written (ADD: added, MULTIPLY: multiplied, AMAX / AMIN:
    the larger / smaller kept) at ``c`` with
    ``c[dim] = index[c]``, for each position ``c`` of ``index``."""
    out = copy(x)
    if index.size:
        part = src if not src.ndim else view_index(src, tuple(slice(0, n) for n in index.shape))
        part = ascontiguous(part)
        if part.dtype != out.dtype:
            part = cast(part, out.dtype)
        args = (flat(out) if out.ndim else reshape_view(out, (1,)), _flat_index(index),
                _meta(out, dim, index.shape), device_errors(),
                flat(part) if part.ndim else reshape_view(part, (1,)))
        if mode in (MULTIPLY, AMAX, AMIN):
            _scatter_serial_k[1, 1](*args, (MULTIPLY, AMAX, AMIN).index(mode))
        else:
            launch(_scatter_add_k if mode == ADD else _scatter_k, index.size)(*args)
    return out
