"""``Tensor.resize_`` and ``resize_as_``: a tensor given another shape in place, its first
elements (in memory order) kept; elements beyond the old ones are zero (PyTorch leaves them
uninitialised). Only for tensors that do not require grad, as PyTorch's."""
from __future__ import annotations

import math

from ..tensor import Tensor
from ..creation import _shape
from ._names import export
from .shape import cat


@export(function=False, method=True)
def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """``self`` with the shape ``sizes``, in place (the same memory when it holds enough)."""
    shape = _shape(sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(shape)
    flat = self.detach().reshape(-1)
    if n > flat.numel():
        flat = cat([flat, flat.new_zeros((n - flat.numel(),))])
    self._data = flat[:n].reshape(shape)._data
    self._version_counter.value += 1
    return self


@export(method=True)
def resize_as_(self: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """``self.resize_(the_template.shape)``."""
    return resize_(self, tuple(the_template.shape))
