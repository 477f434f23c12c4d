"""Accuracy, special values and vectorisation of the fast exp/log/tanh/sigmoid in
numgrad.kernels.cpu.mathfuncs.

Errors are in ulp of the result's dtype against a more precise reference: float64 NumPy for the
float32 functions, long double (x87, 64-bit mantissa) for the float64 ones, or mpmath on
platforms whose long double is just a double. No timings here: benchmarks/mathfuncs_speed.py.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from numba import njit, types

from numgrad.kernels.cpu import mathfuncs as _mf
from numgrad.kernels.cpu.mathfuncs import fast_exp, fast_log, fast_sigmoid, fast_tanh


@njit
def _exp_loop(x, out):
    for i in range(x.size):
        out[i] = fast_exp(x[i])


@njit
def _log_loop(x, out):
    for i in range(x.size):
        out[i] = fast_log(x[i])


@njit
def _tanh_loop(x, out):
    for i in range(x.size):
        out[i] = fast_tanh(x[i])


@njit
def _sigmoid_loop(x, out):
    for i in range(x.size):
        out[i] = fast_sigmoid(x[i])


LOOPS = {"exp": _exp_loop, "log": _log_loop, "tanh": _tanh_loop, "sigmoid": _sigmoid_loop}
NUMPY = {"exp": np.exp, "log": np.log, "tanh": np.tanh}
DTYPES = [np.float32, np.float64]

# Max error in ulp asserted per function (both dtypes). Measured (exhaustively for float32):
# exp 1.08 / 1.06 (float32 / float64), log 0.95 / 1.17, tanh 2.46 / 2.58, sigmoid 2.40 / 2.39.
BOUND = {"exp": 2.0, "log": 2.0, "tanh": 3.0, "sigmoid": 3.0}


def run(name, x):
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    LOOPS[name](x, out)
    return out


# ---------------------------------------------------------------------------------------------
# Reference values and ulp errors

_LONG_DOUBLE_OK = np.finfo(np.longdouble).nmant >= 63


def _reference(name, x):
    """High-precision reference: an array of float64 (for float32 x) or long double (float64 x)."""
    hp = np.float64 if x.dtype == np.float32 else np.longdouble
    xh = x.astype(hp)
    with np.errstate(all="ignore"):
        if name == "exp":
            return np.exp(xh)
        if name == "log":
            return np.log(xh)
        if name == "tanh":
            return np.tanh(xh)
        e = np.exp(-np.abs(xh))
        return np.where(xh >= 0, 1 / (1 + e), e / (1 + e))


def _mpmath_errors(name, x, got):  # pragma: no cover - only where long double is a double
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 120
    f = {"exp": mpmath.exp, "log": mpmath.log, "tanh": mpmath.tanh,
         "sigmoid": lambda v: 1 / (1 + mpmath.exp(-v))}[name]
    fi = np.finfo(x.dtype)
    errs = []
    for xi, gi in zip(x.tolist(), got.tolist()):
        if np.isnan(xi) or np.isinf(xi) or (name == "log" and xi <= 0):
            continue
        r = f(mpmath.mpf(xi))
        if abs(r) > fi.max:
            errs.append(0.0 if gi == (np.inf if r > 0 else -np.inf) else np.inf)
            continue
        e = int(mpmath.floor(mpmath.log(abs(r), 2))) + 1 if r != 0 else fi.minexp
        ulp = mpmath.ldexp(1, max(e, fi.minexp + 1) - fi.nmant - 1)
        errs.append(float(abs(mpmath.mpf(gi) - r) / ulp))
    return np.array(errs)


def ulp_errors(name, x, got):
    """|got - exact| in ulp of the exact result's dtype (subnormal ulp below the normal range).
    Where the exact result is nan or rounds to +-inf, ``got`` must be exactly that (else inf)."""
    dt = x.dtype
    if dt == np.float64 and not _LONG_DOUBLE_OK:  # pragma: no cover
        return _mpmath_errors(name, x[:20000], got[:20000])
    fi = np.finfo(dt)
    ref = _reference(name, x)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref.astype(dt)
    special = ~np.isfinite(rounded)
    same = (rounded == got) | (np.isnan(rounded) & np.isnan(got))
    errs = np.where(special & ~same, np.inf, 0.0)
    fin = ~special
    r = ref[fin]
    _, e = np.frexp(np.abs(r))
    ulp = np.ldexp(np.ones_like(r), np.maximum(e, fi.minexp + 1) - fi.nmant - 1)
    errs[fin] = (np.abs(got[fin].astype(r.dtype) - r) / ulp).astype(np.float64)
    return errs


def assert_within(name, x, bound=None):
    got = run(name, x)
    assert got.dtype == x.dtype
    errs = ulp_errors(name, x, got)
    bound = BOUND[name] if bound is None else bound
    worst = int(np.argmax(errs))
    assert errs[worst] <= bound, (
        f"{name}({x[worst]!r}) = {got[worst]!r}: {errs[worst]:.3g} ulp > {bound}")
    return errs


# ---------------------------------------------------------------------------------------------
# Inputs


def _log_uniform(rng, dt, n, lo=None, hi=None, signs=True):
    """Magnitudes spread evenly over the exponents from ``lo`` (default: the smallest subnormal)
    to ``hi`` (default: the largest finite), with both signs."""
    fi = np.finfo(dt)
    lo = np.log(float(fi.smallest_subnormal)) if lo is None else np.log(lo)
    hi = np.log(float(fi.max)) if hi is None else np.log(hi)
    with np.errstate(over="ignore"):
        m = np.exp(rng.uniform(lo, hi, n)).astype(dt)
    m = m[np.isfinite(m)]
    if signs:
        m = np.where(rng.random(m.size) < 0.5, -m, m)
    return m


def _subnormals(dt, n):
    fi = np.finfo(dt)
    ints = np.linspace(1, 2 ** fi.nmant - 1, n).astype(np.int64)
    return (ints * fi.smallest_subnormal).astype(dt)


def _around(dt, values, steps=64):
    """Each value and its ``steps`` float neighbours either side, in dtype."""
    it = np.int32 if dt == np.float32 else np.int64
    v = np.asarray(values, dt)
    bits = v.view(it)[:, None] + np.arange(-steps, steps + 1, dtype=it)[None, :]
    out = bits.reshape(-1).view(dt)
    return out[np.isfinite(out)]


def sweep(name, dt, rng):
    fi = np.finfo(dt)
    f32 = dt == np.float32
    parts = [_log_uniform(rng, dt, 200_000), _subnormals(dt, 2_000)]
    if name == "exp":
        lo, hi = (-110, 95) if f32 else (-760, 720)
        big = float(np.log(fi.max))
        tiny = float(np.log(fi.smallest_normal))
        sub = float(np.log(fi.smallest_subnormal))
        parts += [np.linspace(lo, hi, 400_001, dtype=dt),
                  np.linspace(tiny, sub - 1, 50_001, dtype=dt),
                  _around(dt, [big, tiny, sub, 0.5 * np.log(2), -0.5 * np.log(2)])]
    elif name == "log":
        parts = [np.abs(p) for p in parts]
        parts += [np.linspace(0.5, 2, 400_001, dtype=dt),
                  1 + rng.uniform(-1e-3, 1e-3, 50_000).astype(dt),
                  _around(dt, [1.0, np.sqrt(0.5), np.sqrt(2.0), 2.0, 0.5, fi.smallest_normal,
                               fi.max]),
                  np.ldexp(np.ones(1, dt), np.arange(fi.minexp - fi.nmant, fi.maxexp)).astype(dt)]
    elif name == "tanh":
        lim = 12 if f32 else 25
        parts += [np.linspace(-lim, lim, 400_001, dtype=dt),
                  _log_uniform(rng, dt, 50_000, lo=1e-10, hi=1.0),
                  _around(dt, [0.55, 0.625, 9.0, 9.5, 19.0, 19.5])]
    else:  # sigmoid
        lim = 110 if f32 else 760
        parts += [np.linspace(-lim, lim, 400_001, dtype=dt), np.linspace(-4, 4, 100_001, dtype=dt)]
    x = np.concatenate([np.asarray(p, dt) for p in parts])
    return x[np.isfinite(x)]


# ---------------------------------------------------------------------------------------------
# Accuracy


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid"])
def test_accuracy_over_sweeps(name, dt, rng):
    errs = assert_within(name, sweep(name, dt, rng))
    assert np.mean(errs[np.isfinite(errs)]) < 0.5  # typical error well under an ulp


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_exp_subnormal_results_are_rounded_once(dt):
    """Results in the subnormal range are neither flushed to zero nor rounded twice: within half
    a subnormal ulp once the result is far enough below the normal range for the polynomial's
    relative error not to show, within 1 ulp nearer."""
    fi = np.finfo(dt)
    x = np.linspace(np.log(fi.smallest_normal), np.log(fi.smallest_subnormal), 100_001, dtype=dt)
    assert_within("exp", x, bound=1.0)
    deep = x[x < np.log(fi.smallest_normal) - 12 * np.log(2)]
    assert_within("exp", deep, bound=0.51)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_small_arguments_keep_relative_accuracy(dt):
    fi = np.finfo(dt)
    small = _log_uniform(np.random.default_rng(1), dt, 100_000,
                         lo=float(fi.smallest_subnormal), hi=1e-3)
    x = np.concatenate([small, _subnormals(dt, 1000)])
    assert_within("tanh", x)
    assert_within("exp", x)
    assert_within("sigmoid", x)
    assert_within("log", 1 + np.abs(x))
    # No absolute error floor near 0 (the checks above are relative); subnormal x gives x itself.
    sub = x[np.abs(x) < fi.smallest_normal]
    np.testing.assert_array_equal(run("tanh", sub), sub)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_agrees_with_numpy(dt, rng):
    """Within 4 ulp of NumPy's own (SIMD) loops, with the same nan/inf/zero pattern."""
    it = np.int32 if dt == np.float32 else np.int64
    x = np.concatenate([_log_uniform(rng, dt, 300_000), rng.uniform(-30, 30, 100_000).astype(dt)])
    for name, npf in NUMPY.items():
        got = run(name, x)
        with np.errstate(all="ignore"):
            want = npf(x)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        a, b = got[fin].view(it).astype(np.int64), want[fin].view(it).astype(np.int64)
        lo = np.iinfo(it).min
        a, b = np.where(a < 0, lo - a, a), np.where(b < 0, lo - b, b)  # order-preserving ints
        assert np.abs(a - b).max() <= 4, name


# ---------------------------------------------------------------------------------------------
# Special values


def _check(name, dt, pairs):
    x = np.array([p[0] for p in pairs], dt)
    want = np.array([p[1] for p in pairs], dt)
    got = run(name, x)
    np.testing.assert_array_equal(got, want, err_msg=f"{name} {dt.__name__}")  # nan == nan here
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]),
                                  err_msg=f"{name} {dt.__name__}: sign of zero")


inf, nan = np.inf, np.nan


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_exp_special_values(dt):
    fi = np.finfo(dt)
    _check("exp", dt, [(-inf, 0.0), (inf, inf), (nan, nan), (0.0, 1.0), (-0.0, 1.0),
                       (1000.0, inf), (-1000.0, 0.0), (fi.max, inf), (-fi.max, 0.0),
                       (fi.smallest_subnormal, 1.0), (-fi.smallest_subnormal, 1.0)])
    big = np.log(fi.max.astype(np.float64))  # last finite result is just below
    x = np.array([np.nextafter(dt(big), dt(0)), np.nextafter(dt(big), dt(inf))], dt)
    got = run("exp", x)
    assert np.isfinite(got[0]) and got[1] == inf


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_log_special_values(dt):
    fi = np.finfo(dt)
    _check("log", dt, [(0.0, -inf), (-0.0, -inf), (-1.0, nan), (-fi.smallest_subnormal, nan),
                       (-inf, nan), (inf, inf), (nan, nan), (1.0, 0.0), (2.0, np.log(2.0))])
    assert_within("log", np.array([fi.smallest_subnormal, fi.smallest_normal, fi.max], dt))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_tanh_special_values(dt):
    fi = np.finfo(dt)
    s = fi.smallest_subnormal
    _check("tanh", dt, [(inf, 1.0), (-inf, -1.0), (nan, nan), (0.0, 0.0), (-0.0, -0.0),
                        (100.0, 1.0), (-100.0, -1.0), (fi.max, 1.0), (-fi.max, -1.0),
                        (s, s), (-s, -s), (1e-30, 1e-30), (-1e-30, -1e-30)])


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: d.__name__)
def test_sigmoid_special_values(dt):
    fi = np.finfo(dt)
    _check("sigmoid", dt, [(inf, 1.0), (-inf, 0.0), (nan, nan), (0.0, 0.5), (-0.0, 0.5),
                           (2000.0, 1.0), (-2000.0, 0.0), (fi.max, 1.0), (-fi.max, 0.0)])
    # No overflow on the way: deep in the negative range the result is e**x, subnormal included.
    x = np.linspace(np.log(fi.smallest_subnormal), np.log(fi.smallest_normal) + 5, 10_001, dtype=dt)
    got = run("sigmoid", x)
    assert (got > 0).mean() > 0.99
    assert_within("sigmoid", x)


def test_nan_payload_sign_does_not_matter():
    for dt in DTYPES:
        x = np.array([nan, -nan], dt)
        for name in LOOPS:
            assert np.isnan(run(name, x)).all(), name


# ---------------------------------------------------------------------------------------------
# Types and code generation


@njit
def _call_each(x):
    return fast_exp(x), fast_log(x), fast_tanh(x), fast_sigmoid(x)


@pytest.mark.parametrize("arg, result", [(np.float32(0.5), types.float32),
                                         (np.float64(0.5), types.float64),
                                         (3, types.float64)])
def test_result_type_follows_argument(arg, result):
    got = _call_each(arg)
    sig = [s for s in _call_each.nopython_signatures if s.args[0] == _call_each.typeof_pyval(arg)]
    assert sig and sig[0].return_type == types.UniTuple(result, 4)
    want = [np.exp(np.float64(arg)), np.log(np.float64(arg)), np.tanh(np.float64(arg)),
            1 / (1 + np.exp(-np.float64(arg)))]
    np.testing.assert_allclose(got, want, rtol=1e-6 if result == types.float32 else 1e-15)


# Scalar libm (or LLVM intrinsics that become libm calls). llvm.ldexp is fine: on AVX-512 it is
# one vscalef instruction, and mathfuncs uses it nowhere else.
_LIBM_CALL = re.compile(
    r"call[^\n]*@(?:(?:exp|log|tanh|expm1|log1p)f?|llvm\.(?:exp|exp2|log|log2)\.\w+)\(")
_VECTOR = re.compile(r"<\d+ x (?:float|double)>")


def _assert_vectorised(dispatcher, what):
    for sig in dispatcher.signatures:
        ir = dispatcher.inspect_llvm(sig)
        assert _VECTOR.search(ir), f"{what} {sig}: the loop did not vectorise"
        assert not _LIBM_CALL.search(ir), f"{what} {sig}: calls libm"


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid"])
def test_loops_vectorise_and_call_nothing(name):
    for dt in DTYPES:
        run(name, np.ones(64, dt))
    _assert_vectorised(LOOPS[name], name)


# The op-code kernel pattern of kernels/cpu/elementwise.py: one compiled loop per dtype, the op a
# loop-invariant branch that LLVM unswitches. With a few branches, all returning the argument's
# dtype, each op's loop vectorises with fast_* inside. (Measured, not asserted: a float64 branch
# such as ``1 / x`` on float32, or a switch of ~20 ops some of which call libm, stops LLVM from
# unswitching and every op runs scalar, 5-10x slower; giving each hot op its own loop inside the
# branch, ``if op == EXP: for i in ...: out[i] = fast_exp(x[i])``, avoids both.)
_OP_EXP, _OP_LOG, _OP_TANH, _OP_SIGMOID, _OP_NEG = range(5)


@njit(inline="always")
def _op(op, x):
    if op == _OP_EXP:
        return fast_exp(x)
    if op == _OP_LOG:
        return fast_log(x)
    if op == _OP_TANH:
        return fast_tanh(x)
    if op == _OP_SIGMOID:
        return fast_sigmoid(x)
    return -x


@njit
def _op_loop(op, x, out):
    for i in range(x.size):
        out[i] = _op(op, x[i])


def test_op_code_kernel_pattern_vectorises():
    for dt in DTYPES:
        x = np.linspace(0.01, 5, 1001, dtype=dt)
        for op, name in enumerate(["exp", "log", "tanh", "sigmoid"]):
            out = np.empty_like(x)
            _op_loop(op, x, out)
            np.testing.assert_array_equal(out, run(name, x))
    _assert_vectorised(_op_loop, "op-code kernel")


def test_kernels_inlining_mathfuncs_are_stamped_with_it():
    """Numba's cache keys a kernel on its own source file only; the softmax, LSTM-cell and fused
    attention kernels inline mathfuncs.py (and, through it, kernels/scalar.py), so the cache's
    stamp of each covers those files: an edit of mathfuncs.py recompiles them."""
    import os

    from numgrad.kernels.cpu import _cache, attention, rnn, softmax

    for module in (softmax, rnn, attention):
        names = {os.path.relpath(p, _cache._KERNELS)
                 for p in _cache._kernel_dependencies(os.path.abspath(module.__file__))}
        assert {os.path.join("cpu", "mathfuncs.py"), "scalar.py"} <= names, module.__name__


# ---------------------------------------------------------------------------------------------
# erf and GELU (approximate='none') in float32: vectorised pieces (float64: libm's erf)
@njit
def _erf_loop(x, out):
    for i in range(x.size):
        out[i] = _mf.erf(x[i])


@njit
def _gelu_loop(x, out):
    for i in range(x.size):
        out[i] = _mf.gelu(x[i])


@njit
def _gelu_grad_loop(x, out):
    for i in range(x.size):
        out[i] = _mf.gelu_backward(np.float32(1.0), x[i])


def _erf_gelu_loop(x, erf, gelu, grad):
    _erf_loop(x, erf)
    _gelu_loop(x, gelu)
    _gelu_grad_loop(x, grad)


def test_float32_erf_and_gelu_are_accurate_and_vectorise():
    """erf within 2.5 ulp of the exact value, GELU and its derivative within 5e-7 (PyTorch's
    float32 GELU is off by up to 1.2e-6 there), over a sweep with the interval ends (0.75 and 4
    after the 1/sqrt(2) of GELU), signed zeros, a subnormal, infinities and NaN; the loop
    vectorises and calls no libm."""
    import math

    sweep = np.linspace(-9, 9, 200001)
    ends = np.array([0.75, 4.0, 0.75 * math.sqrt(2), 4 * math.sqrt(2)])
    x = np.concatenate([sweep, ends, -ends, np.nextafter(ends, 0), [1e-45, 1e-30]]).astype(
        np.float32)
    erf, gelu, grad = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    _erf_gelu_loop(x, erf, gelu, grad)
    xd = x.astype(np.float64)
    ref = np.array([math.erf(v) for v in xd])
    ulps = np.abs(erf - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 2.5
    cdf = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in xd])
    assert np.abs(gelu - xd * cdf).max() <= 5e-7
    pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    assert np.abs(grad - (cdf + xd * pdf)).max() <= 5e-7
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    e, g, d = (np.empty_like(special) for _ in range(3))
    _erf_gelu_loop(special, e, g, d)
    assert np.array_equal(np.signbit(e[:2]), [False, True]) and list(e[2:4]) == [1.0, -1.0]
    assert list(g[:3]) == [0.0, 0.0, np.inf] and np.isnan(g[3]) and np.isnan(g[4])
    assert list(d[:2]) == [0.5, 0.5] and np.isnan(d[2:]).all()  # (inf * pdf(inf): as PyTorch)
    for loop in (_erf_loop, _gelu_loop, _gelu_grad_loop):
        _assert_vectorised(loop, loop.__name__)
