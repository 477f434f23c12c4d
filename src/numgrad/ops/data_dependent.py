"""Ops whose result's shape depends on the values: ``nonzero`` (``as_tuple``), ``argwhere``,
``masked_select`` (``MaskedSelectBackward0``), ``unique`` and ``unique_consecutive`` (with
``return_inverse`` / ``return_counts``, over all elements or the slices along ``dim``).

Each reads a count back from the data (``K.nonzero``: a sync on CUDA, as PyTorch's do; under
``numgrad.compile`` the tracer's ``READS`` breaks the graph there and the rest runs eagerly).
Everything else stays on the device: ``unique`` sorts with ``K.order_dim``, marks where a new value
starts, takes those positions with ``K.nonzero`` (the one read), and computes counts and the
inverse (a running sum of the marks, scattered back through the sort's indices) with kernels.
``unique`` always returns the values sorted (``sorted=False`` included: PyTorch leaves that order
unspecified); NaNs are distinct from each other, as PyTorch's CPU kernel counts them.
"""
from __future__ import annotations

import numpy as np

from .._dtype import torch_name
from ..tensor import Tensor
from ._names import Out, export
from ._promote import broadcast_shapes
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from ..tensor import _wrap_dim
from .shape import cat
from ..creation import zeros
from .indexing import index_put

_INT64 = np.dtype(np.int64)


def _tensor(input, name: str, arg: str = "input", position: int = 1) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(input).__name__}")
    return input


def _coordinates(K, d) -> tuple:
    """The coordinates of ``d``'s nonzero elements, one int64 array per dimension (0-d: of the
    one element as a 1-D tensor)."""
    if d.dtype.kind == "V":  # (bfloat16: its values as float32, numgrad._lowp)
        d = K.cast(d, np.dtype(np.float32))
    mask = d if d.dtype == np.bool_ else K.binary(K.NE, d, d.dtype.type(0), np.bool_)
    if d.ndim == 0:
        mask = K.reshape_view(mask, (1,))
    return K.nonzero(mask)


@export(method=True)
def nonzero(input: Tensor, *, as_tuple: bool = False):
    """The indices of the nonzero elements: an (n, ndim) int64 tensor, or with ``as_tuple`` one
    1-D tensor per dimension."""
    input = _tensor(input, "nonzero")
    K, d = kernels_for((input,)), input._data
    coords = _coordinates(K, d)
    if as_tuple:
        return tuple(Tensor._wrap(c) for c in coords)
    if d.ndim == 0:
        return Tensor._wrap(K.empty((int(coords[0].shape[0]), 0), _INT64))
    return Tensor._wrap(K.stack(list(coords), 1))


@export(method=True)
def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` with exactly ``size`` rows: the first ``size`` indices, padded with
    rows of ``fill_value``."""
    input = _tensor(input, "nonzero_static")
    if not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(input)[:size]
    if found.shape[0] == size:
        return found.contiguous()
    pad = found.new_full((size - found.shape[0], found.shape[1]), fill_value)

    return cat([found, pad])


@export(method=True)
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: an (n, ndim) int64 tensor of the nonzero elements' indices."""
    return nonzero(_tensor(input, "argwhere"))


@register
class MaskedSelect(Op):
    name, node = "masked_select", "MaskedSelectBackward0"
    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a: m.masked_select(a, a > 0), ((3, 4),)),
        Sample(lambda m, a, b: a.masked_select(b > 0), ((3, 1), (2, 3, 4))),
    )

    # (its input saved, unread, as PyTorch's node keeps it: an in-place write to it before
    # backward is refused there too; ``mask``, the tensor given, for ``_saved_mask``)
    save_inputs = (0,)

    @staticmethod
    def forward(K, a, *, coords, shape, mask):
        return K.index(K.broadcast_to(a, shape), (), coords)

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.params["shape"]
        index = tuple(Tensor._wrap(c) for c in ctx.params["coords"])
        base = zeros(shape, dtype=grad.dtype, device=grad.device)
        return (index_put(base, index, grad),)


@export(method=True, out=Out(
    same_dtype="masked_select(): self and result must have the same scalar type",
    no_overlap=True))
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` (bool, broadcast with it) is True, as a 1-D
    tensor."""
    input = _tensor(input, "masked_select")
    mask = _tensor(mask, "masked_select", "mask", 2)
    if mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    K = kernels_for((input, mask), MaskedSelect)
    a, m = input._data, mask._data
    shape = broadcast_shapes(tuple(m.shape), tuple(a.shape))  # (PyTorch's error, its order)
    if not shape:  # 0-d: the element as a 1-D tensor of one (or none)
        coords = (K.nonzero(K.reshape_view(m, (1,)))[0],)
        flat = input.reshape(1)
        return apply(MaskedSelect, (flat,), (flat._data,), coords=coords, shape=(1,),
                     mask=mask)
    coords = K.nonzero(K.broadcast_to(m, shape))
    return apply(MaskedSelect, (input,), (a,), coords=coords, shape=shape, mask=mask)


# ------------------------------------------------------------------ unique
def _runs(K, values):
    """Where each run of equal values starts in 1-D ``values`` (int64 positions, read back) and
    the bool marks of those starts."""
    n = values.shape[0]
    first = K.full((1,), True, np.bool_)
    if n > 1:
        later = K.binary(K.NE, K.view_index(values, (slice(1, None),)),
                         K.view_index(values, (slice(0, n - 1),)), np.bool_)
        starts = K.cat([first, later], 0)
    else:
        starts = first
    return K.nonzero(starts)[0], starts


def _unique_flat(input: Tensor, sort: bool, return_inverse: bool, return_counts: bool, name):
    input = _tensor(input, name)
    K, d = kernels_for((input,)), input._data
    if d.dtype.kind == "c":
        raise NotImplementedError(f"\"{name}\" not implemented for '{torch_name(d.dtype)}'")
    shape = tuple(d.shape)
    n = int(d.size)
    flat = K.reshape_view(K.ascontiguous(d), (n,))
    if n == 0:
        out = [Tensor._wrap(K.empty((0,), d.dtype))]
        if return_inverse:
            out.append(Tensor._wrap(K.empty(shape, _INT64)))
        if return_counts:
            out.append(Tensor._wrap(K.empty((0,), _INT64)))
        return out[0] if len(out) == 1 else tuple(out)
    if sort:
        values, order = K.order_dim(flat, 0)
    else:
        values, order = flat, None
    positions, starts = _runs(K, values)
    out = [Tensor._wrap(K.index(values, (), (positions,)))]
    if return_inverse:
        group = K.binary(K.SUB, K.cumulative(K.cast(starts, _INT64), 0, False, False),
                         np.int64(1))
        if order is not None:
            inverse = K.empty((n,), _INT64)
            K.index_put(inverse, (), (order,), group, False)
        else:
            inverse = group
        out.append(Tensor._wrap(K.reshape_view(inverse, shape)))
    if return_counts:
        ends = K.cat([positions, K.full((1,), n, _INT64)], 0)
        k = positions.shape[0]
        counts = K.binary(K.SUB, K.view_index(ends, (slice(1, k + 1),)),
                          K.view_index(ends, (slice(0, k),)))
        out.append(Tensor._wrap(counts))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_dim(input: Tensor, dim, sort: bool, return_inverse: bool, return_counts: bool):
    """``unique`` / ``unique_consecutive`` of the slices along ``dim``: the slices as rows of a
    matrix, sorted lexicographically (stable sorts by each column, the last first), runs of equal
    rows found as in the flat case, the distinct rows put back along ``dim``."""
    K, d = kernels_for((input,)), input._data
    shape = tuple(d.shape)
    if not shape:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    nd = len(shape)
    dim = _wrap_dim(int(dim), nd)
    n = shape[dim]
    rest = tuple(x for i, x in enumerate(shape) if i != dim)
    m = 1
    for x in rest:
        m *= x
    if m == 0 and n:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    order_dims = (dim,) + tuple(i for i in range(nd) if i != dim)
    rows = K.reshape_view(K.ascontiguous(K.permute(d, order_dims)), (n, m))
    if n == 0:
        out = [Tensor._wrap(K.empty(shape, d.dtype))]
        if return_inverse:
            out.append(Tensor._wrap(K.empty((0,), _INT64)))
        if return_counts:
            out.append(Tensor._wrap(K.empty((0,), _INT64)))
        return out[0] if len(out) == 1 else tuple(out)
    order = None
    if sort:
        for c in range(m - 1, -1, -1):
            column = K.ascontiguous(K.view_index(rows, (slice(None), c)))
            if order is not None:
                column = K.index(column, (), (order,))
            _, step = K.order_dim(column, 0)
            order = step if order is None else K.index(order, (), (step,))
        rows = K.index(rows, (), (order,))
    first = K.full((1,), True, np.bool_)
    if n > 1:
        differ = K.binary(K.NE, K.view_index(rows, (slice(1, None),)),
                          K.view_index(rows, (slice(0, n - 1),)), np.bool_)
        later = K.binary(K.GT, K.sum_dims(K.cast(differ, _INT64), (1,), False), np.int64(0),
                         np.bool_)
        starts = K.cat([first, later], 0)
    else:
        starts = first
    positions = K.nonzero(starts)[0]
    k = positions.shape[0]
    picked = K.reshape_view(K.index(rows, (), (positions,)), (k,) + rest)
    back = tuple(order_dims.index(i) for i in range(nd))
    out = [Tensor._wrap(K.ascontiguous(K.permute(picked, back)))]
    if return_inverse:
        group = K.binary(K.SUB, K.cumulative(K.cast(starts, _INT64), 0, False, False),
                         np.int64(1))
        if order is not None:
            inverse = K.empty((n,), _INT64)
            K.index_put(inverse, (), (order,), group, False)
        else:
            inverse = group
        out.append(Tensor._wrap(inverse))
    if return_counts:
        ends = K.cat([positions, K.full((1,), n, _INT64)], 0)
        out.append(Tensor._wrap(K.binary(K.SUB, K.view_index(ends, (slice(1, k + 1),)),
                                         K.view_index(ends, (slice(0, k),)))))
    return out[0] if len(out) == 1 else tuple(out)


@export(method=True)
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """The distinct elements (sorted), and with ``return_inverse`` the index of each input
    element among them, with ``return_counts`` how often each occurs; with ``dim``, the distinct
    slices along ``dim`` (sorted lexicographically)."""
    if dim is not None:
        return _unique_dim(_tensor(input, "unique"), dim, True, return_inverse, return_counts)
    return _unique_flat(input, True, return_inverse, return_counts, "unique")


@export(method=True)
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim=None):
    """The first element of each run of equal consecutive elements (of the flattened tensor, or
    slices along ``dim``), with the inverse and counts as ``unique``'s."""
    if dim is not None:
        return _unique_dim(_tensor(input, "unique_consecutive"), dim, False, return_inverse,
                           return_counts)
    return _unique_flat(input, False, return_inverse, return_counts, "unique_consecutive")
