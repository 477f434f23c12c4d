"""Division with rounding: ``div`` with a ``rounding_mode`` (``'trunc'``, ``'floor'``),
``floor_divide`` (``//``), ``fmod`` (C's remainder, the dividend's sign) and ``remainder`` (``%``,
the divisor's sign), with tensor or number operands.

Each formula is a row of the formula table (``kernels/formulas.py``); the backward formulas are
PyTorch's (``derivatives.yaml``).
"""
from __future__ import annotations

import numpy as np

from .. import dispatch
from ..creation import zeros
from ..tensor import Tensor
from ._names import export
from ._promote import binary_operands, half_number
from . import _jvp
from .registry import Sample, apply, kernels_for
from ._formula import BinaryFormula, FormulaOp, arg, by, call, formula_op
from ._formula import make as make_formula_op
from ._common import _broadcast, _two


# ------------------------------------------------------------------ div with rounding
@formula_op("div_mode", "DivBackward2", arity=2, term=by("rounding_mode", {
    "trunc": call("DIV_TRUNC", arg(0), arg(1)), "floor": call("DIV_FLOOR", arg(0), arg(1))}),
    # (the backward reads neither: PyTorch's node keeps both, self where other's gradient is
    # needed, so hooks pack them and an in-place change of either is refused, as there)
    save_inputs=(0, 1), save_only_for={0: 1},
    samples=(
        Sample(lambda m, a, b: m.div(a * 4, b, rounding_mode="floor") * a, _two, low=0.5),
        Sample(lambda m, a, b: a.div(b, rounding_mode="trunc") + a, _broadcast, low=-2.0),
        Sample(lambda m, a: m.div(a * 5, -1.5, rounding_mode="floor"), ((2, 3),), grad=False)),
    doc="""``div(a, b, rounding_mode='trunc' | 'floor')``: its gradient is zero (PyTorch's
    ``new_zeros``, not ``grad * 0``: an infinite gradient still gives 0).""")
def DivMode(ctx, grad):
    # (zeros at each input's shape: the same values as PyTorch's zeros at the gradient's,
    # summed down, with no reduction to trace)
    need_a, need_b = ctx.needs_input_grad
    shape_a, shape_b = ctx.input_shapes
    return ((zeros(shape_a, dtype=grad.dtype, device=grad.device) if need_a else None),
            (zeros(shape_b, dtype=grad.dtype, device=grad.device) if need_b else None))


@formula_op("floor_divide", "torch::autograd::NotImplemented", "DIV_FLOOR", arity=2, samples=(
    # (the node's backward raises, so the gradient flows around it)
    Sample(lambda m, a, b: m.floor_divide(a.detach() * 4, b.detach()) + a * b, _two, low=0.5),
    Sample(lambda m, a: (a * 3) // 2, ((2, 3),), grad=False),
    Sample(lambda m, a: 7.5 // a, ((4,),), low=0.5, grad=False),
), doc="""``floor_divide`` (``//``): ``div(rounding_mode='floor')`` whose node has no derivative,
    as PyTorch's (``NotImplemented``: backward raises).""")
def FloorDivide(ctx, grad):
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


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
    if rounding_mode != "trunc" and rounding_mode != "floor":
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{rounding_mode}'")
    a, b = _divide_operands(input, other, "div_" + rounding_mode)
    return apply(DivMode, (input, other), (a, half_number(a, b, other)),
                 rounding_mode=rounding_mode)


@export(method=True, out=True)
def floor_divide(input, other) -> Tensor:
    """``input // other``: the quotient rounded down, in the operands' common dtype."""
    a, b = _divide_operands(input, other, "div_floor")
    # (float16/bfloat16 by a number: in float32, PyTorch's opmath: -2.5 // 0.1 is -25 there,
    # float16's 0.09998 gave -26; ``fmod``/``remainder`` convert it to the tensor's dtype)
    return apply(FloorDivide, (input, other), (a, half_number(a, b, other)))


# ------------------------------------------------------------------ fmod, remainder (%)
class _Mod(BinaryFormula):
    rounding = ""

    @classmethod
    def backward(cls, ctx, grad):
        grad_b = None
        if ctx.needs_input_grad[1]:
            a, b = ctx.saved_tensors
            grad_b = -grad * div_mode(a, b, cls.rounding)
        return grad, grad_b


Fmod = make_formula_op("fmod", "FmodBackward1", "FMOD", arity=2, base=_Mod, rounding="trunc",
                       save_inputs=(0, 1), save_only_for={0: 1, 1: 1},
                       samples=(Sample(lambda m, a, b: m.fmod(a * 3, b), _two, low=0.5),
                                Sample(lambda m, a, b: a.fmod(b), _broadcast, low=-2.0)),
                       cls_name="Fmod", module=__name__)


Remainder = make_formula_op("remainder", "RemainderBackward1", "REMAINDER", arity=2, base=_Mod,
                            rounding="floor", save_inputs=(0, 1), save_only_for={0: 1, 1: 1},
                            samples=(Sample(lambda m, a, b: m.remainder(a * 3, b), _two, low=0.5),
                                     Sample(lambda m, a, b: (a * 3) % b, _broadcast, low=0.5)),
                            cls_name="Remainder", module=__name__)


class _ModScalar(FormulaOp):
    """``fmod``/``remainder`` by a number (the formula's second operand, a parameter): the
    gradient passes to the tensor unchanged."""

    @classmethod
    def forward(cls, K, a, *, other):
        return K.binary(getattr(K, cls.code), a, other)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)


FmodScalar = make_formula_op("fmod_scalar", "FmodBackward0", "FMOD", arity=2, base=_ModScalar,
                             samples=(Sample(lambda m, a: m.fmod(a * 3, 1.5), ((3, 4),)),),
                             cls_name="FmodScalar", module=__name__)
RemainderScalar = make_formula_op(
    "remainder_scalar", "RemainderBackward0", "REMAINDER", arity=2, base=_ModScalar,
    samples=(Sample(lambda m, a: (a * 3) % -1.5, ((3, 4),)),),
    cls_name="RemainderScalar", module=__name__)


@formula_op("remainder_scalar_tensor", "torch::autograd::NotImplemented", "REMAINDER", arity=2,
            jvp=_jvp.unsupported("aten::remainder"),
            samples=(Sample(lambda m, a: 2.5 % a, ((4,),), low=0.5, grad=False),
                     # (the node's backward raises, so the gradient flows around it)
                     Sample(lambda m, a: 2.5 % (a.detach() * 4).ceil() + a, ((4,),), low=0.5)),
            doc="""``number % tensor``: PyTorch's node has no derivative (backward raises).""")
def RemainderScalarTensor(ctx, grad):
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
    return apply(scalar_op, (input,), (a,), other=dispatch.number_array(
        b, a.dtype if a.dtype.kind != "V" else np.dtype(np.float32)))  # (bfloat16: its value)


@export(method=True, out=True)
def fmod(input: Tensor, other) -> Tensor:
    """C's ``fmod``: ``input - trunc(input / other) * other``, with ``input``'s sign (integers
    exact; an integer division by zero raises)."""
    return _mod(input, other, "fmod", Fmod, FmodScalar)


@export(method=True, out=True)
def remainder(input, other) -> Tensor:
    """Python's ``%``: ``input - floor(input / other) * other``, with ``other``'s sign."""
    return _mod(input, other, "remainder", Remainder, RemainderScalar)
