"""More elementwise ops: ``atan2``, ``logaddexp``, ``logaddexp2``, ``erf``, ``erfc``, ``clamp`` with
tensor bounds, ``div`` with a ``rounding_mode`` and ``floor_divide`` (``//``).

Each formula is a row of the formula table (``kernels/formulas.py``), so both devices and the
whole-step compiler get it from one place; the backward formulas are PyTorch's
(``derivatives.yaml``), written with tensor ops so that they are differentiable again.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtype import result_type
from ..creation import zeros
from ..tensor import Tensor
from ._promote import _as, binary_operands, broadcast_shapes, floating_operand
from .elementwise import _Unary, where
from .loss import _type_name
from .registry import Op, Sample, apply, kernels_for, register

_two = ((3, 4), (3, 4))
_broadcast = ((3, 1, 4), (5, 1))


def _tensor_only(name: str, input, other) -> None:
    """PyTorch's error for an operand that is not a tensor (these take tensors only)."""
    for value, which, pos in ((input, "input", 1), (other, "other", 2)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{which}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")


# ------------------------------------------------------------------ atan2, logaddexp(2)
@register
class Atan2(Op):
    name, node = "atan2", "Atan2Backward0"
    on_cuda = True
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, a, b: m.atan2(a, b), _two),
        Sample(lambda m, a, b: a.arctan2(b), _broadcast),
    )

    @staticmethod
    def forward(K, a, b):
        return K.binary(K.ATAN2, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        # PyTorch's atan2_backward: 1 / (a² + b²), taken as 0 where that is 0 (at the origin,
        # or where the squares underflow)
        denom = a * a + b * b
        recip = where(denom.detach() == 0, 0.0, denom.reciprocal())
        return (grad * b * recip if need_a else None), (grad * -a * recip if need_b else None)


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point ``(other, input)``, elementwise (integers give the default float
    dtype)."""
    _tensor_only("atan2", input, other)
    a, b = binary_operands(input, other, floating=True)
    return apply(Atan2, (input, other), (a, b))


class _LogAddExp(Op):
    on_cuda = True
    save_inputs = (0, 1)
    code = ""

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b)


@register
class LogAddExp(_LogAddExp):
    name, node, code = "logaddexp", "LogaddexpBackward0", "LOGADDEXP"
    samples = (
        Sample(lambda m, a, b: m.logaddexp(a, b), _two),
        Sample(lambda m, a, b: a.logaddexp(b * 3), _broadcast),
    )

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return ((grad / (1 + (b - a).exp()) if need_a else None),
                (grad / (1 + (a - b).exp()) if need_b else None))


@register
class LogAddExp2(_LogAddExp):
    name, node, code = "logaddexp2", "Logaddexp2Backward0", "LOGADDEXP2"
    samples = (Sample(lambda m, a, b: m.logaddexp2(a, b), _broadcast),)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return ((grad / (1 + 2.0 ** (b - a)) if need_a else None),
                (grad / (1 + 2.0 ** (a - b)) if need_b else None))


def _logaddexp(op, name: str):
    def fn(input: Tensor, other: Tensor) -> Tensor:
        _tensor_only(name, input, other)
        a, b = binary_operands(input, other)
        if a.dtype.kind != "f":
            device = "cpu" if isinstance(a, np.ndarray) else "cuda"
            raise NotImplementedError(
                f"\"{name}_{device}\" not implemented for '{_type_name(Tensor._wrap(a))}'")
        return apply(op, (input, other), (a, b))

    fn.__name__ = fn.__qualname__ = name
    return fn


logaddexp = _logaddexp(LogAddExp, "logaddexp")
logaddexp.__doc__ = "``log(exp(input) + exp(other))``, elementwise, without overflow."
logaddexp2 = _logaddexp(LogAddExp2, "logaddexp2")
logaddexp2.__doc__ = "``log2(2**input + 2**other)``, elementwise, without overflow."


# ------------------------------------------------------------------ erf, erfc
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@register
class Erf(_Unary):
    name, node, code = "erf", "ErfBackward0", "ERF"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.erf(a), ((3, 4),)), Sample(lambda m, a: a.erf(), ((5,),)))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return ((-(a * a)).exp() * _TWO_OVER_SQRT_PI * grad,)


@register
class Erfc(_Unary):
    name, node, code = "erfc", "ErfcBackward0", "ERFC"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.erfc(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return ((-(a * a)).exp() * -_TWO_OVER_SQRT_PI * grad,)


def erf(input: Tensor) -> Tensor:
    """The error function of each element (integers give the default float dtype)."""
    return apply(Erf, (input,), (floating_operand(input),))


def erfc(input: Tensor) -> Tensor:
    """``1 - erf(x)``, accurate where ``erf(x)`` is near 1."""
    return apply(Erfc, (input,), (floating_operand(input),))


# ------------------------------------------------------------------ clamp with tensor bounds
@register
class ClampTensor(Op):
    """``min(max(input, min), max)`` with tensor bounds (either may be None), all three
    broadcast; a NaN anywhere gives NaN."""

    name, node = "clamp_tensor", "ClampBackward0"
    on_cuda = True
    save_inputs = (0, 1, 2)
    samples = (
        Sample(lambda m, a, lo, hi: m.clamp(a, lo - 1.0, hi), ((3, 4), (4,), (3, 1))),
        Sample(lambda m, a, lo: a.clamp(min=lo), ((2, 3), (2, 3))),
        Sample(lambda m, a, hi: m.clip(a, max=hi), ((4,), ())),
    )

    @staticmethod
    def forward(K, a, lo, hi):
        if lo is not None:
            a = K.binary(K.MAXIMUM, a, lo)
        if hi is not None:
            a = K.binary(K.MINIMUM, a, hi)
        return a

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's clamp_backward and clamp_backward_min_max (a bound that is crossed by the
        # other, min > max, gives its gradient to max).
        a, lo, hi = (None if t is None else t.detach() for t in ctx.saved_tensors)
        need_a, need_lo, need_hi = ctx.needs_input_grad
        grad_a = grad_lo = grad_hi = None
        if need_a:
            if lo is not None and hi is not None:
                grad_a = where(a >= lo, where(a <= hi, grad, 0.0), 0.0)
            elif lo is not None:
                grad_a = where(a >= lo, grad, 0.0)
            else:
                grad_a = where(a <= hi, grad, 0.0)
        if lo is not None and hi is not None:
            if need_lo:
                grad_lo = where(a < lo, where(lo < hi, grad, 0.0), 0.0)
            if need_hi:
                grad_hi = where(a > hi, grad, where(hi < lo, grad, 0.0))
        elif lo is not None and need_lo:
            grad_lo = where(a < lo, grad, 0.0)
        elif hi is not None and need_hi:
            grad_hi = where(a > hi, grad, 0.0)
        return grad_a, grad_lo, grad_hi


def clamp_tensor(input: Tensor, min=None, max=None) -> Tensor:
    """``clamp`` where a bound is a tensor (``elementwise.clamp`` sends these here)."""
    for bound in (min, max):
        if bound is not None and not isinstance(bound, Tensor):
            raise TypeError(
                "clamp() received an invalid combination of arguments - got (Tensor, "
                f"{type(min).__name__ if min is not None else 'NoneType'}, "
                f"{type(max).__name__ if max is not None else 'NoneType'}), but expected one "
                "of:\n * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = "
                "None)\n * (Tensor input, Number min = None, Number max = None, *, Tensor out = "
                "None)\n")
    tensors = [t for t in (input, min, max) if t is not None]
    shape = tensors[0]._data.shape
    for t in tensors[1:]:
        shape = broadcast_shapes(shape, t._data.shape)
    dt = result_type([t.dtype for t in tensors if t._data.ndim],
                     [t.dtype for t in tensors if not t._data.ndim], ())
    arrays = [None if t is None else _as(t, dt.np) for t in (input, min, max)]
    return apply(ClampTensor, (input, min, max), tuple(arrays))


# ------------------------------------------------------------------ div with rounding
@register
class DivMode(Op):
    """``div(a, b, rounding_mode='trunc' | 'floor')``: its gradient is zero (PyTorch's
    ``new_zeros``, not ``grad * 0``: an infinite gradient still gives 0)."""

    name, node = "div_mode", "DivBackward2"
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: m.div(a * 4, b, rounding_mode="floor") * a, _two, low=0.5),
        Sample(lambda m, a, b: a.div(b, rounding_mode="trunc") + a, _broadcast, low=-2.0),
        Sample(lambda m, a: m.div(a * 5, -1.5, rounding_mode="floor"), ((2, 3),), grad=False),
    )

    @staticmethod
    def forward(K, a, b, *, floor):
        return K.binary(K.DIV_FLOOR if floor else K.DIV_TRUNC, a, b)

    @staticmethod
    def backward(ctx, grad):
        # (zeros at each input's shape: the same values as PyTorch's zeros at the gradient's,
        # summed down, with no reduction to trace)
        need_a, need_b = ctx.needs_input_grad
        shape_a, shape_b = ctx.input_shapes
        return ((zeros(shape_a, dtype=grad.dtype, device=grad.device) if need_a else None),
                (zeros(shape_b, dtype=grad.dtype, device=grad.device) if need_b else None))


@register
class FloorDivide(Op):
    """``floor_divide`` (``//``): ``div(rounding_mode='floor')`` whose node has no derivative,
    as PyTorch's (``NotImplemented``: backward raises)."""

    name, node = "floor_divide", "torch::autograd::NotImplemented"
    on_cuda = True
    samples = (
        # (the node's backward raises, so the gradient flows around it)
        Sample(lambda m, a, b: m.floor_divide(a.detach() * 4, b.detach()) + a * b, _two, low=0.5),
        Sample(lambda m, a: (a * 3) // 2, ((2, 3),), grad=False),
        Sample(lambda m, a: 7.5 // a, ((4,),), low=0.5, grad=False),
    )

    @staticmethod
    def forward(K, a, b):
        return K.binary(K.DIV_FLOOR, a, b)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::floor_divide is not implemented")


_ROUNDING = {"trunc": False, "floor": True}


def _divide_operands(input, other, kernel: str):
    """The operands of a rounding division in their common dtype (integers stay integers), with
    PyTorch's errors: bools refused, and an integer division by zero on the CPU."""
    a, b = binary_operands(input, other)
    device = "cpu" if isinstance(a if isinstance(input, Tensor) else b, np.ndarray) else "cuda"
    if a.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}_{device}\" not implemented for 'Bool'")
    if a.dtype.kind in "iu" and device == "cpu":
        K = kernels_for((input, other))
        zero = (b == 0) if not isinstance(b, np.ndarray) or b.ndim == 0 else K.any_equal(b, 0)
        if zero:
            raise RuntimeError("ZeroDivisionError")
    if not isinstance(input, Tensor):  # (a number on the left, ``7 // t``: a 0-d fill, which
        a = kernels_for((other,)).full((), a, b.dtype)  # these formulas take on either side)
    return a, b


def div_mode(input, other, rounding_mode: str) -> Tensor:
    """``div`` with ``rounding_mode`` 'trunc' or 'floor' (``elementwise.div`` sends these here):
    the quotient rounded, in the operands' common dtype (integers exact)."""
    if rounding_mode not in _ROUNDING:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{rounding_mode}'")
    floor = _ROUNDING[rounding_mode]
    a, b = _divide_operands(input, other, "div_floor" if floor else "div_trunc")
    return apply(DivMode, (input, other), (a, b), floor=floor)


def floor_divide(input, other) -> Tensor:
    """``input // other``: the quotient rounded down, in the operands' common dtype."""
    a, b = _divide_operands(input, other, "div_floor")
    return apply(FloorDivide, (input, other), (a, b))


arctan2 = atan2

__all__ = ["arctan2", "atan2", "erf", "erfc", "floor_divide", "logaddexp", "logaddexp2"]
METHODS = ("atan2", "arctan2", "logaddexp", "logaddexp2", "erf", "erfc", "floor_divide")
