"""Structure kernels on CUDA (``K.structure``), with the CPU module's interface
(``kernels/cpu/structure.py``): triangles (``tri``), the index remapping of ``flip`` and ``roll``
(``remap``), the strided diagonal and ``unfold`` views and the writing of a diagonal into zeros
(``embed_diagonal``, through the layout module's strided ``assign``).

The kernels read a C-contiguous operand flat, one thread per output element (grid-stride), and
write a new C-contiguous array; small layout arrays (shape, flags, shifts) are int64 meta arrays
uploaded once per layout and cached.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..cpu.structure import diagonal_geometry, unfold_geometry
from ..cpu.structure import repeat_index as _host_repeat_index
from . import layout
from .elementwise import to_host, upload
from .memory import empty, launch
from .layout import ascontiguous, flat


@cuda.jit
def _tri_k(x, n, m, k, upper, out):
    """The CPU's ``_tri_k``: the kept triangle of each ``(n, m)`` matrix, zeros elsewhere."""
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        d = i % m - (i // m) % n
        keep = d >= k if upper else d <= k
        if keep:
            out[i] = x[i]
        else:
            out[i] = 0


@cuda.jit
def _remap_k(x, meta, out):
    """The CPU's ``_remap_k``; ``meta`` is [nd, shape…, flip…, shift…]."""
    nd = meta[0]
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        rest = i
        src = 0
        step = 1
        for d in range(nd - 1, -1, -1):
            n = meta[1 + d]
            c = rest % n
            rest //= n
            if meta[1 + nd + d]:
                c = n - 1 - c
            else:
                c = (c - meta[1 + 2 * nd + d] + n) % n
            src += c * step
            step *= n
        out[i] = x[src]


_META: dict = {}


def _meta(rows: tuple):
    m = _META.get(rows)
    if m is None:
        if len(_META) > 256:
            _META.clear()
        m = _META[rows] = cuda.to_device(np.array(rows, np.int64))
    return m


def tri(x, k: int, upper: bool):
    """The lower (``upper``: upper) triangle of the last two dimensions of ``x`` from diagonal
    ``k``, zeros elsewhere: a new C-contiguous array."""
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    if a.size:
        n, m = tuple(a.shape)[-2:]
        launch(_tri_k, a.size)(flat(a), int(n), int(m), int(k), bool(upper), flat(out))
    return out


def remap(x, flip: tuple, shift: tuple):
    """``x`` flipped where ``flip`` is set and rolled by ``shift`` (in ``[0, size)``) along the
    other dimensions: a new C-contiguous array."""
    a = ascontiguous(x)
    out = empty(tuple(a.shape), a.dtype)
    if a.size:
        shape = tuple(int(n) for n in a.shape)
        rows = (len(shape),) + shape + tuple(int(bool(f)) for f in flip) + \
            tuple(int(s) for s in shift)
        launch(_remap_k, a.size)(flat(a), _meta(rows), flat(out))
    return out


def diagonal(x, offset: int, dim1: int, dim2: int):
    """The diagonal ``offset`` of ``dim1`` and ``dim2``, last: a strided view of ``x``'s memory."""
    shape, strides, start = diagonal_geometry(
        tuple(x.shape), layout.strides_of(x), offset, dim1, dim2)
    return layout.strided(x, shape, strides, start)


def unfold(x, dim: int, size: int, step: int):
    """The windows of ``size`` elements every ``step`` along ``dim``: a strided view of ``x``'s
    memory (``unfold_geometry``)."""
    shape, strides = unfold_geometry(tuple(x.shape), layout.strides_of(x), dim, size, step)
    return layout.strided(x, shape, strides)


def embed_diagonal(x, shape: tuple, offset: int, dim1: int, dim2: int):
    """Zeros of ``shape`` with ``x`` written on the diagonal ``offset`` of ``dim1`` and
    ``dim2``."""
    out = layout.zeros(tuple(shape), x.dtype)
    view = diagonal(out, offset, dim1, dim2)
    if view.size:
        layout.assign(view, x)
    return out


def repeat_index(repeats):
    """``repeat_interleave``'s index from ``repeats`` (read back to the host: the result's size
    depends on the values, as in PyTorch without ``output_size``)."""
    return upload(_host_repeat_index(to_host(repeats)))
