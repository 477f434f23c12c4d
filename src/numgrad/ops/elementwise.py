"""Elementwise ops: arithmetic with broadcasting and Python scalars, and unary functions."""
from __future__ import annotations

import cmath

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import dispatch
from ..creation import zeros_like
from ..kernels import cpu as cpu_kernels
from ..tensor import SharedGrad, Tensor
from . import registry as _registry
from . import complex as _complex
from ._names import alias, export
from ._promote import binary_operands, broadcast_shapes, floating_operand, number_as
from ._promote import half_alpha, half_value, half_number as _half_number
from ..autograd import grad_mode
from ..autograd.graph import keep_given
from . import _jvp
from .registry import Sample, apply, kernels_for
from ._formula import BinaryFormula, UnaryFormula, formula_op, make as make_formula_op
from . import _formula as _f

from builtins import abs as builtins_abs  # (``abs`` is the op below)
from typing import TYPE_CHECKING
from .._dtype import get_default_dtype, bool_, int64
from ..creation import check_scalar, ones, tensor
from .division import div_mode

if TYPE_CHECKING:
    from .._typing import BinaryOp, UnaryOp

_two = ((3, 4), (3, 4))
_broadcast = ((3, 1, 4), (5, 1))


# add, sub and rsub with ``alpha`` of float16 or bfloat16 operands (``_fused``): their op
# computes ``x + alpha * y`` fused (``fused_alpha``: alpha in their dtype; ``alpha`` as given, for
# the backward), where the other dtypes multiply first (``other * alpha``, an op of its own).
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _fused(a, alpha) -> dict | None:
    """The parameters of add's, sub's or rsub's op for operands of ``a``'s dtype and ``alpha``
    (not 1) where PyTorch's CPU kernel fuses them (float16, bfloat16: ``_promote.half_alpha``),
    else None. float16 keeps PyTorch's NaNs (``nan_bits``); bfloat16 rounds every NaN to one."""
    rounded = half_alpha(a, alpha)
    if rounded is None:
        return None
    return {"alpha": alpha, "fused_alpha": rounded, "nan_bits": a.dtype.char == "e"}


def _is_number(v) -> bool:
    return isinstance(v, (np.generic, float))


def _fused_multiply_add(K, x, y, alpha, nan_bits):
    """``x + alpha * y`` of float16 or bfloat16 operands (arrays or numbers) widened to float32,
    as PyTorch's vectorised CPU kernel of add computes it (sub and rsub: with ``-alpha``):
    ``vec::fmadd(y, alpha, x)`` in float32, rounded once (``apply`` then rounds the float32 result
    to the operands' dtype). Here in float64, where the product of two half values is exact and
    the sum rounds to the float32 that the fused one gives (the product has 22 bits at most and
    ``x`` 11; what float64 rounds off lies far from float32's halfway points); a float32 product
    could overflow where the fused one does not (bfloat16's -3e38 + 3 * 2e38). The kernel's
    scalar loop, for the last ``n % 64`` elements of an array (AVX-512; 32 with AVX2), rounds
    ``alpha * y`` to the dtype first: not followed (the vectorised loop's values throughout).
    ``nan_bits``: a NaN result is PyTorch's NaN (``_fma_nans``)."""
    if _is_number(y):
        p = np.float64(float(y) * alpha)  # (Python's product: NaN without NumPy's warning)
    else:
        p = K.binary(K.MUL, K.cast(y, _F64), np.float64(alpha))
    if _is_number(x):
        out = K.cast(K.binary(K.ADD, p, np.float64(x)), _F32)
    else:
        out = K.cast(K.binary(K.ADD, K.cast(x, _F64), p), _F32)
    return _fma_nans(K, out, x, y, alpha) if nan_bits else out


def _fma_nans(K, out, x, y, alpha):
    """``out`` with each NaN the one PyTorch's fused multiply-add gives: the first NaN of its
    operands in x86's order (``y``, ``alpha``, ``x``, sign and payload kept), else the
    processor's default NaN (negative: ``inf - inf``, ``0 * inf``). Chosen, not left to the
    order in which the kernels' instructions happen to take their operands."""
    nan = dispatch.number_array(-np.nan, _F32)
    for v in (x, alpha, y):  # (the last one chosen wins)
        if _is_number(v):
            if v != v:
                nan = dispatch.number_array(v, _F32)
        else:
            nan = K.where(K.binary(K.NE, v, v, np.bool_), v, nan)
    return K.where(K.binary(K.NE, out, out, np.bool_), nan, out)


def _add(K, a, b, *, alpha=1, fused_alpha=None, nan_bits=False):
    if fused_alpha is None:
        return K.binary(K.ADD, a, b)
    return _fused_multiply_add(K, a, b, fused_alpha, nan_bits)


def _sub(K, a, b, *, alpha=1, fused_alpha=None, nan_bits=False):
    if fused_alpha is None:
        return K.binary(K.SUB, a, b)
    return _fused_multiply_add(K, a, b, -fused_alpha, nan_bits)


def _alpha_jvp(scaled: int):
    """The forward rule of add, sub and rsub (``scaled``: the input ``alpha`` multiplies):
    ``_jvp.linear``; computed fused (``fused_alpha``), PyTorch's formula of two ops,
    ``self_t + maybe_multiply(other_t, alpha)``: the tangent times ``alpha`` (rounded), then the
    op unfused."""
    def rule(ctx, *tangents):
        if ctx.params.get("fused_alpha") is None:
            return _jvp.linear(ctx, *tangents)
        if tangents[scaled] is not None:
            tangents = tuple(t * ctx.params["alpha"] if i == scaled else t
                             for i, t in enumerate(tangents))
        return _jvp.linear(_Unfused(ctx), *tangents)

    rule.__name__ = rule.__qualname__ = f"alpha_jvp(scaled={scaled})"
    return rule


class _Unfused:
    """A forward rule's ``ctx`` as ``_jvp.linear`` reads it, its params without the fused
    alpha."""

    def __init__(self, ctx):
        self.op, self.inputs, self.arrays = ctx.op, ctx.inputs, ctx.arrays
        self.params = {k: v for k, v in ctx.params.items()
                       if k != "fused_alpha" and k != "nan_bits"}


# The arithmetic ops are formula ops (``_formula.formula_op``): each computes one formula of the
# table (``code``; ``arity`` counts its operands, a number parameter as one), and the decorated
# function is its backward.
@formula_op("add", "AddBackward0", "ADD", forward=_add,
            lane="binary", arity=2, complex_ok=True, jvp=_alpha_jvp(1),
            samples=(Sample(lambda m, a, b: m.add(a, b), _two),
                     Sample(lambda m, a, b: a + b, _broadcast),
                     Sample(lambda m, a: a + 2.5, ((2, 3),)),
                     Sample(lambda m, a: 3 + a, ((2, 3),))))
def Add(ctx, grad):
    if ctx.params and ctx.params.get("fused_alpha") is not None:  # (PyTorch's grad * alpha)
        return grad, (grad * ctx.params["alpha"] if ctx.needs_input_grad[1] else None)
    return grad, grad


@formula_op("sub", "SubBackward0", "SUB", forward=_sub,
            lane="binary", arity=2, complex_ok=True, jvp=_alpha_jvp(1),
            samples=(Sample(lambda m, a, b: m.sub(a, b), _two),
                     Sample(lambda m, a, b: a - b, _broadcast),
                     Sample(lambda m, a: a - 1.5, ((4,),))))
def Sub(ctx, grad):
    if not ctx.needs_input_grad[1]:
        return grad, None
    if ctx.params and ctx.params.get("fused_alpha") is not None:  # (PyTorch's -grad * alpha)
        return grad, -grad * ctx.params["alpha"]
    return grad, -grad


def _rsub(K, a, *, other, alpha=1, fused_alpha=None, nan_bits=False):
    if fused_alpha is None:
        return K.binary(K.RSUB, a, other)
    return _fused_multiply_add(K, other, a, -fused_alpha, nan_bits)


@formula_op("rsub", "RsubBackward1", "RSUB", arity=2, forward=_rsub, complex_ok=True,
            doc="``scalar - tensor``.", samples=(Sample(lambda m, a: 2 - a, ((2, 3),)),))
def Rsub(ctx, grad):
    if ctx.params.get("fused_alpha") is not None:
        return (-grad * ctx.params["alpha"],)
    return (-grad,)


def _rsub_tensor(K, a, b, *, alpha, fused_alpha=None, nan_bits=False):
    # (alpha: applied to ``a`` before, kept for the node; float16/bfloat16: ``fused_alpha``)
    if fused_alpha is None:
        return K.binary(K.RSUB, a, b)
    return _fused_multiply_add(K, b, a, -fused_alpha, nan_bits)


@formula_op("rsub_tensor", "RsubBackward0", "RSUB", arity=2, forward=_rsub_tensor,
            complex_ok=True, jvp=_alpha_jvp(0),
            doc="``torch.rsub(input, other)`` of two tensors: ``other - input``.",
            samples=(Sample(lambda m, a, b: m.rsub(a, b), _broadcast),))
def RsubTensor(ctx, grad):
    grad_a = None
    if ctx.needs_input_grad[0]:
        grad_a = -grad * ctx.params["alpha"] if ctx.params.get("fused_alpha") is not None \
            else -grad
    return grad_a, grad



@formula_op("mul", "MulBackward0", "MUL",
            lane="binary", arity=2, complex_ok=True, jvp=_jvp.bilinear,
            save_inputs=(0, 1),
            save_only_for={0: 1, 1: 0},  # a serves b's gradient, b serves a's
            samples=(Sample(lambda m, a, b: m.mul(a, b), _two),
                     Sample(lambda m, a, b: a * b, _broadcast),
                     Sample(lambda m, a: a * 3.0, ((2, 3),)),
                     Sample(lambda m, a: a * a, ((5,),))))
def Mul(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    if grad._data.dtype.kind == "c":  # (the conjugate Wirtinger derivative)
        return (grad * _conj(b) if need_a else None), (grad * _conj(a) if need_b else None)
    if a is b and need_a and not grad_mode.state.enabled:
        # ``y * y``: both gradients are grad * y, the same values; one product, given to both
        # inputs (as Add gives ``grad`` twice), which the engine adds as it adds two. With a
        # graph recorded, two products, so that it has PyTorch's two MulBackward0 nodes.
        g = _times(grad, a)
        return g, g
    return (_times(grad, b) if need_a else None), (_times(grad, a) if need_b else None)


def uniform_value(g):
    """The value of a gradient that is one number broadcast (the gradient of a sum or a mean),
    or None. Host arrays only: reading a device value would sync (and a traced one is not read,
    see ``uniform_element``)."""
    if type(g) is np.ndarray and g.size > 1 and not any(g.strides):
        return g[(0,) * g.ndim]
    return None


def uniform_element(g):
    """Where ``g`` is one number broadcast: that number, as ``uniform_value`` gives it, or, while
    numgrad.compile traces, its element as a 0-d view (a value of the trace, not read: the
    kernels take it as they take a number). Else None."""
    if dispatch._pushed and dispatch.stands_for(g):
        if g.size > 1 and not any(g.strides):
            return as_strided(g.view(np.ndarray), (), ())
        return None
    return uniform_value(g)


_FILL_BELOW = 4096  # (elements: see _times)
_wrap = Tensor._wrap  # (bound once: without the binding on each call)


def _times(grad: Tensor, other) -> Tensor:
    """``grad * other`` in a backward formula. In a plain backward (no graph recorded) with
    operands of one float dtype, or a Python float or int, it goes straight to the kernel: the same
    values as the ``mul`` op, without the operand promotion and dispatch (a third of a backward
    node's cost in long chains of small tensors).

    Where ``grad`` is 1 everywhere (the gradient of a ``sum``, broadcast) and ``other`` has its
    shape, ``grad * other`` is ``other``, bit for bit: the result is ``other``'s data itself, as a
    ``SharedGrad``, instead of a pass over memory (two of the twelve passes of
    ``(f(x) * g(x)).sum().backward()``). The engine never writes into it, and copies it before a
    hook, a custom Function, ``.grad`` or ``autograd.grad`` could see it (``engine._private``)."""
    if not grad_mode.state.enabled:
        g = grad._data
        if g.dtype.kind == "f" and g.dtype.itemsize > 2:  # (float16: ``mul``'s float32 number)
            if type(other) is float or type(other) is int:  # (as mul promotes them: exactly)
                out = _registry.plain_binary(_MUL, g, other)
                if out is not None:
                    return _wrap(out)
                if dispatch._pushed and (g.size < 2 or any(g.strides)) and \
                        (mode := _registry.lane_mode(g)) is not None:
                    # (the call at the end, ``K.binary(K.MUL, g, ...)``, handed to the mode
                    # that records it, as the lane hands its own: numgrad.compile's re-run path)
                    return _wrap(mode.record_scalar(_MUL, g, other))
                K = kernels_for((grad,))
                if isinstance(g, np.ndarray) and g.size > 1 and not any(g.strides):
                    # One value broadcast (a mean's gradient) times a number is one value: the
                    # product of the first element, broadcast again (large: no pass over
                    # memory, and the formulas after it see one value too) or filled (small:
                    # the kernels after it take contiguous arrays fastest). The same layouts
                    # while numgrad.compile traces (a traced array), so that the formulas after
                    # it take eager's paths (a product's backward takes a shortcut for a
                    # broadcast gradient: another summation order); the fill, which reads the
                    # value, is then the kernels' copy of the broadcast.
                    value = K.binary(K.MUL, g[(slice(0, 1),) * g.ndim].reshape(1),
                                     number_as(other, g.dtype))
                    if g.size >= _FILL_BELOW:
                        return Tensor._wrap(K.broadcast_to(value, g.shape))
                    if dispatch.current() is not None:
                        return Tensor._wrap(K.copy(K.broadcast_to(value, g.shape)))
                    out = np.empty(g.shape, g.dtype)
                    out.fill(value[0])
                    return Tensor._wrap(out)
                return Tensor._wrap(K.binary(K.MUL, g, number_as(other, g.dtype)))
            if isinstance(other, Tensor) and other._data.dtype == g.dtype:
                o = other._data
                if (o.shape == g.shape and type(g) is np.ndarray and type(o) is np.ndarray
                        and g.size > 1 and not any(g.strides)):
                    first = g[(slice(0, 1),) * g.ndim].reshape(())  # (one value broadcast)
                    if first[()] == 1:
                        return SharedGrad._wrap(o)
                    return Tensor._wrap(cpu_kernels.binary(cpu_kernels.MUL, o, first))
                out = _registry.plain_binary(_MUL, g, o)
                if out is not None:
                    return _wrap(out)
                K = kernels_for((grad, other))
                return Tensor._wrap(K.binary(K.MUL, g, o))
    return grad * other


def _conj(v):
    """The conjugate of a tensor or a number."""
    return _complex.conj(v) if isinstance(v, Tensor) else v.conjugate()


def holomorphic_backward(backward, ctx, grad: Tensor) -> tuple:
    """The backward of a holomorphic op of complex tensors from its real formula ``backward``
    (written with products, sums and quotients alone, no conjugate): PyTorch's gradient is
    ``sum_j grad_j conj(df_j/dz)``, which is ``conj(backward(conj(grad)))``."""
    return tuple(None if g is None else _complex.conj(g)
                 for g in backward(ctx, _complex.conj(grad)))


def wirtinger(d: Tensor) -> Tensor:
    """A holomorphic op's derivative ``d`` as its backward multiplies the gradient by it: the
    conjugate of a complex ``d`` (PyTorch's convention, the conjugate Wirtinger derivative:
    ``grad * f'(z).conj()``), a real ``d`` as it is."""
    return _complex.conj(d) if d._data.dtype.kind == "c" else d


def _div(K, a, b):
    if a.dtype.kind == "c" and type(b) in (np.ndarray, np.complex64, np.complex128) and \
            not b.all():
        # (a complex zero divisor, where Numba's complex division raises
        # ZeroDivisionError: NumPy's gives PyTorch's inf/NaN, (1+1j)/0 = inf+infj)
        with np.errstate(all="ignore"):
            return np.ascontiguousarray(np.divide(a, b))
    return K.binary(K.DIV, a, b)


@formula_op("div", "DivBackward0", "DIV",
            lane="division", arity=2, forward=_div, complex_ok=True, jvp=_jvp.quotient,
            save_inputs=(0, 1),
            save_only_for={0: 1},  # a serves b's gradient only; b serves both
            samples=(Sample(lambda m, a, b: m.div(a, b), _two, low=0.5, high=2.0),
                     Sample(lambda m, a, b: a / b, _broadcast, low=0.5, high=2.0),
                     Sample(lambda m, a: a / 4.0, ((2, 3),)),
                     Sample(lambda m, a: 2.0 / a, ((2, 3),), low=0.5, high=2.0)))
def Div(ctx, grad):
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    if grad._data.dtype.kind == "c":  # (the conjugate Wirtinger derivative)
        b = _conj(b)
        return (grad / b if need_a else None), \
            (-grad * ((_conj(a) / b) / b) if need_b else None)
    grad_a = grad / b if need_a else None
    # PyTorch's -grad * ((a / b) / b): no b * b to overflow, and its rounding (x / x gets 0)
    grad_b = -grad * ((a / b) / b) if need_b else None
    return grad_a, grad_b


@formula_op("neg", "NegBackward0", "NEG",
            lane="unary", complex_ok=True, jvp=_jvp.linear,
            samples=(Sample(lambda m, a: -a, ((3, 2),)), Sample(lambda m, a: m.neg(a), ((4,),))))
def Neg(ctx, grad):
    return (-grad,)


def _pow_scalar(K, a, *, exponent):
    if a.dtype.kind == "f" and exponent in _POW_SPECIAL:
        return _POW_SPECIAL[exponent](K, a)
    return K.binary(K.POW, a, dispatch.number_array(exponent, a.dtype))


@formula_op("pow_scalar", "PowBackward0", "POW", arity=2, forward=_pow_scalar, complex_ok=True,
            save_inputs=(0,), doc="``tensor ** number``.",
            samples=(Sample(lambda m, a: a**2, ((3, 4),)),
                     Sample(lambda m, a: m.pow(a, 3), ((5,),)),
                     Sample(lambda m, a: a**0.5, ((2, 3),), low=0.5, high=2.0),
                     Sample(lambda m, a: a**-1.5, ((4,),), low=0.5, high=2.0)))
def PowScalar(ctx, grad):
    (a,) = ctx.saved_tensors
    e = ctx.params["exponent"]
    if e == 0:
        return (zeros_like(grad),)  # (PyTorch's zeros, not grad * 0: NaN for an inf grad)
    if grad._data.dtype.kind == "c":  # (the conjugate Wirtinger derivative)
        return (grad * _conj(a ** (e - 1) * e),)
    return (grad * (a ** (e - 1) * e),)  # (PyTorch's grad * (e * a**(e-1)), its rounding)


# PyTorch's float tensor ** number for these exponents (pow_tensor_scalar_optimized_kernel):
# products and roots, not pow, whose rounding and special values differ (x * x * x is not
# pow(x, 3) in the last bit; sqrt(-inf) is NaN where pow(-inf, 0.5) is inf; 1 / (x * x) is 0
# where x * x overflows, where pow(x, -2) may be subnormal).
_POW_SPECIAL = {
    1: lambda K, a: K.copy(a),  # (x ** 2's gradient, a**1 * 2: pow per element was 6 ns each)
    0.5: lambda K, a: K.unary(K.SQRT, a),
    -0.5: lambda K, a: K.unary(K.RSQRT, a),
    2: lambda K, a: K.binary(K.MUL, a, a),
    3: lambda K, a: K.binary(K.MUL, K.binary(K.MUL, a, a), a),
    -1: lambda K, a: K.unary(K.RECIPROCAL, a),
    -2: lambda K, a: K.unary(K.RECIPROCAL, K.binary(K.MUL, a, a)),
}


@formula_op("pow", "PowBackward1", "POW", arity=2, save_inputs=(0, 1), save_output=True,
            complex_ok=True, doc="``tensor ** tensor``.",
            samples=(Sample(lambda m, a, b: m.pow(a, b), _two, low=0.5, high=2.0),
                     Sample(lambda m, a, b: a**b, _broadcast, low=0.5, high=2.0)))
def PowTensor(ctx, grad):
    a, b, out = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    grad_a = grad_b = None
    if out._data.dtype.kind == "c":  # (PyTorch's pow_backward_self and _exponent, conjugated)
        if need_a:
            grad_a = where(b.detach() != 0, grad * wirtinger(b * a ** (b - 1)), 0.0)
        if need_b:
            zero_base = (a.detach() == 0) & (b.detach().real >= 0)
            grad_b = grad * wirtinger(where(zero_base, 0.0, out * log(a)))
        return grad_a, grad_b
    if need_a:  # b a**(b-1), and 0 where b == 0 whatever grad is (PyTorch's where)
        grad_a = where(b.detach() != 0, grad * (b * a ** (b - 1)), 0.0)
    if need_b:  # a**b log a, taken as 0 where a == 0 and b >= 0 (PyTorch's convention)
        t = out * log(a)
        grad_b = grad * where(a.detach() != 0, t, where(b.detach() >= 0, 0.0, t))
    return grad_a, grad_b


def _rpow(K, a, *, base):
    return K.binary(K.RPOW, a, dispatch.number_array(base, a.dtype))


@formula_op("rpow", "PowBackward2", "RPOW", arity=2, forward=_rpow, save_output=True,
            complex_ok=True,
            save_inputs=(0,),  # (not read by the backward: PyTorch's node keeps the exponent)
            doc="``number ** tensor``.",
            samples=(Sample(lambda m, a: 2.0**a, ((3, 4),)),
                     Sample(lambda m, a: m.pow(1.5, a), ((5,),))))
def RPow(ctx, grad):
    out = ctx.saved_tensors[-1]
    base = ctx.params["base"]
    if out._data.dtype.kind == "c":  # (a complex power: its conjugate Wirtinger derivative)
        if base == 0:
            exponent = ctx.saved_tensors[0].detach()
            return (grad * wirtinger(where(exponent.real >= 0, 0.0, out * float("-inf"))),)
        return (grad * wirtinger(out * cmath.log(base)),)
    if base == 0:
        # PyTorch's where(exponent >= 0, 0, result * log(0)): 0 ** x is 0 or 1 exactly
        # where x >= 0 (inf for x < 0, NaN for NaN), so the output tells the exponent's sign.
        return (grad * where(out.detach() <= 1, 0.0, out * float("-inf")),)
    with np.errstate(invalid="ignore", divide="ignore"):  # (log of a negative base: NaN)
        log_base = float(np.log(base))
    return (grad * (out * log_base),)


# A unary op computed by one op code of the unary kernel: what ``_formula.formula_op`` makes of a
# formula of one operand (the in-place forms run its code in place: ``inplace._inplace_form``).
_Unary = UnaryFormula


@formula_op("exp", "ExpBackward0", "EXP",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.exp(a), ((3, 4),)),
                     Sample(lambda m, a: a.exp(), ((5,),))))
def Exp(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad * (out if out._data.dtype.kind != "c" else wirtinger(out)),)


@formula_op("log", "LogBackward0", "LOG",
            lane="unary", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.log(a), ((3, 4),), low=0.5, high=3.0),))
def Log(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad / (a if a._data.dtype.kind != "c" else wirtinger(a)),)


@formula_op("sqrt", "SqrtBackward0", "SQRT",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.sqrt(a), ((3, 4),), low=0.5, high=3.0),))
def Sqrt(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad / wirtinger(2 * out),)


@formula_op("reciprocal", "ReciprocalBackward0", "RECIPROCAL",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.reciprocal(a), ((3, 4),), low=0.5, high=2.0),))
def Reciprocal(ctx, grad):
    (out,) = ctx.saved_tensors
    return (-grad * wirtinger(out * out),)  # (PyTorch's grouping: out * out may overflow first)


@formula_op("tanh", "TanhBackward0", "TANH",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.tanh(a), ((3, 4),)),
                     Sample(lambda m, a: a.tanh(), ((6,),))))
def Tanh(ctx, grad):
    (out,) = ctx.saved_tensors
    if out._data.dtype.kind == "c":  # (PyTorch's tanh_backward of a complex result)
        return (grad * wirtinger(1 - out * out),)
    return (_fused_backward(TanhBackward, grad, out),)


@formula_op("sigmoid", "SigmoidBackward0", "SIGMOID",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.sigmoid(a), ((3, 4),), low=-6.0, high=6.0),))
def Sigmoid(ctx, grad):
    (out,) = ctx.saved_tensors
    if out._data.dtype.kind == "c":  # (PyTorch's sigmoid_backward of a complex result)
        return (grad * wirtinger((1 - out) * out),)
    return (_fused_backward(SigmoidBackward, grad, out),)


@formula_op("relu", "ReluBackward0", "RELU",
            lane="unary", save_output=True,
            samples=(Sample(lambda m, a: m.relu(a), ((3, 4),), gradgrad=True),))
def Relu(ctx, grad):
    (out,) = ctx.saved_tensors
    return (_fused_backward(ThresholdBackward, grad, out),)


@formula_op("log1p", "Log1PBackward0", "LOG1P",
            lane="unary", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.log1p(a), ((3, 4),), low=-0.5, high=2.0),))
def Log1p(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad / wirtinger(a + 1),)


@formula_op("expm1", "Expm1Backward0", "EXPM1",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: a.expm1(), ((3, 4),)),))
def Expm1(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad * wirtinger(out + 1),)


@formula_op("rsqrt", "RsqrtBackward0", "RSQRT",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.rsqrt(a), ((3, 4),), low=0.5, high=3.0),))
def Rsqrt(ctx, grad):
    (out,) = ctx.saved_tensors
    return ((grad * -0.5) * wirtinger(out * out * out),)  # (PyTorch's grouping)


@formula_op("abs", "AbsBackward0", "ABS", save_inputs=(0,),
            samples=(Sample(lambda m, a: m.abs(a), ((3, 4),)),
                     Sample(lambda m, a: a.abs(), ((5,),))))
def Abs(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * a.sign(),)


@formula_op("sin", "SinBackward0", "SIN",
            lane="unary", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.sin(a), ((3, 4),), low=-4.0, high=4.0),))
def Sin(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger(a.cos()),)


@formula_op("cos", "CosBackward0", "COS",
            lane="unary", save_inputs=(0,), complex_ok=True,
            samples=(Sample(lambda m, a: m.cos(a), ((3, 4),), low=-4.0, high=4.0),))
def Cos(ctx, grad):
    (a,) = ctx.saved_tensors
    return (grad * wirtinger(-a.sin()),)


@formula_op("tan", "TanBackward0", "TAN",
            lane="unary", save_output=True, complex_ok=True,
            samples=(Sample(lambda m, a: m.tan(a), ((3, 4),), low=-1.2, high=1.2),))
def Tan(ctx, grad):
    (out,) = ctx.saved_tensors
    return (grad * wirtinger(out * out + 1),)


def _zero_gradient(ctx, grad):
    return (zeros_like(grad),)


class _Piecewise(_Unary):
    """Piecewise-constant functions: their gradient is zero (where it exists)."""

    jvp = _jvp.zero
    backward = staticmethod(_zero_gradient)


Sign = make_formula_op("sign", "SignBackward0", "SIGN", base=_Piecewise, backward=_zero_gradient,
                       samples=(Sample(lambda m, a: m.sign(a) * a, ((3, 4),)),),
                       cls_name="Sign", module=__name__)
Floor = make_formula_op("floor", "FloorBackward0", "FLOOR", base=_Piecewise,
                        backward=_zero_gradient,
                        samples=(Sample(lambda m, a: m.floor(a * 3) + a, ((3, 4),)),),
                        cls_name="Floor", module=__name__)
Ceil = make_formula_op("ceil", "CeilBackward0", "CEIL", base=_Piecewise, backward=_zero_gradient,
                       samples=(Sample(lambda m, a: a.ceil(), ((3, 4),)),),
                       cls_name="Ceil", module=__name__)
Round = make_formula_op("round", "RoundBackward0", "ROUND", base=_Piecewise,
                        backward=_zero_gradient,
                        samples=(Sample(lambda m, a: m.round(a * 4), ((3, 4),)),),
                        cls_name="Round", module=__name__)


_SCALE = _f.number(lambda decimals: 10.0 ** builtins_abs(decimals))  # (10**|decimals|)
RoundDecimals = make_formula_op(
    "round_decimals", "RoundBackward1", base=_Piecewise, backward=_zero_gradient,
    term=_f.by(lambda decimals: decimals > 0, {
        True: _f.call("DIV", _f.call("ROUND", _f.call("MUL", _f.arg(0), _SCALE)), _SCALE),
        False: _f.call("MUL", _f.call("ROUND", _f.call("DIV", _f.arg(0), _SCALE)), _SCALE)}),
    samples=(Sample(lambda m, a: m.round(a * 40, decimals=1), ((3, 4),)),
             Sample(lambda m, a: (a * 300).round(decimals=-2) + a, ((5,),))),
    cls_name="RoundDecimals", module=__name__,
    doc="""``round(x, decimals=d)``: to ``d`` decimal places (to tens, hundreds... for a negative
    ``d``), half to even, computed as ATen does in the input's dtype: ``rint(x * 10**d) /
    10**d``, or ``rint(x / 10**-d) * 10**-d``.""")


@formula_op("where", "WhereBackward0", arity=3,
            term=_f.select(_f.arg(0), _f.arg(1), _f.arg(2)), complex_ok=True, save_inputs=(0,),
            samples=(Sample(lambda m, a, b: m.where(a > 0, a, b), _two),
                     Sample(lambda m, a, b: m.where(b > 0.5, a, b), _broadcast),
                     Sample(lambda m, a: m.where(a < 0, a, 0.5), ((2, 3),))),
            doc="``input`` where ``condition`` else ``other``; the condition is a constant bool "
                "tensor.")
def Where(ctx, grad):
    (cond,) = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad[1:]
    return (None,
            where(cond, grad, 0.0) if need_a else None,
            where(cond, 0.0, grad) if need_b else None)


# Fused backward formulas: one pass over memory instead of three. Each is an op in its own right,
# with its own derivative, so that second derivatives of tanh, sigmoid and relu work.
def _fused_backward(op, grad, out):
    g, y = grad._data, out._data
    if not grad_mode.state.enabled and g.dtype == y.dtype and g.shape == y.shape:
        # (a plain backward, no graph recorded: what ``apply`` would run, without the operand
        # promotion and the recording checks, as ``_times`` does)
        return Tensor._wrap(op.forward(kernels_for((grad, out), op), g, y))
    g, y = binary_operands(grad, out)
    return apply(op, (grad, out), (g, y))


@formula_op("tanh_backward", "TanhBackwardBackward0", "TANH_BWD", arity=2, save_inputs=(0, 1),
            samples=(Sample(lambda m, g, y: m.ops.tanh_backward(g, y), _two, low=-0.9,
                            high=0.9),))
def TanhBackward(ctx, grad):
    g, y = ctx.saved_tensors
    need_g, need_y = ctx.needs_input_grad
    grad_g = tanh_backward(grad, y) if need_g else None
    grad_y = grad * g * -2 * y if need_y else None
    return grad_g, grad_y


@formula_op("sigmoid_backward", "SigmoidBackwardBackward0", "SIGMOID_BWD", arity=2,
            save_inputs=(0, 1),
            samples=(Sample(lambda m, g, y: m.ops.sigmoid_backward(g, y), _two, low=0.05,
                            high=0.95),))
def SigmoidBackward(ctx, grad):
    g, y = ctx.saved_tensors
    need_g, need_y = ctx.needs_input_grad
    grad_g = sigmoid_backward(grad, y) if need_g else None
    grad_y = grad * g * (1 - 2 * y) if need_y else None
    return grad_g, grad_y


@formula_op("threshold_backward", "ThresholdBackwardBackward0", "RELU_BWD", arity=2,
            save_inputs=(1,), doc="``grad`` where the saved relu output is positive, else 0.",
            samples=(Sample(lambda m, g, y: m.ops.threshold_backward(g, y, 0), _two,
                            gradgrad=False),))
def ThresholdBackward(ctx, grad):
    (y,) = ctx.saved_tensors
    grad_y = zeros_like(y) if ctx.needs_input_grad[1] else None
    return threshold_backward(grad, y), grad_y


# ------------------------------------------------------------------ public functions
_NOT_GIVEN = object()


@export(out=True)
def where(condition: Tensor, input=_NOT_GIVEN, other=_NOT_GIVEN) -> Tensor:
    """Elements of ``input`` where ``condition`` is true, else of ``other`` (broadcast).
    ``where(condition)`` alone: ``nonzero(condition, as_tuple=True)``."""
    if input is _NOT_GIVEN and other is _NOT_GIVEN:
        from .data_dependent import nonzero
        return nonzero(condition, as_tuple=True)
    if input is _NOT_GIVEN or other is _NOT_GIVEN:
        raise TypeError("where() received an invalid combination of arguments: give both "
                        "input and other, or neither")
    if condition.dtype.name != "bool":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {condition.dtype.name.capitalize()}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two Python numbers: a bool, int64 or the default float dtype, as PyTorch's scalars
        kinds = {type(v) for v in (input, other)}
        dtype = (get_default_dtype() if kinds & {float} else
                 int64 if kinds & {int} else bool_ if kinds <= {bool} else None)
        if dtype is not None:
            input, other = (tensor(v, dtype=dtype, device=condition.device) for v in (input, other))
    shape = condition._data.shape  # (PyTorch's error where they do not broadcast: in its order)
    for v in (input, other):
        if isinstance(v, Tensor):
            shape = broadcast_shapes(shape, v._data.shape)
    a, b = binary_operands(input, other)
    for v in (input, other):  # (a number goes into the result's dtype: PyTorch's error else)
        if not isinstance(v, Tensor):
            check_scalar(v, a.dtype)
    cond = condition._data
    return apply(Where, (condition, input, other), (cond, a, b))


_MUL = cpu_kernels.MUL


@export(method=True, out=True)
def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other``, with broadcasting."""
    if alpha == 1 and isinstance(input, Tensor):
        out = Add._fast(input, other)
        if out is not None:
            return out
    if alpha != 1:
        a, b = binary_operands(input, other)
        ref = a if isinstance(input, Tensor) else b  # (the array's dtype: a number's may not be)
        fused = _fused(ref, alpha)
        if fused is not None:  # (float16, bfloat16: one fused multiply-add, as PyTorch's)
            return apply(Add, (input, other),
                         (_half_other(ref, a, input), _half_other(ref, b, other)), **fused)
        other = other * alpha
    a, b = binary_operands(input, other)
    out = apply(Add, (input, other), (a, b))
    if alpha != 1:  # (PyTorch's node shows it: ``_saved_alpha``)
        keep_given(out, alpha=alpha)
    return out


def _half_other(a, b, other):
    """``b``, the operand ``binary_operands`` made of ``other`` beside a float16 or bfloat16
    array ``a``, where add, sub and rsub fuse it with ``alpha``: a Python number converted as
    PyTorch converts it, through float32 (``_promote.half_value``: NumPy's float16 of 1 + 2**-11
    + 2**-40 is 1.001, not 1, and ``number_as`` keeps a bfloat16 number beyond 65504 in
    float32); of bfloat16, a float32 number, as ``number_as`` gives it."""
    if isinstance(other, Tensor) or not isinstance(other, (int, float)) or \
            isinstance(other, bool):
        return b
    value = half_value(other, a.dtype)
    return np.float16(value) if a.dtype.char == "e" else np.float32(value)


_SUB_BOOLS = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
              "or `logical_xor()` operator instead.")
_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
             "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
             "invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or (isinstance(x, Tensor) and x._data.dtype == np.bool_)


def _check_sub(a, b) -> None:
    """PyTorch refuses ``-`` on bools (``^``, ``~`` say what is meant)."""
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(_SUB_BOOLS if _is_bool(a) and _is_bool(b) else _SUB_BOOL)


@export(method=True, out=True)
def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other``, with broadcasting."""
    _check_sub(input, other)
    if alpha != 1:
        if not isinstance(input, Tensor):  # (a number minus a tensor: rsub's, alpha with it)
            return rsub(other, input, alpha=alpha)
        a, b = binary_operands(input, other)
        fused = _fused(a, alpha)
        if fused is not None:  # (float16, bfloat16: one fused multiply-add, as PyTorch's)
            return apply(Sub, (input, other), (a, _half_other(a, b, other)), **fused)
        other = other * alpha
    if not isinstance(input, Tensor):
        return rsub(other, input)
    out = Sub._fast(input, other)
    if out is None:
        a, b = binary_operands(input, other)
        out = apply(Sub, (input, other), (a, b))
    if alpha != 1:  # (PyTorch's node shows it: ``_saved_alpha``)
        keep_given(out, alpha=alpha)
    return out


@export
def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    if not isinstance(input, Tensor):  # (PyTorch's parser: a number first matches no overload)
        given = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__
                          for a in (input, other))
        raise TypeError(f"rsub() received an invalid combination of arguments - got ({given}), "
                        "but expected one of:\n * (Tensor input, Tensor other, *, Number alpha = "
                        "1)\n * (Tensor input, Number other, Number alpha = 1)\n")
    _check_sub(input, other)
    if alpha != 1:
        a, b = binary_operands(input, other)
        fused = _fused(a, alpha)
        if fused is not None:  # (float16, bfloat16: one fused multiply-add, as PyTorch's)
            b = _half_other(a, b, other)
            if isinstance(other, Tensor):
                return apply(RsubTensor, (input, other), (a, b), **fused)
            return apply(Rsub, (input,), (a,), other=b, **fused)
        input = input * alpha
    a, b = binary_operands(input, other)
    if isinstance(other, Tensor):  # (PyTorch's RsubBackward0, its alpha shown as given)
        return apply(RsubTensor, (input, other), (a, b), alpha=alpha)
    return apply(Rsub, (input,), (a,), other=b)


@export(method=True, out=True)
def mul(input, other) -> Tensor:
    """``input * other``, with broadcasting."""
    if not isinstance(input, Tensor):
        input, other = other, input
    else:
        out = Mul._fast(input, other)
        if out is not None:
            return out
    a, b = binary_operands(input, other)
    return apply(Mul, (input, other), (a, _half_number(a, b, other)))


@export(method=True, out=True)
def div(input, other, *, rounding_mode=None) -> Tensor:
    """True division ``input / other`` (integers give the default float dtype)."""
    if rounding_mode is not None:
        return div_mode(input, other, rounding_mode)
    if not isinstance(input, Tensor):
        if other._data.dtype.kind == "c" or isinstance(input, complex):
            a, b = binary_operands(input, other, floating=True)  # (no complex reciprocal)
            return apply(Div, (input, other), (a, b))
        return mul(reciprocal(other), input)
    out = Div._fast(input, other)
    if out is not None:
        return out
    a, b = binary_operands(input, other, floating=True)
    return apply(Div, (input, other), (a, _half_number(a, b, other)))


@export(method=True, out=True, inplace=True)
def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input._data.dtype == np.bool_:
        raise RuntimeError(_NEG_BOOL)
    out = Neg._fast(input)
    if out is not None:
        return out
    return apply(Neg, (input,), (input._data,))


@export(method=True, out=True, inplace="method")
def pow(input, exponent) -> Tensor:
    """``input ** exponent``, where either may be a number."""
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        a, b = binary_operands(input, exponent)
        return apply(PowTensor, (input, exponent), (a, b))
    if isinstance(input, Tensor):
        a, e = binary_operands(input, exponent)
        if a.dtype.kind in "iu" and not isinstance(exponent, bool):
            if exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            check_scalar(exponent, a.dtype)  # (int8's x ** 128: PyTorch's overflow error)
        elif a.dtype.char == "e":  # (float16's x ** 1e6: the exponent converted, that error)
            check_scalar(exponent, a.dtype)
        return apply(PowScalar, (input,), (a,), exponent=_half_rounded(a, e, exponent))
    a, b = binary_operands(exponent, input)
    return apply(RPow, (exponent,), (a,), base=_half_rounded(a, b, input))


def _half_rounded(a, n, number):
    """``number``, beside a float16 or bfloat16 array ``a``, as PyTorch's CPU ``pow`` takes it:
    converted to the array's dtype first (``n``, as ``binary_operands`` made it), its value a
    Python float (``x ** 0.1`` of float16 is ``pow(x, 0.09998)`` there, then rounded once)."""
    if a.dtype.char not in "eV" or not isinstance(number, (int, float)) or \
            isinstance(number, bool) or not -65504.0 <= number <= 65504.0:
        return number
    return number if float(n) == number else float(n)


def _unary(op):
    def fn(input: Tensor) -> Tensor:
        if op._lane is not None:  # (op declares ``lane="unary"``: its fast apply)
            out = op._fast(input)
            if out is not None:
                return out
        return apply(op, (input,), (floating_operand(input),))

    fn.__name__ = fn.__qualname__ = op.name
    return fn


exp: UnaryOp = export(_unary(Exp), "exp", method=True, out=True, inplace=True)
exp.__doc__ = "The exponential of each element."
log: UnaryOp = export(_unary(Log), "log", method=True, out=True, inplace=True)
log.__doc__ = "The natural logarithm of each element."
sqrt: UnaryOp = export(_unary(Sqrt), "sqrt", method=True, out=True, inplace=True)
sqrt.__doc__ = "The square root of each element."
reciprocal: UnaryOp = export(_unary(Reciprocal), "reciprocal", method=True, out=True, inplace=True)
reciprocal.__doc__ = "``1 / input``, elementwise."
tanh: UnaryOp = export(_unary(Tanh), "tanh", method=True, out=True, inplace=True)
tanh.__doc__ = "The hyperbolic tangent of each element."
sigmoid: UnaryOp = export(_unary(Sigmoid), "sigmoid", method=True, out=True, inplace=True)
sigmoid.__doc__ = "The logistic sigmoid ``1 / (1 + exp(-x))`` of each element."
log1p: UnaryOp = export(_unary(Log1p), "log1p", method=True, out=True, inplace=True)
log1p.__doc__ = "``log(1 + x)``, accurate for small x."
expm1: UnaryOp = export(_unary(Expm1), "expm1", method=True, out=True, inplace=True)
expm1.__doc__ = "``exp(x) - 1``, accurate for small x."
rsqrt: UnaryOp = export(_unary(Rsqrt), "rsqrt", method=True, out=True, inplace=True)
rsqrt.__doc__ = "``1 / sqrt(x)``, elementwise."
sin: UnaryOp = export(_unary(Sin), "sin", method=True, out=True, inplace=True)
sin.__doc__ = "The sine of each element."
cos: UnaryOp = export(_unary(Cos), "cos", method=True, out=True, inplace=True)
cos.__doc__ = "The cosine of each element."
tan: UnaryOp = export(_unary(Tan), "tan", method=True, out=True, inplace=True)
tan.__doc__ = "The tangent of each element."


def _same_dtype(op, doc):
    def fn(input: Tensor) -> Tensor:
        return apply(op, (input,), (input._data,))

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    return fn


@export(method=True, out=True, inplace=True)
def abs(input: Tensor) -> Tensor:  # noqa: A001
    """The absolute value of each element (of a complex one, its modulus)."""
    if input._data.dtype.kind == "c":
        return _complex.abs(input)
    return apply(Abs, (input,), (input._data,))


# (PyTorch's ``absolute_`` is a Tensor method only: no ``torch.absolute_``)
absolute: UnaryOp = export(abs, "absolute", method=True, out=True, inplace="method")

sign: UnaryOp = export(
    _same_dtype(Sign, "-1, 0 or 1 by the sign of each element (zero gradient)."),
    "sign", method=True, out=True, inplace="method")
floor: UnaryOp = export(
    _same_dtype(Floor, "Each element rounded down (zero gradient)."),
    "floor", method=True, out=True, inplace=True)
ceil: UnaryOp = export(
    _same_dtype(Ceil, "Each element rounded up (zero gradient)."),
    "ceil", method=True, out=True, inplace=True)
@export(method=True, out=True, inplace=True)
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Each element rounded to the nearest integer, half to even (zero gradient); with
    ``decimals``, to that many decimal places."""
    if decimals == 0:
        return apply(Round, (input,), (input._data,))
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"round_cpu\" not implemented for "
                                  f"'{input.dtype.name.capitalize().replace('Int64', 'Long')}'")
    return apply(RoundDecimals, (input,), (input._data,), decimals=int(decimals))


@export(method=True, inplace=True)
def relu(input: Tensor) -> Tensor:
    """``max(input, 0)``, elementwise (NaN stays NaN)."""
    if input._data.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    out = Relu._fast(input)
    if out is not None:
        return out
    return apply(Relu, (input,), (input._data,))



@export(aten=True)
def tanh_backward(grad: Tensor, output: Tensor) -> Tensor:
    """``grad * (1 - output**2)``: tanh's backward from its saved output, in one pass."""
    return _fused_backward(TanhBackward, grad, output)


@export(aten=True)
def sigmoid_backward(grad: Tensor, output: Tensor) -> Tensor:
    """``grad * output * (1 - output)``: sigmoid's backward from its saved output."""
    return _fused_backward(SigmoidBackward, grad, output)


@export(aten=True)
def threshold_backward(grad: Tensor, output: Tensor, threshold: float = 0) -> Tensor:
    """``grad`` where ``output > threshold``, else 0 (relu's backward)."""
    if threshold != 0:
        raise NotImplementedError("threshold_backward supports threshold 0 only")
    return _fused_backward(ThresholdBackward, grad, output)


# ------------------------------------------------------------------ comparisons
class _Compare(BinaryFormula):
    """A comparison: a bool tensor, never differentiable."""

    differentiable = False
    jvp = None
    complex_ok = True  # (the formula table has complex rows for eq and ne alone)

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b, np.bool_)


def _comparison(name: str, code: str, doc: str):
    op = make_formula_op(name, "", code, arity=2, base=_Compare, doc=doc, samples=(
        Sample(lambda m, a, b, f=name: getattr(m, f)(a, b), ((3, 4), (4,)), grad=False),
        Sample(lambda m, a, f=name: getattr(a, f)(0.5), ((5,),), grad=False),
        Sample(lambda m, a, f=name: getattr(a, f)(a.detach() * 1), ((2, 3),), grad=False),
    ), cls_name=name.capitalize(), module=__name__)

    def fn(input, other) -> Tensor:
        a, b = binary_operands(input, other)
        return apply(op, (input, other), (a, b))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


eq: BinaryOp = export(
    _comparison("eq", "EQ", "``input == other``, elementwise, as a bool tensor."),
    "eq", method=True, out=True)
ne: BinaryOp = export(
    _comparison("ne", "NE", "``input != other``, elementwise, as a bool tensor."),
    "ne", method=True, out=True)
lt: BinaryOp = export(
    _comparison("lt", "LT", "``input < other``, elementwise, as a bool tensor."),
    "lt", method=True, out=True)
le: BinaryOp = export(
    _comparison("le", "LE", "``input <= other``, elementwise, as a bool tensor."),
    "le", method=True, out=True)
gt: BinaryOp = export(
    _comparison("gt", "GT", "``input > other``, elementwise, as a bool tensor."),
    "gt", method=True, out=True)
ge: BinaryOp = export(
    _comparison("ge", "GE", "``input >= other``, elementwise, as a bool tensor."),
    "ge", method=True, out=True)
# (their in-place forms, ``eq_`` ..., are ops/inplace.py's: PyTorch records a node of its own)
greater = alias(gt, "greater")
greater_equal = alias(ge, "greater_equal")
less = alias(lt, "less")
less_equal = alias(le, "less_equal")
not_equal = alias(ne, "not_equal")


# ------------------------------------------------------------------ clamp, maximum, minimum
# (a bound that is None is no bound: its formula is skipped)
@formula_op("clamp", "ClampBackward1", term=_f.call(
    "MINIMUM", _f.call("MAXIMUM", _f.arg(0), _f.number("min", optional=True)),
    _f.number("max", optional=True)), save_inputs=(0,),
    samples=(Sample(lambda m, a: m.clamp(a, -0.5, 0.7), ((3, 4),)),
             Sample(lambda m, a: a.clamp(min=0.1), ((5,),)),
             Sample(lambda m, a: a.clip(max=0.3), ((2, 3),))),
    doc="Clamp to number bounds (``min``/``max`` may be None).")
def Clamp(ctx, grad):
    # The gradient passes where min <= a <= max (PyTorch's clamp_backward).
    (a,) = ctx.saved_tensors
    low, high = ctx.params["min"], ctx.params["max"]
    if high is not None:
        grad = where(a.detach() <= high, grad, 0.0)
    if low is not None:
        grad = where(a.detach() >= low, grad, 0.0)
    return (grad,)


# (clamp's forward and backward, as nodes of their own: their other bound is None)
ClampMin = make_formula_op("clamp_min", "ClampMinBackward0", base=Clamp,
                           samples=(Sample(lambda m, a: m.clamp_min(a, 0.1), ((3, 4),)),),
                           cls_name="ClampMin", module=__name__)
ClampMax = make_formula_op("clamp_max", "ClampMaxBackward0", base=Clamp,
                           samples=(Sample(lambda m, a: a.clamp_max(0.3), ((5,),)),),
                           cls_name="ClampMax", module=__name__)


class _MaxMin(BinaryFormula):
    save_inputs = (0, 1)

    @classmethod
    def backward(cls, ctx, grad):
        # As PyTorch: the gradient goes to the chosen operand, ties split it evenly, and where
        # either is NaN (neither wins a comparison) each operand gets all of it. The losing
        # operand gets 0 whatever the gradient is (a fill, PyTorch's masked_fill: not grad * 0).
        a, b = ctx.saved_tensors
        a, b = a.detach(), b.detach()
        shared = where(a == b, grad * 0.5, grad)
        maximum = cls.code == "MAXIMUM"
        need_a, need_b = ctx.needs_input_grad
        grad_a = where((a < b) if maximum else (a > b), 0.0, shared) if need_a else None
        grad_b = where((a > b) if maximum else (a < b), 0.0, shared) if need_b else None
        return grad_a, grad_b


Maximum = make_formula_op("maximum", "MaximumBackward0", "MAXIMUM", arity=2, base=_MaxMin,
                          jvp=_jvp.max_min(greater=True),
                          samples=(Sample(lambda m, a, b: m.maximum(a, b), _broadcast),),
                          cls_name="Maximum", module=__name__)
Minimum = make_formula_op("minimum", "MinimumBackward0", "MINIMUM", arity=2, base=_MaxMin,
                          jvp=_jvp.max_min(greater=False),
                          samples=(Sample(lambda m, a, b: m.minimum(a, b), _two),),
                          cls_name="Minimum", module=__name__)


@export(method=True, out=True)
def clamp(input: Tensor, min=None, max=None) -> Tensor:
    """Each element limited to ``[min, max]`` (numbers; either may be None)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        from .ternary import clamp_tensor

        return clamp_tensor(input, min, max)
    # (the bound that promotes furthest: an integer tensor with a float max is clamped as floats)
    bound = max if min is None or (isinstance(max, float) and not isinstance(min, float)) else min
    a, _ = binary_operands(input, bound)
    # (bounds the dtype holds, PyTorch's error else; a negative one into uint8 wrapped as it does)
    if min is not None:
        min = _held(min, a.dtype)
    if max is not None:
        max = _held(max, a.dtype)
    return apply(Clamp, (input,), (a,), min=min, max=max)


def _held(value, np_dtype):
    """``value`` written into ``np_dtype`` (PyTorch's error where it cannot be), as a Python number:
    a negative integer into an unsigned dtype wraps around, as PyTorch's conversion does."""
    if type(value) is float and -65504.0 <= value <= 65504.0 and np_dtype.kind == "f":
        return value  # (every float dtype holds it: the common case)
    check_scalar(value, np_dtype)
    if isinstance(value, int) and not isinstance(value, bool) and value < 0 \
            and np_dtype.kind == "u":
        return int(number_as(value, np_dtype))
    return value


def _not_tensors(name: str, input, other):
    """PyTorch's error for a ``maximum``/``minimum`` operand that is not a tensor (a number too:
    these take tensors only)."""
    bad, which, pos = (input, "input", 1) if not isinstance(input, Tensor) else (other, "other", 2)
    raise TypeError(f"{name}(): argument '{which}' (position {pos}) must be Tensor, not "
                    f"{type(bad).__name__}")


@export(method=True, out=True)
def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum (NaN wins)."""
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        _not_tensors("maximum", input, other)
    a, b = binary_operands(input, other)
    return apply(Maximum, (input, other), (a, b))


@export(method=True, out=True)
def minimum(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum (NaN wins)."""
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        _not_tensors("minimum", input, other)
    a, b = binary_operands(input, other)
    return apply(Minimum, (input, other), (a, b))


clip = alias(clamp, "clip")

subtract = alias(sub, "subtract")
multiply = alias(mul, "multiply")
divide = alias(div, "divide")
true_divide = alias(div, "true_divide")
negative = alias(neg, "negative")

@export(method=True)
def clamp_min(input: Tensor, min) -> Tensor:
    """``clamp(input, min=min)`` (its own node, ``ClampMinBackward0``, for a number)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"clamp_min(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(min, Tensor):
        return clamp(input, min=min)
    a, _ = binary_operands(input, min)
    return apply(ClampMin, (input,), (a,), min=min, max=None)


@export(method=True)
def clamp_max(input: Tensor, max) -> Tensor:
    """``clamp(input, max=max)`` (its own node, ``ClampMaxBackward0``, for a number)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"clamp_max(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(max, Tensor):
        return clamp(input, max=max)
    a, _ = binary_operands(input, max)
    return apply(ClampMax, (input,), (a,), min=None, max=max)


conj = export(_complex.conj, "conj", method=True)


@export(method=True)
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` with a pending conjugation applied: numgrad's conjugates are in memory, so the
    tensor itself."""
    return input


@export(method=True)
def resolve_neg(input: Tensor) -> Tensor:
    """``input`` with a pending negation applied: numgrad's tensors have none."""
    return input


@export(method=True, inplace=True)
def conj_physical(input: Tensor) -> Tensor:
    """The conjugate computed into memory: of a real tensor, the tensor itself."""
    return _complex.conj(input)


real = export(_complex.real, "real")


@export(method=True)
def angle(input: Tensor) -> Tensor:
    """The argument of each element: of a real tensor pi where it is negative, 0 elsewhere, NaN
    at NaN, in a float dtype (integers: the default one); the gradient is 0, as PyTorch's."""
    if input.dtype.is_complex:
        return _complex.angle(input)
    x = input if input.dtype.is_floating_point else input.to(get_default_dtype())
    return where(x.detach().isnan(), np.nan, sign(x).clamp(max=0) * -np.pi + 0.0)


@export(method=True)
def isreal(input: Tensor) -> Tensor:
    """Whether each element is real (imaginary part 0): all true for a real tensor."""
    if input.dtype.is_complex:
        return _complex.imag(input) == 0

    return ones(tuple(input.shape), dtype=bool_, device=input.device)


@export(method=True)
def positive(input: Tensor) -> Tensor:
    """``+input``: the tensor itself (PyTorch refuses a bool tensor)."""
    if input.dtype.name == "bool":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input
