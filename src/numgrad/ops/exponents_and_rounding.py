"""Logarithms, powers and rounding: ``logaddexp``, ``logaddexp2``, ``log2``, ``log10``, ``exp2``,
``square``, ``float_power``, ``ldexp``, ``logit``; ``trunc`` (``fix``) and ``frac``.

Each formula is a row of the formula table (``kernels/formulas.py``), so both devices and the
whole-step compiler get it from one place; the backward formulas are PyTorch's
(``derivatives.yaml``), written with tensor ops so that they are differentiable again.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..creation import zeros_like
from ..tensor import Tensor
from ._names import alias, export
from ._promote import binary_operands
from .loss import _type_name
from ..autograd import grad_mode
from .registry import Sample, apply
from ._formula import BinaryFormula, Term, arg, by, call, formula_op, number
from ._common import _broadcast, _float_of, _float_unary, _ng, _tensor_only, _two
from typing import TYPE_CHECKING
from .elementwise import holomorphic_backward, pow as _pow, wirtinger

if TYPE_CHECKING:
    from .._typing import TensorBinaryOp, UnaryOp


# ------------------------------------------------------------------ logaddexp, logaddexp2
class _LogAddExp(BinaryFormula):
    save_inputs = (0, 1)


@formula_op("logaddexp", "LogaddexpBackward0", "LOGADDEXP", arity=2, base=_LogAddExp,
            complex_ok=True,
            samples=(Sample(lambda m, a, b: m.logaddexp(a, b), _two),
                     Sample(lambda m, a, b: a.logaddexp(b * 3), _broadcast)))
def LogAddExp(ctx, grad):
    if grad._data.dtype.kind == "c":
        return holomorphic_backward(_logaddexp_backward, ctx, grad)
    return _logaddexp_backward(ctx, grad)


def _logaddexp_backward(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    return ((grad / (1 + (b - a).exp()) if need_a else None),
            (grad / (1 + (a - b).exp()) if need_b else None))


@formula_op("logaddexp2", "Logaddexp2Backward0", "LOGADDEXP2", arity=2, base=_LogAddExp,
            samples=(Sample(lambda m, a, b: m.logaddexp2(a, b), _broadcast),))
def LogAddExp2(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    return ((grad / (1 + 2.0 ** (b - a)) if need_a else None),
            (grad / (1 + 2.0 ** (a - b)) if need_b else None))


def _logaddexp(op, name: str):
    def fn(input: Tensor, other: Tensor) -> Tensor:
        _tensor_only(name, input, other)
        a, b = binary_operands(input, other)
        if a.dtype.kind not in ("fVc" if op is LogAddExp else "fV"):  # ("V": bfloat16, widened)
            device = "cpu" if isinstance(a, np.ndarray) else "cuda"
            raise NotImplementedError(
                f"\"{name}_{device}\" not implemented for '{_type_name(Tensor._wrap(a))}'")
        return apply(op, (input, other), (a, b))

    fn.__name__ = fn.__qualname__ = name
    return fn


logaddexp: TensorBinaryOp = export(
    _logaddexp(LogAddExp, "logaddexp"),
    "logaddexp", method=True, out=True)
logaddexp.__doc__ = "``log(exp(input) + exp(other))``, elementwise, without overflow."
logaddexp2: TensorBinaryOp = export(
    _logaddexp(LogAddExp2, "logaddexp2"),
    "logaddexp2", method=True, out=True)
logaddexp2.__doc__ = "``log2(2**input + 2**other)``, elementwise, without overflow."


# ------------------------------------------------------------------ logs, powers, rounding
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


@formula_op("log2", "Log2Backward0", "LOG2", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.log2(a), ((3, 4),), low=0.5, high=3.0),))
def Log2(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad / wirtinger(a * _LN2),)


@formula_op("log10", "Log10Backward0", "LOG10", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: a.log10(), ((3, 4),), low=0.5, high=3.0),))
def Log10(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad / wirtinger(a * _LN10),)


@formula_op("exp2", "Exp2Backward0", "EXP2", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.exp2(a), ((3, 4),)),))
def Exp2(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad * wirtinger(out * _LN2),)


@formula_op("trunc", "TruncBackward0", "TRUNC",
            samples=(Sample(lambda m, a: m.trunc(a * 3) + a, ((3, 4),)),
                     Sample(lambda m, a: a.fix(), ((5,),))))
def Trunc(ctx, grad):
    return (zeros_like(grad),)


@formula_op("frac", "FracBackward0", "FRAC",
            samples=(Sample(lambda m, a: m.frac(a * 3), ((3, 4),)),))
def Frac(ctx, grad):
    return (grad,)


log2: UnaryOp = export(
    _float_unary(Log2, "The base-2 logarithm of each element."),
    "log2", method=True, out=True, inplace=True)
log10: UnaryOp = export(
    _float_unary(Log10, "The base-10 logarithm of each element."),
    "log10", method=True, out=True, inplace=True)
exp2: UnaryOp = export(
    _float_unary(Exp2, "``2 ** x``, elementwise."),
    "exp2", method=True, out=True, inplace=True)


def _not_for(name: str, input: Tensor, kinds: str) -> None:
    """PyTorch's NotImplementedError for an operand dtype its kernel does not take."""
    if input._data.dtype.kind in kinds:
        device = "cpu" if isinstance(input._data, np.ndarray) else "cuda"
        raise NotImplementedError(f"\"{name}_{device}\" not implemented for "
                                  f"'{_type_name(input)}'")


@export(method=True, out=True, inplace=True)
def trunc(input: Tensor) -> Tensor:
    """Each element rounded toward zero (integers unchanged; zero gradient)."""
    _not_for("trunc_vml", input, "b")
    return apply(Trunc, (input,), (input._data,))


@export(method=True, out=True, inplace=True)
def frac(input: Tensor) -> Tensor:
    """``input - trunc(input)``, floats only."""
    _not_for("frac", input, "biu")
    return apply(Frac, (input,), (input._data,))


fix = alias(trunc, "fix")


@export(method=True, out=True, inplace=True)
def square(input: Tensor) -> Tensor:
    """``input ** 2`` (PowBackward0, as PyTorch's; integers stay integers, bools become int64)."""
    if input._data.dtype == np.bool_:
        input = input.long()
    return _pow(input, 2)


def _log_odds(p: Term) -> Term:
    """``log(p / (1 - p))``."""
    return call("LOG", call("DIV", p, call("RSUB", p, number(1))))


def _logit_jvp(ctx, tangent):
    """PyTorch's ``auto_element_wise``: the backward formula on the tangent."""
    return None if tangent is None else _logit_slope(ctx, tangent, False)


# (``p`` clamped to [eps, 1 - eps] where eps is given and not negative: kept as it is otherwise)
@formula_op("logit", "LogitBackward0", term=by(lambda eps: eps is not None and eps >= 0, {
    True: _log_odds(call("MINIMUM", call("MAXIMUM", arg(0), number("eps")),
                         number(lambda eps: 1.0 - eps))),
    False: _log_odds(arg(0))}),
    save_inputs=(0,),
    samples=(Sample(lambda m, a: a.logit(), ((3, 4),), low=0.1, high=0.9),
             Sample(lambda m, a: m.logit(a, 0.25), ((3, 4),), low=0.05, high=0.95,
                    gradgrad=False),  # (a kink at each bound)
             Sample(lambda m, a: m.special.logit(a, eps=-1.0), ((5,),), low=0.2, high=0.8)),
    jvp=_logit_jvp,
    doc="""``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` where ``eps`` is given and
    not negative (``LogitBackward0``, its ``self`` and ``eps``). PyTorch's ``logit_backward``: the
    gradient is ``grad / (p (1 - p))``, 0 outside ``[eps, 1 - eps]``, NaN outside ``[0, 1]``
    without ``eps``.""")
def Logit(ctx, grad):
    # PyTorch's logit_backward, or where a graph is recorded its differentiable form, which
    # differs at -0.0 only (the kernel's ``grad * inf`` at 0 and 1, made here by ``+ 0.0``)
    return (_logit_slope(ctx, grad, not grad_mode.state.enabled),)


def _logit_slope(ctx, grad, plain: bool):
    """``grad / (p (1 - p))``: 0 outside ``[eps, 1 - eps]`` (and at NaN), NaN outside ``[0, 1]``
    without ``eps``."""
    (p,) = ctx.saved_tensors
    eps = ctx.params["eps"]
    denominator = p * (1 - p)
    slope = grad / (denominator + 0.0 if plain else denominator)
    # (a negative eps: none for the kernel; for the differentiable form [eps, 1 - eps] all the same)
    none = eps is None or plain and eps < 0
    lo, hi, outside = (0.0, 1.0, math.nan) if none else (eps, 1.0 - eps, 0.0)
    return slope.masked_fill(((p >= lo) & (p <= hi)).logical_not(), outside)


@export(method=True, inplace=True)
def logit(input: Tensor, eps=None) -> Tensor:
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` if ``eps`` is given (then the
    gradient is 0 outside that interval)."""
    p = _float_of(input)
    return apply(Logit, (p,), (p._data,), eps=None if eps is None else float(eps))


@export(method=True)
def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` in float64 (complex128 where either is complex)."""
    ng = _ng()
    cx = builtins.any(v.dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex)
                      for v in (input, exponent))
    wide, number = (ng.complex128, complex) if cx else (ng.float64, float)
    base = input.to(wide) if isinstance(input, Tensor) else number(input)
    exp = exponent.to(wide) if isinstance(exponent, Tensor) else number(exponent)
    if not isinstance(base, Tensor):
        return ng.pow(base, exp)
    return base.pow(exp)


@export(method=True)
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other``, in a float dtype."""
    _tensor_only("ldexp", input, other)
    ng = _ng()
    return input * ng.pow(2.0, _float_of(other) if other.dtype.is_floating_point else other)
