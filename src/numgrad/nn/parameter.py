"""``Parameter``: a tensor that a ``Module`` registers as one of its parameters."""
from __future__ import annotations

from ..tensor import Tensor
from ..creation import empty


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one as a ``Module`` attribute registers it,
    so it appears in ``parameters()`` and ``state_dict()``. It requires grad by default.

    ``Parameter(data)`` shares ``data``'s storage (and version counter), without its history, as
    PyTorch's does. Ops on a Parameter return plain Tensors.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): expected data to be a Tensor, but got {type(data).__name__}"
            )
        p = cls._wrap(data._data)
        p._version_counter = data._version_counter
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything is done in __new__ (Tensor.__init__ would copy the data)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor._wrap(self._data.copy()), self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return _rebuild_parameter, (self._data, self._requires_grad)


def _rebuild_parameter(data, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._wrap(data), requires_grad)


def reset_grads(params, set_to_none: bool = True) -> None:
    """``zero_grad`` for Module and Optimizer: each gradient set to None, or else detached and
    zeroed in place."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            if p.grad.grad_fn is not None:
                p.grad.detach_()
            else:
                p.grad.requires_grad_(False)
            p.grad.zero_()
