"""The logical and bitwise ops: ``logical_and or xor not`` (bool results) and ``bitwise_and or xor
not``, ``bitwise_left_shift``, ``bitwise_right_shift`` (integers and bools), rows of the formula
table (``kernels/formulas.py``) as the other elementwise ops.
"""
from __future__ import annotations

import numpy as np

from .._dtype import torch_name
from ..tensor import Tensor
from ._names import export
from ._promote import binary_operands
from .registry import Sample, apply
from ._formula import BinaryFormula, make as make_formula_op
from ._common import _broadcast, _tensor_only, _two
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._typing import BinaryOp


# ------------------------------------------------------------------ logical and bitwise ops
class _Logical(BinaryFormula):
    """``logical_and``/``or``/``xor``: a bool tensor of the operands' truth (nonzero; NaN is
    true; a complex element with either part nonzero), of any dtypes; never differentiable."""

    differentiable = False
    complex_ok = True
    jvp = None

    @classmethod
    def forward(cls, K, a, b):
        return K.binary(getattr(K, cls.code), a, b, np.bool_)


class _Bitwise(BinaryFormula):
    """``bitwise_and``/``or``/``xor`` and the shifts of integer (and, but for the shifts, bool)
    tensors, in their promoted dtype; never differentiable."""

    differentiable = False
    jvp = None


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
    return make_formula_op(name, "", code, arity=2, base=base, samples=samples, doc=base.__doc__,
                           cls_name="".join(p.capitalize() for p in name.split("_")),
                           module=__name__)


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


logical_and: BinaryOp = export(_binary_int(
    "logical_and", "Elementwise ``input and other`` (nonzero is true), a bool tensor."),
    "logical_and", method=True, inplace=True)
logical_or: BinaryOp = export(
    _binary_int("logical_or", "Elementwise ``input or other``, a bool tensor."),
    "logical_or", method=True, inplace=True)
logical_xor: BinaryOp = export(_binary_int(
    "logical_xor", "Elementwise: exactly one of the two is nonzero, a bool tensor."),
    "logical_xor", method=True, inplace=True)
bitwise_and: BinaryOp = export(
    _binary_int("bitwise_and", "``input & other`` of integer or bool tensors."),
    "bitwise_and", method=True, inplace=True)
bitwise_or: BinaryOp = export(
    _binary_int("bitwise_or", "``input | other`` of integer or bool tensors."),
    "bitwise_or", method=True, inplace=True)
bitwise_xor: BinaryOp = export(
    _binary_int("bitwise_xor", "``input ^ other`` of integer or bool tensors."),
    "bitwise_xor", method=True, inplace=True)
bitwise_left_shift: BinaryOp = export(_binary_int(
    "bitwise_left_shift", "``input << other`` of integer tensors (bits shifted out are lost; a "
    "count that is negative or at least the width gives 0)."), "bitwise_left_shift",
    method=True, inplace=True)
bitwise_right_shift: BinaryOp = export(_binary_int(
    "bitwise_right_shift", "``input >> other`` of integer tensors, arithmetic (a count that is "
    "negative or at least the width gives the sign, 0 or -1)."), "bitwise_right_shift",
    method=True, inplace=True)


BitwiseNot = make_formula_op(
    "bitwise_not", "", "BITWISE_NOT", differentiable=False, jvp=None,
    doc="``~input``: each bit flipped (``not`` of a bool); not differentiable.",
    samples=(Sample(lambda m, a: m.bitwise_not(_ints(a)), ((3, 4),), grad=False),
             Sample(lambda m, a: ~(a > 0), ((5,),), grad=False)),
    cls_name="BitwiseNot", module=__name__)


@export(method=True, inplace=True)
def bitwise_not(input: Tensor) -> Tensor:
    """``~input`` of an integer or bool tensor."""
    if np.dtype(input._data.dtype).kind not in "iub":
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{torch_name(input._data.dtype)}'")
    return apply(BitwiseNot, (input,), (input._data,))


def _logical_not(K, a):
    return K.binary(K.EQ, a, np.zeros((), a.dtype), np.bool_)


LogicalNot = make_formula_op(
    "logical_not", "", "EQ", arity=2, forward=_logical_not, differentiable=False, jvp=None,
    complex_ok=True,
    doc="``not input`` elementwise (zero is false, NaN true), a bool tensor: ``input == 0``.",
    samples=(Sample(lambda m, a: m.logical_not(a), ((3, 4),), grad=False),
             Sample(lambda m, a: _ints(a).logical_not(), ((5,),), grad=False)),
    cls_name="LogicalNot", module=__name__)


@export(method=True, inplace=True)
def logical_not(input: Tensor) -> Tensor:
    """``not input`` elementwise, a bool tensor."""
    return apply(LogicalNot, (input,), (input._data,))
