"""The trigonometric ops beyond ``sin cos tan`` (``ops/elementwise.py``): ``atan2`` (``arctan2``),
the inverse and hyperbolic functions (``asin acos atan sinh cosh asinh acosh atanh`` and their
``arc*`` names), ``hypot``, ``sinc``, ``deg2rad`` and ``rad2deg``.

Each formula is a row of the formula table (``kernels/formulas.py``), so both devices and the
whole-step compiler get it from one place; the backward formulas are PyTorch's
(``derivatives.yaml``), written with tensor ops so that they are differentiable again.
"""
from __future__ import annotations

import math

from ..tensor import Tensor
from ._names import alias, export
from ._promote import binary_operands
from .elementwise import where, wirtinger
from .registry import Sample, apply
from ._formula import formula_op
from ._common import _broadcast, _float_unary, _tensor_only, _two
from .exponents_and_rounding import _not_for
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._typing import UnaryOp


# ------------------------------------------------------------------ atan2
@formula_op("atan2", "Atan2Backward0", "ATAN2", arity=2, save_inputs=(0, 1),
            samples=(Sample(lambda m, a, b: m.atan2(a, b), _two),
                     Sample(lambda m, a, b: a.arctan2(b), _broadcast)))
def Atan2(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    # PyTorch's atan2_backward: 1 / (a² + b²), taken as 0 where that is 0 (at the origin,
    # or where the squares underflow)
    denom = a * a + b * b
    recip = where(denom.detach() == 0, 0.0, denom.reciprocal())
    return (grad * b * recip if need_a else None), (grad * -a * recip if need_b else None)


@export(method=True, out=True, inplace=True)
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point ``(other, input)``, elementwise (integers give the default float
    dtype)."""
    _tensor_only("atan2", input, other)
    a, b = binary_operands(input, other, floating=True)
    return apply(Atan2, (input, other), (a, b))


arctan2 = alias(atan2, "arctan2")


# ------------------------------------------------------------------ inverse and hyperbolic trig
def _square(t):
    return t * t


@formula_op("asin", "AsinBackward0", "ASIN", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.asin(a), ((3, 4),), low=-0.9, high=0.9),
                     Sample(lambda m, a: a.arcsin(), ((5,),), low=-0.9, high=0.9)))
def Asin(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger((-a * a + 1).rsqrt()),)


@formula_op("acos", "AcosBackward0", "ACOS", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.acos(a), ((3, 4),), low=-0.9, high=0.9),))
def Acos(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger(-((-a * a + 1).rsqrt())),)


@formula_op("atan", "AtanBackward0", "ATAN", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.arctan(a), ((3, 4),)),))
def Atan(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad / wirtinger(a * a + 1),)


@formula_op("sinh", "SinhBackward0", "SINH", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.sinh(a), ((3, 4),)),))
def Sinh(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger(cosh(a)),)


@formula_op("cosh", "CoshBackward0", "COSH", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: a.cosh(), ((3, 4),)),))
def Cosh(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger(sinh(a)),)


@formula_op("asinh", "AsinhBackward0", "ASINH", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.arcsinh(a), ((3, 4),)),))
def Asinh(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger((a * a + 1).rsqrt()),)


@formula_op("acosh", "AcoshBackward0", "ACOSH", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.acosh(a), ((3, 4),), low=1.2, high=3.0),))
def Acosh(ctx, grad):
    (a,) = ctx.saved_tensors
    if a._data.dtype.kind == "c":  # (PyTorch's: sqrt(z² - 1) is not sqrt(z + 1) sqrt(z - 1))
        return (grad * wirtinger((a + 1).rsqrt() * (a - 1).rsqrt()),)
    return (grad * (a * a - 1).rsqrt(),)


@formula_op("atanh", "AtanhBackward0", "ATANH", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: a.atanh(), ((3, 4),), low=-0.9, high=0.9),))
def Atanh(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger(1 / (1 - a * a)),)


# ------------------------------------------------------------------ sinc, degrees and radians
@formula_op("sinc", "SincBackward0", "SINC", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.sinc(a), ((3, 4),)),))
def Sinc(ctx, grad):
    (a,) = ctx.saved_tensors
    p = a * math.pi
    d = (p * p.cos() - p.sin()) / (a * a * math.pi)
    return (grad * wirtinger(where(a.detach() == 0, 0.0, d)),)


@formula_op("deg2rad", "Deg2RadBackward0", "DEG2RAD",
            samples=(Sample(lambda m, a: m.deg2rad(a), ((3, 4),)),))
def Deg2Rad(ctx, grad):
    return (grad * (math.pi / 180.0),)


@formula_op("rad2deg", "Rad2DegBackward0", "RAD2DEG",
            samples=(Sample(lambda m, a: a.rad2deg(), ((3, 4),)),))
def Rad2Deg(ctx, grad):
    return (grad * (180.0 / math.pi),)


asin: UnaryOp = export(
    _float_unary(Asin, "The arcsine of each element (integers give the default float dtype)."),
    "asin", method=True, out=True, inplace=True)
acos: UnaryOp = export(
    _float_unary(Acos, "The arccosine of each element."),
    "acos", method=True, out=True, inplace=True)
atan: UnaryOp = export(
    _float_unary(Atan, "The arctangent of each element."),
    "atan", method=True, out=True, inplace=True)
sinh: UnaryOp = export(
    _float_unary(Sinh, "The hyperbolic sine of each element."),
    "sinh", method=True, out=True, inplace=True)
cosh: UnaryOp = export(
    _float_unary(Cosh, "The hyperbolic cosine of each element."),
    "cosh", method=True, out=True, inplace=True)
asinh: UnaryOp = export(
    _float_unary(Asinh, "The inverse hyperbolic sine of each element."),
    "asinh", method=True, out=True, inplace=True)
acosh: UnaryOp = export(
    _float_unary(Acosh, "The inverse hyperbolic cosine of each element."),
    "acosh", method=True, out=True, inplace=True)
atanh: UnaryOp = export(
    _float_unary(Atanh, "The inverse hyperbolic tangent of each element."),
    "atanh", method=True, out=True, inplace=True)


sinc: UnaryOp = export(
    _float_unary(Sinc, "``sin(pi x) / (pi x)``, 1 at 0, elementwise."),
    "sinc", method=True, out=True, inplace=True)
deg2rad: UnaryOp = export(
    _float_unary(Deg2Rad, "Degrees to radians, elementwise."),
    "deg2rad", method=True, out=True, inplace=True)
rad2deg: UnaryOp = export(
    _float_unary(Rad2Deg, "Radians to degrees, elementwise."),
    "rad2deg", method=True, inplace=True)
arcsin = alias(asin, "arcsin")
arccos = alias(acos, "arccos")
arctan = alias(atan, "arctan")
arcsinh = alias(asinh, "arcsinh")
arccosh = alias(acosh, "arccosh")
arctanh = alias(atanh, "arctanh")


# ------------------------------------------------------------------ hypot
@formula_op("hypot", "HypotBackward0", "HYPOT", arity=2, save_inputs=(0, 1), save_output=True,
            samples=(Sample(lambda m, a, b: m.hypot(a, b), _two),
                     Sample(lambda m, a, b: a.hypot(b), _broadcast)))
def Hypot(ctx, grad):
    a, b, out = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    return ((grad * a / out if need_a else None), (grad * b / out if need_b else None))


@export(method=True, out=True, inplace=True)
def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)``, elementwise, without overflow (floats only)."""
    _tensor_only("hypot", input, other)
    a, b = binary_operands(input, other)
    _not_for("hypot", Tensor._wrap(a), "biu")
    return apply(Hypot, (input, other), (a, b))
