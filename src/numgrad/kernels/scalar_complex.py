"""Scalar formulas of complex elements (complex64, complex128), for both devices: the complex
rows of the formula table (``formulas.py``): ``sub div pow rpow logaddexp exp log sqrt sigmoid
reciprocal rsqrt log1p expm1 log2 log10 exp2 sinc``, the trigonometric and hyperbolic functions
and their inverses.

PyTorch's CPU kernels call the C library's complex functions (glibc's, which follow C99's Annex
G: the values at infinities and NaN, the signs of zeros on the branch cuts), or formulas of its
own built from them. Numba compiles the ``cmath`` module for both complex types (a complex64 in
float32, as ``c10::complex<float>``), but its ``exp``, ``sinh``, ``cosh``, ``tanh`` multiply an
infinity by ``sin(0)`` (``exp(800 + 0j)`` is inf + nan j there, glibc's inf + 0j) and its
inverse functions turn any NaN part into NaN + nan j. So ``exp sinh cosh tanh`` are written here
with C99's cases (and without overflow where a part is finite), ``sin cos tan`` through them
(``sin(z) = -i sinh(iz)``, C99's definitions), ``log`` with ``log1p`` near the unit circle,
and the inverse functions take ``cmath``'s values but C99's where a part is NaN; ``sqrt`` is
``cmath``'s. Division is c10's (Smith's scaling; Numba's raises ZeroDivisionError for a zero
divisor), ``sub`` PyTorch's ``a + b (-1 + 0j)`` (its zero signs), and where PyTorch composes a
formula of its own (``log1p expm1 sigmoid rsqrt log2 log10 exp2 sinc logaddexp pow``) the
formula here is that composition. Each is checked against PyTorch at special and random values
(tests/test_complex.py).

Each takes and returns an element of one complex type: ``_one``, ``_real`` and ``_complex_like``
give constants and results of the argument's type, since a bare ``1.0`` would make complex64
arithmetic complex128.
"""
from __future__ import annotations

import cmath
import math

import numpy as np
from numba import njit, types
from numba.extending import overload


def _one(z):
    """1 in ``z``'s complex type (in Python, as the CUDA simulator runs the formulas: this body;
    in compiled code, the overload below)."""
    return type(z)(1)


@overload(_one, inline="always")
def _one_typed(z):
    if z == types.complex64:
        return lambda z: np.complex64(1)
    return lambda z: 1 + 0j


def _real(z, value):
    """``value`` in the real type of ``z``'s parts."""
    return type(z.real)(value)


@overload(_real, inline="always")
def _real_typed(z, value):
    if z == types.complex64:
        return lambda z, value: np.float32(value)
    return lambda z, value: float(value)


def _limits(z):
    """(the largest ``x`` whose ``exp(x)`` is finite, rounded down; the ``|x|`` from which
    ``tanh(x)`` rounds to 1) in the real type of ``z``'s parts."""
    return type(z.real)(709.0), type(z.real)(22.0)


@overload(_limits, inline="always")
def _limits_typed(z):
    if z == types.complex64:
        return lambda z: (np.float32(88.0), np.float32(9.0))
    return lambda z: (709.0, 22.0)


# exp and the hyperbolic functions: C99's Annex G at the special values (as glibc's, which
# PyTorch's std:: functions call), and no overflow of a part whose value is finite (exp(800 + 0j)
# is inf + 0j, not inf + nan j: Numba's cmath.exp multiplies inf by sin(0)).
@njit(inline="always")
def cexp(z):
    x, y = z.real, z.imag
    if y == 0:  # (a real exponential; the imaginary zero kept with its sign)
        return _complex_like(z, math.exp(x), y)
    if math.isfinite(x):
        if not math.isfinite(y):
            return _complex_like(z, y - y, y - y)
        big, _ = _limits(z)
        if x > big:  # (exp(x) overflows where exp(x) cos(y) may not: exp(x/2) twice)
            h = math.exp(x * _real(z, 0.5))
            return _complex_like(z, h * math.cos(y) * h, h * math.sin(y) * h)
        r = math.exp(x)
        return _complex_like(z, r * math.cos(y), r * math.sin(y))
    if math.isnan(x):
        return _complex_like(z, x, x)
    if x > 0:  # (+inf)
        if math.isfinite(y):
            return _complex_like(z, x * math.cos(y), x * math.sin(y))
        return _complex_like(z, x, y - y)
    if math.isfinite(y):  # (-inf: zeros of the signs of cos(y), sin(y))
        zero = _real(z, 0.0)
        return _complex_like(z, zero * math.cos(y), zero * math.sin(y))
    return _complex_like(z, _real(z, 0.0), math.copysign(_real(z, 0.0), y))


@njit(inline="always")
def csinh(z):
    x, y = z.real, z.imag
    if y == 0:
        return _complex_like(z, math.sinh(x), y)
    if x == 0 and not math.isfinite(y):  # (sinh(±0 + i inf) = ±0 + i nan)
        return _complex_like(z, x, y - y)
    if math.isfinite(x) and math.isfinite(y):
        big, _ = _limits(z)
        if abs(x) > big:
            h = math.exp(abs(x) * _real(z, 0.5))
            half = _real(z, 0.5)
            return _complex_like(z, math.copysign(_real(z, 1.0), x) * (h * half * math.cos(y) * h),
                                 h * half * math.sin(y) * h)
        return _complex_like(z, math.sinh(x) * math.cos(y), math.cosh(x) * math.sin(y))
    if math.isinf(x):
        if math.isfinite(y):
            return _complex_like(z, x * math.cos(y), abs(x) * math.sin(y))
        return _complex_like(z, abs(x), y - y)  # (±inf + i nan: glibc's sign)
    nan = (x - x) + (y - y)  # (NaN with a nonzero y, or a finite x with an inf or NaN y)
    return _complex_like(z, nan, nan)


@njit(inline="always")
def ccosh(z):
    x, y = z.real, z.imag
    if y == 0:
        imag = y * math.copysign(_real(z, 1.0), x) if math.isfinite(x) else \
            _real(z, 0.0) * y if math.isnan(x) else y * math.copysign(_real(z, 1.0), x)
        return _complex_like(z, math.cosh(x), imag)
    if x == 0 and not math.isfinite(y):  # (cosh(±0 + i inf) = nan + i0)
        return _complex_like(z, y - y, _real(z, 0.0))
    if math.isfinite(x) and math.isfinite(y):
        big, _ = _limits(z)
        if abs(x) > big:
            h = math.exp(abs(x) * _real(z, 0.5))
            half = _real(z, 0.5)
            return _complex_like(z, h * half * math.cos(y) * h,
                                 math.copysign(_real(z, 1.0), x) * (h * half * math.sin(y) * h))
        return _complex_like(z, math.cosh(x) * math.cos(y), math.sinh(x) * math.sin(y))
    if math.isinf(x):
        if math.isfinite(y):
            return _complex_like(z, abs(x) * math.cos(y), x * math.sin(y))
        return _complex_like(z, abs(x), y - y)
    nan = (x - x) + (y - y)
    return _complex_like(z, nan, nan)


@njit(inline="always")
def ctanh(z):
    """Kahan's formula (as FreeBSD's and glibc's ctanh): ``t = tan(y)``, ``s = sinh(x)``,
    ``tanh(z) = (s sqrt(1 + s**2) (1 + t**2) + i t) / (1 + (1 + t**2) s**2)``."""
    x, y = z.real, z.imag
    if y == 0:
        return _complex_like(z, math.tanh(x), y)
    if math.isnan(x):
        return _complex_like(z, x, x + y)
    _, one_from = _limits(z)
    if not math.isfinite(y):
        if math.isinf(x):  # (tanh(±inf ± i inf) = ±1 ± i0)
            return _complex_like(z, math.copysign(_real(z, 1.0), x),
                                 math.copysign(_real(z, 0.0), y))
        if x == 0:  # (tanh(±0 + i inf) = ±0 + i nan)
            return _complex_like(z, x, y - y)
        return _complex_like(z, y - y, y - y)
    if abs(x) >= one_from:  # (tanh(x) rounds to ±1; the imaginary part 4 sin y cos y e^-2|x|)
        return _complex_like(z, math.copysign(_real(z, 1.0), x),
                             _real(z, 4.0) * math.sin(y) * math.cos(y) *
                             math.exp(_real(z, -2.0) * abs(x)))
    t = math.tan(y)
    beta = _real(z, 1.0) + t * t
    s = math.sinh(x)
    rho = math.sqrt(_real(z, 1.0) + s * s)
    denom = _real(z, 1.0) + beta * s * s
    return _complex_like(z, beta * rho * s / denom, t / denom)


# The trigonometric functions through the hyperbolic ones (C99's definitions): sin(z) =
# -i sinh(iz), cos(z) = cosh(iz), tan(z) = -i tanh(iz), with iz = -y + ix.
@njit(inline="always")
def csin(z):
    if math.isinf(z.imag) and not math.isfinite(z.real):  # (nan + i inf, sign unspecified: glibc's)
        return _complex_like(z, z.real - z.real, abs(z.imag))
    w = csinh(_complex_like(z, -z.imag, z.real))
    return _complex_like(z, w.imag, -w.real)


@njit(inline="always")
def ccos(z):
    return ccosh(_complex_like(z, -z.imag, z.real))


@njit(inline="always")
def ctan(z):
    w = ctanh(_complex_like(z, -z.imag, z.real))
    return _complex_like(z, w.imag, -w.real)


@njit(inline="always")
def clog(z):
    """``log|z| + i arg z``; ``log|z|`` as ``log1p((|x| - 1)(|x| + 1) + y**2) / 2`` near the unit
    circle (``log(1 + 1e-30j)`` is ``5e-61 + 1e-30j``, where ``log(hypot)`` gives 0)."""
    x, y = z.real, z.imag
    ax, ay = abs(x), abs(y)
    if ay > ax:
        ax, ay = ay, ax
    half = _real(z, 0.5)
    if ax > half and ax < _real(z, 2.0) and ay < _real(z, 1.0):
        re = half * math.log1p((ax - _real(z, 1.0)) * (ax + _real(z, 1.0)) + ay * ay)
    else:
        re = math.log(math.hypot(x, y))
    return _complex_like(z, re, math.atan2(y, x))


@njit(inline="always")
def csqrt(z):
    return cmath.sqrt(z)


# The inverse functions: Numba's cmath, with C99's values where a part is NaN (which Numba's
# turn into NaN + nan j); asin and atan through asinh and atanh (asin(z) = -i asinh(iz),
# atan(z) = -i atanh(iz)). (PyTorch's complex128 acos is pi/2 - asin(z): +0 where C99's, and
# this, have -0 (acos(0.5 + 0j)), and 0 for acos(1 + 1e-30j)'s real part, 1e-15.)
@njit(inline="always")
def casinh(z):
    x, y = z.real, z.imag
    if math.isnan(x) or math.isnan(y):
        if y == 0:  # (asinh(nan ± i0) = nan ± i0)
            return _complex_like(z, x, y)
        if math.isinf(x):  # (asinh(±inf + i nan) = ±inf + i nan)
            return _complex_like(z, x, y)
        if math.isinf(y):  # (asinh(nan ± i inf) = inf + i nan)
            return _complex_like(z, abs(y), x)
        return _complex_like(z, x + y, x + y)
    return cmath.asinh(z)


@njit(inline="always")
def cacosh(z):
    x, y = z.real, z.imag
    if math.isnan(x) or math.isnan(y):
        if x == 0:  # (acosh(±0 + i nan) = nan + i pi/2)
            return _complex_like(z, y, _real(z, math.pi / 2))
        if math.isinf(x) or math.isinf(y):  # (acosh(±inf + i nan), acosh(nan ± i inf))
            return _complex_like(z, _real(z, math.inf), x + y)
        return _complex_like(z, x + y, x + y)
    return cmath.acosh(z)


@njit(inline="always")
def catanh(z):
    x, y = z.real, z.imag
    if math.isnan(x) or math.isnan(y):
        if x == 0:  # (atanh(±0 + i nan) = ±0 + i nan)
            return _complex_like(z, x, y)
        if math.isinf(x):  # (atanh(±inf + i nan) = ±0 + i nan)
            return _complex_like(z, math.copysign(_real(z, 0.0), x), y)
        if math.isinf(y):  # (atanh(nan ± i inf) = 0 ± i pi/2)
            return _complex_like(z, _real(z, 0.0), math.copysign(_real(z, math.pi / 2), y))
        return _complex_like(z, x + y, x + y)
    return cmath.atanh(z)


@njit(inline="always")
def casin(z):
    x, y = z.real, z.imag
    if math.isnan(x) and math.isinf(y) or math.isinf(x) and math.isnan(y):
        return _complex_like(z, x + y, math.copysign(_real(z, math.inf), y if math.isinf(y)
                                                     else _real(z, 1.0)))
    w = casinh(_complex_like(z, -y, x))
    return _complex_like(z, w.imag, -w.real)


@njit(inline="always")
def cacos(z):
    x, y = z.real, z.imag
    if math.isnan(x) or math.isnan(y):
        if x == 0:  # (acos(±0 + i nan) = pi/2 + i nan)
            return _complex_like(z, _real(z, math.pi / 2), y)
        if math.isinf(x):  # (acos(±inf + i nan) = nan - i inf)
            return _complex_like(z, y, _real(z, -math.inf))
        if math.isinf(y):  # (acos(nan ± i inf) = nan ∓ i inf)
            return _complex_like(z, x, -y)
        return _complex_like(z, x + y, x + y)
    return cmath.acos(z)


@njit(inline="always")
def catan(z):
    x, y = z.real, z.imag
    if math.isinf(x) and math.isnan(y):  # (atan(±inf + i nan) = ±pi/2 + i0)
        return _complex_like(z, math.copysign(_real(z, math.pi / 2), x), _real(z, 0.0))
    w = catanh(_complex_like(z, -y, x))
    return _complex_like(z, w.imag, -w.real)


@njit(inline="always")
def clog10(z):
    """``log(z) / log(10)`` (libstdc++'s complex log10)."""
    w = clog(z)
    ln10 = _real(z, math.log(10.0))
    return _complex_like(z, w.real / ln10, w.imag / ln10)


@njit(inline="always")
def clog2(z):
    """PyTorch's ``log(z) / log(2)``."""
    w = clog(z)
    ln2 = _real(z, math.log(2.0))  # (a real divisor: part by part, as c10's complex / T)
    return _complex_like(z, w.real / ln2, w.imag / ln2)


@njit(inline="always")
def cexp2(z):
    """PyTorch's ``exp(z log 2)``."""
    ln2 = _real(z, math.log(2.0))  # (a real factor: part by part, as c10's complex * T)
    return cexp(_complex_like(z, z.real * ln2, z.imag * ln2))


@njit(inline="always")
def cdiv(a, b):
    """``a / b`` as ``c10::complex`` (and NumPy) divide: Smith's scaling, which neither
    overflows nor underflows where the quotient does not; a zero divisor gives ``a``'s parts
    over zeros (``1 / 0`` is ``inf + nan j``) where Numba's ``/`` raises ZeroDivisionError."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    abr, abi = abs(br), abs(bi)
    if abr >= abi:
        if abr == 0 and abi == 0:
            return _complex_like(a, ar / abr, ai / abi)
        rat = bi / br
        scl = _real(a, 1.0) / (br + bi * rat)
        return _complex_like(a, (ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = _real(a, 1.0) / (bi + br * rat)
    return _complex_like(a, (ar * rat + ai) * scl, (ai * rat - ar) * scl)


@njit(inline="always")
def csub(a, b):
    """``a - b`` as PyTorch subtracts: ``a + b (-1 + 0j)`` (its ``sub`` is ``add`` with
    ``alpha = -1``), whose zero signs differ from ``a - b``'s: ``(-2 - 0j) - 1`` is ``-3 + 0j``,
    on the other side of a branch cut (``sqrt``, ``log``) from ``-3 - 0j``."""
    return a + b * _complex_like(b, -1.0, 0.0)


@njit(inline="always")
def crsub(a, b):
    """``b - a`` as PyTorch's ``rsub``: ``b + a (-1 + 0j)``."""
    return b + a * _complex_like(a, -1.0, 0.0)


@njit(inline="always")
def cpow(a, b):
    """``a ** b`` as glibc's ``cpow`` (PyTorch's ``std::pow``): ``exp(b log a)``, so that
    ``0 ** 0`` is NaN + nan j and ``0 ** (-1 + 1j)`` inf + nan j, where CPython's algorithm
    (Numba's ``**``) gives 1 and raises."""
    return cexp(b * clog(a))


@njit(inline="always")
def crpow(a, b):
    """``b ** a`` (a number on the left: ``2 ** z``)."""
    return cpow(b, a)


@njit(inline="always")
def clogaddexp(a, b):
    """``log(exp(a) + exp(b))`` as PyTorch's complex logaddexp: ``log1p(exp(lo - hi)) + hi``
    with ``hi`` the operand of the larger real part; NaN + nan j where the other has a NaN part;
    where both real parts are one infinity, ``lo`` for -inf, ``log(exp(lo) + exp(hi))`` for
    +inf."""
    lo, hi = (b, a) if b.real <= a.real else (a, b)  # (a tie: PyTorch's lo is b)
    if math.isnan(lo.real) or math.isnan(lo.imag):
        nan = lo.real - lo.real + (lo.imag - lo.imag)
        return _complex_like(a, nan, nan)
    if not math.isfinite(lo.real) and lo.real == hi.real:
        if lo.real < 0:
            return lo
        return clog(cexp(lo) + cexp(hi))
    return clog1p(cexp(csub(lo, hi))) + hi


@njit(inline="always")
def csigmoid(z):
    """PyTorch's ``1 / (1 + exp(-z))``."""
    one = _one(z)
    return cdiv(one, one + cexp(-z))


@njit(inline="always")
def creciprocal(z):
    return cdiv(_one(z), z)


@njit(inline="always")
def crsqrt(z):
    return cdiv(_one(z), cmath.sqrt(z))


@njit(inline="always")
def clog1p(z):
    """``log(1 + z)`` as PyTorch computes it on the CPU (Kahan's way): ``u = 1 + z``; ``z``
    where ``u`` is 1, ``log(u)`` where ``u - 1`` is ``z`` exactly, else ``log(u) z / (u - 1)``
    (the rounding of ``1 + z`` divided out)."""
    one = _real(z, 1.0)
    u = _complex_like(z, z.real + one, z.imag)
    if u.real == one and u.imag == 0:
        return z
    log_u = clog(u)
    um1 = _complex_like(z, u.real - one, u.imag)
    if um1 == z:
        return log_u
    return log_u * cdiv(z, um1)


@njit(inline="always")
def cexpm1(z):
    """``exp(z) - 1`` accurate for small ``z`` (PyTorch's): ``expm1(x) cos(y) - 2 sin(y/2)**2``
    for the real part (no cancellation where ``exp(x) cos(y)`` is near 1), ``exp(x) sin(y)``."""
    x, y = z.real, z.imag
    s = math.sin(y * _real(z, 0.5))
    return _complex_like(z, math.expm1(x) * math.cos(y) - _real(z, 2.0) * s * s,
                         math.exp(x) * math.sin(y))


@njit(inline="always")
def csinc(z):
    """PyTorch's ``sin(pi z) / (pi z)``, 1 at 0."""
    if z == 0:
        return _one(z)
    pi = _real(z, math.pi)
    p = _complex_like(z, z.real * pi, z.imag * pi)
    return cdiv(csin(p), p)


def _complex_like(z, re, im):
    """``re + i im`` in ``z``'s complex type."""
    return type(z)(complex(re, im))


@overload(_complex_like, inline="always")
def _complex_like_typed(z, re, im):
    if z == types.complex64:
        return lambda z, re, im: np.complex64(complex(re, im))
    return lambda z, re, im: complex(re, im)
