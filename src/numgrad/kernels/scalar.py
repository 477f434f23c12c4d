"""Scalar formulas that compile for both devices: ``numba.njit`` functions of one or two elements.

Numba inlines them into the CPU loops, and numba-cuda compiles an ``njit`` function called from a
kernel as a device function, so the formula written here is the one both devices run. Everything
here uses only arithmetic, comparisons, ``abs`` and the ``math`` module, which numba-cuda documents
as supported in kernels and lowers through libdevice; NumPy's ufuncs are avoided because the CUDA
target supports only some of them, and which ones changes between numba-cuda releases (0.30.4
lowers ``np.sin`` but not ``np.sqrt``, ``np.log1p``, ``np.expm1``, ``np.sign``, ``np.floor``,
``np.ceil`` or ``np.rint``). A formula that needs something else on one device (a vectorisable
CPU exp, libdevice's ``rint``) has a variant in ``cpu/mathfuncs.py`` or ``cuda/scalar.py``; the
table in ``formulas.py`` says which function each op runs on each device.

Each takes and returns elements of one dtype: ``_one``/``_zero`` give constants of the argument's
float type, since a bare ``1.0`` would make float32 arithmetic float64 (and unvectorised).
Special values follow PyTorch 2.13 on the CPU.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload


def _one(x):
    """1 in ``x``'s float type. (In Python, as Numba's CUDA simulator runs the formulas: this
    body; in compiled code, the overload below, chosen by ``x``'s type. An ``isinstance`` test in
    the body would do only where Numba knows the type before inlining, which it does not for the
    result of another inlined formula, in a fused loop: float32 then came out float64.)"""
    return type(x)(1)


def _zero(x):
    """0 in ``x``'s float type."""
    return type(x)(0)


@overload(_one, inline="always")
def _one_typed(x):
    if x == types.float32:
        return lambda x: np.float32(1)
    return lambda x: 1.0


@overload(_zero, inline="always")
def _zero_typed(x):
    if x == types.float32:
        return lambda x: np.float32(0)
    return lambda x: 0.0


def _big(x):
    """2**52 (float64) or 2**23 (float32): from there on every float of ``x``'s type is an
    integer, and below it ``(x + big) - big`` rounds ``x`` to an integer."""
    return type(x)(2.0 ** 52 if type(x) is not np.float32 else 2.0 ** 23)


def _inv_ln2(x):
    """1 / ln 2 in ``x``'s float type (PyTorch's ``inv_log_2`` of logaddexp2)."""
    return type(x)(1.4426950408889634)


@overload(_big, inline="always")
def _big_typed(x):
    if x == types.float32:
        return lambda x: np.float32(8388608.0)
    return lambda x: 4503599627370496.0


@overload(_inv_ln2, inline="always")
def _inv_ln2_typed(x):
    if x == types.float32:
        return lambda x: np.float32(1.4426950408889634)
    return lambda x: 1.4426950408889634


@njit(inline="always")
def _floor(x):
    """``floor(x)`` in ``x``'s float type with arithmetic alone (``math.floor`` gives an integer on
    Numba's CPU target, a float on CUDA): huge values, inf and NaN are their own floor; below
    ``_big`` adding and removing it rounds to an integer, which is one too large where it passed
    ``x``. (The sign of a zero is not kept: the callers handle zeros.)"""
    big = _big(x)
    if not abs(x) < big:
        return x
    t = (x + big) - big if x >= _zero(x) else (x - big) + big
    return t - _one(x) if t > x else t


@njit(inline="always")
def _trunc(x):
    """``trunc(x)``, keeping the sign of a zero result (``trunc(-0.5)`` is -0.0)."""
    if x == _zero(x):
        return x
    if x < _zero(x):
        return -_floor(-x)
    return _floor(x)


# ------------------------------------------------------------------ unary
@njit(inline="always")
def neg(x):
    return -x


@njit(inline="always")
def relu(x):
    """``x`` unless it is below 0: NaN passes, and so does -0.0 (PyTorch's clamp_min)."""
    return _zero(x) if x < 0 else x


@njit(inline="always")
def relu_int(x):
    return x if x > 0 else x - x


@njit(inline="always")
def sqrt(x):
    return math.sqrt(x)


@njit(inline="always")
def rsqrt(x):
    return _one(x) / math.sqrt(x)


@njit(inline="always")
def reciprocal(x):
    return _one(x) / x


@njit(inline="always")
def log1p(x):
    return math.log1p(x)


@njit(inline="always")
def expm1(x):
    return math.expm1(x)


@njit(inline="always")
def absolute(x):
    return abs(x)


@njit(inline="always")
def sin(x):
    return math.sin(x)


@njit(inline="always")
def cos(x):
    return math.cos(x)


@njit(inline="always")
def tan(x):
    return math.tan(x)


@njit(inline="always")
def sign(x):
    """1, -1, or 0 for ±0 and NaN (PyTorch's ``(0 < x) - (x < 0)``)."""
    if x > 0:
        return _one(x)
    if x < 0:
        return -_one(x)
    return _zero(x)


@njit(inline="always")
def sign_int(x):
    if x > 0:
        return x - x + 1
    if x < 0:
        return x - x - 1
    return x - x


@njit(inline="always")
def identity(x):
    """floor, ceil and round of an integer, sign of a bool."""
    return x


@njit(inline="always")
def erf(x):
    return math.erf(x)


@njit(inline="always")
def erfc(x):
    return math.erfc(x)


@njit(inline="always")
def exp_portable(x):
    return math.exp(x)


@njit(inline="always")
def log_portable(x):
    return math.log(x)


@njit(inline="always")
def tanh_portable(x):
    return math.tanh(x)


@njit(inline="always")
def sigmoid_portable(x):
    """1 / (1 + e**-x); for large negative ``x`` e**-x overflows to inf and the result is 0."""
    return _one(x) / (_one(x) + math.exp(-x))


# ------------------------------------------------------------------ binary
@njit(inline="always")
def add(a, b):
    return a + b


@njit(inline="always")
def sub(a, b):
    return a - b


@njit(inline="always")
def mul(a, b):
    return a * b


@njit(inline="always")
def div(a, b):
    return a / b


@njit(inline="always")
def power(a, b):
    return a**b


@njit(inline="always")
def power_int(a, b):
    """Integer ``a ** b``, PyTorch's: wrapping around for large results, and for a negative
    exponent 1 (a == 1), +-1 (a == -1, by the exponent's parity) or 0 (what 1 / a**-b
    truncates to)."""
    if b < 0:
        if a == 1:
            return a
        if a == -1:
            return a if b & 1 else -a
        return a - a
    return a**b


@njit(inline="always")
def rpow_int(a, b):
    """Integer ``b ** a`` (a number on the left)."""
    return power_int(b, a)


@njit(inline="always")
def rsub(a, b):
    """``b - a``: a number on the left (``2 - x``) taken as the second operand."""
    return b - a


@njit(inline="always")
def rpow(a, b):
    return b**a


@njit(inline="always")
def maximum(a, b):
    """NaN-propagating, as torch.maximum; a tie (0.0 and -0.0) gives ``a``, as PyTorch's scalar
    loop does (which its small tensors and the tails of large ones take)."""
    return a if (a >= b or a != a) else b  # noqa: PLR0124  (a != a: a is NaN)


@njit(inline="always")
def minimum(a, b):
    return a if (a <= b or a != a) else b  # noqa: PLR0124


@njit(inline="always")
def atan2(a, b):
    return math.atan2(a, b)


@njit(inline="always")
def logaddexp(a, b):
    """``log(exp(a) + exp(b))`` as PyTorch computes it: ``a`` where both are the same infinity,
    else ``max + log1p(exp(-|a - b|))`` (NaN in either gives NaN)."""
    if math.isinf(a) and a == b:
        return a
    m = b if a < b else a  # noqa: FURB136  (std::max's order: a NaN ``a`` is kept)
    return m + math.log1p(math.exp(-abs(a - b)))


@njit(inline="always")
def logaddexp2(a, b):
    """``log2(2**a + 2**b)``: ``max + log1p(2**-|a - b|) / ln 2`` (PyTorch's)."""
    if math.isinf(a) and a == b:
        return a
    m = b if a < b else a  # noqa: FURB136
    two = _one(a) + _one(a)
    return m + math.log1p(math.pow(two, -abs(a - b))) * _inv_ln2(a)


@njit(inline="always")
def div_trunc(a, b):
    """``trunc(a / b)`` (``div(rounding_mode='trunc')``)."""
    return _trunc(a / b)


@njit(inline="always")
def div_floor(a, b):
    """PyTorch's floor division of floats (``div_floor_floating``), which is CPython's float
    ``//``, as Numba compiles it for both devices (from ``fmod``, so that ``a - b * result`` has
    ``b``'s sign; a zero result signed as ``a / b``; NaN for an infinite ``a``), and ``a / b``
    where ``b`` is zero."""
    if b == _zero(b):
        return a / b
    return a // b


@njit(inline="always")
def div_floor_int(a, b):
    """Integer floor division; ``min // -1`` wraps to ``min`` (PyTorch's CPU traps there). A zero
    divisor is refused before the kernel on the CPU (PyTorch's ZeroDivisionError); a kernel
    that meets one (on CUDA, where nothing can raise) gives -1."""
    if b == 0:
        return a - a - 1
    if b == -1:
        return -a
    return a // b  # (Python's floor semantics, as Numba compiles them)


@njit(inline="always")
def div_trunc_int(a, b):
    """Integer division rounded toward zero (C's), with ``div_floor_int``'s special cases."""
    if b == 0:
        return a - a - 1
    if b == -1:
        return -a
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


@njit(inline="always")
def tanh_backward(grad, y):
    """``grad * (1 - y²)``, from tanh's saved output ``y``."""
    return grad * (_one(y) - y * y)


@njit(inline="always")
def sigmoid_backward(grad, y):
    """``grad * (1 - y) * y``, from sigmoid's saved output ``y`` (PyTorch's order)."""
    return grad * (_one(y) - y) * y


@njit(inline="always")
def relu_backward(grad, y):
    """``grad`` where relu's saved output ``y`` is not ``<= 0`` (a NaN output passes it), as
    PyTorch's threshold_backward."""
    return _zero(grad) if y <= 0 else grad


@njit(inline="always")
def relu_backward_int(grad, y):
    return grad - grad if y <= 0 else grad


# ------------------------------------------------------------------ comparisons (bool results)
@njit(inline="always")
def eq(a, b):
    return a == b


@njit(inline="always")
def ne(a, b):
    return a != b


@njit(inline="always")
def lt(a, b):
    return a < b


@njit(inline="always")
def le(a, b):
    return a <= b


@njit(inline="always")
def gt(a, b):
    return a > b


@njit(inline="always")
def ge(a, b):
    return a >= b
