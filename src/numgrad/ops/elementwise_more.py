"""More elementwise ops: ``atan2``, ``logaddexp``, ``logaddexp2``, ``erf``, ``erfc``, ``clamp`` with
tensor bounds, ``div`` with a ``rounding_mode`` and ``floor_divide`` (``//``); the inverse and
hyperbolic trigonometric functions, ``log2 log10 exp2 trunc frac sinc deg2rad rad2deg square``,
``fmod``, ``remainder`` (``%``), ``hypot``, ``xlogy`` and ``lerp``.

Each formula is a row of the formula table (``kernels/formulas.py``), so both devices and the
whole-step compiler get it from one place; the backward formulas are PyTorch's
(``derivatives.yaml``), written with tensor ops so that they are differentiable again.
"""
from __future__ import annotations

import math

import numpy as np

from .._dtype import result_type, torch_name
from ..creation import zeros, zeros_like
from ..tensor import Tensor
from ._promote import _as, binary_operands, broadcast_shapes, floating_operand
from .elementwise import _Unary, where
from .loss import _type_name
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._typing import BinaryOp, TensorBinaryOp, UnaryOp

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
    jvp = _jvp.elementwise
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
    jvp = _jvp.elementwise
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


logaddexp: TensorBinaryOp = _logaddexp(LogAddExp, "logaddexp")
logaddexp.__doc__ = "``log(exp(input) + exp(other))``, elementwise, without overflow."
logaddexp2: TensorBinaryOp = _logaddexp(LogAddExp2, "logaddexp2")
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


# ------------------------------------------------------------------ lgamma, digamma, polygamma
@register
class Lgamma(_Unary):
    name, node, code = "lgamma", "LgammaBackward0", "LGAMMA"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.lgamma(a), ((3, 4),), low=0.2, high=4.0),
               Sample(lambda m, a: a.lgamma(), ((5,),), low=-2.8, high=-2.2))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * digamma(a),)


@register
class Digamma(_Unary):
    name, node, code = "digamma", "DigammaBackward0", "DIGAMMA"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.digamma(a), ((3, 4),), low=0.2, high=4.0),
               Sample(lambda m, a: a.digamma(), ((5,),), low=-1.8, high=-1.2))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * polygamma(1, a),)


@register
class Polygamma(Op):
    """The ``n``-th derivative of digamma (``n`` = 0 is digamma itself)."""

    name, node = "polygamma", "PolygammaBackward0"
    jvp = _jvp.elementwise
    on_cuda = True
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.polygamma(1, a), ((3, 4),), low=0.2, high=4.0),
               Sample(lambda m, a: a.polygamma(2), ((5,),), low=0.5, high=3.0),
               Sample(lambda m, a: m.polygamma(3, a), ((2, 3),), low=-1.8, high=-1.2))

    @staticmethod
    def forward(K, a, *, n):
        return K.binary(K.POLYGAMMA, a, np.asarray(n, a.dtype))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * polygamma(ctx.params["n"] + 1, a),)


def lgamma(input: Tensor) -> Tensor:
    """The log of the absolute value of the gamma function (inf at the poles)."""
    return apply(Lgamma, (input,), (floating_operand(input),))


def digamma(input: Tensor) -> Tensor:
    """The derivative of ``lgamma`` (-inf at 0, NaN at the negative integers)."""
    return apply(Digamma, (input,), (floating_operand(input),))


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


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_j lgamma(input - j / 2)``, every element above (p - 1) / 2."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else input.to(_ng().get_default_dtype())
    if not bool((x.detach() > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2")
    steps = _ng().arange(p, dtype=x.dtype, device=x.device) / 2
    return lgamma(x.unsqueeze(-1) - steps).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


@register
class Zeta(Op):
    """The Hurwitz zeta function ``sum_k (k + q) ** -x`` (not differentiable here)."""

    name, node = "zeta", ""
    differentiable = False
    on_cuda = True
    samples = (Sample(lambda m, a, b: m.special.zeta(a + 3, b + 2.5), _two, grad=False),)

    @staticmethod
    def forward(K, a, b):
        return K.binary(K.ZETA, a, b)


def zeta(input, other) -> Tensor:
    """``special.zeta``: the Hurwitz zeta function of ``input`` (x) and ``other`` (q)."""
    a, b = binary_operands(input, other, floating=True)
    return apply(Zeta, (input, other), (a, b))


# ------------------------------------------------------------------ erfinv, Bessel I0 and I1
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2


@register
class Erfinv(_Unary):
    name, node, code = "erfinv", "ErfinvBackward0", "ERFINV"
    save_output = True
    samples = (Sample(lambda m, a: m.erfinv(a), ((3, 4),), low=-0.95, high=0.95),
               Sample(lambda m, a: a.erfinv(), ((5,),), low=-0.5, high=0.5))

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * _SQRT_PI_OVER_2 * (out * out).exp(),)


@register
class I0(_Unary):
    name, node, code = "i0", "I0Backward0", "I0"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.i0(a * 3), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * _bessel(I1, a),)


@register
class I0e(_Unary):
    name, node, code = "special_i0e", "SpecialI0EBackward0", "I0E"
    save_inputs = (0,)
    save_output = True
    samples = (Sample(lambda m, a: m.special.i0e(a * 3), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        return (grad * (_bessel(I1e, a) - a.sign() * out),)


@register
class I1(_Unary):
    name, node, code = "special_i1", "SpecialI1Backward0", "I1"
    save_inputs = (0,)
    save_output = True
    samples = (Sample(lambda m, a: m.special.i1(a * 3), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        # I1' = I0 - I1 / x; 1/2 within the dtype's eps of 0, and at NaN (PyTorch's
        # i1_backward: where(|x| > eps, ..., 0.5))
        a, out = ctx.saved_tensors
        away = a.detach().abs() > float(np.finfo(a._data.dtype).eps)
        safe = where(away, a, 1.0)
        return (grad * where(away, _bessel(I0, a) - out / safe, 0.5),)


@register
class I1e(_Unary):
    name, node, code = "special_i1e", "SpecialI1EBackward0", "I1E"
    save_inputs = (0,)
    save_output = True
    samples = (Sample(lambda m, a: m.special.i1e(a * 3), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        # I1e' = I0e - I1e (sign(x) + 1 / x); 1/2 near 0 and at NaN, as i1's
        a, out = ctx.saved_tensors
        away = a.detach().abs() > float(np.finfo(a._data.dtype).eps)
        safe = where(away, a, 1.0)
        return (grad * where(away, _bessel(I0e, a) - out * (a.sign() + safe.reciprocal()), 0.5),)


@register
class Erfcx(_Unary):
    name, node, code = "special_erfcx", "SpecialErfcxBackward0", "ERFCX"
    save_inputs = (0,)
    save_output = True
    samples = (Sample(lambda m, a: m.special.erfcx(a * 3), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        return (grad * (2 * a * out - _TWO_OVER_SQRT_PI),)


@register
class LogNdtr(_Unary):
    name, node, code = "special_log_ndtr", "SpecialLogNdtrBackward0", "LOG_NDTR"
    save_inputs = (0,)
    save_output = True
    samples = (Sample(lambda m, a: m.special.log_ndtr(a * 4), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        # phi(x) / Phi(x), as PyTorch writes it: exp(-(log_ndtr(x) + x**2 / 2)) / sqrt(2 pi)
        a, out = ctx.saved_tensors
        return (grad * (-(out + a * a / 2)).exp() / math.sqrt(2 * math.pi),)


@register
class Ndtri(_Unary):
    name, node, code = "special_ndtri", "SpecialNdtriBackward0", "NDTRI"
    save_output = True
    samples = (Sample(lambda m, a: m.special.ndtri(a), ((3, 4),), low=0.02, high=0.98),)

    @staticmethod
    def backward(ctx, grad):
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


def erfinv(input: Tensor) -> Tensor:
    """The inverse error function (+-inf at +-1, NaN outside [-1, 1])."""
    return apply(Erfinv, (input,), (floating_operand(input),))


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
class _Polynomial(Op):
    """One of torch.special's orthogonal polynomials of ``input`` and the degree ``n`` (not
    differentiable, as PyTorch's)."""

    differentiable = False
    on_cuda = True
    code: str = ""

    @classmethod
    def forward(cls, K, x, n):
        return K.binary(getattr(K, cls.code), x, n)


def _polynomial(name: str, code: str, doc: str):
    op = register(type("".join(p.capitalize() for p in name.split("_")), (_Polynomial,), {
        "name": name, "node": "", "code": code, "__doc__": doc,
        "samples": (Sample(lambda m, x, n, f=name: getattr(m.special, f)(x, (n * 3 + 6).long()),
                           _two, low=-1.2, high=1.2, grad=False),
                    Sample(lambda m, x, f=name: getattr(m.special, f)(x, 11), ((5,),), low=0.0,
                           high=1.0, grad=False)),
    }))

    def fn(input, n) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        a, b = binary_operands(input, n, floating=True)
        return apply(op, (input, n), (a, b))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


POLYNOMIALS = {name: _polynomial(name, code, doc) for name, code, doc in (
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
)}


# ------------------------------------------------------------------ clamp with tensor bounds
@register
class ClampTensor(Op):
    """``min(max(input, min), max)`` with tensor bounds (either may be None), all three
    broadcast; a NaN anywhere gives NaN."""

    name, node = "clamp_tensor", "ClampBackward0"
    jvp = _jvp.clamp
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
    """``clamp`` where a bound is a tensor (``elementwise.clamp`` sends these here). A 0-d
    tensor bound beside a number bound takes the numbers' overload, as PyTorch's argument parser
    does (a 0-d tensor that requires grad is refused there)."""
    if min is not None and max is not None and isinstance(min, Tensor) != isinstance(max, Tensor):
        bound = min if isinstance(min, Tensor) else max
        if not bound._data.ndim and not bound.requires_grad:
            from .elementwise import clamp

            value = bound.item()
            return clamp(input, value, max) if bound is min else clamp(input, min, value)
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
    jvp = _jvp.elementwise
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
    jvp = _jvp.elementwise
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


# ------------------------------------------------------------------ inverse and hyperbolic trig
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _square(t):
    return t * t


@register
class Asin(_Unary):
    name, node, code = "asin", "AsinBackward0", "ASIN"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.asin(a), ((3, 4),), low=-0.9, high=0.9),
               Sample(lambda m, a: a.arcsin(), ((5,),), low=-0.9, high=0.9))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (-a * a + 1).rsqrt(),)


@register
class Acos(_Unary):
    name, node, code = "acos", "AcosBackward0", "ACOS"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.acos(a), ((3, 4),), low=-0.9, high=0.9),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * -((-a * a + 1).rsqrt()),)


@register
class Atan(_Unary):
    name, node, code = "atan", "AtanBackward0", "ATAN"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.arctan(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / (a * a + 1),)


@register
class Sinh(_Unary):
    name, node, code = "sinh", "SinhBackward0", "SINH"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.sinh(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * cosh(a),)


@register
class Cosh(_Unary):
    name, node, code = "cosh", "CoshBackward0", "COSH"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: a.cosh(), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * sinh(a),)


@register
class Asinh(_Unary):
    name, node, code = "asinh", "AsinhBackward0", "ASINH"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.arcsinh(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (a * a + 1).rsqrt(),)


@register
class Acosh(_Unary):
    name, node, code = "acosh", "AcoshBackward0", "ACOSH"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.acosh(a), ((3, 4),), low=1.2, high=3.0),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (a * a - 1).rsqrt(),)


@register
class Atanh(_Unary):
    name, node, code = "atanh", "AtanhBackward0", "ATANH"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: a.atanh(), ((3, 4),), low=-0.9, high=0.9),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (1 / (1 - a * a)),)


# ------------------------------------------------------------------ logs, powers, rounding
@register
class Log2(_Unary):
    name, node, code = "log2", "Log2Backward0", "LOG2"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.log2(a), ((3, 4),), low=0.5, high=3.0),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / (a * _LN2),)


@register
class Log10(_Unary):
    name, node, code = "log10", "Log10Backward0", "LOG10"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: a.log10(), ((3, 4),), low=0.5, high=3.0),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / (a * _LN10),)


@register
class Exp2(_Unary):
    name, node, code = "exp2", "Exp2Backward0", "EXP2"
    save_output = True
    samples = (Sample(lambda m, a: m.exp2(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * (out * _LN2),)


@register
class Trunc(_Unary):
    name, node, code = "trunc", "TruncBackward0", "TRUNC"
    samples = (Sample(lambda m, a: m.trunc(a * 3) + a, ((3, 4),)),
               Sample(lambda m, a: a.fix(), ((5,),)))

    @staticmethod
    def backward(ctx, grad):
        return (zeros_like(grad),)


@register
class Frac(_Unary):
    name, node, code = "frac", "FracBackward0", "FRAC"
    samples = (Sample(lambda m, a: m.frac(a * 3), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


@register
class Sinc(_Unary):
    name, node, code = "sinc", "SincBackward0", "SINC"
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.sinc(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        p = a * math.pi
        d = (p * p.cos() - p.sin()) / (a * a * math.pi)
        return (grad * where(a.detach() == 0, 0.0, d),)


@register
class Deg2Rad(_Unary):
    name, node, code = "deg2rad", "Deg2RadBackward0", "DEG2RAD"
    samples = (Sample(lambda m, a: m.deg2rad(a), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        return (grad * (math.pi / 180.0),)


@register
class Rad2Deg(_Unary):
    name, node, code = "rad2deg", "Rad2DegBackward0", "RAD2DEG"
    samples = (Sample(lambda m, a: a.rad2deg(), ((3, 4),)),)

    @staticmethod
    def backward(ctx, grad):
        return (grad * (180.0 / math.pi),)


def _float_unary(op, doc: str):
    def fn(input: Tensor) -> Tensor:
        return apply(op, (input,), (floating_operand(input),))

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


asin: UnaryOp = _float_unary(Asin, "The arcsine of each element (integers give the default float dtype).")
acos: UnaryOp = _float_unary(Acos, "The arccosine of each element.")
atan: UnaryOp = _float_unary(Atan, "The arctangent of each element.")
sinh: UnaryOp = _float_unary(Sinh, "The hyperbolic sine of each element.")
cosh: UnaryOp = _float_unary(Cosh, "The hyperbolic cosine of each element.")
asinh: UnaryOp = _float_unary(Asinh, "The inverse hyperbolic sine of each element.")
acosh: UnaryOp = _float_unary(Acosh, "The inverse hyperbolic cosine of each element.")
atanh: UnaryOp = _float_unary(Atanh, "The inverse hyperbolic tangent of each element.")
log2: UnaryOp = _float_unary(Log2, "The base-2 logarithm of each element.")
log10: UnaryOp = _float_unary(Log10, "The base-10 logarithm of each element.")
exp2: UnaryOp = _float_unary(Exp2, "``2 ** x``, elementwise.")
sinc: UnaryOp = _float_unary(Sinc, "``sin(pi x) / (pi x)``, 1 at 0, elementwise.")
deg2rad: UnaryOp = _float_unary(Deg2Rad, "Degrees to radians, elementwise.")
rad2deg: UnaryOp = _float_unary(Rad2Deg, "Radians to degrees, elementwise.")
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh


def _not_for(name: str, input: Tensor, kinds: str) -> None:
    """PyTorch's NotImplementedError for an operand dtype its kernel does not take."""
    if input._data.dtype.kind in kinds:
        device = "cpu" if isinstance(input._data, np.ndarray) else "cuda"
        raise NotImplementedError(f"\"{name}_{device}\" not implemented for "
                                  f"'{_type_name(input)}'")


def trunc(input: Tensor) -> Tensor:
    """Each element rounded toward zero (integers unchanged; zero gradient)."""
    _not_for("trunc_vml", input, "b")
    return apply(Trunc, (input,), (input._data,))


def frac(input: Tensor) -> Tensor:
    """``input - trunc(input)``, floats only."""
    _not_for("frac", input, "biu")
    return apply(Frac, (input,), (input._data,))


fix = trunc


def square(input: Tensor) -> Tensor:
    """``input ** 2`` (PowBackward0, as PyTorch's; integers stay integers, bools become int64)."""
    from .elementwise import pow as _pow

    if input._data.dtype == np.bool_:
        input = input.long()
    return _pow(input, 2)


# ------------------------------------------------------------------ fmod, remainder (%)
class _Mod(Op):
    jvp = _jvp.elementwise
    on_cuda = True
    code = ""
    rounding = ""

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b)

    @classmethod
    def backward(cls, ctx, grad):
        grad_b = None
        if ctx.needs_input_grad[1]:
            a, b = ctx.saved_tensors
            grad_b = -grad * div_mode(a, b, cls.rounding)
        return grad, grad_b


@register
class Fmod(_Mod):
    name, node, code, rounding = "fmod", "FmodBackward1", "FMOD", "trunc"
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 1}
    samples = (Sample(lambda m, a, b: m.fmod(a * 3, b), _two, low=0.5),
               Sample(lambda m, a, b: a.fmod(b), _broadcast, low=-2.0))


@register
class Remainder(_Mod):
    name, node, code, rounding = "remainder", "RemainderBackward1", "REMAINDER", "floor"
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 1}
    samples = (Sample(lambda m, a, b: m.remainder(a * 3, b), _two, low=0.5),
               Sample(lambda m, a, b: (a * 3) % b, _broadcast, low=0.5))


class _ModScalar(Op):
    """``fmod``/``remainder`` by a number: the gradient passes to the tensor unchanged."""

    jvp = _jvp.elementwise
    on_cuda = True
    code = ""

    @classmethod
    def forward(cls, K, a, *, other):
        return K.binary(getattr(K, cls.code), a, other)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


@register
class FmodScalar(_ModScalar):
    name, node, code = "fmod_scalar", "FmodBackward0", "FMOD"
    samples = (Sample(lambda m, a: m.fmod(a * 3, 1.5), ((3, 4),)),)


@register
class RemainderScalar(_ModScalar):
    name, node, code = "remainder_scalar", "RemainderBackward0", "REMAINDER"
    samples = (Sample(lambda m, a: (a * 3) % -1.5, ((3, 4),)),)


@register
class RemainderScalarTensor(Op):
    """``number % tensor``: PyTorch's node has no derivative (backward raises)."""

    name, node = "remainder_scalar_tensor", "torch::autograd::NotImplemented"
    jvp = _jvp.unsupported("aten::remainder")
    on_cuda = True
    samples = (Sample(lambda m, a: 2.5 % a, ((4,),), low=0.5, grad=False),
               # (the node's backward raises, so the gradient flows around it)
               Sample(lambda m, a: 2.5 % (a.detach() * 4).ceil() + a, ((4,),), low=0.5))

    @staticmethod
    def forward(K, a, b):
        return K.binary(K.REMAINDER, a, b)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::remainder is not implemented")


def _mod(input, other, kernel: str, tensor_op, scalar_op):
    if not isinstance(input, Tensor) and kernel == "fmod":
        raise TypeError(
            f"fmod() received an invalid combination of arguments - got ({type(input).__name__}, "
            "Tensor), but expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n"
            " * (Tensor input, Number other, *, Tensor out = None)\n")
    a, b = _divide_operands(input, other, kernel)
    if not isinstance(input, Tensor):
        return apply(RemainderScalarTensor, (input, other), (a, b))
    if isinstance(other, Tensor):
        return apply(tensor_op, (input, other), (a, b))
    return apply(scalar_op, (input,), (a,), other=np.asarray(b, a.dtype))


def fmod(input: Tensor, other) -> Tensor:
    """C's ``fmod``: ``input - trunc(input / other) * other``, with ``input``'s sign (integers
    exact; an integer division by zero raises)."""
    return _mod(input, other, "fmod", Fmod, FmodScalar)


def remainder(input, other) -> Tensor:
    """Python's ``%``: ``input - floor(input / other) * other``, with ``other``'s sign."""
    return _mod(input, other, "remainder", Remainder, RemainderScalar)


# ------------------------------------------------------------------ hypot, xlogy
@register
class Hypot(Op):
    name, node = "hypot", "HypotBackward0"
    jvp = _jvp.elementwise
    on_cuda = True
    save_inputs = (0, 1)
    save_output = True
    samples = (Sample(lambda m, a, b: m.hypot(a, b), _two),
               Sample(lambda m, a, b: a.hypot(b), _broadcast))

    @staticmethod
    def forward(K, a, b):
        return K.binary(K.HYPOT, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return ((grad * a / out if need_a else None), (grad * b / out if need_b else None))


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)``, elementwise, without overflow (floats only)."""
    _tensor_only("hypot", input, other)
    a, b = binary_operands(input, other)
    _not_for("hypot", Tensor._wrap(a), "biu")
    return apply(Hypot, (input, other), (a, b))


class _Xlogy(Op):
    jvp = _jvp.elementwise
    on_cuda = True
    save_inputs = (0, 1)

    @staticmethod
    def forward(K, a, b):
        return K.binary(K.XLOGY, a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = grad_b = None
        if need_a:
            grad_a = grad * xlogy((a.detach() != 0).to(b.dtype), b)
        if need_b:
            grad_b = grad * a / b
        return grad_a, grad_b


@register
class Xlogy(_Xlogy):
    name, node = "xlogy", "XlogyBackward0"
    samples = (Sample(lambda m, a, b: m.xlogy(a, b), _two, low=0.5),
               Sample(lambda m, a, b: a.xlogy(b), _broadcast, low=0.5))


@register
class XlogyScalarSelf(_Xlogy):
    name, node = "xlogy_scalar_self", "XlogyBackward1"
    samples = (Sample(lambda m, b: m.xlogy(2.0, b), ((3, 4),), low=0.5),)


@register
class XlogyScalarOther(_Xlogy):
    name, node = "xlogy_scalar_other", "XlogyBackward2"
    samples = (Sample(lambda m, a: m.xlogy(a, 3.0), ((3, 4),)),)

    @staticmethod
    def forward(K, a, b, *, other):
        return K.binary(K.XLOGY, a, b)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's: grad * log(other) for a positive number ``other`` (where input is 0 too)
        other = ctx.params["other"]
        if other > 0:
            return grad * math.log(other), None
        return _Xlogy.backward(ctx, grad)


def xlogy(input, other) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); integers give
    the default float dtype."""
    a, b = binary_operands(input, other, floating=True)
    if not isinstance(input, Tensor):
        t = Tensor._wrap(kernels_for((other,)).full((), a, b.dtype))
        return apply(XlogyScalarSelf, (t, other), (t._data, b))
    if not isinstance(other, Tensor):
        t = Tensor._wrap(kernels_for((input,)).full((), b, a.dtype))
        return apply(XlogyScalarOther, (input, t), (a, t._data), other=float(other))
    return apply(Xlogy, (input, other), (a, b))


# ------------------------------------------------------------------ lerp
@register
class Lerp(Op):
    """``input + weight * (end - input)`` with a number ``weight`` (PyTorch's two formulas: from
    ``end`` where ``|weight| >= 0.5``)."""

    name, node = "lerp", "LerpBackward0"
    jvp = _jvp.elementwise
    on_cuda = True
    samples = (Sample(lambda m, a, b: m.lerp(a, b, 0.3), _two),
               Sample(lambda m, a, b: a.lerp(b, 0.75), _broadcast))

    @staticmethod
    def forward(K, a, b, *, weight):
        diff = K.binary(K.SUB, b, a)
        if abs(weight) < 0.5:
            return K.binary(K.ADD, a, K.binary(K.MUL, diff, np.asarray(weight, a.dtype)))
        return K.binary(K.SUB, b, K.binary(K.MUL, diff, np.asarray(1 - weight, a.dtype)))

    @staticmethod
    def backward(ctx, grad):
        w = ctx.params["weight"]
        need_a, need_b = ctx.needs_input_grad
        return (grad * (1 - w) if need_a else None), (grad * w if need_b else None)


@register
class LerpTensor(Op):
    name, node = "lerp_tensor", "LerpBackward1"
    jvp = _jvp.lerp
    on_cuda = True
    save_inputs = (0, 1, 2)
    samples = (Sample(lambda m, a, b, w: m.lerp(a, b, w), ((3, 4), (3, 4), (4,)), low=-0.5,
                      high=1.5),)

    @staticmethod
    def forward(K, a, b, w):
        diff = K.binary(K.SUB, b, a)
        near = K.binary(K.ADD, a, K.binary(K.MUL, w, diff))
        one = np.asarray(1, w.dtype)
        far = K.binary(K.SUB, b, K.binary(K.MUL, diff, K.binary(K.RSUB, w, one)))
        small = K.binary(K.LT, K.unary(K.ABS, w), np.asarray(0.5, w.dtype), np.bool_)
        return K.where(small, near, far)

    @staticmethod
    def backward(ctx, grad):
        a, b, w = ctx.saved_tensors
        need_a, need_b, need_w = ctx.needs_input_grad
        return ((grad * (1 - w) if need_a else None), (grad * w if need_b else None),
                (grad * (b - a) if need_w else None))


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """``input + weight * (end - input)``; ``weight`` a number or a tensor (all broadcast)."""
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype != input.dtype:
            raise RuntimeError(f"expected dtype {_dtype_name(input)} for `{name}` but got dtype "
                               f"{_dtype_name(t)}")
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f"\"lerp_kernel_{'tensor' if isinstance(weight, Tensor) else 'scalar'}\" "
                                  f"not implemented for '{_type_name(input)}'")
    if isinstance(weight, Tensor):
        broadcast_shapes(broadcast_shapes(input._data.shape, end._data.shape), weight._data.shape)
        return apply(LerpTensor, (input, end, weight), (input._data, end._data, weight._data))
    a, b = binary_operands(input, end)
    return apply(Lerp, (input, end), (a, b), weight=float(weight))


# ------------------------------------------------------------------ addcmul, addcdiv
_ADDC_SHAPES = ((3, 4), (3, 4), (3, 4))
_ADDC_BROADCAST = ((4,), (3, 1), (3, 4))


def _addc_forward(K, code, a, b, c, value):
    """``a + (value * b) ⊙ c`` (``⊙``: ``code``, MUL or DIV), PyTorch's order of rounding."""
    scaled = K.binary(K.MUL, b, value) if value != 1 else b
    return K.binary(K.ADD, a, K.binary(code, scaled, c))


def _addc_saved(ctx):
    """``tensor1``, ``tensor2`` (each saved where the other's gradient needs it), ``value`` as a
    Python number, and whether ``tensor1`` and ``tensor2`` need gradients."""
    b, c = ctx.saved_tensors
    return b, c, ctx.params["value"].item(), *ctx.needs_input_grad[1:]


@register
class Addcmul(Op):
    """``input + value * tensor1 * tensor2`` (the optimisers' update)."""

    name, node = "addcmul", "AddcmulBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (1, 2)
    save_only_for = {1: 2, 2: 1}
    samples = (Sample(lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), _ADDC_SHAPES),
               Sample(lambda m, a, b, c: a.addcmul(b, c), _ADDC_BROADCAST))

    @staticmethod
    def forward(K, a, b, c, *, value):
        return _addc_forward(K, K.MUL, a, b, c, value)

    @staticmethod
    def backward(ctx, grad):
        b, c, value, need_b, need_c = _addc_saved(ctx)
        return (grad, (grad * (c * value) if need_b else None),
                (grad * (b * value) if need_c else None))


@register
class Addcdiv(Op):
    """``input + value * tensor1 / tensor2``."""

    name, node = "addcdiv", "AddcdivBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (1, 2)
    save_only_for = {1: 2}
    samples = (Sample(lambda m, a, b, c: m.addcdiv(a, b, c.abs() + 0.5, value=-2), _ADDC_SHAPES),
               Sample(lambda m, a, b, c: a.addcdiv(b, c.abs() + 0.5), _ADDC_BROADCAST))

    @staticmethod
    def forward(K, a, b, c, *, value):
        return _addc_forward(K, K.DIV, a, b, c, value)

    @staticmethod
    def backward(ctx, grad):
        b, c, value, need_b, need_c = _addc_saved(ctx)
        return (grad, (grad * (value / c) if need_b else None),
                (-grad * (value * b / (c * c)) if need_c else None))


_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
    "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
    "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
    "behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all "
    "dtypes."
)


def _addc(op, name: str, input: Tensor, tensor1: Tensor, tensor2: Tensor, value):
    """The three tensors broadcast and promoted together, ``value`` a number of their dtype."""
    operands = (input, tensor1, tensor2)
    for pos, (which, t) in enumerate(zip(("input", "tensor1", "tensor2"), operands), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{which}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    broadcast_shapes(broadcast_shapes(input._data.shape, tensor1._data.shape),
                     tensor2._data.shape)
    dt = result_type([t.dtype for t in operands if t._data.ndim],
                     [t.dtype for t in operands if not t._data.ndim], ())
    if isinstance(value, Tensor):
        value = value.item()
    number = dt.np.type(value)
    return apply(op, operands, tuple(_as(t, dt.np) for t in operands), value=number)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2``, broadcast together (not of bool tensors alone,
    as PyTorch's CPU kernel has none for them)."""
    if all(isinstance(t, Tensor) and t._data.dtype == np.bool_
           for t in (input, tensor1, tensor2)):
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    return _addc(Addcmul, "addcmul", input, tensor1, tensor2, value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2``, broadcast together; integer ``tensor1`` and
    ``tensor2`` are refused, as PyTorch refuses them."""
    if (isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor)
            and tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu"):
        raise RuntimeError(_ADDCDIV_INTEGER)
    return _addc(Addcdiv, "addcdiv", input, tensor1, tensor2, value)


def _dtype_name(t: Tensor) -> str:
    """PyTorch's C++ name of a dtype in lerp's message ("double", "long int")."""
    return {"float64": "double", "float32": "float", "int64": "long int", "int32": "int",
            "bool": "bool"}.get(t.dtype.name, t.dtype.name)


# ------------------------------------------------------------------ logical and bitwise ops
class _Logical(Op):
    """``logical_and``/``or``/``xor``: a bool tensor of the operands' truth (nonzero; NaN is
    true), of any dtypes; never differentiable."""

    differentiable = False
    on_cuda = True
    code: str = ""

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b, np.bool_)


class _Bitwise(Op):
    """``bitwise_and``/``or``/``xor`` and the shifts of integer (and, but for the shifts, bool)
    tensors, in their promoted dtype; never differentiable."""

    differentiable = False
    on_cuda = True
    code: str = ""

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b)


def _ints(a):
    return (a * 4).long()  # (a sample's float values as integers, negatives too)


def _logical_samples(name):
    return (Sample(lambda m, a, b, f=name: getattr(m, f)(a, b), _broadcast, grad=False),
            Sample(lambda m, a, b, f=name: getattr(a, f)(_ints(b) > 0), _two, grad=False),
            Sample(lambda m, a, f=name: getattr(m, f)(_ints(a), a), ((2, 3),), grad=False))


def _bitwise_samples(name, operator):
    return (Sample(lambda m, a, b, f=name: getattr(m, f)(_ints(a), _ints(b)), _broadcast,
                   grad=False),
            Sample(lambda m, a, b, o=operator: o(_ints(a) > 0, _ints(b) < 0), _two, grad=False),
            Sample(lambda m, a, f=name: getattr(_ints(a), f)(3), ((2, 3),), grad=False))


def _shift_samples(name, operator):
    return (Sample(lambda m, a, b, f=name: getattr(m, f)(_ints(a), _ints(b) + 2), _broadcast,
                   grad=False),
            Sample(lambda m, a, o=operator: o(_ints(a), 3), ((2, 3),), grad=False),
            Sample(lambda m, a, b, f=name: getattr(m, f)(_ints(a).int(), _ints(b).int() * 9),
                   _two, grad=False))


def _register(base, name, code, samples):
    return register(type("".join(p.capitalize() for p in name.split("_")), (base,),
                         {"name": name, "node": "", "code": code, "samples": samples,
                          "__doc__": base.__doc__}))


_OPS = {
    "logical_and": _register(_Logical, "logical_and", "LOGICAL_AND",
                             _logical_samples("logical_and")),
    "logical_or": _register(_Logical, "logical_or", "LOGICAL_OR", _logical_samples("logical_or")),
    "logical_xor": _register(_Logical, "logical_xor", "LOGICAL_XOR",
                             _logical_samples("logical_xor")),
    "bitwise_and": _register(_Bitwise, "bitwise_and", "BITWISE_AND",
                             _bitwise_samples("bitwise_and", lambda a, b: a & b)),
    "bitwise_or": _register(_Bitwise, "bitwise_or", "BITWISE_OR",
                            _bitwise_samples("bitwise_or", lambda a, b: a | b)),
    "bitwise_xor": _register(_Bitwise, "bitwise_xor", "BITWISE_XOR",
                             _bitwise_samples("bitwise_xor", lambda a, b: a ^ b)),
    "bitwise_left_shift": _register(_Bitwise, "bitwise_left_shift", "LSHIFT",
                                    _shift_samples("bitwise_left_shift", lambda a, b: a << b)),
    "bitwise_right_shift": _register(_Bitwise, "bitwise_right_shift", "RSHIFT",
                                     _shift_samples("bitwise_right_shift",
                                                    lambda a, b: a >> b)),
}
_ATEN_NAMES = {"bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}


def _binary_int(name: str, doc: str):
    op = _OPS[name]
    logical = issubclass(op, _Logical)

    def fn(input, other) -> Tensor:
        if logical:  # (PyTorch's logical ops take tensors only)
            _tensor_only(name, input, other)
        elif not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        a, b = binary_operands(input, other)
        kind = np.dtype(a.dtype).kind
        if not logical and (kind not in "iub" or kind == "b" and op.code in ("LSHIFT", "RSHIFT")):
            raise NotImplementedError(f'"{_ATEN_NAMES.get(name, name)}_cpu" not implemented '
                                      f"for '{torch_name(a.dtype)}'")
        return apply(op, (input, other), (a, b))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


logical_and: BinaryOp = _binary_int("logical_and", "Elementwise ``input and other`` (nonzero is true), a "
                          "bool tensor.")
logical_or: BinaryOp = _binary_int("logical_or", "Elementwise ``input or other``, a bool tensor.")
logical_xor: BinaryOp = _binary_int("logical_xor", "Elementwise: exactly one of the two is nonzero, a bool "
                          "tensor.")
bitwise_and: BinaryOp = _binary_int("bitwise_and", "``input & other`` of integer or bool tensors.")
bitwise_or: BinaryOp = _binary_int("bitwise_or", "``input | other`` of integer or bool tensors.")
bitwise_xor: BinaryOp = _binary_int("bitwise_xor", "``input ^ other`` of integer or bool tensors.")
bitwise_left_shift: BinaryOp = _binary_int(
    "bitwise_left_shift", "``input << other`` of integer tensors (bits shifted out are lost; a "
    "count that is negative or at least the width gives 0).")
bitwise_right_shift: BinaryOp = _binary_int(
    "bitwise_right_shift", "``input >> other`` of integer tensors, arithmetic (a count that is "
    "negative or at least the width gives the sign, 0 or -1).")


@register
class BitwiseNot(Op):
    """``~input``: each bit flipped (``not`` of a bool); not differentiable."""

    name, node = "bitwise_not", ""
    differentiable = False
    on_cuda = True
    samples = (Sample(lambda m, a: m.bitwise_not(_ints(a)), ((3, 4),), grad=False),
               Sample(lambda m, a: ~(a > 0), ((5,),), grad=False))

    @staticmethod
    def forward(K, a):
        return K.unary(K.BITWISE_NOT, a)


def bitwise_not(input: Tensor) -> Tensor:
    """``~input`` of an integer or bool tensor."""
    if np.dtype(input._data.dtype).kind not in "iub":
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{torch_name(input._data.dtype)}'")
    return apply(BitwiseNot, (input,), (input._data,))


@register
class LogicalNot(Op):
    """``not input`` elementwise (zero is false, NaN true), a bool tensor."""

    name, node = "logical_not", ""
    differentiable = False
    on_cuda = True
    samples = (Sample(lambda m, a: m.logical_not(a), ((3, 4),), grad=False),
               Sample(lambda m, a: _ints(a).logical_not(), ((5,),), grad=False))

    @staticmethod
    def forward(K, a):
        return K.binary(K.EQ, a, np.zeros((), a.dtype), np.bool_)


def logical_not(input: Tensor) -> Tensor:
    """``not input`` elementwise, a bool tensor."""
    return apply(LogicalNot, (input,), (input._data,))


# ------------------------------------------------------------------ composed of other ops
def _ng():
    import numgrad

    return numgrad


def _float_of(t: Tensor) -> Tensor:
    """``t``, or ``t`` in the default float dtype if it is an integer or bool tensor."""
    return t if t.dtype.is_floating_point else t.to(_ng().get_default_dtype())


def _as_tensor_like(value, like: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else _ng().tensor(value, device=like.device)


def sgn(input: Tensor) -> Tensor:
    """The sign: ``z / |z|`` of a complex element (0 at 0), ``sign`` of a real one."""
    from .elementwise import sign

    if input.dtype.is_complex:
        from .complex import sgn as complex_sgn

        return complex_sgn(input)

    return sign(input)


def signbit(input: Tensor) -> Tensor:
    """Whether each element's sign bit is set: negative numbers and -0.0 (a bool tensor)."""
    if not input.dtype.is_floating_point:
        return input < 0
    return (input < 0) | ((input == 0) & (input.detach().reciprocal() < 0))


def copysign(input, other) -> Tensor:
    """``|input|`` with the sign of ``other`` (its sign bit: -0.0 counts as negative), in a float
    dtype; the gradient reaches ``input`` (0 where it is 0)."""
    ng = _ng()
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dtype = ng.result_type(input, other)
    if dtype.is_complex:
        raise NotImplementedError(f"\"copysign_cpu\" not implemented for "
                                  f"'{torch_name(dtype.np)}'")
    if not dtype.is_floating_point:
        dtype = ng.get_default_dtype()
    other = _as_tensor_like(other, input)
    negative = signbit(other)
    magnitude = input.to(dtype).abs()
    return where(negative, -magnitude, magnitude)


def _nan_ignoring(name: str, keep_first):
    def fn(input: Tensor, other: Tensor) -> Tensor:
        _tensor_only(name, input, other)
        if not (input.dtype.is_floating_point or other.dtype.is_floating_point):
            from .elementwise import maximum, minimum

            return (maximum if name == "fmax" else minimum)(input, other)
        # (PyTorch's gradient: all of it to ``input`` where it is kept, ties included)
        return where(keep_first(input, other) | other.isnan(), input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The elementwise {'maximum' if name == 'fmax' else 'minimum'}, ignoring NaN "
                  "(NaN only where both are NaN).")
    return fn


fmax: TensorBinaryOp = _nan_ignoring("fmax", lambda a, b: a >= b)
fmin: TensorBinaryOp = _nan_ignoring("fmin", lambda a, b: a <= b)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where ``input`` < 0, ``values`` where it is 0, 1 where > 0 (not differentiable)."""
    _tensor_only("heaviside", input, values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    x, v = input.detach(), values.detach()
    return where(x == 0, v, (x > 0).to(x.dtype))


def logit(input: Tensor, eps=None) -> Tensor:
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` if ``eps`` is given (then the
    gradient is 0 outside that interval)."""
    p = _float_of(input)
    if eps is not None:
        p = p.clamp(float(eps), 1.0 - float(eps))
    return (p / (1 - p)).log()


def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` in float64."""
    ng = _ng()
    base = input.to(ng.float64) if isinstance(input, Tensor) else float(input)
    exp = exponent.to(ng.float64) if isinstance(exponent, Tensor) else float(exponent)
    if not isinstance(base, Tensor):
        return ng.pow(base, exp)
    return base.pow(exp)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other``, in a float dtype."""
    _tensor_only("ldexp", input, other)
    ng = _ng()
    return input * ng.pow(2.0, _float_of(other) if other.dtype.is_floating_point else other)


_LOGIC = ["logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
          "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift"]
__all__ = ["arctan2", "atan2", "erf", "erfc", "floor_divide", "logaddexp", "logaddexp2"]
__all__ += ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin",
            "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "log2", "log10", "exp2", "trunc",
            "fix", "frac", "sinc", "deg2rad", "rad2deg", "square", "fmod", "remainder", "hypot",
            "xlogy", "lerp", "addcmul", "addcdiv"]
METHODS = ("atan2", "arctan2", "logaddexp", "logaddexp2", "erf", "erfc", "floor_divide")
METHODS += tuple(__all__[7:])
_GAMMA = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "i0"]
__all__ += _GAMMA
METHODS += ("lgamma", "digamma", "mvlgamma", "erfinv", "i0")
_COMPOSED = ["sgn", "signbit", "copysign", "fmax", "fmin", "heaviside", "logit", "float_power",
             "ldexp"]
__all__ += _LOGIC + _COMPOSED
METHODS += tuple(_LOGIC) + tuple(_COMPOSED)
