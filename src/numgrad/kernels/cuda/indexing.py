"""Advanced indexing on CUDA: gather (``a[idx]``) and scatter (``a[idx] = v``, ``+=`` with
duplicates accumulating through atomic adds).

The index arrays of a parsed key are host (NumPy) arrays: ``ops/indexing.py`` parses and
bounds-checks them on the host as the CPU does (a CUDA index tensor is copied there first; a mask
needs its count of True values anyway, an unavoidable sync that PyTorch makes too). From them the
host computes, for each element of the result, its offset in the indexed view's memory, with
the NumPy advanced-indexing rules applied to open grids (no table the size of the tensor); the
offsets go to the device once and one kernel gathers or scatters.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from ..cpu.elementwise import ADD
from .elementwise import binary_into
from .layout import assign, broadcast_copy, buffer, strides_of, view_index
from .memory import empty, flat, launch


@cuda.jit
def _gather_k(x, offsets, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[offsets[i]]


@cuda.jit
def _scatter_k(out, offsets, values):
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        out[offsets[i]] = values[i]


@cuda.jit
def _scatter_add_k(out, offsets, values):
    for i in range(cuda.grid(1), values.size, cuda.gridsize(1)):
        cuda.atomic.add(out, offsets[i], values[i])


def _offsets(view, adv: tuple) -> np.ndarray:
    """The offset in ``view``'s buffer of each element of ``view[adv]`` (a host int64 array of
    the result's shape): the sum over dimensions of the index along it times its stride."""
    shape = tuple(view.shape)
    offsets = np.asarray(np.broadcast_to(np.zeros((), np.int64), shape)[adv]).copy()
    for d, (n, s) in enumerate(zip(shape, strides_of(view))):
        if n > 1 and s:
            grid = (np.arange(n, dtype=np.int64) * s).reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
            offsets += np.asarray(np.broadcast_to(grid, shape)[adv])
    return offsets


def index(a, basic: tuple, adv: tuple):
    """``a[basic + (...,)][adv]``: a new array (``adv`` holds host index arrays, checked)."""
    view = view_index(a, basic + (Ellipsis,))
    offsets = _offsets(view, adv)
    out = empty(offsets.shape, a.dtype)
    if out.size:
        launch(_gather_k, out.size)(buffer(view), cuda.to_device(offsets.reshape(-1)), flat(out))
    return out


def index_put(out, basic: tuple, adv, values, accumulate: bool) -> None:
    """``out[basic + (...,)][adv] = values`` in place (``+=`` with ``accumulate``, repeated
    indices adding up); ``values`` (a device array) broadcasts; ``adv`` None: a basic key."""
    view = view_index(out, basic + (Ellipsis,))
    if adv is None:
        if accumulate:
            binary_into(ADD, view, values)
        else:
            assign(view, values)
        return
    offsets = _offsets(view, adv)
    if not offsets.size:
        return
    # (a new array: safe where ``values`` shares memory with ``out``)
    values = broadcast_copy(values, offsets.shape, out.dtype)
    kernel = _scatter_add_k if accumulate else _scatter_k
    launch(kernel, values.size)(buffer(view), cuda.to_device(offsets.reshape(-1)), flat(values))
