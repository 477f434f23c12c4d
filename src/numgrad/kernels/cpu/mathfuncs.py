"""Vectorisable exp, log, tanh and sigmoid for Numba kernels.

Inside an ``@njit`` loop, ``np.exp``/``np.log``/``np.tanh`` become calls to scalar libm (the PyPI
llvmlite has no SVML), which stops the loop from vectorising and runs 10-60x slower than NumPy's
SIMD loops. The functions here are branch-free (selects, not jumps) and call nothing, so a loop
such as ``for i in range(n): out[i] = fast_exp(x[i])`` vectorises and beats NumPy.

Public functions, each ``@njit(inline="always")``, for one scalar:

    fast_exp(x)      e**x
    fast_log(x)      natural logarithm
    fast_tanh(x)     hyperbolic tangent
    fast_sigmoid(x)  1 / (1 + e**-x), without overflow

A float32 argument is computed in float32 and gives float32; anything else (float64, integers) is
computed in float64 and gives float64. Each has its own ``_f32``/``_f64`` implementation below,
picked by an ``isinstance`` test that Numba resolves at compile time, so the unused one costs
nothing. They are callable from Python too (one compilation per argument type).

Accuracy (tests/test_mathfuncs.py measures it against float64 / long double references): at most
a few ulp over the whole range, subnormal inputs and results included, and IEEE special values
exactly: exp(-inf) = 0, exp(inf) = inf, overflow to inf, gradual underflow; log(0) = -inf,
log(x < 0) = nan, log(inf) = inf; tanh(+-inf) = +-1, tanh(-0.0) = -0.0, tanh(x) = x for tiny x;
sigmoid(-inf) = 0, sigmoid(inf) = 1; nan gives nan everywhere.

Do not compile these (or kernels using them) with ``fastmath=True``: it licenses LLVM to assume
no nan/inf and to re-associate the ``(v + SHIFT) - SHIFT`` rounding trick away.

How they work: exp is a Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, a minimax polynomial for
e**r, and a multiplication by 2**k built from bits (split into two factors so overflow and
subnormal results round correctly). log splits x = m 2**e with m in [sqrt(1/2), sqrt(2)) by
integer arithmetic on the bits, then a polynomial for log(1 + f) (float32) or the fdlibm
atanh form s = f / (2 + f) (float64). tanh is expm1(2|x|) / (expm1(2|x|) + 2), with expm1 from
the exp pieces. sigmoid is 1 / (1 + e) or e / (1 + e) with e = exp(-|x|). The polynomial
coefficients are minimax (Remez) fits, rounded to the working precision.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["fast_exp", "fast_log", "fast_tanh", "fast_sigmoid"]


# --------------------------------------------------------------------------------------------
# Bit-level helpers (LLVM IR). Each takes float32 or float64 and returns the same type.

# Per float type: (integer bits, mantissa bits, exponent bias, bits of sqrt(1/2)).
_LAYOUT = {
    types.float32: (32, 23, 127, 0x3F3504F3),
    types.float64: (64, 52, 1023, 0x3FE6A09E667F3BCD),
}


def _pow2_bits(builder, k32, fty):
    """IR: 2.0**k as a float of type ``fty`` from an i32 ``k`` within the normal exponent range."""
    nbits, mant, bias, _ = _LAYOUT[fty]
    ity = ir.IntType(nbits)
    e = builder.add(k32, ir.Constant(ir.IntType(32), bias))
    if nbits != 32:
        e = builder.zext(e, ity)
    return builder.bitcast(builder.shl(e, ir.Constant(ity, mant)), ir.FloatType() if nbits == 32
                           else ir.DoubleType())


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c``, fused (one rounding) where the CPU has FMA: ``llvm.fmuladd``."""
    if a in _LAYOUT and a == b == c:
        def codegen(context, builder, sig, args):
            ty = args[0].type
            fn = builder.module.declare_intrinsic("llvm.fmuladd", [ty], ir.FunctionType(ty, [ty] * 3))
            return builder.call(fn, args)

        return a(a, b, c), codegen


@intrinsic
def _div(typingctx, a, b):
    """``a / b`` as a bare IEEE division: Numba's ``/`` checks for a zero divisor to raise
    ZeroDivisionError, and that branch stops loops from vectorising."""
    if a in _LAYOUT and a == b:
        def codegen(context, builder, sig, args):
            return builder.fdiv(*args)

        return a(a, b), codegen


def _has_avx512(context):
    """Whether the code being compiled targets AVX-512 (Numba compiles for the host CPU unless
    NUMBA_CPU_NAME / NUMBA_CPU_FEATURES say otherwise; this reads what it actually uses)."""
    features = getattr(context.codegen(), "_tm_features", "") or ""
    return "+avx512f" in features.split(",")


@intrinsic
def _ldexp(typingctx, p, k):
    """``p * 2.0**k`` for a whole-number float ``k`` with |k| up to about twice the largest exponent,
    overflowing to inf and rounding subnormal results correctly.

    On AVX-512 this is ``llvm.ldexp``, one ``vscalefps``/``vscalefpd``. Elsewhere LLVM would make
    that a libm call per element, so 2**k is instead built from bits as two factors 2**(k//2) and
    2**(k - k//2), each a normal number: the first product is exact, the second rounds once."""
    if p in _LAYOUT and p == k:
        def codegen(context, builder, sig, args):
            fty = sig.args[0]
            x, kf = args
            i32 = ir.IntType(32)
            ki = builder.fptosi(kf, i32)
            if _has_avx512(context):
                fnty = ir.FunctionType(x.type, [x.type, i32])
                fn = builder.module.declare_intrinsic("llvm.ldexp", [x.type, i32], fnty)
                return builder.call(fn, [x, ki])
            k1 = builder.ashr(ki, ir.Constant(i32, 1))
            k2 = builder.sub(ki, k1)
            y = builder.fmul(x, _pow2_bits(builder, k1, fty))
            return builder.fmul(y, _pow2_bits(builder, k2, fty))

        return p(p, k), codegen


# Whether a function that calls fast_* asks LLVM for 512-bit vectors (see _wide_vectors).
PREFER_512BIT_VECTORS = True


@intrinsic
def _wide_vectors(typingctx):
    """Let the function being compiled use 512-bit vectors on AVX-512 CPUs; a no-op elsewhere.

    LLVM's tuning for recent Intel CPUs prefers 256-bit vectors, while NumPy's own exp/log/tanh
    loops use 512-bit ones: at 256 bits, float32 log and tanh and float64 exp and log stay 1.2-2x
    slower than NumPy however tight the loop. This sets the ``"prefer-vector-width"="512"`` LLVM
    attribute on the enclosing compiled function (with ``inline="always"``, the kernel whose loop
    calls fast_*), which changes how it is vectorised, never what it computes. Set
    PREFER_512BIT_VECTORS = False before compiling to turn it off."""
    def codegen(context, builder, sig, args):
        if PREFER_512BIT_VECTORS and _has_avx512(context):
            try:  # llvmlite accepts only flag attributes, so add the string attribute to the set
                set.add(builder.function.attributes, '"prefer-vector-width"="512"')
            except Exception:  # pragma: no cover - an llvmlite that stores attributes otherwise
                pass
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _pow2(typingctx, k):
    """``2.0**k`` for a whole-number float ``k`` within the normal exponent range."""
    if k in _LAYOUT:
        def codegen(context, builder, sig, args):
            ki = builder.fptosi(args[0], ir.IntType(32))
            return _pow2_bits(builder, ki, sig.args[0])

        return k(k), codegen


@intrinsic
def _split(typingctx, x):
    """``(m, e)`` with ``x = m * 2**e``, ``m`` in [sqrt(1/2), sqrt(2)) and ``e`` a whole number (as
    a float of x's type), for a positive normal finite ``x``; garbage otherwise (callers select the
    special cases away). Integer arithmetic on the bits, as musl's log does it."""
    if x in _LAYOUT:
        def codegen(context, builder, sig, args):
            fty = sig.args[0]
            nbits, mant, bias, sqrt_half = _LAYOUT[fty]
            ity = ir.IntType(nbits)
            i32 = ir.IntType(32)
            one = bias << mant  # bits of 1.0
            ix = builder.bitcast(args[0], ity)
            # Shift the bits so that m in [sqrt(1/2), sqrt(2)) shares one exponent field value.
            ix = builder.add(ix, ir.Constant(ity, one - sqrt_half))
            e = builder.lshr(ix, ir.Constant(ity, mant))  # x > 0: no sign bit
            if nbits != 32:
                e = builder.trunc(e, i32)
            e = builder.sub(e, ir.Constant(i32, bias))
            mbits = builder.and_(ix, ir.Constant(ity, (1 << mant) - 1))
            mbits = builder.add(mbits, ir.Constant(ity, sqrt_half))
            m = builder.bitcast(mbits, args[0].type)
            ef = builder.sitofp(e, args[0].type)
            return context.make_tuple(builder, sig.return_type, [m, ef])

        return types.UniTuple(x, 2)(x), codegen


# --------------------------------------------------------------------------------------------
# Constants. Typed NumPy scalars, so float32 code stays float32 (a bare Python float would
# promote it to float64).

_f32 = np.float32
_f64 = np.float64

# exp: ln 2 split for the Cody-Waite reduction. The high parts have trailing zero bits, so
# k * LN2_HI is exact for every k the clamped range produces.
_LOG2E_F32 = _f32(1.44269504088896341)
_LN2_HI_F32 = _f32(0.693359375)  # 9 significant bits
_LN2_LO_F32 = _f32(-2.12194440e-4)
_SHIFT_F32 = _f32(12582912.0)  # 1.5 * 2**23: (v + SHIFT) - SHIFT rounds v to a whole number
_EXP_HI_F32 = _f32(89.0)  # exp(89) overflows float32
_EXP_LO_F32 = _f32(-104.0)  # exp(-104) < 2**-150 rounds to 0

_LOG2E_F64 = _f64(1.4426950408889634)
_LN2_HI_F64 = _f64(6.93147180369123816490e-01)  # 0x3FE62E42FEE00000, 32 significant bits
_LN2_LO_F64 = _f64(1.90821492927058770002e-10)
_SHIFT_F64 = _f64(6755399441055744.0)  # 1.5 * 2**52
_EXP_HI_F64 = _f64(710.0)
_EXP_LO_F64 = _f64(-746.0)

# e**r = 1 + r + r**2 * P(r) on |r| <= ln2/2; P minimax for relative error. float32: degree 5
# (error 1e-8 relative, rounded); float64: degree 10 (6e-18).
_EXP_P_F32 = tuple(_f32(c) for c in (
    5.0e-01, 1.6666667e-01, 4.1666467e-02, 8.333361e-03, 1.3933643e-03, 1.9857816e-04))
_EXP_P_F64 = (
    0.5, 0.1666666666666667, 0.041666666666666616, 0.00833333333332614,
    0.0013888888888918072, 0.0001984126987482127, 2.4801587245577905e-05,
    2.7557255386706835e-06, 2.755734967755528e-07, 2.510522672781307e-08,
    2.088938738826741e-09)

# log, float32: log(1 + f) = f - f**2/2 + f**3 * Q(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]; Q
# minimax of degree 8 (7e-8 relative).
_LOG_Q_F32 = tuple(_f32(c) for c in (
    3.333333e-01, -2.4999994e-01, 2.0000716e-01, -1.6668059e-01, 1.4249305e-01,
    -1.2420105e-01, 1.1677155e-01, -1.1514954e-01, 7.037671e-02))
_FLT_MIN = _f32(1.1754943508222875e-38)
_TWO23_F32 = _f32(8388608.0)

# log, float64 (fdlibm's form): log(1 + f) = f - hfsq + s * (hfsq + z * H(z)), s = f / (2 + f),
# z = s**2, hfsq = f**2 / 2; H minimax of degree 6 on z in [0, 0.0295] (5e-16 relative, which
# the factor z makes 1e-17 of the result).
_LOG_H_F64 = (
    0.666666666666667, 0.3999999999989856, 0.2857142862638533, 0.22222211070313103,
    0.1818289368178637, 0.15331574004299578, 0.14618234130171173)
_DBL_MIN = _f64(2.2250738585072014e-308)
_TWO54_F64 = _f64(18014398509481984.0)

# tanh(x) rounds to +-1 beyond these; clamping there keeps expm1(2|x|) finite.
_TANH_CLAMP_F32 = _f32(9.5)
_TANH_CLAMP_F64 = _f64(19.5)


# --------------------------------------------------------------------------------------------
# float32


@njit(inline="always")
def _expm1_poly_f32(r):
    """e**r - 1 for |r| <= ln2/2 (about 1 ulp)."""
    c = _EXP_P_F32
    p = _fma(c[5], r, c[4])
    p = _fma(p, r, c[3])
    p = _fma(p, r, c[2])
    p = _fma(p, r, c[1])
    p = _fma(p, r, c[0])
    return _fma(r * r, p, r)


@njit(inline="always")
def _reduce_f32(x):
    """(k, r) with x = k ln2 + r, k whole, |r| <= ln2/2 (x not nan, |x| < 2**21)."""
    k = _fma(x, _LOG2E_F32, _SHIFT_F32) - _SHIFT_F32
    r = _fma(k, -_LN2_HI_F32, x)
    r = _fma(k, -_LN2_LO_F32, r)
    return k, r


@njit(inline="always")
def _exp_f32(x):
    # Clamp to where the result is already 0 / inf (nan goes to the bottom; restored below).
    xc = x if x > _EXP_LO_F32 else _EXP_LO_F32
    xc = xc if xc < _EXP_HI_F32 else _EXP_HI_F32
    k, r = _reduce_f32(xc)
    y = _ldexp(_expm1_poly_f32(r) + _f32(1.0), k)
    return y if x == x else x


@njit(inline="always")
def _log_f32(x):
    tiny = x < _FLT_MIN  # subnormal (or not positive): scale into the normal range first
    m, e = _split(x * _TWO23_F32 if tiny else x)
    e = e - _f32(23.0) if tiny else e
    f = m - _f32(1.0)
    z = f * f
    c = _LOG_Q_F32
    q = _fma(c[8], f, c[7])
    q = _fma(q, f, c[6])
    q = _fma(q, f, c[5])
    q = _fma(q, f, c[4])
    q = _fma(q, f, c[3])
    q = _fma(q, f, c[2])
    q = _fma(q, f, c[1])
    q = _fma(q, f, c[0])
    y = _fma(e, _LN2_LO_F32, f * z * q)
    y = _fma(z, _f32(-0.5), y)
    y = _fma(e, _LN2_HI_F32, f + y)
    # Special cases: log(+-0) = -inf, log(x < 0) = log(nan) = nan, log(inf) = inf.
    y = y if x > _f32(0.0) else (_f32(-np.inf) if x == _f32(0.0) else _f32(np.nan))
    return x if x == _f32(np.inf) else y


@njit(inline="always")
def _tanh_f32(x):
    a = abs(x)
    a = a if a < _TANH_CLAMP_F32 else _TANH_CLAMP_F32  # nan too; restored below
    k, r = _reduce_f32(a + a)
    s = _pow2(k)
    em = _fma(s, _expm1_poly_f32(r), s - _f32(1.0))  # expm1(2|x|)
    t = _div(em, em + _f32(2.0))
    # Odd, and x itself for +-0 and nan.
    return t if x > _f32(0.0) else (-t if x < _f32(0.0) else x)


@njit(inline="always")
def _sigmoid_f32(x):
    e = _exp_f32(-abs(x))  # in (0, 1]: never overflows
    return _div(_f32(1.0) if x >= _f32(0.0) else e, _f32(1.0) + e)


# --------------------------------------------------------------------------------------------
# float64


@njit(inline="always")
def _expm1_poly_f64(r):
    """e**r - 1 for |r| <= ln2/2 (about 1 ulp)."""
    c = _EXP_P_F64
    p = _fma(c[10], r, c[9])
    p = _fma(p, r, c[8])
    p = _fma(p, r, c[7])
    p = _fma(p, r, c[6])
    p = _fma(p, r, c[5])
    p = _fma(p, r, c[4])
    p = _fma(p, r, c[3])
    p = _fma(p, r, c[2])
    p = _fma(p, r, c[1])
    p = _fma(p, r, c[0])
    return _fma(r * r, p, r)


@njit(inline="always")
def _reduce_f64(x):
    k = _fma(x, _LOG2E_F64, _SHIFT_F64) - _SHIFT_F64
    r = _fma(k, -_LN2_HI_F64, x)
    r = _fma(k, -_LN2_LO_F64, r)
    return k, r


@njit(inline="always")
def _exp_f64(x):
    xc = x if x > _EXP_LO_F64 else _EXP_LO_F64
    xc = xc if xc < _EXP_HI_F64 else _EXP_HI_F64
    k, r = _reduce_f64(xc)
    y = _ldexp(_expm1_poly_f64(r) + 1.0, k)
    return y if x == x else x


@njit(inline="always")
def _log_f64(x):
    tiny = x < _DBL_MIN
    m, e = _split(x * _TWO54_F64 if tiny else x)
    e = e - 54.0 if tiny else e
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = _div(f, 2.0 + f)
    z = s * s
    c = _LOG_H_F64
    h = _fma(c[6], z, c[5])
    h = _fma(h, z, c[4])
    h = _fma(h, z, c[3])
    h = _fma(h, z, c[2])
    h = _fma(h, z, c[1])
    h = _fma(h, z, c[0])
    y = e * _LN2_HI_F64 - ((hfsq - _fma(s, _fma(z, h, hfsq), e * _LN2_LO_F64)) - f)
    y = y if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
    return x if x == np.inf else y


@njit(inline="always")
def _tanh_f64(x):
    a = abs(x)
    a = a if a < _TANH_CLAMP_F64 else _TANH_CLAMP_F64
    k, r = _reduce_f64(a + a)
    s = _pow2(k)
    em = _fma(s, _expm1_poly_f64(r), s - 1.0)
    t = _div(em, em + 2.0)
    return t if x > 0.0 else (-t if x < 0.0 else x)


@njit(inline="always")
def _sigmoid_f64(x):
    e = _exp_f64(-abs(x))
    return _div(1.0 if x >= 0.0 else e, 1.0 + e)


# --------------------------------------------------------------------------------------------
# Public entry points: float32 stays float32, everything else is float64.


@njit(inline="always")
def fast_exp(x):
    """e**x."""
    _wide_vectors()
    if isinstance(x, np.float32):
        return _exp_f32(x)
    return _exp_f64(np.float64(x))


@njit(inline="always")
def fast_log(x):
    """Natural logarithm (nan for x < 0, -inf for x = 0)."""
    _wide_vectors()
    if isinstance(x, np.float32):
        return _log_f32(x)
    return _log_f64(np.float64(x))


@njit(inline="always")
def fast_tanh(x):
    """Hyperbolic tangent."""
    _wide_vectors()
    if isinstance(x, np.float32):
        return _tanh_f32(x)
    return _tanh_f64(np.float64(x))


@njit(inline="always")
def fast_sigmoid(x):
    """The logistic function 1 / (1 + e**-x), computed without overflow."""
    _wide_vectors()
    if isinstance(x, np.float32):
        return _sigmoid_f32(x)
    return _sigmoid_f64(np.float64(x))
