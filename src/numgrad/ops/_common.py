"""Helpers shared by the ops modules: the ``numgrad.ops`` package (imported on first use: the
families import before it is complete), an index tensor for the samples, a dimension wrapped, a
function's in-place form and its ``out=`` form; the elementwise modules' sample shapes, their
one-operand float ops (``_float_unary``) and their tensors-only check.
"""
from __future__ import annotations

from ..tensor import Tensor, _wrap_dim
from ._promote import floating_operand
from . import registry
from .registry import apply
from .. import ops
from .._out import with_out
import numgrad


def _ops():
    return ops


def _i(m, x, values, dtype=None):
    """An index tensor on ``x``'s device, for the samples."""
    return m.tensor(values, device=x.device) if dtype is None else m.tensor(
        values, dtype=dtype, device=x.device)


def _dim(input: Tensor, dim) -> int:
    nd = input._data.ndim
    return _wrap_dim(int(dim), nd) % max(nd, 1)


def _inplace(fn, saves_self: bool = False):
    """``fn``'s in-place form (``inplace._write``); ``saves_self``: its backward keeps the
    input, which then gets a snapshot of its old value (``renorm_``, ``copysign_``)."""
    def method(input: Tensor, *args, **kwargs) -> Tensor:
        from .inplace import _write

        return _write(input, fn, *args, saves_self=saves_self, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"``{fn.__name__}`` in place."
    return method


def _with_out(fn, name: str):
    return with_out(fn, name)


_two = ((3, 4), (3, 4))
_broadcast = ((3, 1, 4), (5, 1))


def _tensor_only(name: str, input, other) -> None:
    """PyTorch's error for an operand that is not a tensor (these take tensors only)."""
    for value, which, pos in ((input, "input", 1), (other, "other", 2)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{which}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")


def _float_unary(op, doc: str):
    def fn(input: Tensor) -> Tensor:
        return apply(op, (input,), (floating_operand(input),))

    fn.__name__ = fn.__qualname__ = op.name
    fn.__module__ = op.__module__
    fn.__doc__ = doc
    return fn


def _ng():
    return numgrad


def _float_of(t: Tensor) -> Tensor:
    """``t``, or ``t`` in the default float dtype if it is an integer or bool tensor (a complex
    one as it is: an op that takes none refuses it, where a cast would drop its imaginary parts)."""
    return t if t.dtype.is_floating_point or t.dtype.is_complex else \
        t.to(_ng().get_default_dtype())


def _as_tensor_like(value, like: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else _ng().tensor(value, device=like.device)


def _has_tangent(t: Tensor) -> bool:
    """Whether ``t`` has a forward-mode tangent now (a forward-AD level open, ``t`` dual)."""
    if registry._forward_ad is None:
        return False
    from ..autograd import forward_ad

    return bool(forward_ad.tangents_of(t))
