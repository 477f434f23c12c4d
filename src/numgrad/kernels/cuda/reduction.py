"""Reductions on CUDA, with the CPU module's interface (``sum_dims``, ``reduce_dims``,
``arg_reduce_dims``) and semantics.

As on the CPU, the input is seen as (outer, reduced, inner): reduced dimensions that are not
adjacent are first gathered into one block at the end by a permuting copy (kept dimensions, then
the reduced ones, in order), so every reduction visits a slice's elements in the CPU's order.

Sums accumulate in float64 whatever the input's precision, as on the CPU. Two kinds of kernel:

- one thread per output element (many outputs: every thread has work, reads coalesce along
  ``inner``);
- block-parallel trees for few outputs over many elements (a full sum, a row sum of a wide
  matrix): each block's threads stride over a chunk of one slice, accumulate in float64 registers
  and combine through a shared-memory tree. A slice longer than a few blocks' worth is split
  across ``parts`` blocks writing float64 partial sums, which a second launch of the same kernel
  adds up. ``PROD``/``MAX``/``MIN`` and the arg reductions of float arrays do the same, the tree
  carrying (value, index) pairs so that the first index of the extreme wins.

``MAX``/``MIN`` propagate NaN and ``ARGMAX``/``ARGMIN`` give the first index of the extreme (or of
the first NaN), as the CPU kernels and PyTorch. ``PROD`` multiplies in the input's dtype (in
order, as the CPU, except in the trees).

The other entry points serve the reductions' backward formulas and stable forms, so that the ops
call no NumPy on device data: ``extreme_share``, ``one_hot_dim``, ``any_equal``,
``any_equal_device``, ``product_of_others``, ``finite_or_zero``, ``inf_where_zero``.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, float64, int64

from ..cpu.reduction import ARGMAX, ARGMIN, MAX, MIN, PROD  # noqa: F401  (the CPU's op codes)
from ..formulas import Binary, Compare
from .elementwise import _offset, binary, cast
from .memory import _SIMULATOR, empty, launch
from .layout import ascontiguous, flat

# Block-parallel trees: threads per block (a power of two: the tree halves it), the smallest
# reduced extent worth a block per slice, the most outputs for which it is used, and how many
# blocks to aim for in all (a slice is split into parts to get there). The simulator runs each
# thread as a Python thread: small numbers there, so that the tests reach the two-pass path.
_TREE_THREADS = 32 if _SIMULATOR else 256
_TREE_MIN_K = 64 if _SIMULATOR else 2048
_TREE_MAX_OUT = 64 if _SIMULATOR else 8192
_TREE_BLOCKS = 4 if _SIMULATOR else 4 * 132
_TREE_PER_THREAD = 16  # elements per thread below which a slice is not split further
_MAX_GRID = 1 if _SIMULATOR else 65535


# ------------------------------------------------------------------ kernels
@cuda.jit(device=True)
def block_sum(s, tid, threads):
    """Adds ``s[0:threads]`` (shared memory, ``threads`` a power of two) into ``s[0]`` by halving;
    every thread of the block calls it, after the block has written ``s``."""
    step = threads // 2
    while step > 0:
        if tid < step:
            s[tid] += s[tid + step]
        cuda.syncthreads()
        step //= 2


@cuda.jit
def _sum_k(x, k, inner, out):
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        base = (o // inner) * k * inner + o % inner
        acc = 0.0
        for j in range(k):
            acc += x[base + j * inner]
        out[o] = acc


@cuda.jit
def _sum_tree_k(x, k, inner, parts, chunk, out):
    """``out[o * parts + p]`` = the float64 sum of chunk ``p`` of slice ``o``; one block per
    (slice, part), its threads striding over the chunk, then a shared-memory tree."""
    tid = cuda.threadIdx.x
    partial = cuda.shared.array(_TREE_THREADS, float64)
    for w in range(cuda.blockIdx.x, out.size, cuda.gridDim.x):  # uniform across the block
        o = w // parts
        start = (w % parts) * chunk
        stop = min(k, start + chunk)
        base = (o // inner) * k * inner + o % inner
        acc = 0.0
        for j in range(start + tid, stop, _TREE_THREADS):
            acc += x[base + j * inner]
        partial[tid] = acc
        cuda.syncthreads()
        block_sum(partial, tid, _TREE_THREADS)
        if tid == 0:
            out[w] = partial[0]
        cuda.syncthreads()  # partial[0] is read before the next slice overwrites it


@cuda.jit(device=True)
def _better(op, v, i, best, best_i):
    """Whether (value ``v``, index ``i``) beats (``best``, ``best_i``) for ``MAX``/``MIN``: NaN
    beats any number, then the extreme value, then (ties, or two NaNs) the smaller index."""
    v_nan = v != v
    best_nan = best != best
    if v_nan or best_nan:
        return v_nan and (not best_nan or i < best_i)
    if v == best:
        return i < best_i
    return v > best if op == MAX else v < best


def _make_extreme_tree(dtype):
    @cuda.jit
    def tree(op, x, index, use_index, k, inner, parts, chunk, out, out_index):
        """Block-parallel ``PROD``/``MAX``/``MIN`` with the index of the extreme (or first NaN):
        ``out[o * parts + p]`` and ``out_index[...]`` for chunk ``p`` of slice ``o``. A second
        pass over the partials reads their indices from ``index`` (``use_index``)."""
        tid = cuda.threadIdx.x
        values = cuda.shared.array(_TREE_THREADS, dtype)
        indices = cuda.shared.array(_TREE_THREADS, int64)
        for w in range(cuda.blockIdx.x, out.size, cuda.gridDim.x):  # uniform across the block
            o = w // parts
            start = (w % parts) * chunk
            stop = min(k, start + chunk)
            base = (o // inner) * k * inner + o % inner
            best_i = -1  # -1: nothing yet
            best = x[base] * 0
            for j in range(start + tid, stop, _TREE_THREADS):
                v = x[base + j * inner]
                i = index[base + j * inner] if use_index else j
                if best_i < 0:
                    best, best_i = v, i
                elif op == PROD:
                    best = best * v
                elif _better(op, v, i, best, best_i):
                    best, best_i = v, i
            values[tid] = best
            indices[tid] = best_i
            cuda.syncthreads()
            step = _TREE_THREADS // 2
            while step > 0:
                if tid < step and indices[tid + step] >= 0:
                    v = values[tid + step]
                    i = indices[tid + step]
                    if indices[tid] < 0:
                        values[tid] = v
                        indices[tid] = i
                    elif op == PROD:
                        values[tid] = values[tid] * v
                    elif _better(op, v, i, values[tid], indices[tid]):
                        values[tid] = v
                        indices[tid] = i
                cuda.syncthreads()
                step //= 2
            if tid == 0:
                out[w] = values[0]
                out_index[w] = indices[0]
            cuda.syncthreads()

    return tree


_EXTREME_TREE = {np.dtype(np.float32): _make_extreme_tree(float32),
                 np.dtype(np.float64): _make_extreme_tree(float64)}


@cuda.jit
def _reduce_k(op, x, k, inner, out):
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        base = (o // inner) * k * inner + o % inner
        acc = x[base]
        for j in range(1, k):
            v = x[base + j * inner]
            if op == PROD:
                acc = acc * v
            elif op == MAX:
                if v > acc or v != v:
                    acc = v
            elif v < acc or v != v:  # MIN
                acc = v
            if op != PROD and acc != acc:
                break
        out[o] = acc


@cuda.jit
def _arg_reduce_k(op, x, k, inner, out):
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        base = (o // inner) * k * inner + o % inner
        best = x[base]
        index = 0
        for j in range(1, k):
            if best != best:
                break
            v = x[base + j * inner]
            if v != v or (v > best if op == ARGMAX else v < best):
                best = v
                index = j
        out[o] = index


@cuda.jit
def _permute_k(x, meta, out):
    """``out`` (flat) = ``x`` read through ``meta``'s output shape and (permuted) strides."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[_offset(i, meta, 0)]


@cuda.jit
def _fill_k(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


@cuda.jit
def _one_hot_k(indices, n, inner, out):
    """``out[a, j, r]`` = 1 where ``indices[a, r] == j``, else 0 (``out`` flat, (outer, n, inner))."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        r = i % inner
        j = (i // inner) % n
        a = i // (n * inner)
        out[i] = 1 if indices[a * inner + r] == j else 0


@cuda.jit
def _any_equal_k(x, value, flag):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == value:
            flag[0] = 1


@cuda.jit
def _others_k(x, k, inner, n, one, out):
    """For each element of each of the ``n`` slices, the product of the slice's other elements:
    the exclusive prefix product times the exclusive suffix product (the CPU's two cumulative
    products, in the same order)."""
    for o in range(cuda.grid(1), n, cuda.gridsize(1)):
        base = (o // inner) * k * inner + o % inner
        acc = one
        for j in range(k):
            out[base + j * inner] = acc
            acc = acc * x[base + j * inner]
        acc = one
        for j in range(k - 1, -1, -1):
            out[base + j * inner] = out[base + j * inner] * acc
            acc = acc * x[base + j * inner]


@cuda.jit
def _finite_or_zero_k(x, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        v = x[i]
        out[i] = v if v - v == 0 else 0


@cuda.jit
def _inf_where_zero_k(x, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = math.inf if x[i] == 0 else 0


# ------------------------------------------------------------------ helpers
def _result_shape(shape: tuple, dims: tuple, keepdim: bool) -> tuple:
    if keepdim:
        return tuple(1 if d in dims else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in dims)


_PERMUTE_META: dict = {}


def permute_copy(x, perm: tuple):
    """A C-contiguous copy of ``x`` (C-contiguous) with its dimensions in the order ``perm``."""
    shape = tuple(x.shape[p] for p in perm)
    out = empty(shape, x.dtype)
    if not out.size:
        return out
    key = (x.shape, tuple(perm))
    meta = _PERMUTE_META.get(key)
    if meta is None:
        strides, step = [0] * x.ndim, 1
        for d in range(x.ndim - 1, -1, -1):
            strides[d] = step
            step *= x.shape[d]
        if len(_PERMUTE_META) > 1024:
            _PERMUTE_META.clear()
        meta = _PERMUTE_META[key] = cuda.to_device(
            np.array([x.ndim, *shape, *(strides[p] for p in perm)], np.int64))
    launch(_permute_k, out.size)(flat(x), meta, flat(out))
    return out


def _as_3d(x, dims: tuple):
    """``x`` as flat C-contiguous data seen as (outer, reduced, inner), and those three sizes."""
    x = ascontiguous(x)
    nd = x.ndim
    if dims and dims != tuple(range(dims[0], dims[-1] + 1)):
        kept = [d for d in range(nd) if d not in dims]
        x = permute_copy(x, tuple(kept) + tuple(dims))
        first = len(kept)
    else:
        first = dims[0] if dims else nd
    last = first + len(dims)
    return (flat(x), math.prod(x.shape[:first]), math.prod(x.shape[first:last]),
            math.prod(x.shape[last:]))


def full(shape, dtype, value):
    """A new device array of ``shape`` and ``dtype`` filled with ``value``."""
    out = empty(shape, dtype)
    if out.size:
        launch(_fill_k, out.size)(flat(out), np.dtype(dtype).type(value))
    return out


_TREE_CONFIGS: dict = {}


def _tree(x, k, inner, parts, chunk, out):
    blocks = min(out.size, _MAX_GRID)
    configured = _TREE_CONFIGS.get(blocks)
    if configured is None:
        configured = _TREE_CONFIGS[blocks] = _sum_tree_k[blocks, _TREE_THREADS]
    configured(x, k, inner, parts, chunk, out)


def _parts(k: int, n_out: int):
    """How many blocks share a slice of ``k`` elements, and the chunk each takes."""
    parts = max(1, min(-(-k // (_TREE_THREADS * _TREE_PER_THREAD)), _TREE_BLOCKS // n_out))
    chunk = -(-k // parts)
    return -(-k // chunk), chunk


def _use_tree(k: int, n_out: int) -> bool:
    return k >= _TREE_MIN_K and n_out <= _TREE_MAX_OUT


def _extreme_tree(op: int, x, k: int, inner: int, n_out: int):
    """``PROD``/``MAX``/``MIN`` over the middle of flat float ``x`` seen as (outer, k, inner), by
    block-parallel trees: the (n_out,) values and the (n_out,) indices of the extremes."""
    kernel = _EXTREME_TREE[x.dtype]
    parts, chunk = _parts(k, n_out)
    blocks = min(n_out * parts, _MAX_GRID)
    no_index = _no_index()
    if parts == 1:
        values, indices = empty((n_out,), x.dtype), empty((n_out,), np.int64)
        kernel[blocks, _TREE_THREADS](op, x, no_index, False, k, inner, 1, k, values, indices)
        return values, indices
    values, indices = empty((n_out * parts,), x.dtype), empty((n_out * parts,), np.int64)
    kernel[blocks, _TREE_THREADS](op, x, no_index, False, k, inner, parts, chunk, values, indices)
    final, final_indices = empty((n_out,), x.dtype), empty((n_out,), np.int64)
    kernel[min(n_out, _MAX_GRID), _TREE_THREADS](op, values, indices, True, parts, 1, 1, parts,
                                                 final, final_indices)
    return final, final_indices


_NO_INDEX_ARRAY = []


def _no_index():
    """A 1-element int64 device array standing for "no index array" (first passes)."""
    if not _NO_INDEX_ARRAY:
        _NO_INDEX_ARRAY.append(empty((1,), np.int64))
    return _NO_INDEX_ARRAY[0]


def _sum_3d(x, outer: int, k: int, inner: int, dtype):
    """The (outer * inner,) sums over the middle of flat ``x`` seen as (outer, k, inner)."""
    n_out = outer * inner
    out = empty((n_out,), dtype)
    if not n_out:
        return out
    if not _use_tree(k, n_out):
        launch(_sum_k, n_out)(x, k, inner, out)
        return out
    parts, chunk = _parts(k, n_out)
    if parts == 1:
        _tree(x, k, inner, 1, k, out)
        return out
    partial = empty((n_out * parts,), np.float64)
    _tree(x, k, inner, parts, chunk, partial)
    _tree(partial, parts, 1, 1, parts, out)
    return out


# ------------------------------------------------------------------ entry points
def sum_dims(x, dims: tuple, keepdim: bool):
    """Sum of ``x`` over ``dims`` (normalised, sorted, unique), keeping them as size 1 if asked."""
    shape = _result_shape(x.shape, dims, keepdim)
    x3, outer, k, inner = _as_3d(x, dims)
    return _sum_3d(x3, outer, k, inner, x.dtype).reshape(shape)


def reduce_dims(op: int, x, dims: tuple, keepdim: bool):
    """``PROD``, ``MAX`` or ``MIN`` of ``x`` over ``dims`` (MAX/MIN need a non-empty slice)."""
    shape = _result_shape(x.shape, dims, keepdim)
    x3, outer, k, inner = _as_3d(x, dims)
    if k == 0:
        if op != PROD:
            raise IndexError(
                "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument."
            )
        return full(shape, x.dtype, 1)
    n_out = outer * inner
    if n_out and x.dtype in _EXTREME_TREE and _use_tree(k, n_out):
        return _extreme_tree(int(op), x3, k, inner, n_out)[0].reshape(shape)
    out = empty((n_out,), x.dtype)
    if out.size:
        launch(_reduce_k, out.size)(int(op), x3, k, inner, out)
    return out.reshape(shape)


def arg_reduce_dims(op: int, x, dims: tuple, keepdim: bool):
    """Indices (int64) of the ``ARGMAX``/``ARGMIN`` over one dimension (or all, flattened)."""
    shape = _result_shape(x.shape, dims, keepdim)
    x3, outer, k, inner = _as_3d(x, dims)
    if k == 0:
        raise IndexError("argmax(): Expected reduction dim to be specified for input.numel() == 0.")
    n_out = outer * inner
    if n_out and x.dtype in _EXTREME_TREE and _use_tree(k, n_out):
        return _extreme_tree(MAX if op == ARGMAX else MIN, x3, k, inner, n_out)[1].reshape(shape)
    out = empty((n_out,), np.int64)
    if out.size:
        launch(_arg_reduce_k, out.size)(int(op), x3, k, inner, out)
    return out.reshape(shape)


def one_hot_dim(indices, shape: tuple, dim: int, dtype):
    """An array of ``shape`` and ``dtype``: 1 where the position along ``dim`` equals
    ``indices`` (``shape`` with ``dim`` of size 1), else 0 (max/min's gradient mask)."""
    indices = ascontiguous(indices)
    out = empty(shape, dtype)
    if out.size:
        inner = math.prod(shape[dim + 1:])
        launch(_one_hot_k, out.size)(flat(indices), shape[dim], inner, flat(out))
    return out


def extreme_share(x, extreme, dims: tuple, nan_equal: bool):
    """``1 / count`` where ``x`` equals its slice's ``extreme`` (kept dims), ``count`` the ties in
    the slice, else 0: how amax/amin share their gradient. A NaN extreme matches nothing (the
    slice is NaN throughout, 0 / 0), or, with ``nan_equal`` (max()/min()), the NaNs."""
    x, extreme = ascontiguous(x), ascontiguous(extreme)
    hit = cast(binary(Compare.EQ, x, extreme, np.bool_), x.dtype)
    if nan_equal:  # + isnan(x) * isnan(extreme): a NaN never also equals
        x_nan = cast(binary(Compare.NE, x, x, np.bool_), x.dtype)
        extreme_nan = cast(binary(Compare.NE, extreme, extreme, np.bool_), x.dtype)
        hit = binary(Binary.ADD, hit, binary(Binary.MUL, x_nan, extreme_nan))
    return binary(Binary.DIV, hit, sum_dims(hit, dims, True))


def any_equal(x, value) -> bool:
    """Whether an element of ``x`` equals ``value`` (one flag copied back to the host)."""
    x = ascontiguous(x)
    if not x.size:
        return False
    flag = full((1,), np.int32, 0)
    launch(_any_equal_k, x.size)(flat(x), x.dtype.type(value), flag)
    return bool(flag.copy_to_host()[0])


def any_equal_device(x, value):
    """Whether an element of ``x`` equals ``value``, as a 0-d bool device array (nothing is
    copied back: a kernel can select with it)."""
    x = ascontiguous(x)
    flag = full((1,), np.bool_, False)
    if x.size:
        launch(_any_equal_k, x.size)(flat(x), x.dtype.type(value), flag)
    return flag.reshape(())


def product_of_others(x, dims: tuple):
    """For each element of ``x``, the product of the other elements of its slice over ``dims``."""
    x = ascontiguous(x)
    nd = x.ndim
    contiguous = not dims or dims == tuple(range(dims[0], dims[-1] + 1))
    x3, outer, k, inner = _as_3d(x, dims)
    out = empty((x3.size,), x.dtype)
    if out.size:
        launch(_others_k, outer * inner)(x3, k, inner, outer * inner, x.dtype.type(1), out)
    if contiguous:
        return out.reshape(x.shape)
    kept = [d for d in range(nd) if d not in dims]
    perm = kept + list(dims)
    moved = out.reshape(tuple(x.shape[p] for p in perm))
    return permute_copy(moved, tuple(int(i) for i in np.argsort(perm)))


def _map(kernel, x):
    """A new array of ``x``'s shape and dtype, ``kernel(flat x, flat out)`` filling it."""
    x = ascontiguous(x)
    out = empty(x.shape, x.dtype)
    if out.size:
        launch(kernel, out.size)(flat(x), flat(out))
    return out


def finite_or_zero(x):
    """``x`` with every infinity and NaN replaced by 0."""
    return _map(_finite_or_zero_k, x)


def inf_where_zero(x):
    """+inf where ``x`` is 0 and 0 elsewhere, in ``x``'s dtype."""
    return _map(_inf_where_zero_k, x)
