"""Vectorisable exp, log, tanh and sigmoid for Numba kernels.

Inside an ``@njit`` loop, ``np.exp``/``np.log``/``np.tanh`` become calls to scalar libm (the PyPI
llvmlite has no SVML), which keeps the loop from vectorising and runs 10-60x slower than NumPy's
SIMD loops. The functions here are branch-free (selects, not jumps) and call nothing, so a loop
such as ``for i in range(n): out[i] = fast_exp(x[i])`` vectorises and matches or beats NumPy
(benchmarks/mathfuncs_speed.py).

Public functions, each ``@njit(inline="always")``, for one scalar:

    fast_exp(x)      e**x
    fast_log(x)      natural logarithm
    fast_tanh(x)     hyperbolic tangent
    fast_sigmoid(x)  1 / (1 + e**-x), without overflow

A float32 argument is computed in float32 and gives float32; anything else (float64, integers) is
computed in float64 and gives float64. Each has an ``_f32`` and an ``_f64`` implementation below,
picked by the argument's type when Numba compiles the caller (an ``overload``), so the other one
costs nothing. They are callable from Python too (one compilation per argument type).

Accuracy, measured by tests/test_mathfuncs.py against float64 / long double references (float32:
every float32 input checked): max error exp 1.1 ulp, log 1.2, tanh 2.6, sigmoid 2.4, subnormal
inputs and results included. Special values are exact: exp(-inf) = 0, exp(inf) = inf, overflow
to inf, gradual underflow; log(+-0) = -inf, log(x < 0) = nan, log(inf) = inf; tanh(+-inf) = +-1,
tanh(-0.0) = -0.0, tanh(x) = x for subnormal x; sigmoid(-inf) = 0, sigmoid(inf) = 1; nan gives
nan.

For kernel writers:

- Do not compile these (or kernels using them) with ``fastmath=True``: it lets LLVM assume no
  nan/inf and re-associate the ``(v + SHIFT) - SHIFT`` rounding trick away.
- A function that calls one of these asks LLVM for 512-bit vectors on AVX-512 CPUs (see
  ``_wide_vectors``; PREFER_512BIT_VECTORS turns it off).
- Numba's ``cache=True`` does not notice edits to this module in the kernels that inline it:
  clear their ``__pycache__`` after changing anything here.
- In an op-code kernel (``if op == EXP: return fast_exp(x) ...`` called in one loop), LLVM must
  unswitch the loop on ``op`` for each op's loop to vectorise. It does for a few branches that all
  return the argument's dtype, not when one branch gives float64 on float32 (``1 / x``, ``x * 0``)
  nor for a switch of ~20 ops some of which call libm: then every op runs scalar. Giving each hot
  op its own loop, ``if op == EXP: for i in range(n): out[i] = fast_exp(x[i])``, always works.

How they work. exp: x = k ln2 + r with |r| <= ln2/2 (Cody-Waite, k rounded by the 1.5 * 2**23
shifter trick), e**r from a minimax polynomial, times 2**k (``_ldexp``: vscalef on AVX-512, else
two exact power-of-two factors, so overflow and subnormal results round correctly). log: x = m
2**e with m in [sqrt(1/2), sqrt(2)) by integer arithmetic on the bits, then log(1 + f) = f - s (f
- z H(z)) with s = f / (2 + f), z = s**2 and a short minimax H. tanh: expm1(2|x|) / (expm1(2|x|)
+ 2) with the exp pieces, and the sign copied from x. sigmoid: 1 / (1 + e) or e / (1 + e) with e
= exp(-|x|). Polynomial coefficients are Remez fits for relative error, rounded to the working
precision.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

# Numba's SSA pass warns ("an internal pedantic check") when a function inlined with
# inline="always" appears twice in one compiled function, as these do in fused programs; the
# compiled code is correct. The warning is ignored while numgrad's own functions compile
# (``_cache._enable_caching``), never by a filter of the process's.

__all__ = ["fast_exp", "fast_log", "fast_tanh", "fast_sigmoid"]


# --------------------------------------------------------------------------------------------
# Bit-level helpers (LLVM IR). Each takes float32 or float64 and returns the same type.

# Per float type: (integer bits, mantissa bits, exponent bias, bits of sqrt(1/2)).
_LAYOUT = {
    types.float32: (32, 23, 127, 0x3F3504F3),
    types.float64: (64, 52, 1023, 0x3FE6A09E667F3BCD),
}


def _llvm_float(fty):
    return ir.FloatType() if fty == types.float32 else ir.DoubleType()


def _pow2_bits(builder, k32, fty):
    """IR: 2.0**k as a float of type ``fty`` from an i32 ``k`` within the normal exponent range."""
    nbits, mant, bias, _ = _LAYOUT[fty]
    ity = ir.IntType(nbits)
    e = builder.add(k32, ir.Constant(ir.IntType(32), bias))
    if nbits != 32:
        e = builder.zext(e, ity)
    return builder.bitcast(builder.shl(e, ir.Constant(ity, mant)), _llvm_float(fty))


def _has_avx512(context):
    """Whether the code being compiled targets AVX-512 (Numba compiles for the host CPU unless
    NUMBA_CPU_NAME / NUMBA_CPU_FEATURES say otherwise; this reads what it actually uses)."""
    features = getattr(context.codegen(), "_tm_features", "") or ""
    return "+avx512f" in features.split(",")


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c``, fused (one rounding) where the CPU has FMA: ``llvm.fmuladd``."""
    if a in _LAYOUT and a == b == c:
        def codegen(context, builder, sig, args):
            ty = args[0].type
            fnty = ir.FunctionType(ty, [ty] * 3)
            fn = builder.module.declare_intrinsic("llvm.fmuladd", [ty], fnty)
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


@intrinsic
def _clamp(typingctx, x, lo, hi):
    """``x`` limited to [lo, hi]; nan stays nan. One ``maxps``/``minps`` pair (the same written as
    two conditional expressions compiles to compares and blends)."""
    if x in _LAYOUT and x == lo == hi:
        def codegen(context, builder, sig, args):
            x, lo, hi = args
            t = builder.select(builder.fcmp_ordered(">", lo, x), lo, x)
            return builder.select(builder.fcmp_ordered("<", hi, t), hi, t)

        return x(x, lo, hi), codegen


@intrinsic
def _copysign(typingctx, a, b):
    """``|a|`` with the sign of ``b`` (``llvm.copysign``: one bitwise op)."""
    if a in _LAYOUT and a == b:
        def codegen(context, builder, sig, args):
            ty = args[0].type
            fnty = ir.FunctionType(ty, [ty, ty])
            fn = builder.module.declare_intrinsic("llvm.copysign", [ty], fnty)
            return builder.call(fn, args)

        return a(a, b), codegen


@intrinsic
def _shifted_int(typingctx, z):
    """The whole number k held in ``z = k + SHIFT`` (SHIFT = 1.5 * 2**mantissa_bits), as an int32
    read from z's low bits. Unlike a float-to-int conversion this is defined for every z (nan
    gives some integer), so nan can flow through exp and tanh without a final fix-up."""
    if z in _LAYOUT:
        def codegen(context, builder, sig, args):
            nbits, mant, _, _ = _LAYOUT[sig.args[0]]
            i32 = ir.IntType(32)
            bits = builder.bitcast(args[0], ir.IntType(nbits))
            if nbits == 32:  # bits(SHIFT) = 0x4B400000; z in [2**23, 2**24)
                return builder.sub(bits, ir.Constant(i32, 0x4B400000))
            return builder.trunc(bits, i32)  # bits(SHIFT) has 32 low zero bits

        return types.int32(z), codegen


@intrinsic
def _ldexp(typingctx, p, k):
    """``p * 2.0**k`` for an int32 ``k`` with |k| up to about twice the largest exponent,
    overflowing to inf and rounding subnormal results correctly.

    On AVX-512 this is ``llvm.ldexp``, one ``vscalefps``/``vscalefpd``. Elsewhere LLVM would make
    that a libm call per element, so 2**k is instead built from bits as two factors 2**(k//2) and
    2**(k - k//2), each a normal number: the first product is exact, the second rounds once."""
    if p in _LAYOUT and k == types.int32:
        def codegen(context, builder, sig, args):
            x, ki = args
            i32 = ir.IntType(32)
            if _has_avx512(context):
                fnty = ir.FunctionType(x.type, [x.type, i32])
                fn = builder.module.declare_intrinsic("llvm.ldexp", [x.type, i32], fnty)
                return builder.call(fn, [x, ki])
            k1 = builder.ashr(ki, ir.Constant(i32, 1))
            k2 = builder.sub(ki, k1)
            y = builder.fmul(x, _pow2_bits(builder, k1, sig.args[0]))
            return builder.fmul(y, _pow2_bits(builder, k2, sig.args[0]))

        return p(p, k), codegen


@intrinsic
def _pow2(typingctx, like, k):
    """``2.0**k``, of the same type as ``like``, for an int32 ``k`` in the normal exponent range."""
    if like in _LAYOUT and k == types.int32:
        def codegen(context, builder, sig, args):
            return _pow2_bits(builder, args[1], sig.args[0])

        return like(like, k), codegen


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


# --------------------------------------------------------------------------------------------
# Constants. Typed NumPy scalars, so float32 code stays float32 (a bare Python float would
# promote it to float64).

_f32 = np.float32
_f64 = np.float64

# exp: x = k ln2 + r. z = x log2(e) + SHIFT rounds to a whole number k = z - SHIFT, also held in
# z's low bits (_shifted_int). ln2 is split for the Cody-Waite reduction; the high parts have
# trailing zero bits, so k * LN2_HI is exact for every k the clamped range produces.
_LOG2E_F32 = _f32(1.44269504088896341)
_LN2_HI_F32 = _f32(0.693359375)  # 9 significant bits
_LN2_LO_F32 = _f32(-2.12194440e-4)
_SHIFT_F32 = _f32(12582912.0)  # 1.5 * 2**23
_EXP_HI_F32 = _f32(89.0)  # exp(89) overflows float32; k <= 128
_EXP_LO_F32 = _f32(-104.0)  # exp(-104) < 2**-150 rounds to 0; k >= -150

_LOG2E_F64 = _f64(1.4426950408889634)
_LN2_HI_F64 = _f64(6.93147180369123816490e-01)  # 0x3FE62E42FEE00000, 32 significant bits
_LN2_LO_F64 = _f64(1.90821492927058770002e-10)
_SHIFT_F64 = _f64(6755399441055744.0)  # 1.5 * 2**52
_EXP_HI_F64 = _f64(710.0)  # k <= 1024
_EXP_LO_F64 = _f64(-746.0)  # k >= -1076

# e**r - 1 = r + r**2 * P(r) on |r| <= ln2/2, P minimax for relative error: float32 degree 4
# (1.4e-7 relative, which the factor r**2 / (e**r - 1) <= 0.17 shrinks), float64 degree 9
# (2.3e-16, likewise).
_EXP_P_F32 = tuple(_f32(c) for c in (
    0.5, 1.6666578e-01, 4.1666854e-02, 8.363171e-03, 1.3901298e-03))
_EXP_P_F64 = (
    0.5000000000000001, 0.16666666666666644, 0.04166666666662417, 0.008333333333356271,
    0.0013888888917206227, 0.00019841269784534436, 2.4801521290818077e-05,
    2.7557355561804455e-06, 2.762009687232977e-07, 2.5068182663119064e-08)

# log: x = m 2**e, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f), z = s**2. Then
# log(1 + f) = 2 atanh(s) = 2s + s z H(z), and with 2s = f - s f (from s (2 + f) = f):
# log(1 + f) = f - s (f - z H(z)). f is exact and the s term is a correction of relative size
# |f|/2, so the rounding of s barely shows. H minimax on z in [0, 0.0295]: float32 degree 2
# (3e-7 relative), float64 degree 6 (5e-16); the factor z makes either negligible in the result.
_LOG_H_F32 = tuple(_f32(c) for c in (6.6666687e-01, 3.998874e-01, 2.958155e-01))
_LOG_H_F64 = (
    0.666666666666667, 0.3999999999989856, 0.2857142862638533, 0.22222211070313103,
    0.1818289368178637, 0.15331574004299578, 0.14618234130171173)
_FLT_MIN = _f32(1.1754943508222875e-38)
_TWO23_F32 = _f32(8388608.0)
_DBL_MIN = _f64(2.2250738585072014e-308)
_TWO54_F64 = _f64(18014398509481984.0)

# tanh(x) rounds to +-1 beyond these; clamping there keeps expm1(2|x|) finite (k <= 27 / 56).
_TANH_CLAMP_F32 = _f32(9.5)
_TANH_CLAMP_F64 = _f64(19.5)
_TWO_LOG2E_F32 = _f32(2.88539008177792682)
_TWO_LOG2E_F64 = _f64(2.8853900817779268)
_LN2_F32 = _f32(0.693147180559945309)
_LN2_F64 = _f64(0.693147180559945309)


# --------------------------------------------------------------------------------------------
# float32


@njit(inline="always")
def _expm1_poly_f32(r):
    """e**r - 1 for |r| <= ln2/2."""
    c = _EXP_P_F32
    p = _fma(c[4], r, c[3])
    p = _fma(p, r, c[2])
    p = _fma(p, r, c[1])
    p = _fma(p, r, c[0])
    return _fma(r * r, p, r)


@njit(inline="always")
def _reduce_f32(x):
    """(r, k) with x = k ln2 + r, |r| <= ln2/2, k an int32 (for |x| < 2**21; nan gives nan r)."""
    z = _fma(x, _LOG2E_F32, _SHIFT_F32)
    kf = z - _SHIFT_F32
    r = _fma(kf, -_LN2_HI_F32, x)
    r = _fma(kf, -_LN2_LO_F32, r)
    return r, _shifted_int(z)


@njit(inline="always")
def _exp_f32(x):
    # Beyond the clamp the result is 0 / inf anyway; nan passes through.
    r, k = _reduce_f32(_clamp(x, _EXP_LO_F32, _EXP_HI_F32))
    return _ldexp(_expm1_poly_f32(r) + _f32(1.0), k)


@njit(inline="always")
def _log_f32(x):
    tiny = x < _FLT_MIN  # subnormal (or not positive): scale into the normal range first
    m, e = _split(x * _TWO23_F32 if tiny else x)
    e = e - _f32(23.0) if tiny else e
    f = m - _f32(1.0)
    s = _div(f, _f32(2.0) + f)
    z = s * s
    c = _LOG_H_F32
    h = _fma(c[2], z, c[1])
    h = _fma(h, z, c[0])
    y = _fma(-s, _fma(-z, h, f), f)  # log(1 + f)
    y = _fma(e, _LN2_HI_F32, _fma(e, _LN2_LO_F32, y))  # + e ln2
    # Special cases: log(+-0) = -inf, log(x < 0) = log(nan) = nan, log(inf) = inf.
    y = y if x > _f32(0.0) else (_f32(-np.inf) if x == _f32(0.0) else _f32(np.nan))
    return x if x == _f32(np.inf) else y


@njit(inline="always")
def _tanh_f32(x):
    a = abs(x)
    a = _TANH_CLAMP_F32 if _TANH_CLAMP_F32 < a else a  # one minps; nan stays nan
    # 2|x| = k ln2 + r. One FMA is enough here: the error k (ln2 - LN2) reaches the result
    # divided by about e**(2|x|), since tanh is flat where k is large.
    z = _fma(a, _TWO_LOG2E_F32, _SHIFT_F32)
    r = _fma(z - _SHIFT_F32, -_LN2_F32, a + a)
    s = _pow2(a, _shifted_int(z))
    em = _fma(s, _expm1_poly_f32(r), s - _f32(1.0))  # expm1(2|x|) = 2**k expm1(r) + 2**k - 1
    return _copysign(_div(em, em + _f32(2.0)), x)  # copysign: odd, and -0.0 stays -0.0


@njit(inline="always")
def _sigmoid_f32(x):
    e = _exp_f32(-abs(x))  # in [0, 1]: never overflows
    return _div(_f32(1.0) if x >= _f32(0.0) else e, _f32(1.0) + e)


# --------------------------------------------------------------------------------------------
# float64: the same algorithms with longer polynomials.


@njit(inline="always")
def _expm1_poly_f64(r):
    """e**r - 1 for |r| <= ln2/2."""
    c = _EXP_P_F64
    p = _fma(c[9], r, c[8])
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
    z = _fma(x, _LOG2E_F64, _SHIFT_F64)
    kf = z - _SHIFT_F64
    r = _fma(kf, -_LN2_HI_F64, x)
    r = _fma(kf, -_LN2_LO_F64, r)
    return r, _shifted_int(z)


@njit(inline="always")
def _exp_f64(x):
    r, k = _reduce_f64(_clamp(x, _EXP_LO_F64, _EXP_HI_F64))
    return _ldexp(_expm1_poly_f64(r) + 1.0, k)


@njit(inline="always")
def _log_f64(x):
    tiny = x < _DBL_MIN
    m, e = _split(x * _TWO54_F64 if tiny else x)
    e = e - 54.0 if tiny else e
    f = m - 1.0
    s = _div(f, 2.0 + f)
    z = s * s
    c = _LOG_H_F64
    h = _fma(c[6], z, c[5])
    h = _fma(h, z, c[4])
    h = _fma(h, z, c[3])
    h = _fma(h, z, c[2])
    h = _fma(h, z, c[1])
    h = _fma(h, z, c[0])
    y = _fma(-s, _fma(-z, h, f), f)
    y = _fma(e, _LN2_HI_F64, _fma(e, _LN2_LO_F64, y))
    y = y if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
    return x if x == np.inf else y


@njit(inline="always")
def _tanh_f64(x):
    a = abs(x)
    a = _TANH_CLAMP_F64 if _TANH_CLAMP_F64 < a else a
    # 2|x| = k ln2 + r. One FMA is enough here: the error k (ln2 - LN2) reaches the result
    # divided by about e**(2|x|), since tanh is flat where k is large.
    z = _fma(a, _TWO_LOG2E_F64, _SHIFT_F64)
    r = _fma(z - _SHIFT_F64, -_LN2_F64, a + a)
    s = _pow2(a, _shifted_int(z))
    em = _fma(s, _expm1_poly_f64(r), s - 1.0)
    return _copysign(_div(em, em + 2.0), x)


@njit(inline="always")
def _sigmoid_f64(x):
    e = _exp_f64(-abs(x))
    return _div(1.0 if x >= 0.0 else e, 1.0 + e)


# --------------------------------------------------------------------------------------------
# Public entry points: float32 stays float32, everything else is float64.


# Each is a Python function whose Numba implementation is chosen by the argument's type
# (``overload``), not by an ``isinstance`` test in its body: Numba resolves such a test only where
# it knows the argument's type before it inlines, which is not so for the result of another
# inlined function (a fused loop's ``fast_tanh(x * 1.5 + 0.5)``): both branches were then typed,
# and float32 came out float64.
def _entry(name: str, doc: str, f32, f64):
    def python(x):
        return _python_calls[name](x)

    python.__name__ = python.__qualname__ = name
    python.__doc__ = doc

    @overload(python, inline="always")
    def typed(x):
        if x == types.float32:
            def impl(x):
                _wide_vectors()
                return f32(x)
        else:
            def impl(x):
                _wide_vectors()
                return f64(np.float64(x))
        return impl

    return python


fast_exp = _entry("fast_exp", "e**x.", _exp_f32, _exp_f64)
fast_log = _entry("fast_log", "Natural logarithm (nan for x < 0, -inf for x = 0).", _log_f32,
                  _log_f64)
fast_tanh = _entry("fast_tanh", "Hyperbolic tangent.", _tanh_f32, _tanh_f64)
fast_sigmoid = _entry("fast_sigmoid", "The logistic function 1 / (1 + e**-x), computed without "
                      "overflow.", _sigmoid_f32, _sigmoid_f64)

# Called from Python, each compiles once per argument type.
_python_calls = {
    "fast_exp": njit(lambda x: fast_exp(x)),
    "fast_log": njit(lambda x: fast_log(x)),
    "fast_tanh": njit(lambda x: fast_tanh(x)),
    "fast_sigmoid": njit(lambda x: fast_sigmoid(x)),
}


# --------------------------------------------------------------------------------------------
# More CPU variants of the formula table's rows (kernels/formulas.py names them): log2 and exp2
# with the pieces above (exact at powers of two, as PyTorch's), trunc, frac and fmod through
# NumPy's functions, which lower to LLVM's ``trunc`` intrinsic (vectorised) and ``frem`` (a libm
# call), and silu / gelu(approximate='tanh') through fast_exp / fast_tanh.

from .. import scalar as _scalar

_INV_LN2_F32 = _f32(1.4426950408889634)
_INV_LN2_F64 = _f64(1.4426950408889634)


@njit(inline="always")
def _log2_f32(x):
    tiny = x < _FLT_MIN
    m, e = _split(x * _TWO23_F32 if tiny else x)
    e = e - _f32(23.0) if tiny else e
    f = m - _f32(1.0)
    s = _div(f, _f32(2.0) + f)
    z = s * s
    c = _LOG_H_F32
    h = _fma(c[2], z, c[1])
    h = _fma(h, z, c[0])
    y = _fma(-s, _fma(-z, h, f), f)  # log(1 + f), then log2 x = e + log(1 + f) / ln 2
    y = _fma(y, _INV_LN2_F32, e)
    y = y if x > _f32(0.0) else (_f32(-np.inf) if x == _f32(0.0) else _f32(np.nan))
    return x if x == _f32(np.inf) else y


@njit(inline="always")
def _log2_f64(x):
    tiny = x < _DBL_MIN
    m, e = _split(x * _TWO54_F64 if tiny else x)
    e = e - 54.0 if tiny else e
    f = m - 1.0
    s = _div(f, 2.0 + f)
    z = s * s
    c = _LOG_H_F64
    h = _fma(c[6], z, c[5])
    h = _fma(h, z, c[4])
    h = _fma(h, z, c[3])
    h = _fma(h, z, c[2])
    h = _fma(h, z, c[1])
    h = _fma(h, z, c[0])
    y = _fma(-s, _fma(-z, h, f), f)
    y = _fma(y, _INV_LN2_F64, e)
    y = y if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
    return x if x == np.inf else y


@njit(inline="always")
def _exp2_f32(x):
    # x = k + r, |r| <= 1/2 (k rounded by the shifter, r exact), 2**r = e**(r ln 2)
    xc = _clamp(x, _f32(-155.0), _f32(130.0))
    z = xc + _SHIFT_F32
    r = xc - (z - _SHIFT_F32)
    return _ldexp(_expm1_poly_f32(r * _LN2_F32) + _f32(1.0), _shifted_int(z))


@njit(inline="always")
def _exp2_f64(x):
    xc = _clamp(x, _f64(-1080.0), _f64(1030.0))
    z = xc + _SHIFT_F64
    r = xc - (z - _SHIFT_F64)
    return _ldexp(_expm1_poly_f64(r * _LN2_F64) + 1.0, _shifted_int(z))


fast_log2 = _entry("fast_log2", "Base-2 logarithm (exact at powers of two).", _log2_f32,
                   _log2_f64)
fast_exp2 = _entry("fast_exp2", "2**x (exact at whole x).", _exp2_f32, _exp2_f64)
_python_calls["fast_log2"] = njit(lambda x: fast_log2(x))
_python_calls["fast_exp2"] = njit(lambda x: fast_exp2(x))


@njit(inline="always")
def trunc(x):
    return np.trunc(x)


@njit(inline="always")
def frac(x):
    return x - np.trunc(x)


@njit(inline="always")
def fmod(a, b):
    return np.fmod(a, b)


@njit(inline="always")
def remainder(a, b):
    return _scalar._remainder_of(np.fmod(a, b), b)


@njit(inline="always")
def silu(x):
    return _div(x, _scalar._one(x) + fast_exp(-x))


@njit(inline="always")
def silu_backward(grad, x):
    s = fast_sigmoid(x)
    return grad * s * (_scalar._one(x) + x * (_scalar._one(x) - s))


@njit(inline="always")
def gelu_tanh(x):
    inner = _scalar._gelu_beta(x) * (x + _scalar._gelu_kappa(x) * (x * x * x))
    return _scalar._half(x) * x * (_scalar._one(x) + fast_tanh(inner))


# erf and GELU (approximate='none') for float32 by two polynomial pieces joined by selects (so a
# loop over them vectorises, where libm's erff runs one element at a time), in float32
# arithmetic: for a = |x| <= 0.75, erf(a) = a P(a**2); above, erfc(a) = e**(-a**2) Q(t) with
# t = 1 / (1 + a / 2), and erf = 1 - erfc; from a = 4 on, erf is 1 in float32 and erfc
# (< 1.6e-8) is taken as 0, as float32's 1 + erf(x) gives it. P (degree 6 in a**2) and Q
# (degree 8 in t) are least-squares fits at 4,000 Chebyshev nodes of each interval against
# Python's math.erf and math.erfc (relative errors 2.7e-11 and 1.0e-9 in float64), their
# coefficients rounded to float32: erf within 2.4 ulp, GELU within 4.5e-7 of the exact value
# (PyTorch's float32 GELU: 1.2e-6), checked by tests/test_mathfuncs.py. Float64 keeps libm's
# erf (``scalar.gelu``, bit for bit).
_ERF_SMALL = (1.1283791670697636, -0.37612638451912356, 0.11283778749626328,
              -0.026864779823259403, 0.005216816822868005, -0.0008357357825334857,
              9.472999588959778e-05)
_ERFC_LARGE = (-0.00018772978075578438, 0.2854641435064778, 0.2557633304591229,
               0.3635815342284638, -0.14283727046591727, 0.6250249008203732,
               -0.5313512510708085, 0.15249951929767994, -0.007917600366514673)


_ERF_SMALL_F32 = tuple(_f32(c) for c in _ERF_SMALL)
_ERFC_LARGE_F32 = tuple(_f32(c) for c in _ERFC_LARGE)


@njit(inline="always")
def _erf_parts(a):
    """(erf(a), erfc(a)) of float32 ``a >= 0`` (or NaN), in float32 arithmetic."""
    one, half = _f32(1.0), _f32(0.5)
    u = a * a
    p = _ERF_SMALL_F32
    e_small = a * (p[0] + u * (p[1] + u * (p[2] + u * (p[3] + u * (p[4] + u * (
        p[5] + u * p[6]))))))
    q = _ERFC_LARGE_F32
    t = _div(one, one + half * a)  # (no zero test: 1 + a / 2 >= 1; a loop with one stays scalar)
    c_large = _exp_f32(-u) * (q[0] + t * (q[1] + t * (q[2] + t * (q[3] + t * (q[4] + t * (
        q[5] + t * (q[6] + t * (q[7] + t * q[8]))))))))
    small = a <= _f32(0.75)
    e = e_small if small else one - c_large
    c = one - e_small if small else c_large
    far = a >= _f32(4.0)
    return (one if far else e), (_f32(0.0) if far else c)


@njit(inline="always")
def _erf_f32(x):
    e, _ = _erf_parts(abs(x))
    return -e if x < _f32(0.0) else e if x > _f32(0.0) else x  # (+-0 and NaN kept)


@njit(inline="always")
def _erf_f64(x):
    return _scalar.erf(x)


# GELU's Phi needs erf only as 1 + erf (above 0) or as erfc (below): one piece, erfc(a) =
# e**(-a**2) Q(t) over the whole of 0 <= a < 4 (Q of degree 8 in t = 1 / (1 + a / 2), fitted as
# Q above at 4,000 Chebyshev nodes of [0, 4], relative error 3e-9 in float64; its constant term
# then moved by 1e-7 so that Q(1) is 1 in float32: Phi(0) = 1/2 exactly), and no select between
# two: 1.10 -> 0.77 ms of CPU for GELU of 512K float32 (the tiny GPT's MLP) on one thread, as
# accurate as the two pieces (within 4.5e-7 of the exact GELU; 2.1e-6 relative below 0).
_GELU_ERFC = (-0.00045490264892578125, 0.2896744006169212, 0.22714099235258703,
              0.4732762818840138, -0.40211986231966634, 1.0122180433497983,
              -0.8882610150823462, 0.338279179145088, -0.04975300006080917)
_GELU_ERFC_F32 = tuple(_f32(c) for c in _GELU_ERFC)


@njit(inline="always")
def _gelu_parts(x):
    """(Phi(x), e**(-x**2 / 2)) of float32 ``x``: Phi(x) = (1 + erf(x / sqrt 2)) / 2 without
    cancellation below 0, and the exp it takes, which GELU's backward needs too (one exp for
    both)."""
    one, half = _f32(1.0), _f32(0.5)
    a = abs(x) * _f32(0.7071067811865476)
    q = _GELU_ERFC_F32
    t = _div(one, one + half * a)
    e = _exp_f32(-(a * a))
    c = e * (q[0] + t * (q[1] + t * (q[2] + t * (q[3] + t * (q[4] + t * (
        q[5] + t * (q[6] + t * (q[7] + t * q[8]))))))))
    # (from a = 4, t <= 1/3, erfc is 0, as PyTorch's 1 + erf gives it: tested on t, which is
    # live anyway, where a test on a cost 20% of the kernel's time)
    c = c if t > _f32(0.3333333333333333) else _f32(0.0)
    return (half * (_f32(2.0) - c) if x >= _f32(0.0) else half * c), e


@njit(inline="always")
def _gelu_f32(x):
    return x * _gelu_parts(x)[0]


@njit(inline="always")
def _gelu_f64(x):
    return _scalar.gelu(x)


fast_erf = _entry("fast_erf", "The error function (float32: vectorised pieces; float64: libm's).",
                  _erf_f32, _erf_f64)
fast_gelu = _entry("fast_gelu", "x Phi(x), GELU (float32: vectorised pieces; float64: libm's erf).",
                   _gelu_f32, _gelu_f64)
_python_calls["fast_erf"] = njit(lambda x: fast_erf(x))
_python_calls["fast_gelu"] = njit(lambda x: fast_gelu(x))


def _gelu_backward(grad, x):
    raise NotImplementedError  # (called from kernels only: the overload below)


@overload(_gelu_backward, inline="always")
def _gelu_backward_typed(grad, x):
    if x == types.float32:
        def impl(grad, x):
            _wide_vectors()
            cdf, e = _gelu_parts(x)
            return grad * (cdf + x * (e * _f32(0.3989422804014327)))  # (1 / sqrt(2 pi))
    else:
        def impl(grad, x):
            return _scalar.gelu_backward(grad, x)
    return impl


@njit(inline="always")
def erf(x):
    return fast_erf(x)


@njit(inline="always")
def gelu(x):
    return fast_gelu(x)


@njit(inline="always")
def gelu_backward(grad, x):
    return _gelu_backward(grad, x)


@njit(inline="always")
def log2(x):
    return fast_log2(x)


@njit(inline="always")
def exp2(x):
    return fast_exp2(x)


# expm1 from exp's pieces: x = k ln2 + r, e**x - 1 = 2**k expm1(r) + (2**k - 1), one rounding
# (an FMA), for x in [LO, HI]; below it e**x - 1 rounds to -1, above it to e**x (fast_exp, which
# overflows where it should); -0.0 is kept. Vectorised elu, selu and celu use it.
_EXPM1_LO_F32, _EXPM1_HI_F32 = _f32(-30.0), _f32(20.0)  # (e**-30 < 2**-43)
_EXPM1_LO_F64, _EXPM1_HI_F64 = _f64(-40.0), _f64(40.0)


@njit(inline="always")
def _expm1_f32(x):
    r, k = _reduce_f32(_clamp(x, _EXPM1_LO_F32, _EXPM1_HI_F32))
    s = _pow2(x, k)
    small = _fma(s, _expm1_poly_f32(r), s - _f32(1.0))
    big = _exp_f32(x)
    em = big if x > _EXPM1_HI_F32 else small
    return x if x == _f32(0.0) else em


@njit(inline="always")
def _expm1_f64(x):
    r, k = _reduce_f64(_clamp(x, _EXPM1_LO_F64, _EXPM1_HI_F64))
    s = _pow2(x, k)
    small = _fma(s, _expm1_poly_f64(r), s - 1.0)
    big = _exp_f64(x)
    em = big if x > _EXPM1_HI_F64 else small
    return x if x == 0.0 else em


fast_expm1 = _entry("fast_expm1", "e**x - 1, accurate near 0.", _expm1_f32, _expm1_f64)
_python_calls["fast_expm1"] = njit(lambda x: fast_expm1(x))


@njit(inline="always")
def elu(x, alpha):
    return fast_expm1(x) * alpha if x <= _scalar._zero(x) else x


@njit(inline="always")
def elu_grad(x, alpha):
    return fast_exp(x) * alpha if x <= _scalar._zero(x) else _scalar._one(x)


@njit(inline="always")
def selu(x):
    if x <= _scalar._zero(x):
        return fast_expm1(x) * (_scalar._selu_alpha(x) * _scalar._selu_scale(x))
    return x * _scalar._selu_scale(x)


@njit(inline="always")
def selu_grad(x):
    if x <= _scalar._zero(x):
        return fast_exp(x) * (_scalar._selu_alpha(x) * _scalar._selu_scale(x))
    return _scalar._selu_scale(x)


@njit(inline="always")
def celu(x, alpha):
    if x <= _scalar._zero(x):
        return fast_expm1(x * (_scalar._one(x) / alpha)) * alpha
    return x


@njit(inline="always")
def celu_grad(x, alpha):
    if x <= _scalar._zero(x):
        inv = _scalar._one(x) / np.float32(alpha)
        return inv * alpha * fast_exp(x * inv)
    return _scalar._one(x)


# log1p from fast_log: log(1 + x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded (the
# correction restores what the rounding of u lost); x itself where u is 1, -inf at -1, inf at inf.
# Vectorised softplus, mish and logsigmoid use it.
@njit(inline="always")
def fast_log1p(x):
    """log(1 + x) for a float32 or float64 ``x`` (its type)."""
    one = _scalar._one(x)
    u = one + x
    d = u - one
    lu = fast_log(u)
    y = lu + _div(x - d, u)
    y = u if u == np.inf else y  # (x = inf)
    y = lu if u == _scalar._zero(x) else y  # (x = -1: -inf)
    return x if d == _scalar._zero(x) else y  # (tiny x, ±0)


@njit(inline="always")
def softplus_z(z, threshold):
    return z if z > threshold else fast_log1p(fast_exp(z))


@njit(inline="always")
def mish(x):
    return x * fast_tanh(fast_log1p(fast_exp(x)))


@njit(inline="always")
def log_sigmoid(x):
    m = x if x < _scalar._zero(x) else _scalar._zero(x)  # noqa: FURB136  (NaN kept)
    return m - fast_log1p(fast_exp(-abs(x)))


@njit(inline="always")
def softplus_grad(z, threshold):
    if z > threshold:
        return _scalar._one(z)
    e = fast_exp(z)
    return _div(e, e + _scalar._one(z))


@njit(inline="always")
def mish_backward(grad, x):
    s = fast_sigmoid(x)
    t = fast_tanh(fast_log1p(fast_exp(x)))
    return grad * (t + x * s * (_scalar._one(x) - t * t))


@njit(inline="always")
def log_sigmoid_backward(grad, x):
    z = fast_exp(-abs(x))
    q = _div(z, _scalar._one(x) + z)
    return grad * (_scalar._one(x) - q) if x < _scalar._zero(x) else grad * q


@njit(inline="always")
def gelu_tanh_backward(grad, x):
    x_sq = x * x
    inner = _scalar._gelu_beta(x) * (x + _scalar._gelu_kappa(x) * (x_sq * x))
    t = fast_tanh(inner)
    one = _scalar._one(x)
    left = _scalar._half(x) * x
    right_derivative = left * (one - t * t) * _scalar._gelu_beta(x) * (
        one + _scalar._three(x) * _scalar._gelu_kappa(x) * x_sq)
    return grad * (_scalar._half(x) * (one + t) + right_derivative)
