"""The ``*_scatter`` functions of PyTorch's views: ``select_scatter``, ``slice_scatter`` and
``diagonal_scatter``, each ``input`` with ``src`` written into one of its views, in new memory.

Composed as ATen composes them (a clone of ``input`` whose view takes ``src`` in place), so the
gradient is PyTorch's: ``src`` gets the view of the incoming gradient, ``input`` the rest of it
(``CopySlices``), and second derivatives follow.
"""
from __future__ import annotations

from ..tensor import Tensor
from ._names import export


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _write(input: Tensor, src: Tensor, view_of) -> Tensor:
    out = input.clone()
    view = view_of(out)
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{_sizes(src.shape)}, slice size = {_sizes(view.shape)}")
    view.copy_(src)
    return out


@export(method=True)
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``src`` written at ``index`` of ``dim``."""
    return _write(input, src, lambda t: t.select(dim, index))


@export(method=True)
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """``input`` with ``src`` written into ``input[start:end:step]`` along ``dim``."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < max(input.ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got {dim})")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _write(input, src, lambda t: t[key])


@export(method=True)
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """``input`` with ``src`` written into its diagonal (``offset``, ``dim1``, ``dim2``)."""
    return _write(input, src, lambda t: t.diagonal(offset, dim1, dim2))
