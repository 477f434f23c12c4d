"""Flat (C-order) indices: ``put``/``put_`` (``input`` with values written at flat positions)
and ``unravel_index`` (flat positions as coordinates).

``put`` is composed of ``index_put`` on the flattened input, so its gradient is PyTorch's
(``source`` gets the gradient taken at the positions; ``input`` the rest, or all of it when
accumulating).
"""
from __future__ import annotations

import numpy as np

from .._dtype import torch_name
from ..tensor import Tensor
from ._names import export
from .indexing import index_put
from .._dtype import int64


def _flat_positions(input: Tensor, index: Tensor, source: Tensor) -> Tensor:
    if index._data.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{torch_name(index._data.dtype)}")
    if index.numel() != source.numel():
        raise IndexError("put_(): Expected source and index to have the same number of elements, "
                         f"but got source.numel() = {source.numel()}, index.numel() = "
                         f"{index.numel()}")
    n = input.numel()
    flat = index.reshape(-1)
    if flat.numel():
        bad = ((flat < -n) | (flat >= n)).detach()
        if bool(bad.any()):
            first = int(flat.detach()[bad][0])
            raise IndexError(f"out of range: tried to access index {first} on a tensor of {n} "
                             "elements.")
    return flat + (flat < 0).to(flat.dtype) * n


@export(method=True)
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements written (``accumulate``: added) at the flat
    positions ``index`` (negative ones count from the end)."""
    flat = _flat_positions(input, index, source)
    out = index_put(input.reshape(-1), (flat,), source.reshape(-1), bool(accumulate))
    return out.reshape(input.shape)


@export(function=False, method=True)
def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``put`` in place."""
    return input.copy_(put(input, index, source, accumulate))


@export
def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates in a tensor of ``shape`` of the flat positions ``indices`` (one int64
    tensor a dimension, each of ``indices``'s shape; positions wrap around as PyTorch's do)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.dtype.name == "bool":
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"torch.{indices.dtype.name}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape:
        raise RuntimeError("ZeroDivisionError")

    indices = indices.to(int64)
    out = []
    stride = 1
    for size in reversed(shape):
        out.append((indices // stride) % size)
        stride *= size
    return tuple(reversed(out))
