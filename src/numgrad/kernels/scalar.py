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
Special values follow PyTorch 2.13 on the CPU. The formulas Numba compiles as functions of
their own (``@njit`` without ``inline``: the special functions) take ``error_model="numpy"``, as
the kernels calling them do: a kernel reuses a callee's overload whatever flags it was compiled
with first, so a callee compiled by a call from Python (Numba's default, which raises
ZeroDivisionError) made ``polygamma(1, 0.0)`` raise in a kernel compiled after it, and that
kernel was cached.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from .. import _lazy


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


# ------------------------------------------------------------------ logical and bitwise
@njit(inline="always")
def logical_and(a, b):
    return a != 0 and b != 0  # (NaN is true, as in PyTorch)


@njit(inline="always")
def logical_or(a, b):
    return a != 0 or b != 0


@njit(inline="always")
def logical_xor(a, b):
    return (a != 0) != (b != 0)


@njit(inline="always")
def bitwise_and(a, b):
    return a & b


@njit(inline="always")
def bitwise_or(a, b):
    return a | b


@njit(inline="always")
def bitwise_xor(a, b):
    return a ^ b


@njit(inline="always")
def bitwise_not(x):
    return ~x


@njit(inline="always")
def bitwise_not_bool(x):
    return not x


@njit(inline="always")
def lshift64(a, b):
    """``a << b`` as PyTorch's CPU kernel shifts an int64: bits shifted out are lost (wrapping
    around), and a shift by a negative count or by 64 or more gives 0."""
    if b < 0 or b >= 64:
        return a - a
    return a << b


@njit(inline="always")
def rshift64(a, b):
    """``a >> b``, arithmetic (the sign fills in); a negative count or one of 64 or more gives
    the sign: 0 or -1."""
    if b < 0 or b >= 64:
        return a >> 63
    return a >> b


@njit(inline="always")
def lshift32(a, b):
    """``lshift64`` of an int32 (wrapping around at 32 bits)."""
    if b < 0 or b >= 32:
        return a - a
    v = (a << b) & 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@njit(inline="always")
def rshift32(a, b):
    if b < 0 or b >= 32:
        return a >> 31
    return a >> b


# ------------------------------------------------------------------ more unary math (libm)
def _constant(value: float, doc: str):
    """A constant of ``x``'s float type (float32 stays float32), as ``_one``."""
    def c(x):
        return type(x)(value)

    c.__doc__ = doc

    @overload(c, inline="always")
    def _typed(x):
        if x == types.float32:
            return lambda x: np.float32(value)
        return lambda x: value

    return c


_pi = _constant(math.pi, "pi")
_half = _constant(0.5, "1 / 2")
_three = _constant(3.0, "3")
_six = _constant(6.0, "6")
_one_sixth = _constant(float(np.float32(1.0 / 6.0)), "PyTorch's ``1.0f / 6.0f`` (float32's 1/6)")
_deg_rad = _constant(math.pi / 180.0, "pi / 180 (PyTorch's M_PI_180)")
_rad_deg = _constant(180.0 / math.pi, "180 / pi")
_sqrt1_2 = _constant(math.sqrt(0.5), "1 / sqrt(2) (M_SQRT1_2)")
# gelu: PyTorch's kBeta = M_SQRT2 * M_2_SQRTPI * 0.5 and kKappa; the exact backward's kAlpha
_gelu_beta = _constant(math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5, "sqrt(2 / pi)")
_gelu_kappa = _constant(0.044715, "0.044715")
_gelu_alpha = _constant((2.0 / math.sqrt(math.pi)) * math.sqrt(0.5) * 0.5, "1 / sqrt(2 pi)")
_selu_alpha = _constant(1.6732632423543772848170429916717, "SELU's alpha")
_selu_scale = _constant(1.0507009873554804934193349852946, "SELU's scale")


@njit(inline="always")
def asin(x):
    return math.asin(x)


@njit(inline="always")
def acos(x):
    return math.acos(x)


@njit(inline="always")
def atan(x):
    return math.atan(x)


@njit(inline="always")
def sinh(x):
    return math.sinh(x)


@njit(inline="always")
def cosh(x):
    return math.cosh(x)


@njit(inline="always")
def asinh(x):
    return math.asinh(x)


@njit(inline="always")
def acosh(x):
    return math.acosh(x)


@njit(inline="always")
def atanh(x):
    return math.atanh(x)


@njit(inline="always")
def log2(x):
    return math.log2(x)


@njit(inline="always")
def log10(x):
    return math.log10(x)


@njit(inline="always")
def exp2(x):
    return math.pow(_one(x) + _one(x), x)


@njit(inline="always")
def trunc(x):
    """Rounded toward zero, the sign of a zero kept (``trunc(-0.5)`` is -0.0)."""
    return _trunc(x)


@njit(inline="always")
def frac(x):
    """``x - trunc(x)`` (PyTorch's: NaN for an infinity)."""
    return x - _trunc(x)


@njit(inline="always")
def sinc(x):
    """``sin(pi x) / (pi x)``, 1 at 0 (PyTorch's)."""
    if x == _zero(x):
        return _one(x)
    p = _pi(x) * x
    return math.sin(p) / p


@njit(inline="always")
def deg2rad(x):
    return x * _deg_rad(x)


@njit(inline="always")
def rad2deg(x):
    return x * _rad_deg(x)


# ------------------------------------------------------------------ more binary math
@njit(inline="always")
def _remainder_of(m, b):
    """PyTorch's remainder from ``m = fmod(a, b)``: moved into ``b``'s sign where it is not 0."""
    if m != _zero(m) and (b < _zero(b)) != (m < _zero(m)):
        return m + b
    return m


def _fmod(a, b):
    """C's ``fmod``: NumPy's on Numba's CPU target (which has no ``math.fmod``, and compiles the
    formulas for the CUDA simulator too), libdevice's in CUDA kernels."""
    return math.fmod(a, b)


@overload(_fmod, target="cpu", inline="always")
def _fmod_cpu(a, b):
    return lambda a, b: np.fmod(a, b)


@overload(_fmod, target="cuda", inline="always")
def _fmod_cuda(a, b):
    libdevice = _lazy.optional("numba.cuda.libdevice")  # (only where a CUDA kernel is compiled)
    if a == types.float32:
        return lambda a, b: libdevice.fmodf(a, b)
    return lambda a, b: libdevice.fmod(a, b)


@njit(inline="always")
def fmod_math(a, b):
    """C's ``fmod``: the remainder with ``a``'s sign."""
    return _fmod(a, b)


@njit(inline="always")
def remainder_math(a, b):
    return _remainder_of(_fmod(a, b), b)


@njit(inline="always")
def fmod_int(a, b):
    """C's ``%`` on integers (the sign of ``a``); a zero divisor (refused before the kernel on
    the CPU) gives 0 here, ``min % -1`` 0."""
    if b == 0 or b == -1:
        return a - a
    r = a % b  # (Python's floor semantics, as Numba compiles them)
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r


@njit(inline="always")
def remainder_int(a, b):
    """Python's (and PyTorch's) integer ``%``: the sign of ``b``."""
    if b == 0 or b == -1:
        return a - a
    return a % b


@njit(inline="always")
def hypot(a, b):
    return math.hypot(a, b)


@njit(inline="always")
def xlogy(a, b):
    """``a * log(b)``, 0 where ``a`` is 0 unless ``b`` is NaN (PyTorch's)."""
    if b != b:  # noqa: PLR0124
        return b
    if a == _zero(a):
        return _zero(a)
    return a * math.log(b)


# ------------------------------------------------------------------ activations (PyTorch's)
@njit(inline="always")
def silu(x):
    """``x / (1 + e**-x)``."""
    return x / (_one(x) + math.exp(-x))


@njit(inline="always")
def silu_backward(grad, x):
    """``grad * s * (1 + x (1 - s))`` with ``s = sigmoid(x)``."""
    s = _one(x) / (_one(x) + math.exp(-x))
    return grad * s * (_one(x) + x * (_one(x) - s))


@njit(inline="always")
def gelu(x):
    """``x Phi(x) = x / 2 (1 + erf(x / sqrt 2))``."""
    return x * _half(x) * (_one(x) + math.erf(x * _sqrt1_2(x)))


@njit(inline="always")
def gelu_backward(grad, x):
    cdf = _half(x) * (_one(x) + math.erf(x * _sqrt1_2(x)))
    pdf = math.exp(-_half(x) * x * x) * _gelu_alpha(x)
    return grad * (cdf + x * pdf)


@njit(inline="always")
def gelu_tanh(x):
    """``x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x**3)))``."""
    inner = _gelu_beta(x) * (x + _gelu_kappa(x) * (x * x * x))
    return _half(x) * x * (_one(x) + math.tanh(inner))


@njit(inline="always")
def gelu_tanh_backward(grad, x):
    """PyTorch's GeluBackward of ``approximate='tanh'``."""
    x_sq = x * x
    x_cube = x_sq * x
    inner = _gelu_beta(x) * (x + _gelu_kappa(x) * x_cube)
    t = math.tanh(inner)
    left = _half(x) * x
    right = _one(x) + t
    left_derivative = _half(x) * right
    right_derivative = left * (_one(x) - t * t) * _gelu_beta(x) * (
        _one(x) + _three(x) * _gelu_kappa(x) * x_sq)
    return grad * (left_derivative + right_derivative)


@njit(inline="always")
def mish(x):
    """``x tanh(softplus(x))``, PyTorch's ``x * tanh(log1p(exp(x)))``."""
    return x * math.tanh(math.log1p(math.exp(x)))


@njit(inline="always")
def mish_backward(grad, x):
    s = _one(x) / (_one(x) + math.exp(-x))
    t = math.tanh(math.log1p(math.exp(x)))
    return grad * (t + x * s * (_one(x) - t * t))


@njit(inline="always")
def _relu6_shift(x):
    """``min(max(x + 3, 0), 6)`` (NaN passes)."""
    y = x + _three(x)
    y = _zero(x) if y < _zero(x) else y  # noqa: FURB136  (std::max's order: NaN passes)
    return _six(x) if y > _six(x) else y  # noqa: FURB136


@njit(inline="always")
def hardswish(x):
    return x * _relu6_shift(x) / _six(x)


@njit(inline="always")
def hardswish_backward(grad, x):
    """0 up to -3, ``grad`` from 3 on, ``grad (x / 3 + 1 / 2)`` between (PyTorch's)."""
    if x <= -_three(x):
        return _zero(x)
    if x < _three(x):
        return grad * (x / _three(x) + _half(x))
    return grad


@njit(inline="always")
def hardsigmoid(x):
    return _relu6_shift(x) / _six(x)


@njit(inline="always")
def hardsigmoid_backward(grad, x):
    """``grad / 6`` strictly between -3 and 3, else 0."""
    if x > -_three(x) and x < _three(x):
        return grad * _one_sixth(x)
    return _zero(x)


@njit(inline="always")
def selu(x):
    if x <= _zero(x):
        return math.expm1(x) * (_selu_alpha(x) * _selu_scale(x))
    return x * _selu_scale(x)


@njit(inline="always")
def selu_grad(x):
    """SELU's derivative at ``x``."""
    if x <= _zero(x):
        return math.exp(x) * (_selu_alpha(x) * _selu_scale(x))
    return _selu_scale(x)


@njit(inline="always")
def log_sigmoid(x):
    """``min(x, 0) - log1p(e**-|x|)``."""
    m = x if x < _zero(x) else _zero(x)  # noqa: FURB136  (as PyTorch's, NaN kept)
    return m - math.log1p(math.exp(-abs(x)))


@njit(inline="always")
def log_sigmoid_backward(grad, x):
    """PyTorch's: ``grad (1 - sigmoid(x))`` written from ``z = e**-|x|``."""
    z = math.exp(-abs(x))
    if x < _zero(x):
        return grad * (_one(x) - z / (_one(x) + z))
    return grad * (z / (_one(x) + z))


@njit(inline="always")
def leaky_relu(x, slope):
    return x if x > _zero(x) else x * slope


@njit(inline="always")
def leaky_relu_grad(x, slope):
    """The factor of ``grad`` in leaky_relu's backward."""
    return _one(x) if x > _zero(x) else slope


@njit(inline="always")
def elu(x, alpha):
    return math.expm1(x) * alpha if x <= _zero(x) else x


@njit(inline="always")
def elu_grad(x, alpha):
    return math.exp(x) * alpha if x <= _zero(x) else _one(x)


@njit(inline="always")
def celu(x, alpha):
    """``elu(x, alpha, 1, 1 / alpha)``, PyTorch's celu."""
    return math.expm1(x * (_one(x) / alpha)) * alpha if x <= _zero(x) else x


@njit(inline="always")
def celu_grad(x, alpha):
    """As PyTorch's celu backward: ``elu_backward`` with ``input_scale = 1 / alpha.toFloat()``
    (1 over ``alpha`` rounded to float32, also for float64 inputs)."""
    if x <= _zero(x):
        inv = _one(x) / np.float32(alpha)
        return inv * alpha * math.exp(x * inv)
    return _one(x)


@njit(inline="always")
def softplus_z(z, threshold):
    """Softplus of ``z = beta x`` before the division by ``beta``: ``z`` above ``threshold``."""
    return z if z > threshold else math.log1p(math.exp(z))


@njit(inline="always")
def softplus_grad(z, threshold):
    """Softplus's derivative from ``z = beta x``: 1 above ``threshold``, else ``e / (e + 1)``."""
    if z > threshold:
        return _one(z)
    e = math.exp(z)
    return e / (e + _one(z))


# ------------------------------------------------------------------ gamma functions
# lgamma is libm's; digamma, trigamma and the Hurwitz zeta function are the Cephes algorithms
# PyTorch's CPU kernels use (``calc_digamma``, ``calc_trigamma``, ``zeta``), in the input's
# float type as PyTorch's are.
@njit(inline="always")
def lgamma(x):
    return math.lgamma(x)


_PSI_10 = 2.25175258906672110764  # digamma(10)


@njit(error_model="numpy")
def digamma(x):
    """psi(x): +-inf at +-0 (the sign flipped), NaN at the negative integers and -inf."""
    x = float(x)
    if x == 0.0:
        return math.copysign(math.inf, -x)
    result = 0.0
    if x < 0.0:
        if x == _floor(x):  # (not math.floor: an int64, wrong past 2**63: float32's -1e20)
            return math.nan
        r = x - _trunc(x)  # (the fractional part, with x's sign; reflection)
        result = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    if x == 10.0:
        return result + _PSI_10
    y = 0.0
    if x < 1.0e17:
        z = 1.0 / (x * x)
        p = 8.33333333333333333333e-2
        p = p * z - 2.10927960927960927961e-2
        p = p * z + 7.57575757575757575758e-3
        p = p * z - 4.16666666666666666667e-3
        p = p * z + 3.96825396825396825397e-3
        p = p * z - 8.33333333333333333333e-3
        p = p * z + 8.33333333333333333333e-2
        y = z * p
    return result + math.log(x) - 0.5 / x - y


_sixth = _constant(1.0 / 6.0, "1 / 6")
_thirtieth = _constant(1.0 / 30.0, "1 / 30")
_fortysecond = _constant(1.0 / 42.0, "1 / 42")


@njit(error_model="numpy")
def trigamma(x):
    """psi'(x): reflection below 1/2, six steps of the recurrence, then the asymptotic series,
    in x's float type as PyTorch's two overloads (float32's is float arithmetic throughout: at a
    negative integer, sin(pi x) of float32's pi is not 0, and the value is finite, 2e13 at -8,
    where float64 gives 1e31)."""
    y = x + _zero(x)  # (float32 stays float32; an integer is taken as float64)
    sign = _one(y)
    result = _zero(y)
    if y < _half(y):
        sign = -_one(y)
        s = math.sin(_pi(y) * y)
        result -= (_pi(y) * _pi(y)) / (s * s)
        y = _one(y) - y
    for _ in range(6):
        result += _one(y) / (y * y)
        y += _one(y)
    ixx = _one(y) / (y * y)
    result += (_one(y) + _one(y) / (y + y)
               + ixx * (_sixth(y) - ixx * (_thirtieth(y) - ixx * _fortysecond(y)))) / y
    return sign * result


@njit(inline="always")
def _zeta_coefficient(j):
    """The Euler-Maclaurin coefficients (2k)! / B_2k of the Hurwitz zeta series."""
    if j == 0:
        return 12.0
    if j == 1:
        return -720.0
    if j == 2:
        return 30240.0
    if j == 3:
        return -1209600.0
    if j == 4:
        return 47900160.0
    if j == 5:
        return -1.8924375803183791606e9
    if j == 6:
        return 7.47242496e10
    if j == 7:
        return -2.950130727918164224e12
    if j == 8:
        return 1.1646782814350067249e14
    if j == 9:
        return -4.5979787224074726105e15
    if j == 10:
        return 1.8152105401943546773e17
    return -7.1661652561756670113e18


@njit(error_model="numpy")
def zeta(x, q):
    """The Hurwitz zeta function sum_k (k + q)**-x: inf at x == 1, NaN below; by direct
    summation to a = q + 9 or more, then the Euler-Maclaurin tail."""
    x = float(x)
    q = float(q)
    machep = 1.11022302462515654042e-16
    if x == 1.0:
        return math.inf
    if x < 1.0:
        return math.nan
    if q <= 0.0:
        if q == _floor(q):  # (not math.floor: an int64, wrong past 2**63)
            return math.inf
        if x != _floor(x):
            return math.nan
    s = math.pow(q, -x)
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = math.pow(a, -x)
        s += b
        if -machep * s < b and b < machep * s:
            return s
    w = a
    s += b * w / (x - 1.0)
    s -= 0.5 * b
    a = 1.0
    k = 0.0
    for j in range(12):
        a *= x + k
        b /= w
        t = a * b / _zeta_coefficient(j)
        s = s + t
        t = abs(t / s)
        if t < machep:
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s


@njit(error_model="numpy")
def polygamma(x, n):
    """The n-th derivative of digamma at x (``n`` a whole number, in x's dtype):
    (-1)**(n+1) n! zeta(n + 1, x) from n = 2."""
    k = int(n)
    if k == 0:
        return digamma(x)
    if k == 1:
        return trigamma(x)
    sign = 1.0 if k % 2 == 1 else -1.0
    return sign * math.exp(math.lgamma(k + 1.0)) * zeta(k + 1.0, x)


# ------------------------------------------------------------------ orthogonal polynomials
# torch.special's polynomials of x and a degree n (an integer given in x's dtype), as PyTorch's
# CPU kernels compute them (its closed forms past a degree, its recurrences below): special
# values at the ends of the interval, 0 for a negative degree; in the input's float type.
@njit(inline="always")
def _chebyshev_recurrence(y, k, first):
    """The degree-``k`` polynomial at ``y`` of the Chebyshev kind whose first two are 1 and
    ``first`` (``y``, ``2y``, ``2y - 1``, ``2y + 1``: T, U, V, W): P_{j+1} = 2y P_j - P_{j-1}."""
    if k == 0:
        return 1.0
    p, q = 1.0, first
    for _ in range(2, k + 1):
        p, q = q, (y + y) * q - p
    return q


@njit(error_model="numpy")
def chebyshev_t(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if abs(x) == 1.0:
        return 1.0 if x > 0.0 or k % 2 == 0 else -1.0
    if k > 6 and abs(x) < 1.0:
        return math.cos(k * math.acos(x))
    return _chebyshev_recurrence(x, k, x)


@njit(error_model="numpy")
def chebyshev_u(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if abs(x) == 1.0:
        return float(k + 1) if x > 0.0 or k % 2 == 0 else float(-(k + 1))
    if k > 8 and abs(x) < 1.0:
        t = math.acos(x)
        if math.sin(t) != 0.0:
            return math.sin((k + 1) * t) / math.sin(t)
        return (k + 1) * math.cos((k + 1) * t) / x
    return _chebyshev_recurrence(x, k, x + x)


@njit(error_model="numpy")
def chebyshev_v(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if abs(x) == 1.0:
        if x > 0.0:
            return 1.0
        return float(k + k + 1) if k % 2 == 0 else float(-(k + k + 1))
    if k > 8 and abs(x) < 1.0:
        t = math.acos(x)
        if math.sin(t / 2.0) != 1.0:
            return math.cos((k + 0.5) * t) / math.cos(t / 2.0)
        return float(k + k + 1) if k % 2 == 0 else float(-(k + k + 1))
    return _chebyshev_recurrence(x, k, x + x - 1.0)


@njit(error_model="numpy")
def chebyshev_w(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if abs(x) == 1.0:
        if x > 0.0:
            return float(k + k + 1)
        return 1.0 if k % 2 == 0 else -1.0
    if k > 8 and abs(x) < 1.0:
        t = math.acos(x)
        if math.cos(t / 2.0) != 1.0:
            return math.sin((k + 0.5) * t) / math.sin(t / 2.0)
        if x > 0.0:
            return float(k + k + 1)
        return 1.0 if k % 2 == 0 else -1.0
    return _chebyshev_recurrence(x, k, x + x + 1.0)


@njit(error_model="numpy")
def shifted_chebyshev_t(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if x == 1.0:
        return 1.0
    if x == 0.0:
        return 1.0 if k % 2 == 0 else -1.0
    y = x + x - 1.0
    if k > 6 and abs(y) < 1.0:
        return math.cos(k * math.acos(y))
    return _chebyshev_recurrence(y, k, y)


@njit(error_model="numpy")
def shifted_chebyshev_u(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if x == 1.0:
        return float(k + 1)
    if x == 0.0:
        return float(k + 1) if k % 2 == 0 else float(-(k + 1))
    y = x + x - 1.0
    if k > 6 and abs(y) < 1.0:
        t = math.acos(y)
        if math.sin(t) != 0.0:
            return math.sin((k + 1) * t) / math.sin(t)
        return (k + 1) * math.cos((k + 1) * t) / y
    return _chebyshev_recurrence(y, k, y + y)


@njit(error_model="numpy")
def shifted_chebyshev_v(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if x == 1.0:
        return 1.0
    if x == 0.0:
        return float(k + k + 1) if k % 2 == 0 else float(-(k + k + 1))
    y = x + x - 1.0
    if k > 6 and abs(y) < 1.0:
        t = math.acos(y)
        if math.sin(t / 2.0) != 1.0:
            return math.cos((k + 0.5) * t) / math.cos(t / 2.0)
        return float(k + k + 1) if k % 2 == 0 else float(-(k + k + 1))
    return _chebyshev_recurrence(y, k, y + y - 1.0)


@njit(error_model="numpy")
def shifted_chebyshev_w(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if x == 1.0:
        return float(k + k + 1)
    if x == 0.0:
        return 1.0 if k % 2 == 0 else -1.0
    y = x + x - 1.0
    if k > 4 and abs(y) < 1.0:
        t = math.acos(y)
        if math.cos(t / 2.0) != 1.0:
            return math.sin((k + 0.5) * t) / math.sin(t / 2.0)
        return 1.0 if k % 2 == 0 else -1.0
    return _chebyshev_recurrence(y, k, y + y + 1.0)


@njit(error_model="numpy")
def hermite_h(x, n):
    """The physicists' Hermite polynomial."""
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if k == 0:
        return 1.0
    if k == 1:
        return x + x
    p, q = 1.0, x + x
    for j in range(2, k + k, 2):
        p, q = q, (x + x) * q - j * p
    return q


@njit(error_model="numpy")
def hermite_he(x, n):
    """The probabilists' Hermite polynomial."""
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if k == 0:
        return 1.0
    if k == 1:
        return x
    p, q = 1.0, x
    for j in range(1, k):
        p, q = q, x * q - j * p
    return q


@njit(error_model="numpy")
def laguerre_l(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if abs(x) == 0.0:
        return 1.0
    if k == 0:
        return 1.0
    if k == 1:
        return 1.0 - x
    p, q = 1.0, 1.0 - x
    for j in range(1, k):
        p, q = q, (((j + j) + (1.0 - x)) * q - j * p) / (j + 1)
    return q


@njit(error_model="numpy")
def legendre_p(x, n):
    x = float(x)
    k = int(n)
    if k < 0:
        return 0.0
    if abs(x) == 1.0:
        return 1.0 if x > 0.0 or k % 2 == 0 else -1.0
    if k == 0:
        return 1.0
    if k == 1:
        return x
    p, q = 1.0, x
    for j in range(1, k):
        p, q = q, ((j + j + 1) * x * q - j * p) / (j + 1)
    return q


# ------------------------------------------------------------------ erfinv, Bessel I0 and I1
@njit(error_model="numpy")
def erfinv(y):
    """The inverse error function: +-inf at +-1, NaN outside [-1, 1]; an initial polynomial
    estimate (Giles's single-precision one) refined by Newton's method on erf (on erfc near
    +-1, where erf saturates)."""
    y = y * 1.0
    if y != y or y < -1.0 or y > 1.0:
        return math.nan
    if y == 1.0 or y == -1.0:
        return math.copysign(math.inf, y)
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w -= 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    x = p * y
    a = abs(y)
    s = 1.0 if y > 0.0 else -1.0
    for _ in range(12):
        slope = 1.1283791670955126 * math.exp(-x * x)  # (2 / sqrt(pi)) exp(-x**2)
        if slope == 0.0:
            break
        if a > 0.5:  # (erfc(|x|) - (1 - |y|), both small: no cancellation)
            step = s * (math.erfc(abs(x)) - (1.0 - a)) / -slope
        else:
            step = (math.erf(x) - y) / slope
        x -= step
        if abs(step) <= abs(x) * 1e-16:
            break
    return x


# Above this |x| the Bessel functions take their asymptotic series (twelve terms reach 2**-53 at
# 50, fewer beyond), where their power series needs ~|x| terms (which lose a few digits); I0 and
# I1 are then exp(|x|) times it, inf past exp's overflow as PyTorch's (from 709.8).
_BESSEL_LARGE = 50.0


@njit(error_model="numpy")
def _bessel_scaled_large(a, mu):
    """exp(-a) I_nu(a) for a > ``_BESSEL_LARGE``, ``mu`` = 4 nu**2: the asymptotic series
    (1 / sqrt(2 pi a)) sum_k prod_{j <= k} (-(mu - (2j - 1)**2) / (8 j a))."""
    term = 1.0
    total = 1.0
    k = 0.0
    while k < 40.0:
        k += 1.0
        odd = 2.0 * k - 1.0
        term *= -(mu - odd * odd) / (8.0 * k * a)
        total += term
        if abs(term) <= abs(total) * 1e-17:
            break
    return total / math.sqrt(2.0 * math.pi * a)


@njit(error_model="numpy")
def bessel_i0(x):
    """The modified Bessel function I0: its power series sum_k (x**2 / 4)**k / k!**2 (the
    asymptotic series above ``_BESSEL_LARGE``)."""
    x = x * 1.0
    if x != x or math.isinf(x):  # (NaN at +-inf, as PyTorch's Chebyshev expansion gives)
        return math.nan
    if abs(x) > _BESSEL_LARGE:
        return math.exp(abs(x)) * _bessel_scaled_large(abs(x), 0.0)
    q = x * x / 4.0
    term = 1.0
    total = 1.0
    k = 0.0
    while term > total * 1e-17:
        k += 1.0
        term *= q / (k * k)
        total += term
    return total


@njit(error_model="numpy")
def bessel_i1(x):
    """The modified Bessel function I1: sum_k (x / 2)**(2k + 1) / (k! (k + 1)!) (the asymptotic
    series above ``_BESSEL_LARGE``); +0.0 at -0.0, as PyTorch's."""
    x = x * 1.0
    if x != x or math.isinf(x):
        return math.nan
    if x == 0.0:
        return 0.0
    if abs(x) > _BESSEL_LARGE:
        return math.copysign(math.exp(abs(x)) * _bessel_scaled_large(abs(x), 4.0), x)
    q = x * x / 4.0
    term = x / 2.0
    total = term
    k = 0.0
    while abs(term) > abs(total) * 1e-17:
        k += 1.0
        term *= q / (k * (k + 1.0))
        total += term
    return total


@njit(error_model="numpy")
def bessel_i0e(x):
    """exp(-|x|) I0(x) (which I0's overflow above 713 made NaN)."""
    x = x * 1.0
    if math.isinf(x):
        return 0.0
    if abs(x) > _BESSEL_LARGE:
        return _bessel_scaled_large(abs(x), 0.0)
    return math.exp(-abs(x)) * bessel_i0(x)


@njit(error_model="numpy")
def bessel_i1e(x):
    """exp(-|x|) I1(x), odd; +0.0 at -0.0, as PyTorch's."""
    x = x * 1.0
    if math.isinf(x):
        return math.copysign(0.0, x)
    if abs(x) > _BESSEL_LARGE:
        return math.copysign(_bessel_scaled_large(abs(x), 4.0), x)
    return math.exp(-abs(x)) * bessel_i1(x)


# ------------------------------------------------------------------ erfcx, log_ndtr, ndtri
@njit(error_model="numpy")
def erfcx(z):
    """exp(z**2) erfc(z): directly below 26, PyTorch's asymptotic range by its series above
    (erfc underflows there), inf below -26.7 (exp(z**2) overflows)."""
    z = z * 1.0
    if z != z:
        return z
    if z < -26.7:
        return math.inf
    if z < 26.0:
        return math.exp(z * z) * math.erfc(z)
    iz2 = 1.0 / (z * z)
    series = 1.0 + iz2 * (-0.5 + iz2 * (0.75 + iz2 * (-1.875 + iz2 * 6.5625)))
    return series / (z * 1.7724538509055160273)


@njit(error_model="numpy")
def log_ndtr(x):
    """log of the standard normal distribution function, as PyTorch's: through erfcx below -1
    (no underflow in the tail), log1p(-erfc(x / sqrt 2) / 2) above."""
    x = x * 1.0
    t = x * 0.70710678118654752440
    if x < -1.0:
        return math.log(erfcx(-t) / 2.0) - t * t
    return math.log1p(-math.erfc(t) / 2.0)


@njit(error_model="numpy")
def ndtri(p):
    """The inverse of the standard normal distribution function: -inf at 0, inf at 1, NaN
    outside; +-sqrt(2) t for erfc(t) = 2 min(p, 1 - p), t by Newton's method from a start
    (Giles's polynomial near the middle, erfc's asymptotic form in the tails), accurate into the
    tails: no 1 - 2p is formed."""
    p = p * 1.0
    if p != p or p < 0.0 or p > 1.0:
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p == 0.5:
        return 0.0
    c = 2.0 * p if p < 0.5 else 2.0 * (1.0 - p)
    w = -math.log(c * (2.0 - c))
    if w < 5.0:
        w -= 2.5
        e = 2.81022636e-08
        e = 3.43273939e-07 + e * w
        e = -3.5233877e-06 + e * w
        e = -4.39150654e-06 + e * w
        e = 0.00021858087 + e * w
        e = -0.00125372503 + e * w
        e = -0.00417768164 + e * w
        e = 0.246640727 + e * w
        e = 1.50140941 + e * w
        t = e * (1.0 - c)
    else:  # (erfc(t) ~ exp(-t**2) / (t sqrt(pi)))
        big = -math.log(c)
        t = math.sqrt(big - 0.5 * math.log(math.pi * big))
    for _ in range(12):
        slope = 1.1283791670955126 * math.exp(-t * t)
        if slope == 0.0:
            break
        step = (math.erfc(t) - c) / -slope
        t -= step
        if abs(step) <= abs(t) * 1e-16:
            break
    x = 1.4142135623730950488 * t
    return -x if p < 0.5 else x


@njit(inline="always")
def nan_to_num_one(v, nan, posinf, neginf):
    """``v`` with NaN, +inf and -inf replaced (``nan_to_num``'s element, both devices)."""
    if v != v:  # noqa: PLR0124
        return nan
    if v == math.inf:
        return posinf
    if v == -math.inf:
        return neginf
    return v


@njit(inline="always")
def isclose_one(x, y, rtol, atol, equal_nan):
    """Whether ``x`` and ``y`` are close (``isclose``'s element, both devices): equal, both NaN
    with ``equal_nan``, or a finite difference within ``atol + |rtol * y|``."""
    if x == y:
        return True
    if equal_nan and x != x and y != y:  # noqa: PLR0124
        return True
    diff = abs(x - y)
    return diff - diff == 0 and diff <= atol + abs(rtol * y)


@njit(inline="always")
def pad_source(j, size, pad, mode):
    """The input position that output position ``j`` copies along a dimension of ``size`` padded
    by ``pad`` before it, reflecting (``mode`` 0) or replicating (PyTorch's formula; a negative
    ``pad`` crops): the padding kernels' index on both devices."""
    if j < pad:
        i = pad * 2 - j if mode == 0 else pad
    elif j < size + pad:
        i = j
    else:
        i = (size + pad - 1) * 2 - j if mode == 0 else size + pad - 1
    return i - max(pad, 0) + max(-pad, 0)
