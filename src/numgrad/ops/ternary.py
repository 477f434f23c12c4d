"""The elementwise ops of three tensors: ``clamp`` with tensor bounds (``clamp_tensor``, which
``clamp`` calls), ``lerp`` (a number or tensor weight), ``addcmul`` and ``addcdiv``.

The backward formulas are PyTorch's (``derivatives.yaml``), written with tensor ops so that they
are differentiable again.
"""
from __future__ import annotations

import numpy as np

from .._dtype import result_type
from ..tensor import Tensor
from ._names import export
from ._promote import _as, binary_operands, broadcast_shapes, number_as
from .elementwise import holomorphic_backward, where
from .loss import _type_name
from . import _jvp
from .registry import Sample, apply
from ._common import _broadcast, _two
from ._formula import Term, arg, by, call, formula_op, number, select


# ------------------------------------------------------------------ clamp with tensor bounds
# (a bound that is None is no bound: its formula is skipped)
@formula_op("clamp_tensor", "ClampBackward0", arity=3, term=call(
    "MINIMUM", call("MAXIMUM", arg(0), arg(1, optional=True)), arg(2, optional=True)),
    jvp=_jvp.clamp, save_inputs=(0, 1, 2),
    samples=(Sample(lambda m, a, lo, hi: m.clamp(a, lo - 1.0, hi), ((3, 4), (4,), (3, 1))),
             Sample(lambda m, a, lo: a.clamp(min=lo), ((2, 3), (2, 3))),
             Sample(lambda m, a, hi: m.clip(a, max=hi), ((4,), ()))),
    doc="""``min(max(input, min), max)`` with tensor bounds (either may be None), all three
    broadcast; a NaN anywhere gives NaN.""")
def ClampTensor(ctx, grad):
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


# ------------------------------------------------------------------ lerp
# (PyTorch's two formulas: from ``input`` where ``|weight| < 0.5``, else from ``end``; the
# difference ``end - input`` is computed once)
_DIFF = call("SUB", arg(1), arg(0))


@formula_op("lerp", "LerpBackward0", arity=2, term=by(lambda weight: abs(weight) < 0.5, {
    True: call("ADD", arg(0), call("MUL", _DIFF, number("weight"))),
    False: call("SUB", arg(1), call("MUL", _DIFF, number(lambda weight: 1 - weight)))}),
    complex_ok=True, samples=(Sample(lambda m, a, b: m.lerp(a, b, 0.3), _two),
             Sample(lambda m, a, b: a.lerp(b, 0.75), _broadcast)),
    doc="""``input + weight * (end - input)`` with a number ``weight`` (PyTorch's two formulas:
    from ``end`` where ``|weight| >= 0.5``).""")
def Lerp(ctx, grad):
    if grad._data.dtype.kind == "c":
        return holomorphic_backward(_lerp_backward, ctx, grad)
    return _lerp_backward(ctx, grad)


def _lerp_backward(ctx, grad):
    w = ctx.params["weight"]
    need_a, need_b = ctx.needs_input_grad
    return (grad * (1 - w) if need_a else None), (grad * w if need_b else None)


@formula_op("lerp_tensor", "LerpBackward1", arity=3, term=select(
    call("LT", call("ABS", arg(2)), number(0.5)),
    call("ADD", arg(0), call("MUL", arg(2), _DIFF)),
    call("SUB", arg(1), call("MUL", _DIFF, call("RSUB", arg(2), number(1))))),
    jvp=_jvp.lerp, save_inputs=(0, 1, 2),
    samples=(Sample(lambda m, a, b, w: m.lerp(a, b, w), ((3, 4), (3, 4), (4,)), low=-0.5,
                    high=1.5),),
    doc="``input + weight * (end - input)`` with a tensor ``weight`` (all three broadcast).")
def LerpTensor(ctx, grad):
    a, b, w = ctx.saved_tensors
    need_a, need_b, need_w = ctx.needs_input_grad
    return ((grad * (1 - w) if need_a else None), (grad * w if need_b else None),
            (grad * (b - a) if need_w else None))


@export(method=True, out=True, inplace=True)
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """``input + weight * (end - input)``; ``weight`` a number or a tensor (all broadcast)."""
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype != input.dtype:
            raise RuntimeError(f"expected dtype {_dtype_name(input)} for `{name}` but got dtype "
                               f"{_dtype_name(t)}")
    # ("V": bfloat16, computed widened)
    if input._data.dtype.kind not in ("fcV" if not isinstance(weight, Tensor) else "fV"):
        raise NotImplementedError(f"\"lerp_kernel_{'tensor' if isinstance(weight, Tensor) else 'scalar'}\" "
                                  f"not implemented for '{_type_name(input)}'")
    if isinstance(weight, Tensor):
        broadcast_shapes(broadcast_shapes(input._data.shape, end._data.shape), weight._data.shape)
        return apply(LerpTensor, (input, end, weight), (input._data, end._data, weight._data))
    a, b = binary_operands(input, end)
    weight = complex(weight) if a.dtype.kind == "c" and isinstance(weight, complex) else \
        float(weight)
    return apply(Lerp, (input, end), (a, b), weight=weight)


def _dtype_name(t: Tensor) -> str:
    """PyTorch's C++ name of a dtype in lerp's message ("double", "long int")."""
    return {"float64": "double", "float32": "float", "int64": "long int", "int32": "int",
            "bool": "bool", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}.get(
        t.dtype.name, t.dtype.name)


# ------------------------------------------------------------------ addcmul, addcdiv
_ADDC_SHAPES = ((3, 4), (3, 4), (3, 4))
_ADDC_BROADCAST = ((4,), (3, 1), (3, 4))


def _addc_term(code: str) -> Term:
    """``a + (value * b) ⊙ c`` (``⊙``: ``code``, MUL or DIV), PyTorch's order of rounding
    (``value * b`` not computed where ``value`` is 1)."""
    return call("ADD", arg(0), call(code, by(lambda value: value != 1, {
        True: call("MUL", arg(1), number("value")), False: arg(1)}), arg(2)))


def _addc_saved(ctx):
    """``tensor1``, ``tensor2`` (each saved where the other's gradient needs it), ``value`` as a
    Python number, and whether ``tensor1`` and ``tensor2`` need gradients."""
    b, c = ctx.saved_tensors
    return b, c, ctx.params["value"].item(), *ctx.needs_input_grad[1:]


@formula_op("addcmul", "AddcmulBackward0", arity=3, term=_addc_term("MUL"),
            jvp=_jvp.transposed_backward, save_inputs=(1, 2), save_only_for={1: 2, 2: 1},
            complex_ok=True,
            samples=(Sample(lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), _ADDC_SHAPES),
                     Sample(lambda m, a, b, c: a.addcmul(b, c), _ADDC_BROADCAST)),
            doc="""``input + value * tensor1 * tensor2`` (the optimisers' update).""")
def Addcmul(ctx, grad):
    if grad._data.dtype.kind == "c":
        return holomorphic_backward(_addcmul_backward, ctx, grad)
    return _addcmul_backward(ctx, grad)


def _addcmul_backward(ctx, grad):
    b, c, value, need_b, need_c = _addc_saved(ctx)
    return (grad, (grad * (c * value) if need_b else None),
            (grad * (b * value) if need_c else None))


@formula_op("addcdiv", "AddcdivBackward0", arity=3, term=_addc_term("DIV"),
            jvp=_jvp.transposed_backward, save_inputs=(1, 2), save_only_for={1: 2},
            complex_ok=True,
            samples=(Sample(lambda m, a, b, c: m.addcdiv(a, b, c.abs() + 0.5, value=-2),
                            _ADDC_SHAPES),
                     Sample(lambda m, a, b, c: a.addcdiv(b, c.abs() + 0.5), _ADDC_BROADCAST)),
            doc="""``input + value * tensor1 / tensor2``.""")
def Addcdiv(ctx, grad):
    if grad._data.dtype.kind == "c":
        return holomorphic_backward(_addcdiv_backward, ctx, grad)
    return _addcdiv_backward(ctx, grad)


def _addcdiv_backward(ctx, grad):
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
    number = number_as(value, dt.np)
    if dt.np.char in "eV" and not isinstance(value, complex):  # (float16, bfloat16)
        number = np.float32(value)  # (PyTorch's kernels take it in float32, their opmath type)
    return apply(op, operands, tuple(_as(t, dt.np) for t in operands), value=number)


@export(method=True, inplace=True)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2``, broadcast together (not of bool tensors alone,
    as PyTorch's CPU kernel has none for them)."""
    if all(isinstance(t, Tensor) and t._data.dtype == np.bool_
           for t in (input, tensor1, tensor2)):
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    return _addc(Addcmul, "addcmul", input, tensor1, tensor2, value)


@export(method=True, inplace=True)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2``, broadcast together; integer ``tensor1`` and
    ``tensor2`` are refused, as PyTorch refuses them."""
    if (isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor)
            and tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu"):
        raise RuntimeError(_ADDCDIV_INTEGER)
    return _addc(Addcdiv, "addcdiv", input, tensor1, tensor2, value)
