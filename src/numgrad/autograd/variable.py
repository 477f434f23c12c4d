"""``autograd.Variable``: the pre-0.4 wrapper, kept for old tutorials. As in PyTorch since 0.4,
``Variable(t, requires_grad=...)`` returns a plain Tensor: a new leaf sharing ``t``'s data (and
version counter), without its history; ``isinstance(t, Variable)`` holds for every tensor."""
from __future__ import annotations

from ..tensor import Tensor
from ..creation import empty


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: a Tensor (see the module)."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t
