"""The formula table: every elementwise op's scalar formula, declared once for both devices.

A formula enters the table one way only, through ``declare(name, arity, cpu, cuda, dtypes, ...)``:
numgrad's own formulas are the ones declared below, while this module loads, and a user's are
declared the same way by ``numgrad.library.elementwise`` (which also makes the op that runs it).
``declare`` gives the formula its op id and its ``Formula`` rows: the scalar function its CPU
kernels call, the one its CUDA kernels call (the same function where it compiles for both, as
most of ``kernels/scalar.py`` does), and the dtypes the row serves. Integer and bool inputs have
rows of their own where their formula differs (``floor`` of an integer is the integer).

The ids of numgrad's own formulas are numbered in the order they are declared, one range for each
kind (``Unary`` from 100, ``Binary`` from 200, ``Compare``, a binary formula with a bool result,
from 300); the enums of those names are made from the declarations once the table is complete,
so that the kernels and ops can name an id (``K.EXP``, ``K.ADD``), and are nothing a formula has
to be added to. The reductions' op codes (``Reduce``, ``ArgReduce``) live here too, so that no
two families share an id. A formula declared after numgrad's (a user's) gets an ``Open`` id, and
its rows are kept in ``OPEN``, not ``TABLE``, so that the checks that walk numgrad's own table
(the CUDA signature catalogue, the table's tests) see what numgrad ships.

The kernels are generated from these rows (``codegen.py``): one small module per formula and
device, holding that formula's loops, so the first use of an op compiles that op's loop for that
dtype and nothing else. The whole-step compiler fuses the same functions.

A function is named ``"module:function"`` with the module relative to ``numgrad.kernels``, so
that the CPU never imports the CUDA variants.
"""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np

# PyTorch's names of the dtypes, for "not implemented for 'Bool'".
from .._dtype import _TORCH_NAMES

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


class Open(int):
    """The op id of a formula declared after numgrad's own (by ``numgrad.library.elementwise``):
    an int (the kernels key their loops on it, as on numgrad's ids) with the op's ``name`` and
    ``arity`` (1: a unary formula, 2: a binary one)."""

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


TABLE: dict = {}  # numgrad's own formulas: op id -> its rows
OPEN: dict = {}  # the formulas declared after numgrad's: Open id -> its rows, as TABLE's
# op(s, x) == SWAPPED[op](x, s): lets a number on the left take the kernels for a number on the
# right.
SWAPPED: dict = {}

_KINDS = {"Unary": 100, "Binary": 200, "Compare": 300}  # numgrad's kinds, each one's first id
_OPEN_BASE = 10_000  # (above every family's ids)
_OWN: list = []  # (kind, name, rows, swapped) of numgrad's formulas while the table is made
_NAMES: dict = {kind: [] for kind in _KINDS}  # their names, of each kind in declaration order


def declare(name: str, arity: int, cpu: str, cuda: str | None = None, dtypes: tuple = FLOAT,
            *more, result: str | None = None, swapped: str | None = None) -> int:
    """Declares the elementwise formula ``name`` of ``arity`` (1 or 2) arguments and returns its
    op id: computed by the scalar function ``cpu`` on the CPU and ``cuda`` on CUDA (``cpu``
    where None; each ``"module:function"`` relative to ``numgrad.kernels``) for ``dtypes``, and by
    further ``(function for both devices, dtypes)`` pairs ``more`` for other dtypes.

    For numgrad's own formulas (declared while this module loads) ``result="bool"`` makes a
    comparison (its kernels write bools), and ``swapped`` names the formula that computes it with
    its arguments swapped (itself where it is symmetric). A formula declared later gets an
    ``Open`` id."""
    if arity != 1 and arity != 2:
        raise ValueError(f"an elementwise formula takes 1 or 2 arguments, not {arity}")
    specs = [(cpu, cuda or cpu, tuple(dtypes))]
    if more:
        if len(more) % 2:
            raise ValueError("declare: further rows come as (function, dtypes) pairs")
        specs += [(more[i], more[i], tuple(more[i + 1])) for i in range(0, len(more), 2)]
    if _OWN is not None:
        if result is not None and (result != "bool" or arity != 2):
            raise ValueError(f"declare: a {arity}-argument formula cannot return {result}")
        kind = "Unary" if arity == 1 else "Binary" if result is None else "Compare"
        _OWN.append((kind, name, specs, swapped))
        _NAMES[kind].append(name.upper())
        return _KINDS[kind] + len(_NAMES[kind]) - 1
    if result is not None or swapped is not None:
        raise ValueError("declare: result= and swapped= are for numgrad's own formulas")
    op = Open(_OPEN_BASE + len(OPEN), name, arity)
    OPEN[op] = tuple(Formula(op, *spec) for spec in specs)
    return op


_S = "scalar:"
_C = "scalar_complex:"  # (the complex rows)
_M = "cpu.mathfuncs:"

# numgrad's own formulas. Each kind's ids follow the order of its declarations here: a new
# formula goes after the last one of its kind, so that no other id changes.
declare("neg", 1, _S + "neg", None, NUMBER + COMPLEX)
declare("exp", 1, "cpu.mathfuncs:fast_exp", _S + "exp_portable", FLOAT, _C + "cexp", COMPLEX)
declare("log", 1, "cpu.mathfuncs:fast_log", _S + "log_portable", FLOAT, _C + "clog", COMPLEX)
declare("tanh", 1, "cpu.mathfuncs:fast_tanh", _S + "tanh_portable", FLOAT, _C + "ctanh",
        COMPLEX)
declare("sigmoid", 1, "cpu.mathfuncs:fast_sigmoid", _S + "sigmoid_portable", FLOAT,
        _C + "csigmoid", COMPLEX)
declare("relu", 1, _S + "relu", None, FLOAT, _S + "relu_int", INT)
declare("sqrt", 1, _S + "sqrt", None, FLOAT, _C + "csqrt", COMPLEX)
declare("reciprocal", 1, _S + "reciprocal", None, FLOAT, _C + "creciprocal", COMPLEX)
declare("log1p", 1, _S + "log1p", None, FLOAT, _C + "clog1p", COMPLEX)
declare("expm1", 1, _S + "expm1", None, FLOAT, _C + "cexpm1", COMPLEX)
declare("rsqrt", 1, _S + "rsqrt", None, FLOAT, _C + "crsqrt", COMPLEX)
declare("abs", 1, _S + "absolute", None, NUMBER)
declare("sin", 1, _S + "sin", None, FLOAT, _C + "csin", COMPLEX)
declare("cos", 1, _S + "cos", None, FLOAT, _C + "ccos", COMPLEX)
declare("tan", 1, _S + "tan", None, FLOAT, _C + "ctan", COMPLEX)
declare("sign", 1, _S + "sign", None, FLOAT, _S + "sign_int", INT, _S + "identity", ("bool",))
declare("floor", 1, "cpu.scalar:floor", "cuda.scalar:floor", FLOAT, _S + "identity", INT)
declare("ceil", 1, "cpu.scalar:ceil", "cuda.scalar:ceil", FLOAT, _S + "identity", INT)
declare("round", 1, "cpu.scalar:rint", "cuda.scalar:rint", FLOAT, _S + "identity", INT)
declare("erf", 1, _M + "erf", _S + "erf")
declare("erfc", 1, _S + "erfc")
declare("asin", 1, _S + "asin", None, FLOAT, _C + "casin", COMPLEX)
declare("acos", 1, _S + "acos", None, FLOAT, _C + "cacos", COMPLEX)
declare("atan", 1, _S + "atan", None, FLOAT, _C + "catan", COMPLEX)
declare("sinh", 1, _S + "sinh", None, FLOAT, _C + "csinh", COMPLEX)
declare("cosh", 1, _S + "cosh", None, FLOAT, _C + "ccosh", COMPLEX)
declare("asinh", 1, _S + "asinh", None, FLOAT, _C + "casinh", COMPLEX)
declare("acosh", 1, _S + "acosh", None, FLOAT, _C + "cacosh", COMPLEX)
declare("atanh", 1, _S + "atanh", None, FLOAT, _C + "catanh", COMPLEX)
declare("log2", 1, _M + "log2", _S + "log2", FLOAT, _C + "clog2", COMPLEX)
declare("log10", 1, _S + "log10", None, FLOAT, _C + "clog10", COMPLEX)
declare("exp2", 1, _M + "exp2", _S + "exp2", FLOAT, _C + "cexp2", COMPLEX)
declare("trunc", 1, _M + "trunc", _S + "trunc", FLOAT, _S + "identity", INT)
declare("frac", 1, _M + "frac", _S + "frac")
declare("sinc", 1, _S + "sinc", None, FLOAT, _C + "csinc", COMPLEX)
declare("deg2rad", 1, _S + "deg2rad")
declare("rad2deg", 1, _S + "rad2deg")
# Activations (ops/activation.py)
declare("silu", 1, _M + "silu", _S + "silu")
declare("gelu", 1, _M + "gelu", _S + "gelu")
declare("gelu_tanh", 1, _M + "gelu_tanh", _S + "gelu_tanh")
declare("mish", 1, _M + "mish", _S + "mish")
declare("hardswish", 1, _S + "hardswish")
declare("hardsigmoid", 1, _S + "hardsigmoid")
declare("selu", 1, _M + "selu", _S + "selu")
declare("selu_grad", 1, _M + "selu_grad", _S + "selu_grad")
declare("logsigmoid", 1, _M + "log_sigmoid", _S + "log_sigmoid")
declare("add", 2, _S + "add", None, ALL + COMPLEX, swapped="add")
declare("sub", 2, _S + "sub", None, NUMBER, _C + "csub", COMPLEX, swapped="rsub")
declare("mul", 2, _S + "mul", None, ALL + COMPLEX, swapped="mul")
declare("div", 2, _S + "div", None, FLOAT, _C + "cdiv", COMPLEX)
declare("pow", 2, _S + "power", None, FLOAT, _S + "power_int", INT, _C + "cpow", COMPLEX,
        swapped="rpow")
declare("rsub", 2, _S + "rsub", None, NUMBER, _C + "crsub", COMPLEX, swapped="sub")
declare("rpow", 2, _S + "rpow", None, FLOAT, _S + "rpow_int", INT, _C + "crpow", COMPLEX,
        swapped="pow")
declare("maximum", 2, _S + "maximum", None, ALL, swapped="maximum")
declare("minimum", 2, _S + "minimum", None, ALL, swapped="minimum")
# Fused backward formulas, taking (grad, saved output)
declare("tanh_bwd", 2, _S + "tanh_backward")
declare("sigmoid_bwd", 2, _S + "sigmoid_backward")
declare("relu_bwd", 2, _S + "relu_backward", None, FLOAT, _S + "relu_backward_int", INT)
declare("atan2", 2, _S + "atan2")
declare("logaddexp", 2, _S + "logaddexp", None, FLOAT, _C + "clogaddexp", COMPLEX)
declare("logaddexp2", 2, _S + "logaddexp2")
declare("div_trunc", 2, _S + "div_trunc", None, FLOAT, _S + "div_trunc_int", INT)
declare("div_floor", 2, _S + "div_floor", None, FLOAT, _S + "div_floor_int", INT)
declare("fmod", 2, _M + "fmod", _S + "fmod_math", FLOAT, _S + "fmod_int", INT)
declare("remainder", 2, _M + "remainder", _S + "remainder_math", FLOAT,
        _S + "remainder_int", INT)
declare("hypot", 2, _S + "hypot")
declare("xlogy", 2, _S + "xlogy")
# Activations: fused backward formulas of (grad, input), and formulas of (input, parameter)
declare("silu_bwd", 2, _M + "silu_backward", _S + "silu_backward")
declare("gelu_bwd", 2, _M + "gelu_backward", _S + "gelu_backward")
declare("gelu_tanh_bwd", 2, _M + "gelu_tanh_backward", _S + "gelu_tanh_backward")
declare("mish_bwd", 2, _M + "mish_backward", _S + "mish_backward")
declare("hardswish_bwd", 2, _S + "hardswish_backward")
declare("hardsigmoid_bwd", 2, _S + "hardsigmoid_backward")
declare("logsigmoid_bwd", 2, _M + "log_sigmoid_backward", _S + "log_sigmoid_backward")
declare("leaky_relu", 2, _S + "leaky_relu")
declare("leaky_relu_grad", 2, _S + "leaky_relu_grad")
declare("elu", 2, _M + "elu", _S + "elu")
declare("elu_grad", 2, _M + "elu_grad", _S + "elu_grad")
declare("celu", 2, _M + "celu", _S + "celu")
declare("celu_grad", 2, _M + "celu_grad", _S + "celu_grad")
declare("softplus", 2, _M + "softplus_z", _S + "softplus_z")
declare("softplus_grad", 2, _M + "softplus_grad", _S + "softplus_grad")
# Comparisons and logical ops: bool results
declare("eq", 2, _S + "eq", None, ALL + COMPLEX, swapped="eq", result="bool")
declare("ne", 2, _S + "ne", None, ALL + COMPLEX, swapped="ne", result="bool")
declare("lt", 2, _S + "lt", None, ALL, swapped="gt", result="bool")
declare("le", 2, _S + "le", None, ALL, swapped="ge", result="bool")
declare("gt", 2, _S + "gt", None, ALL, swapped="lt", result="bool")
declare("ge", 2, _S + "ge", None, ALL, swapped="le", result="bool")
declare("logical_and", 2, _S + "logical_and", None, ALL + COMPLEX, swapped="logical_and",
        result="bool")
declare("logical_or", 2, _S + "logical_or", None, ALL + COMPLEX, swapped="logical_or",
        result="bool")
declare("logical_xor", 2, _S + "logical_xor", None, ALL + COMPLEX, swapped="logical_xor",
        result="bool")
# Integer and bool ops (ops/logical_bitwise.py)
declare("bitwise_and", 2, _S + "bitwise_and", None, INT + ("bool",), swapped="bitwise_and")
declare("bitwise_or", 2, _S + "bitwise_or", None, INT + ("bool",), swapped="bitwise_or")
declare("bitwise_xor", 2, _S + "bitwise_xor", None, INT + ("bool",), swapped="bitwise_xor")
declare("lshift", 2, _S + "lshift64", None, ("int64",), _S + "lshift32", ("int32",))
declare("rshift", 2, _S + "rshift64", None, ("int64",), _S + "rshift32", ("int32",))
declare("bitwise_not", 1, _S + "bitwise_not", None, INT, _S + "bitwise_not_bool", ("bool",))
# Special functions; (x, n) and (x, q) of the gamma functions
declare("lgamma", 1, _S + "lgamma")
declare("digamma", 1, _S + "digamma")
declare("erfinv", 1, _S + "erfinv")
declare("i0", 1, _S + "bessel_i0")
declare("i0e", 1, _S + "bessel_i0e")
declare("i1", 1, _S + "bessel_i1")
declare("i1e", 1, _S + "bessel_i1e")
declare("erfcx", 1, _S + "erfcx")
declare("log_ndtr", 1, _S + "log_ndtr")
declare("ndtri", 1, _S + "ndtri")
declare("polygamma", 2, _S + "polygamma")
declare("zeta", 2, _S + "zeta")
for _name in ("chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "shifted_chebyshev_t",
              "shifted_chebyshev_u", "shifted_chebyshev_v", "shifted_chebyshev_w", "hermite_h",
              "hermite_he", "laguerre_l", "legendre_p"):
    declare(_name, 2, _S + _name)  # (x, n) of torch.special's orthogonal polynomials


def _family(kind: str, doc: str) -> type:
    """The enum of numgrad's formulas of ``kind``, one member a declaration (its name upper case),
    their ids in declaration order."""
    enum = IntEnum(kind, [(name, _KINDS[kind] + i) for i, name in enumerate(_NAMES[kind])],
                   module=__name__, qualname=kind)
    enum.__doc__ = doc
    return enum


def _fill_table(enums: dict) -> None:
    """TABLE's rows and SWAPPED of numgrad's formulas, keyed by their ids in ``enums``."""
    members = {kind: list(enum) for kind, enum in enums.items()}
    at = dict.fromkeys(enums, 0)
    for kind, _, specs, swapped in _OWN:
        op = members[kind][at[kind]]
        at[kind] += 1
        TABLE[op] = tuple([Formula(op, cpu, cuda, dtypes) for cpu, cuda, dtypes in specs])
        if swapped is not None:
            SWAPPED[op] = enums[kind][swapped.upper()]


Unary = _family("Unary", "Ids of numgrad's formulas of one argument.")
Binary = _family("Binary", "Ids of numgrad's formulas of two arguments.")
Compare = _family("Compare", "Ids of numgrad's formulas of two arguments with a bool result.")
_fill_table({"Unary": Unary, "Binary": Binary, "Compare": Compare})
_OWN = _NAMES = None  # (numgrad's table is complete: a formula declared from now on is a user's)


class Reduce(IntEnum):
    """Op codes of the reduction kernels (``cpu/reduction.py``, ``cuda/reduction.py``)."""

    PROD, MAX, MIN = range(400, 403)


class ArgReduce(IntEnum):
    ARGMAX, ARGMIN = range(500, 502)


FAMILIES = (Unary, Binary, Compare, Reduce, ArgReduce)

# Every op id by its name (``K.EXP``, ``K.ADD``, ``K.MAX`` …): the kernel modules export these.
OP_CODES = {member.name: member for fam in FAMILIES for member in fam}
assert len(OP_CODES) == sum(len(fam) for fam in FAMILIES), "two families share an op name"


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
