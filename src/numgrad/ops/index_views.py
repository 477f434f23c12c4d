"""Views of a tensor by index, with PyTorch's names, defaults, node names and errors: ``unbind``
(UnbindBackward0), ``select`` (SelectBackward0) and ``tensor_split`` (narrow: SliceBackward0).
"""
from __future__ import annotations

import builtins

import numpy as np

from .._dtype import torch_name
from ..autograd import grad_mode
from ..tensor import Tensor, _wrap_dim
from ._names import export
from .indexing import SELECT, Key, _BasicView
from .indexing import take as _take_key
from .registry import Sample, apply, register
from ._common import _ops


# ------------------------------------------------------------------ views
@register
class Unbind(_BasicView):
    """One slice of ``unbind``: a view whose node is PyTorch's UnbindBackward0."""

    name, node = "unbind", "UnbindBackward0"
    complex_ok = True
    on_cuda = True
    samples = (
        Sample(lambda m, a: m.unbind(a)[1], ((3, 4),)),
        Sample(lambda m, a: a.t().unbind(-1)[2], ((3, 4),)),
    )


@export(method=True)
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """The slices of ``input`` along ``dim``, as views (``dim`` removed)."""
    nd = input._data.ndim
    if not nd:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(int(dim), nd)
    parts = tuple(apply(Unbind, (input,), (input._data,),
                        key=Key((slice(None),) * d + (i,), None, SELECT, SELECT))
                  for i in range(input._data.shape[d]))
    if grad_mode.state.enabled:  # (PyTorch's MULTI_OUTPUT_NODE views: no in-place writes)
        for i, p in enumerate(parts):
            p._multi_nr = i
    return parts


@export(method=True)
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice of ``input`` at ``index`` along ``dim`` (a view, ``dim`` removed)."""
    nd = input._data.ndim
    if not nd:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(int(dim), nd)
    size = input._data.shape[d]
    i = int(index)
    if not -size <= i < size:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    # (dim and index as given: PyTorch's node shows them so)
    return _take_key(input, Key((slice(None),) * d + (i % size,), None, SELECT, SELECT, False,
                                (int(dim), i, tuple(input._data.shape))))


@export(method=True)
def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None,
                 indices=None) -> tuple:
    """``input`` split along ``dim`` into ``sections`` nearly equal parts (the first ones one
    longer), or at the given indices (a list or a 0-d or 1-d int64 tensor), as views."""
    nd = input._data.ndim
    if not nd:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _wrap_dim(int(dim), nd)
    size = input._data.shape[d]
    spec = next((v for v in (indices_or_sections, sections, indices) if v is not None), None)
    if spec is None:
        raise TypeError("tensor_split() missing 1 required positional argument: "
                        "\"indices_or_sections\"")
    if isinstance(spec, Tensor):
        if spec._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{spec._data.ndim} dims")
        if spec._data.dtype != np.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of "
                               f"long, but got {torch_name(spec._data.dtype)}")
        spec = int(spec.item()) if spec._data.ndim == 0 else [int(v) for v in spec.tolist()]
    if isinstance(spec, (int, np.integer)):
        n = int(spec)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        small, extra = divmod(size, n)
        bounds, start = [], 0
        for k in range(n - 1):
            start += small + (1 if k < extra else 0)
            bounds.append(start)
    else:
        bounds = [int(v) for v in spec]
    parts, start = [], 0
    ops = _ops()
    for stop in bounds + [size]:
        lo = builtins.min(builtins.max(start if start >= 0 else start + size, 0), size)
        hi = builtins.min(builtins.max(stop if stop >= 0 else stop + size, 0), size)
        parts.append(ops.narrow(input, d, lo, builtins.max(hi - lo, 0)))
        start = stop
    return tuple(parts)
