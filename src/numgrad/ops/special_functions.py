"""The special functions: ``erf``, ``erfc``, ``erfinv``, the gamma family (``lgamma``, ``digamma``,
``polygamma``, ``mvlgamma``), Hurwitz's ``zeta``, the modified Bessel functions ``i0`` (and
``torch.special``'s ``i0e``, ``i1``, ``i1e``), ``erfcx``, ``log_ndtr``, ``ndtri``, the orthogonal
polynomials of ``torch.special`` (``export(special=)``) and ``xlogy``.

Each formula is a row of the formula table (``kernels/formulas.py``), so both devices and the
whole-step compiler get it from one place; the backward formulas are PyTorch's
(``derivatives.yaml``), written with tensor ops so that they are differentiable again.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dispatch
from ..tensor import Tensor
from ._names import export
from ._promote import binary_operands, floating_operand
from .elementwise import where
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from ._formula import BinaryFormula, formula_op, make as make_formula_op
from ._common import _broadcast, _ng, _two


# ------------------------------------------------------------------ erf, erfc
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@formula_op("erf", "ErfBackward0", "ERF", save_inputs=(0,),
            samples=(Sample(lambda m, a: m.erf(a), ((3, 4),)),
                     Sample(lambda m, a: a.erf(), ((5,),))))
def Erf(ctx, grad):
    (a,) = ctx.saved_tensors
    return ((-(a * a)).exp() * _TWO_OVER_SQRT_PI * grad,)


@formula_op("erfc", "ErfcBackward0", "ERFC", save_inputs=(0,),
            samples=(Sample(lambda m, a: m.erfc(a), ((3, 4),)),))
def Erfc(ctx, grad):
    (a,) = ctx.saved_tensors
    return ((-(a * a)).exp() * -_TWO_OVER_SQRT_PI * grad,)


@export(method=True, out=True, inplace=True)
def erf(input: Tensor) -> Tensor:
    """The error function of each element (integers give the default float dtype)."""
    return apply(Erf, (input,), (floating_operand(input),))


@export(method=True, out=True, inplace=True)
def erfc(input: Tensor) -> Tensor:
    """``1 - erf(x)``, accurate where ``erf(x)`` is near 1."""
    return apply(Erfc, (input,), (floating_operand(input),))


# ------------------------------------------------------------------ lgamma, digamma, polygamma
@formula_op("lgamma", "LgammaBackward0", "LGAMMA", save_inputs=(0,),
            samples=(Sample(lambda m, a: m.lgamma(a), ((3, 4),), low=0.2, high=4.0),
                     Sample(lambda m, a: a.lgamma(), ((5,),), low=-2.8, high=-2.2)))
def Lgamma(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * digamma(a),)


@formula_op("digamma", "DigammaBackward0", "DIGAMMA", save_inputs=(0,),
            samples=(Sample(lambda m, a: m.digamma(a), ((3, 4),), low=0.2, high=4.0),
                     Sample(lambda m, a: a.digamma(), ((5,),), low=-1.8, high=-1.2)))
def Digamma(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * polygamma(1, a),)


def _polygamma(K, a, *, n):
    return K.binary(K.POLYGAMMA, a, dispatch.number_array(n, a.dtype))


@formula_op("polygamma", "PolygammaBackward0", "POLYGAMMA", arity=2, forward=_polygamma,
            save_inputs=(0,),
            doc="The ``n``-th derivative of digamma (``n`` = 0 is digamma itself).",
            samples=(Sample(lambda m, a: m.polygamma(1, a), ((3, 4),), low=0.2, high=4.0),
                     Sample(lambda m, a: a.polygamma(2), ((5,),), low=0.5, high=3.0),
                     Sample(lambda m, a: m.polygamma(3, a), ((2, 3),), low=-1.8, high=-1.2)))
def Polygamma(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * polygamma(ctx.params["n"] + 1, a),)


@export(method=True, inplace="method")
def lgamma(input: Tensor) -> Tensor:
    """The log of the absolute value of the gamma function (inf at the poles)."""
    return apply(Lgamma, (input,), (floating_operand(input),))


@export(method=True, inplace="method")
def digamma(input: Tensor) -> Tensor:
    """The derivative of ``lgamma`` (-inf at 0, NaN at the negative integers)."""
    return apply(Digamma, (input,), (floating_operand(input),))


@export
def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma``."""
    if not isinstance(input, Tensor):
        raise TypeError("polygamma(): argument 'input' (position 2) must be Tensor, not "
                        f"{type(input).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return apply(Polygamma, (input,), (floating_operand(input),), n=int(n))


def _polygamma_method(input: Tensor, n: int) -> Tensor:
    return polygamma(n, input)


@export(method=True)
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_j lgamma(input - j / 2)``, every element above (p - 1) / 2."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point or input.dtype.is_complex else \
        input.to(_ng().get_default_dtype())
    if not bool((x.detach() > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2")
    steps = _ng().arange(p, dtype=x.dtype, device=x.device) / 2
    return lgamma(x.unsqueeze(-1) - steps).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


Zeta = make_formula_op(
    "zeta", "", "ZETA", arity=2, differentiable=False, jvp=None,
    samples=(Sample(lambda m, a, b: m.special.zeta(a + 3, b + 2.5), _two, grad=False),),
    doc="""The Hurwitz zeta function ``sum_k (k + q) ** -x`` (not differentiable here).""",
    cls_name="Zeta", module=__name__)


def zeta(input, other) -> Tensor:
    """``special.zeta``: the Hurwitz zeta function of ``input`` (x) and ``other`` (q)."""
    a, b = binary_operands(input, other, floating=True)
    return apply(Zeta, (input, other), (a, b))


# ------------------------------------------------------------------ erfinv, Bessel I0 and I1
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2


@formula_op("erfinv", "ErfinvBackward0", "ERFINV", save_output=True,
            samples=(Sample(lambda m, a: m.erfinv(a), ((3, 4),), low=-0.95, high=0.95),
                     Sample(lambda m, a: a.erfinv(), ((5,),), low=-0.5, high=0.5)))
def Erfinv(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad * _SQRT_PI_OVER_2 * (out * out).exp(),)


@formula_op("i0", "I0Backward0", "I0", save_inputs=(0,),
            samples=(Sample(lambda m, a: m.i0(a * 3), ((3, 4),)),))
def I0(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * _bessel(I1, a),)


@formula_op("special_i0e", "SpecialI0EBackward0", "I0E", save_inputs=(0,), save_output=True,
            samples=(Sample(lambda m, a: m.special.i0e(a * 3), ((3, 4),)),))
def I0e(ctx, grad):
    a, out = ctx.saved_tensors
    return (grad * (_bessel(I1e, a) - a.sign() * out),)


@formula_op("special_i1", "SpecialI1Backward0", "I1", save_inputs=(0,), save_output=True,
            samples=(Sample(lambda m, a: m.special.i1(a * 3), ((3, 4),)),))
def I1(ctx, grad):
    a, out = ctx.saved_tensors
    away = a.detach().abs() > float(np.finfo(a._data.dtype).eps)
    safe = where(away, a, 1.0)
    return (grad * where(away, _bessel(I0, a) - out / safe, 0.5),)


@formula_op("special_i1e", "SpecialI1EBackward0", "I1E", save_inputs=(0,), save_output=True,
            samples=(Sample(lambda m, a: m.special.i1e(a * 3), ((3, 4),)),))
def I1e(ctx, grad):
    a, out = ctx.saved_tensors
    away = a.detach().abs() > float(np.finfo(a._data.dtype).eps)
    safe = where(away, a, 1.0)
    return (grad * where(away, _bessel(I0e, a) - out * (a.sign() + safe.reciprocal()), 0.5),)


@formula_op("special_erfcx", "SpecialErfcxBackward0", "ERFCX", save_inputs=(0,), save_output=True,
            samples=(Sample(lambda m, a: m.special.erfcx(a * 3), ((3, 4),)),))
def Erfcx(ctx, grad):
    a, out = ctx.saved_tensors
    return (grad * (2 * a * out - _TWO_OVER_SQRT_PI),)


@formula_op("special_log_ndtr", "SpecialLogNdtrBackward0", "LOG_NDTR", save_inputs=(0,),
            save_output=True, samples=(Sample(lambda m, a: m.special.log_ndtr(a * 4), ((3, 4),)),))
def LogNdtr(ctx, grad):
    a, out = ctx.saved_tensors
    return (grad * (-(out + a * a / 2)).exp() / math.sqrt(2 * math.pi),)


@formula_op("special_ndtri", "SpecialNdtriBackward0", "NDTRI", save_output=True,
            samples=(Sample(lambda m, a: m.special.ndtri(a), ((3, 4),), low=0.02, high=0.98),))
def Ndtri(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad * math.sqrt(2 * math.pi) * (out * out / 2).exp(),)


def special_erfcx(input: Tensor) -> Tensor:
    """``exp(x**2) erfc(x)``, without overflow or underflow."""
    return _bessel(Erfcx, input)


def special_log_ndtr(input: Tensor) -> Tensor:
    """The log of the standard normal distribution function, accurate in the tails."""
    return _bessel(LogNdtr, input)


def special_ndtri(input: Tensor) -> Tensor:
    """The inverse of the standard normal distribution function."""
    return _bessel(Ndtri, input)


def _bessel(op, input: Tensor) -> Tensor:
    return apply(op, (input,), (floating_operand(input),))


@export(method=True, inplace="method")
def erfinv(input: Tensor) -> Tensor:
    """The inverse error function (+-inf at +-1, NaN outside [-1, 1])."""
    return apply(Erfinv, (input,), (floating_operand(input),))


@export(method=True, inplace=True)
def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, of order 0."""
    return _bessel(I0, input)


def special_i0e(input: Tensor) -> Tensor:
    """``exp(-|x|) i0(x)``."""
    return _bessel(I0e, input)


def special_i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind, of order 1."""
    return _bessel(I1, input)


def special_i1e(input: Tensor) -> Tensor:
    """``exp(-|x|) i1(x)``."""
    return _bessel(I1e, input)


# ------------------------------------------------------------------ orthogonal polynomials
class _Polynomial(BinaryFormula):
    """One of torch.special's orthogonal polynomials of ``input`` and the degree ``n`` (not
    differentiable, as PyTorch's)."""

    differentiable = False
    jvp = None


def _polynomial(name: str, code: str, doc: str):
    op = make_formula_op(name, "", code, arity=2, base=_Polynomial, doc=doc, samples=(
        Sample(lambda m, x, n, f=name: getattr(m.special, f)(x, (n * 3 + 6).long()), _two,
               low=-1.2, high=1.2, grad=False),
        Sample(lambda m, x, f=name: getattr(m.special, f)(x, 11), ((5,),), low=0.0, high=1.0,
               grad=False),
    ), cls_name="".join(p.capitalize() for p in name.split("_")), module=__name__)

    def fn(input, n) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        a, b = binary_operands(input, n, floating=True)
        return apply(op, (input, n), (a, b))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


for _name, _code, _doc in (
    ("chebyshev_polynomial_t", "CHEBYSHEV_T", "The Chebyshev polynomial of the first kind."),
    ("chebyshev_polynomial_u", "CHEBYSHEV_U", "The Chebyshev polynomial of the second kind."),
    ("chebyshev_polynomial_v", "CHEBYSHEV_V", "The Chebyshev polynomial of the third kind."),
    ("chebyshev_polynomial_w", "CHEBYSHEV_W", "The Chebyshev polynomial of the fourth kind."),
    ("shifted_chebyshev_polynomial_t", "SHIFTED_CHEBYSHEV_T",
     "The Chebyshev polynomial of the first kind of ``2 x - 1``."),
    ("shifted_chebyshev_polynomial_u", "SHIFTED_CHEBYSHEV_U",
     "The Chebyshev polynomial of the second kind of ``2 x - 1``."),
    ("shifted_chebyshev_polynomial_v", "SHIFTED_CHEBYSHEV_V",
     "The Chebyshev polynomial of the third kind of ``2 x - 1``."),
    ("shifted_chebyshev_polynomial_w", "SHIFTED_CHEBYSHEV_W",
     "The Chebyshev polynomial of the fourth kind of ``2 x - 1``."),
    ("hermite_polynomial_h", "HERMITE_H", "The physicists' Hermite polynomial."),
    ("hermite_polynomial_he", "HERMITE_HE", "The probabilists' Hermite polynomial."),
    ("laguerre_polynomial_l", "LAGUERRE_L", "The Laguerre polynomial."),
    ("legendre_polynomial_p", "LEGENDRE_P", "The Legendre polynomial."),
):
    export(_polynomial(_name, _code, _doc), function=False, special=_name)
del _name, _code, _doc


# ------------------------------------------------------------------ entr
@register
class SpecialEntr(Op):
    """``-x log(x)``: 0 at 0, -inf below; its derivative PyTorch's ``-(1 + log(x))`` everywhere
    (inf at 0, NaN below: not the masked composite's NaN at 0 and 0 below)."""

    name, node = "special_entr", "SpecialEntrBackward0"
    jvp = _jvp.elementwise
    on_cuda = True
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.special.entr(a), ((3, 4),), low=0.1),)

    @staticmethod
    def forward(K, a):
        zero = a.dtype.type(0)
        inside = K.binary(K.MUL, K.unary(K.NEG, a), K.unary(K.LOG, a))
        inside = K.where(K.binary(K.EQ, a, zero, out_dtype=np.bool_), K.full((), 0.0, a.dtype),
                         inside)
        return K.where(K.binary(K.LT, a, zero, out_dtype=np.bool_),
                       K.full((), -np.inf, a.dtype), inside)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * -(1 + a.log()),)


def entr(input: Tensor) -> Tensor:
    """``SpecialEntr`` of ``input`` (an integer or bool tensor as the default float dtype)."""
    x = input if input.dtype.is_floating_point else floating_operand(input)
    if x is not input:
        x = Tensor._wrap(x)
    return apply(SpecialEntr, (x,), (x._data,))


# ------------------------------------------------------------------ xlogy
_F32 = np.dtype(np.float32)


def _xlogy(K, a, b, *, rounded_log=None, **_):
    """The formula XLOGY of (input, other); of float16 or bfloat16 operands (``rounded_log``:
    that dtype), ``_xlogy_rounded_log``."""
    if rounded_log is None:
        return K.binary(K.XLOGY, a, b)
    return _xlogy_rounded_log(K, a, b, rounded_log)


def _xlogy_rounded_log(K, a, b, dtype):
    """``xlogy`` of float16 or bfloat16 operands widened to float32 (``apply`` rounds the result
    back), as PyTorch's CPU kernel computes it: ``x * std::log(y)`` of the dtype's values, whose
    ``log`` (c10's, of Half and BFloat16) is rounded to the dtype before the product (in float32,
    exact, rounded once); PyTorch's NaN (positive) where ``y`` is NaN, 0 where ``x`` is 0, and
    float16's NaNs PyTorch's: ``x``'s where it is one (its product keeps its first NaN), else
    glibc's negative NaN, the log of a negative ``y`` (chosen, not left to the order in which the
    kernels' instructions take their operands). (Every float16 and bfloat16 ``y`` checked: the
    log the table's LOG computes, rounded, is the correctly rounded one's.)"""
    zero = dispatch.number_array(0.0, _F32)
    log = K.cast(K.cast(K.unary(K.LOG, b), dtype), _F32)
    out = K.binary(K.MUL, a, log)
    if dtype.char == "e":  # (float16 keeps a NaN's sign; bfloat16 rounds every NaN to one)
        out = K.where(K.binary(K.LT, b, zero, np.bool_), dispatch.number_array(-np.nan, _F32),
                      out)
        out = K.where(K.binary(K.NE, a, a, np.bool_), a, out)
    out = K.where(K.binary(K.EQ, a, zero, np.bool_), zero, out)
    return K.where(K.binary(K.NE, b, b, np.bool_), dispatch.number_array(np.nan, _F32), out)


class _Xlogy(BinaryFormula):
    """The formula XLOGY of (input, other); ``xlogy`` of a number and a tensor makes the number
    a 0-d array."""

    code = "XLOGY"
    save_inputs = (0, 1)
    forward = staticmethod(_xlogy)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's (derivatives.yaml): self ``xlogy(grad, other)``, 0 where self is 0 and other
        # <= 0 (the derivative along x = 0, which at other > 0 is log(other), not 0); other
        # ``grad * self / other``
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            grad_a = xlogy(grad, b).masked_fill((a.detach() == 0) & (b.detach() <= 0), 0.0)
        if need_b:
            grad_b = grad * a / b
        return grad_a, grad_b


Xlogy = make_formula_op("xlogy", "XlogyBackward0", "XLOGY", arity=2, base=_Xlogy,
                        samples=(Sample(lambda m, a, b: m.xlogy(a, b), _two, low=0.5),
                                 Sample(lambda m, a, b: a.xlogy(b), _broadcast, low=0.5)),
                        cls_name="Xlogy", module=__name__)


def _xlogy_scalar_self_backward(ctx, grad):
    # PyTorch's ``grad * self / other``, self the number as given (float16's grad * 0.1 in
    # float32, its mul's opmath, where the 0-d array holds it rounded to float16)
    (_, b) = ctx.saved_tensors
    return None, (grad * ctx.params["number"] / b if ctx.needs_input_grad[1] else None)


XlogyScalarSelf = make_formula_op(
    "xlogy_scalar_self", "XlogyBackward1", "XLOGY", arity=2, base=_Xlogy,
    backward=_xlogy_scalar_self_backward,
    samples=(Sample(lambda m, b: m.xlogy(2.0, b), ((3, 4),), low=0.5),),
    cls_name="XlogyScalarSelf", module=__name__)


@formula_op("xlogy_scalar_other", "XlogyBackward2", "XLOGY", arity=2, base=_Xlogy,
            forward=_xlogy,
            samples=(Sample(lambda m, a: m.xlogy(a, 3.0), ((3, 4),)),))
def XlogyScalarOther(ctx, grad):
    # PyTorch's: ``xlogy(grad, other)`` (the number converted to the dtype, as its forward
    # takes it), and where ``other <= 0`` 0 where input is 0
    other = ctx.params["other"]
    grad_a = xlogy(grad, other)
    if not other > 0:
        grad_a = grad_a.masked_fill(ctx.saved_tensors[0].detach() == 0, 0.0)
    return grad_a, None


@export(method=True, out=True, inplace=True)
def xlogy(input, other) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); integers give
    the default float dtype. float16 and bfloat16: ``log(other)`` rounded to the dtype first, as
    PyTorch's CPU kernel rounds it."""
    a, b = binary_operands(input, other, floating=True)
    dtype = (a if isinstance(input, Tensor) else b).dtype
    half = {"rounded_log": dtype} if dtype.char in "eV" else {}
    if not isinstance(input, Tensor):
        t = Tensor._wrap(kernels_for((other,)).full((), a, b.dtype))
        return apply(XlogyScalarSelf, (t, other), (t._data, b), number=input, **half)
    if not isinstance(other, Tensor):
        t = Tensor._wrap(kernels_for((input,)).full((), b, a.dtype))
        return apply(XlogyScalarOther, (input, t), (a, t._data), other=float(other), **half)
    return apply(Xlogy, (input, other), (a, b), **half)
