"""The formula table: every elementwise op's scalar formula, declared once for both devices.

Each op has an id in the enum of its family (``Unary``, ``Binary``, ``Compare``; the reductions'
op codes live here too, so that no two families share an id), and one or more ``Formula`` rows:
the scalar function its CPU kernels call, the one its CUDA kernels call (the same function where
it compiles for both, as most of ``kernels/scalar.py`` does), and the dtypes the row serves.
Integer and bool inputs have rows of their own where their formula differs (``floor`` of an
integer is the integer).

The kernels are generated from these rows (``codegen.py``): one small module per formula and
device, holding that formula's loops, so the first use of an op compiles that op's loop for that
dtype and nothing else. The whole-step compiler will fuse the same functions.

A function is named ``"module:function"`` with the module relative to ``numgrad.kernels``, so
that the CPU never imports the CUDA variants.
"""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np


class Unary(IntEnum):
    NEG, EXP, LOG, TANH, SIGMOID, RELU, SQRT, RECIPROCAL, LOG1P, EXPM1 = range(100, 110)
    RSQRT, ABS, SIN, COS, TAN, SIGN, FLOOR, CEIL, ROUND = range(110, 119)
    ERF, ERFC = range(119, 121)
    ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH = range(121, 129)
    LOG2, LOG10, EXP2, TRUNC, FRAC, SINC, DEG2RAD, RAD2DEG = range(129, 137)
    # Activations (ops/activation.py)
    SILU, GELU, GELU_TANH, MISH, HARDSWISH, HARDSIGMOID, SELU, SELU_GRAD, LOGSIGMOID = range(
        137, 146)
    BITWISE_NOT = 146
    LGAMMA, DIGAMMA = range(147, 149)
    ERFINV, I0, I0E, I1, I1E = range(149, 154)
    ERFCX, LOG_NDTR, NDTRI = range(154, 157)


class Binary(IntEnum):
    ADD, SUB, MUL, DIV, POW, RSUB, RPOW, MAXIMUM, MINIMUM = range(200, 209)
    # Fused backward formulas, taking (grad, saved output).
    TANH_BWD, SIGMOID_BWD, RELU_BWD = range(209, 212)
    ATAN2, LOGADDEXP, LOGADDEXP2, DIV_TRUNC, DIV_FLOOR = range(212, 217)
    FMOD, REMAINDER, HYPOT, XLOGY = range(217, 221)
    # Activations: fused backward formulas of (grad, input), and formulas of (input, parameter)
    SILU_BWD, GELU_BWD, GELU_TANH_BWD, MISH_BWD, HARDSWISH_BWD, HARDSIGMOID_BWD = range(221, 227)
    LOGSIGMOID_BWD, LEAKY_RELU, LEAKY_RELU_GRAD, ELU, ELU_GRAD, CELU, CELU_GRAD = range(227, 234)
    SOFTPLUS, SOFTPLUS_GRAD = range(234, 236)
    # Integer and bool ops (ops/elementwise_more.py)
    BITWISE_AND, BITWISE_OR, BITWISE_XOR, LSHIFT, RSHIFT = range(236, 241)
    # (x, n) and (x, q) of the gamma functions
    POLYGAMMA, ZETA = range(241, 243)
    # (x, n) of torch.special's orthogonal polynomials
    CHEBYSHEV_T, CHEBYSHEV_U, CHEBYSHEV_V, CHEBYSHEV_W = range(243, 247)
    SHIFTED_CHEBYSHEV_T, SHIFTED_CHEBYSHEV_U, SHIFTED_CHEBYSHEV_V, SHIFTED_CHEBYSHEV_W = range(
        247, 251)
    HERMITE_H, HERMITE_HE, LAGUERRE_L, LEGENDRE_P = range(251, 255)


class Compare(IntEnum):
    """Binary ops with a bool result."""

    EQ, NE, LT, LE, GT, GE = range(300, 306)
    LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR = range(306, 309)


class Reduce(IntEnum):
    """Op codes of the reduction kernels (``cpu/reduction.py``, ``cuda/reduction.py``)."""

    PROD, MAX, MIN = range(400, 403)


class ArgReduce(IntEnum):
    ARGMAX, ARGMIN = range(500, 502)


FAMILIES = (Unary, Binary, Compare, Reduce, ArgReduce)

FLOAT = ("float32", "float64")
INT = ("int64", "int32")
NUMBER = FLOAT + INT
ALL = NUMBER + ("bool",)
COMPLEX = ("complex64", "complex128")


class Formula(NamedTuple):
    """One row of the table: ``op`` on ``dtypes``, computed by ``cpu`` and ``cuda``."""

    op: IntEnum
    cpu: str
    cuda: str
    dtypes: tuple


def _rows(op, cpu, cuda=None, dtypes=FLOAT, *more):
    """``op``'s rows: (cpu, cuda, dtypes), then further (function for both, dtypes) pairs."""
    rows = [Formula(op, cpu, cuda or cpu, dtypes)]
    for i in range(0, len(more), 2):
        rows.append(Formula(op, more[i], more[i], more[i + 1]))
    return op, tuple(rows)


_S = "scalar:"
_M = "cpu.mathfuncs:"
TABLE: dict = dict((
    _rows(Unary.NEG, _S + "neg", None, NUMBER + COMPLEX),
    _rows(Unary.EXP, "cpu.mathfuncs:fast_exp", _S + "exp_portable"),
    _rows(Unary.LOG, "cpu.mathfuncs:fast_log", _S + "log_portable"),
    _rows(Unary.TANH, "cpu.mathfuncs:fast_tanh", _S + "tanh_portable"),
    _rows(Unary.SIGMOID, "cpu.mathfuncs:fast_sigmoid", _S + "sigmoid_portable"),
    _rows(Unary.RELU, _S + "relu", None, FLOAT, _S + "relu_int", INT),
    _rows(Unary.SQRT, _S + "sqrt"),
    _rows(Unary.RECIPROCAL, _S + "reciprocal"),
    _rows(Unary.LOG1P, _S + "log1p"),
    _rows(Unary.EXPM1, _S + "expm1"),
    _rows(Unary.RSQRT, _S + "rsqrt"),
    _rows(Unary.ABS, _S + "absolute", None, NUMBER),
    _rows(Unary.SIN, _S + "sin"),
    _rows(Unary.COS, _S + "cos"),
    _rows(Unary.TAN, _S + "tan"),
    _rows(Unary.SIGN, _S + "sign", None, FLOAT, _S + "sign_int", INT, _S + "identity", ("bool",)),
    _rows(Unary.FLOOR, "cpu.scalar:floor", "cuda.scalar:floor", FLOAT, _S + "identity", INT),
    _rows(Unary.CEIL, "cpu.scalar:ceil", "cuda.scalar:ceil", FLOAT, _S + "identity", INT),
    _rows(Unary.ROUND, "cpu.scalar:rint", "cuda.scalar:rint", FLOAT, _S + "identity", INT),
    _rows(Unary.ERF, _M + "erf", _S + "erf"),
    _rows(Unary.ERFC, _S + "erfc"),
    _rows(Unary.ASIN, _S + "asin"),
    _rows(Unary.ACOS, _S + "acos"),
    _rows(Unary.ATAN, _S + "atan"),
    _rows(Unary.SINH, _S + "sinh"),
    _rows(Unary.COSH, _S + "cosh"),
    _rows(Unary.ASINH, _S + "asinh"),
    _rows(Unary.ACOSH, _S + "acosh"),
    _rows(Unary.ATANH, _S + "atanh"),
    _rows(Unary.LOG2, _M + "log2", _S + "log2"),
    _rows(Unary.LOG10, _S + "log10"),
    _rows(Unary.EXP2, _M + "exp2", _S + "exp2"),
    _rows(Unary.TRUNC, _M + "trunc", _S + "trunc", FLOAT, _S + "identity", INT),
    _rows(Unary.FRAC, _M + "frac", _S + "frac"),
    _rows(Unary.SINC, _S + "sinc"),
    _rows(Unary.DEG2RAD, _S + "deg2rad"),
    _rows(Unary.RAD2DEG, _S + "rad2deg"),
    _rows(Unary.SILU, _M + "silu", _S + "silu"),
    _rows(Unary.GELU, _M + "gelu", _S + "gelu"),
    _rows(Unary.GELU_TANH, _M + "gelu_tanh", _S + "gelu_tanh"),
    _rows(Unary.MISH, _M + "mish", _S + "mish"),
    _rows(Unary.HARDSWISH, _S + "hardswish"),
    _rows(Unary.HARDSIGMOID, _S + "hardsigmoid"),
    _rows(Unary.SELU, _M + "selu", _S + "selu"),
    _rows(Unary.SELU_GRAD, _M + "selu_grad", _S + "selu_grad"),
    _rows(Unary.LOGSIGMOID, _M + "log_sigmoid", _S + "log_sigmoid"),
    _rows(Binary.ADD, _S + "add", None, ALL + COMPLEX),
    _rows(Binary.SUB, _S + "sub", None, NUMBER + COMPLEX),
    _rows(Binary.MUL, _S + "mul", None, ALL + COMPLEX),
    _rows(Binary.DIV, _S + "div", None, FLOAT + COMPLEX),
    _rows(Binary.POW, _S + "power", None, FLOAT + COMPLEX, _S + "power_int", INT),
    _rows(Binary.RSUB, _S + "rsub", None, NUMBER + COMPLEX),
    _rows(Binary.RPOW, _S + "rpow", None, FLOAT, _S + "rpow_int", INT),
    _rows(Binary.MAXIMUM, _S + "maximum", None, ALL),
    _rows(Binary.MINIMUM, _S + "minimum", None, ALL),
    _rows(Binary.TANH_BWD, _S + "tanh_backward"),
    _rows(Binary.SIGMOID_BWD, _S + "sigmoid_backward"),
    _rows(Binary.RELU_BWD, _S + "relu_backward", None, FLOAT, _S + "relu_backward_int", INT),
    _rows(Binary.ATAN2, _S + "atan2"),
    _rows(Binary.LOGADDEXP, _S + "logaddexp"),
    _rows(Binary.LOGADDEXP2, _S + "logaddexp2"),
    _rows(Binary.DIV_TRUNC, _S + "div_trunc", None, FLOAT, _S + "div_trunc_int", INT),
    _rows(Binary.DIV_FLOOR, _S + "div_floor", None, FLOAT, _S + "div_floor_int", INT),
    _rows(Binary.FMOD, _M + "fmod", _S + "fmod_math", FLOAT, _S + "fmod_int", INT),
    _rows(Binary.REMAINDER, _M + "remainder", _S + "remainder_math", FLOAT,
          _S + "remainder_int", INT),
    _rows(Binary.HYPOT, _S + "hypot"),
    _rows(Binary.XLOGY, _S + "xlogy"),
    _rows(Binary.SILU_BWD, _M + "silu_backward", _S + "silu_backward"),
    _rows(Binary.GELU_BWD, _M + "gelu_backward", _S + "gelu_backward"),
    _rows(Binary.GELU_TANH_BWD, _M + "gelu_tanh_backward", _S + "gelu_tanh_backward"),
    _rows(Binary.MISH_BWD, _M + "mish_backward", _S + "mish_backward"),
    _rows(Binary.HARDSWISH_BWD, _S + "hardswish_backward"),
    _rows(Binary.HARDSIGMOID_BWD, _S + "hardsigmoid_backward"),
    _rows(Binary.LOGSIGMOID_BWD, _M + "log_sigmoid_backward", _S + "log_sigmoid_backward"),
    _rows(Binary.LEAKY_RELU, _S + "leaky_relu"),
    _rows(Binary.LEAKY_RELU_GRAD, _S + "leaky_relu_grad"),
    _rows(Binary.ELU, _M + "elu", _S + "elu"),
    _rows(Binary.ELU_GRAD, _M + "elu_grad", _S + "elu_grad"),
    _rows(Binary.CELU, _M + "celu", _S + "celu"),
    _rows(Binary.CELU_GRAD, _M + "celu_grad", _S + "celu_grad"),
    _rows(Binary.SOFTPLUS, _M + "softplus_z", _S + "softplus_z"),
    _rows(Binary.SOFTPLUS_GRAD, _M + "softplus_grad", _S + "softplus_grad"),
    _rows(Compare.EQ, _S + "eq", None, ALL + COMPLEX),
    _rows(Compare.NE, _S + "ne", None, ALL + COMPLEX),
    _rows(Compare.LT, _S + "lt", None, ALL),
    _rows(Compare.LE, _S + "le", None, ALL),
    _rows(Compare.GT, _S + "gt", None, ALL),
    _rows(Compare.GE, _S + "ge", None, ALL),
    _rows(Compare.LOGICAL_AND, _S + "logical_and", None, ALL),
    _rows(Compare.LOGICAL_OR, _S + "logical_or", None, ALL),
    _rows(Compare.LOGICAL_XOR, _S + "logical_xor", None, ALL),
    _rows(Binary.BITWISE_AND, _S + "bitwise_and", None, INT + ("bool",)),
    _rows(Binary.BITWISE_OR, _S + "bitwise_or", None, INT + ("bool",)),
    _rows(Binary.BITWISE_XOR, _S + "bitwise_xor", None, INT + ("bool",)),
    _rows(Binary.LSHIFT, _S + "lshift64", None, ("int64",), _S + "lshift32", ("int32",)),
    _rows(Binary.RSHIFT, _S + "rshift64", None, ("int64",), _S + "rshift32", ("int32",)),
    _rows(Unary.LGAMMA, _S + "lgamma"),
    _rows(Unary.DIGAMMA, _S + "digamma"),
    _rows(Unary.ERFINV, _S + "erfinv"),
    _rows(Unary.I0, _S + "bessel_i0"),
    _rows(Unary.I0E, _S + "bessel_i0e"),
    _rows(Unary.I1, _S + "bessel_i1"),
    _rows(Unary.I1E, _S + "bessel_i1e"),
    _rows(Unary.ERFCX, _S + "erfcx"),
    _rows(Unary.LOG_NDTR, _S + "log_ndtr"),
    _rows(Unary.NDTRI, _S + "ndtri"),
    _rows(Binary.POLYGAMMA, _S + "polygamma"),
    _rows(Binary.ZETA, _S + "zeta"),
    *(_rows(getattr(Binary, name.upper()), _S + name) for name in (
        "chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t",
        "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h",
        "hermite_he", "laguerre_l", "legendre_p")),
    _rows(Unary.BITWISE_NOT, _S + "bitwise_not", None, INT, _S + "bitwise_not_bool", ("bool",)),
))

# op(s, x) == SWAPPED[op](x, s): lets a number on the left take the kernels for a number on the
# right.
SWAPPED = {
    Binary.ADD: Binary.ADD, Binary.MUL: Binary.MUL, Binary.SUB: Binary.RSUB,
    Binary.RSUB: Binary.SUB, Binary.POW: Binary.RPOW, Binary.RPOW: Binary.POW,
    Binary.MAXIMUM: Binary.MAXIMUM, Binary.MINIMUM: Binary.MINIMUM,
    Compare.EQ: Compare.EQ, Compare.NE: Compare.NE, Compare.LT: Compare.GT,
    Compare.GT: Compare.LT, Compare.LE: Compare.GE, Compare.GE: Compare.LE,
    Compare.LOGICAL_AND: Compare.LOGICAL_AND, Compare.LOGICAL_OR: Compare.LOGICAL_OR,
    Compare.LOGICAL_XOR: Compare.LOGICAL_XOR, Binary.BITWISE_AND: Binary.BITWISE_AND,
    Binary.BITWISE_OR: Binary.BITWISE_OR, Binary.BITWISE_XOR: Binary.BITWISE_XOR,
}

# Every op id by its name (``K.EXP``, ``K.ADD``, ``K.MAX`` …): the kernel modules export these.
OP_CODES = {member.name: member for fam in FAMILIES for member in fam}
assert len(OP_CODES) == sum(len(fam) for fam in FAMILIES), "two families share an op name"

# PyTorch's names of the dtypes, for "not implemented for 'Bool'".
from .._dtype import _TORCH_NAMES  # noqa: E402


class Open(int):
    """The op id of a formula declared at run time, through ``numgrad.library.elementwise``: an
    int (the kernels key their loops on it, as on the enums' ids) with the op's ``name`` and
    ``arity`` (1: a unary formula, 2: a binary one). Its rows are in ``OPEN``, not ``TABLE``, so
    the table of numgrad's own formulas (and the checks that walk it) stays what it is."""

    name: str
    arity: int

    def __new__(cls, value: int, name: str, arity: int):
        self = int.__new__(cls, value)
        self.name, self.arity = name, arity
        return self

    def __repr__(self) -> str:
        return f"<Open.{self.name}: {int(self)}>"

    def __reduce__(self):
        return (Open, (int(self), self.name, self.arity))


OPEN: dict = {}  # Open id -> its rows, as TABLE's
_OPEN_BASE = 10_000  # (above every family's ids)


def declare(name: str, arity: int, cpu: str, cuda: str, dtypes: tuple) -> Open:
    """A new op id for the formula ``cpu`` (and ``cuda``: functions named as the table names
    them) of ``arity`` arguments, serving ``dtypes``."""
    if arity not in (1, 2):
        raise ValueError(f"an elementwise formula takes 1 or 2 arguments, not {arity}")
    op = Open(_OPEN_BASE + len(OPEN), name, arity)
    OPEN[op] = (Formula(op, cpu, cuda, tuple(dtypes)),)
    return op


def is_unary(op) -> bool:
    """Whether ``op`` (an id of the table or an ``Open`` one) is a formula of one argument."""
    return isinstance(op, Unary) or (isinstance(op, Open) and op.arity == 1)


def rows(op) -> tuple:
    """Every formula row of ``op``; ValueError for an id no family has."""
    try:
        return TABLE[op]
    except (KeyError, TypeError):
        found = OPEN.get(op) if isinstance(op, int) else None
        if found is not None:
            return found
        raise ValueError(f"no elementwise formula has the op id {op!r}") from None


def formula(op, dtype) -> Formula:
    """The row of ``op`` serving ``dtype`` (a NumPy dtype); PyTorch's error where none does
    (NotImplementedError, a RuntimeError: ``"abs" not implemented for 'Bool'``)."""
    name = np.dtype(dtype).name
    found = rows(op)
    for row in found:
        if name in row.dtypes:
            return row
    op_name = found[0].op.name
    op_name = op_name.rpartition("::")[2] if isinstance(found[0].op, Open) else op_name.lower()
    raise NotImplementedError(f'"{op_name}" not implemented for '
                              f"'{_TORCH_NAMES.get(name, name)}'")


def family(op) -> type:
    """The enum ``op`` belongs to (``Unary``, ``Binary`` or ``Compare``)."""
    return type(rows(op)[0].op)
