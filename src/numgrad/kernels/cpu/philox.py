"""Philox4x32-10, the counter-based generator of PyTorch's CUDA generator and of JAX (Salmon et
al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).

A draw is a pure function of a key (the seed) and a counter, so the generator's whole state is
two integers, ``state = [seed, offset]`` (an int64 array that the draw advances in place): eager
code and a compiled replay that call these kernels with the same state draw the same numbers,
and a replay reads and advances the state as eager does. Each counter gives four 32-bit words:
four float32 values, or two float64 values of 53 random bits.

The other draws keep that convention (``state[1]`` advances by the counters a draw covers, the
same for every draw of that size). Integers (``_integers``) take one 32-bit word each where the
range has at most 2**32 values (four a counter), else 64 bits (two a counter), mapped to the
range by Lemire's multiply-shift with rejection, so exactly uniform; a rejected value's next
attempt takes the same word of the same counter with the counter's third word set to the
attempt's number (1, 2 ...; every first attempt has it 0), so a rejection never moves the
offset. A permutation (``_permutation``) is Fisher-Yates (inside out) with those bounded
integers, one slot a step. Normal values are Box-Muller of pairs of uniforms, float32 ones in
float32 from 24-bit uniforms (four a counter, as PyTorch computes float32 normals), the others in
float64 from 53-bit ones (two a counter), with the logarithm, sine and cosine as series that
vectorise and that the CUDA kernels compile too (``_gaussians``). Exponential values are
``-log(1 - u)`` of 53-bit uniforms (two a counter); a categorical draw (``_categorical``) inverts
the cumulative weights at one 53-bit uniform a sample. The random bits are made in loops over
whole counters that vectorise, and mapped to their ranges after.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ... import _lowp, _pool
from . import _workers

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
_TWO32 = np.uint64(1 << 32)
_UNKNOWN = np.uint64(2 ** 64 - 1)  # (a rejection threshold not computed yet: none is this large)


@njit(cache=True, inline="always")  # (inlined: the loops over counters then vectorise)
def _block(c0, c1, c2, c3, k0, k1):
    """The four words of counter (c0, c1, c2, c3) under key (k0, k1): ten rounds (each value
    a 32-bit word held in a uint64)."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> _SHIFT) ^ c1 ^ k0, p1 & _LOW,
                          (p0 >> _SHIFT) ^ c3 ^ k1, p0 & _LOW)
        k0 = (k0 + _W0) & _LOW
        k1 = (k1 + _W1) & _LOW
    return c0, c1, c2, c3


@njit(cache=True, inline="always")
def _words(seed, offset, b, attempt=0):
    """The four words of the ``b``-th counter after ``offset`` under key ``seed`` (``attempt``:
    the counter's third word, 0 but for the retries of a rejected integer draw)."""
    c = np.uint64(offset) + np.uint64(b)
    k = np.uint64(seed)
    return _block(c & _LOW, c >> _SHIFT, np.uint64(attempt), np.uint64(0), k & _LOW,
                  k >> _SHIFT)


@njit(cache=True, inline="always")
def _unit53(hi, lo):
    """A float64 in [0, 1) of 53 bits of two words (as NumPy's ``random()``)."""
    return (np.float64(hi >> np.uint64(5)) * 67108864.0
            + np.float64(lo >> np.uint64(6))) / 9007199254740992.0


@njit(cache=True)
def _uniform32(seed, offset, out):
    scale = np.float32(1.0 / 16777216.0)  # (24 bits a value: [0, 1))
    eight = np.uint64(8)
    n = out.size
    for b in range(n // 4):
        w0, w1, w2, w3 = _words(seed, offset, b)
        out[4 * b] = np.float32(w0 >> eight) * scale
        out[4 * b + 1] = np.float32(w1 >> eight) * scale
        out[4 * b + 2] = np.float32(w2 >> eight) * scale
        out[4 * b + 3] = np.float32(w3 >> eight) * scale
    if n % 4:
        w = _words(seed, offset, n // 4)
        for j in range(n % 4):
            out[4 * (n // 4) + j] = np.float32(w[j] >> eight) * scale
    return (n + 3) // 4


@njit(cache=True)
def _uniform64(seed, offset, out):
    n = out.size
    for b in range(n // 2):
        w0, w1, w2, w3 = _words(seed, offset, b)
        out[2 * b] = _unit53(w0, w1)
        out[2 * b + 1] = _unit53(w2, w3)
    if n % 2:
        w0, w1, w2, w3 = _words(seed, offset, n // 2)
        out[n - 1] = _unit53(w0, w1)
    return (n + 1) // 2


def _series(sign: float, first: int, terms: int) -> tuple:
    """The coefficients of the Taylor series in ``f`` of ``sin(pi/2 f)`` (``first`` 1) or
    ``cos(pi/2 f)`` (``first`` 0), ``terms`` of them, in powers of ``f**2``."""
    return tuple(sign ** k * (math.pi / 2) ** (2 * k + first) / math.factorial(2 * k + first)
                 for k in range(terms))


# (|f| <= 1/2: the terms left out are under 2**-53 of the sum)
_S0, _S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8 = _series(-1.0, 1, 9)
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9 = _series(-1.0, 0, 10)
_LN2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_MANTISSA = np.int64((1 << 52) - 1)
_ONE = np.int64(1023 << 52)  # (the bits of 1.0)
_SHIFTER = 1.5 * 2.0 ** 52  # (x + _SHIFTER - _SHIFTER: x rounded to an integer, |x| < 2**51)


@njit(cache=True, inline="always")
def _gaussians(u1, u2):
    """Box-Muller: ``r cos(2 pi u2)`` and ``r sin(2 pi u2)`` with ``r = sqrt(-2 log(1 - u1))``,
    two independent standard normal values of two uniforms in [0, 1) (float64; ``1 - u1`` in
    (0, 1]: no log(0)), as ``r**2`` and the cosine and sine (the caller takes the square root
    and the products: ``_pair``). The logarithm and the sine and cosine are series in
    arithmetic alone (no call, so that a loop over counters vectorises), the CUDA kernels' too
    (``kernels/cuda/philox.py`` compiles this function): ``log(x) = e log 2 + 2 atanh(s)`` for
    ``x = y 2**e``, ``y`` in [sqrt(1/2), sqrt(2)), ``s = (y - 1) / (y + 1)``; ``2 pi u2 = (q +
    f) pi / 2`` with ``q`` an integer and ``|f| <= 1/2``, the quarter turn ``q`` picking the
    sine or the cosine of ``f pi / 2`` and its sign. Within a few units in the last place of
    the exact values."""
    x = 1.0 - u1
    bits = np.float64(x).view(np.int64)
    e = np.float64((bits >> np.int64(52)) - np.int64(1023))
    y = np.int64((bits & _MANTISSA) | _ONE).view(np.float64)
    big = y > _SQRT2
    y = y * 0.5 if big else y
    e = e + 1.0 if big else e
    s = (y - 1.0) / (y + 1.0)
    z = s * s
    atanh = s + s * z * (1.0 / 3 + z * (1.0 / 5 + z * (1.0 / 7 + z * (1.0 / 9 + z * (
        1.0 / 11 + z * (1.0 / 13 + z * (1.0 / 15 + z * (1.0 / 17 + z * (1.0 / 19 + z / 21)))))))))
    squared = -2.0 * (e * _LN2 + 2.0 * atanh)  # (r**2, its square root taken by the caller)
    v = 4.0 * u2
    q = (v + _SHIFTER) - _SHIFTER
    f = v - q
    h = f * f
    sine = f * (_S0 + h * (_S1 + h * (_S2 + h * (_S3 + h * (_S4 + h * (_S5 + h * (_S6 + h * (
        _S7 + h * _S8))))))))
    cosine = _C0 + h * (_C1 + h * (_C2 + h * (_C3 + h * (_C4 + h * (_C5 + h * (_C6 + h * (
        _C7 + h * (_C8 + h * _C9))))))))
    odd = (q == 1.0) | (q == 3.0)
    c = sine if odd else cosine
    c = -c if (q == 1.0) | (q == 2.0) else c
    t = cosine if odd else sine
    t = -t if (q == 2.0) | (q == 3.0) else t
    return squared, c, t


_F32 = np.float32
_S32 = tuple(_F32(c) for c in _series(-1.0, 1, 5))  # (|f| <= 1/2: under 2**-24 left out)
_C32 = tuple(_F32(c) for c in _series(-1.0, 0, 6))
_ATANH32 = tuple(_F32(1.0 / k) for k in (3, 5, 7, 9, 11))
_ZERO32, _HALF32, _ONE32, _TWO32F, _FOUR32 = _F32(0), _F32(0.5), _F32(1), _F32(2), _F32(4)
_LN2_32, _SQRT2_32 = _F32(_LN2), _F32(_SQRT2)
_SHIFTER32 = _F32(1.5 * 2.0 ** 23)


@njit(cache=True, inline="always")
def _gaussians32(u1, u2):
    """``_gaussians`` in float32 (float32 uniforms of 24 bits, as PyTorch's CPU normal draws
    of float32 values; shorter series, each constant float32, so that every operation is
    float32 in Numba, in the CUDA simulator and on a GPU alike)."""
    x = _ONE32 - u1
    bits = np.int64(np.float32(x).view(np.int32))
    e = np.float32((bits >> 23) - 127)
    y = np.int32((bits & 0x7FFFFF) | 0x3F800000).view(np.float32)
    big = y > _SQRT2_32
    y = y * _HALF32 if big else y
    e = e + _ONE32 if big else e
    s = (y - _ONE32) / (y + _ONE32)
    z = s * s
    a3, a5, a7, a9, a11 = _ATANH32
    atanh = s + s * z * (a3 + z * (a5 + z * (a7 + z * (a9 + z * a11))))
    squared = _ZERO32 - _TWO32F * (e * _LN2_32 + _TWO32F * atanh)
    v = _FOUR32 * u2
    q = (v + _SHIFTER32) - _SHIFTER32
    f = v - q
    h = f * f
    s0, s1, s2, s3, s4 = _S32
    c0, c1, c2, c3, c4, c5 = _C32
    sine = f * (s0 + h * (s1 + h * (s2 + h * (s3 + h * s4))))
    cosine = c0 + h * (c1 + h * (c2 + h * (c3 + h * (c4 + h * c5))))
    odd = (q == _ONE32) | (q == _F32(3))
    c = sine if odd else cosine
    c = -c if (q == _ONE32) | (q == _TWO32F) else c
    t = cosine if odd else sine
    t = -t if (q == _TWO32F) | (q == _F32(3)) else t
    return squared, c, t


@intrinsic
def _sqrt(typingctx, x):
    """The square root of a float32 or float64: LLVM's ``sqrt`` intrinsic (one instruction, in
    vectors; Numba's ``math.sqrt`` calls libm's, which keeps a loop from vectorising).
    Correctly rounded, as CUDA's ``math.sqrt``."""
    if x not in (types.float32, types.float64):
        return None

    def codegen(context, builder, signature, args):
        f = builder.module.declare_intrinsic("llvm.sqrt", [args[0].type])
        return builder.call(f, args)
    return x(x), codegen


@njit(cache=True, inline="always")
def _pair(u1, u2):
    """``_gaussians`` of the float64 uniforms ``u1`` and ``u2``."""
    squared, c, t = _gaussians(u1, u2)
    r = _sqrt(squared)
    return r * c, r * t


@njit(cache=True, inline="always")
def _pair32(w1, w2):
    """``_gaussians32`` of the 24-bit uniforms of the uint32 words ``w1`` and ``w2`` (as
    ``_uniform32`` makes them)."""
    scale = np.float32(1.0 / 16777216.0)
    squared, c, t = _gaussians32(np.float32(w1 >> np.uint32(8)) * scale,
                                 np.float32(w2 >> np.uint32(8)) * scale)
    r = _sqrt(squared)
    return r * c, r * t


@njit(cache=True, inline="always")
def _unit53w(hi, lo):
    """``_unit53`` of two uint32 words (its value; converted as int32, which vectorises)."""
    return (np.float64(np.int32(hi >> np.uint32(5))) * 67108864.0
            + np.float64(np.int32(lo >> np.uint32(6)))) / 9007199254740992.0


_CHUNK = 1024  # (counters whose words a normal draw makes at a time, into a buffer in cache)


@njit(cache=True, nogil=True, error_model="numpy")
def _normal32(seed, offset, out, first, last, words):
    """float32 draws: the standard normal values of counters ``first:last``, two pairs of
    24-bit uniforms a counter (``_pair32``), into ``out`` (float32, or float64 to be scaled; the
    values of whole counters). The words of ``_CHUNK`` counters are made first into ``words``
    (``4 * _CHUNK`` uint32, the caller's: an array made here compiled NumPy's empty with the
    kernel, 0.2-0.7 s of a first model's initialisation) by ``_bits``, a loop that vectorises,
    then mapped (another, indexed from 0 up; error_model="numpy": a zero-division check would
    keep it scalar)."""
    n = out.size
    for start in range(first, last, _CHUNK):
        stop = min(start + _CHUNK, last)
        _bits(seed, offset + start, words[:4 * (stop - start)])
        o = out[4 * start:min(n, 4 * stop)]
        for k in range(o.size // 2):
            z0, z1 = _pair32(words[2 * k], words[2 * k + 1])
            o[2 * k] = z0
            o[2 * k + 1] = z1


@njit(cache=True, nogil=True, error_model="numpy")
def _normal64(seed, offset, out, first, last, words):
    """float64 draws: ``_normal32`` with one pair of 53-bit uniforms a counter (``_pair``)."""
    n = out.size
    for start in range(first, last, _CHUNK):
        stop = min(start + _CHUNK, last)
        _bits(seed, offset + start, words[:4 * (stop - start)])
        o = out[2 * start:min(n, 2 * stop)]
        for k in range(o.size // 2):
            z0, z1 = _pair(_unit53w(words[4 * k], words[4 * k + 1]),
                           _unit53w(words[4 * k + 2], words[4 * k + 3]))
            o[2 * k] = z0
            o[2 * k + 1] = z1


@njit(cache=True, inline="always")
def _product(a, b):
    """The high and low 64 bits of the 128-bit product of two uint64."""
    a0, a1, b0, b1 = a & _LOW, a >> _SHIFT, b & _LOW, b >> _SHIFT
    low, cross0, cross1 = a0 * b0, a0 * b1, a1 * b0
    mid = (low >> _SHIFT) + (cross0 & _LOW) + (cross1 & _LOW)
    high = a1 * b1 + (cross0 >> _SHIFT) + (cross1 >> _SHIFT) + (mid >> _SHIFT)
    return high, (mid << _SHIFT) | (low & _LOW)


@njit(cache=True)
def _slot(seed, offset, i, wide, attempt):
    """The random bits of value slot ``i`` at attempt ``attempt`` (a rejected value's retry):
    where ``wide``, the 64 bits of words 2j and 2j+1 (j = i % 2) of counter i // 2, the first
    the low half; else the 32 bits of word i % 4 of counter i // 4."""
    if wide:
        w = _words(seed, offset, i // 2, attempt)
        h = 2 * (i % 2)
        return w[h] | (w[h + 1] << _SHIFT)
    return _words(seed, offset, i // 4, attempt)[i % 4]


@njit(cache=True)
def _bits(seed, offset, words):
    """The words of the counters from ``offset`` into uint32 ``words``, four a counter (in a loop
    that vectorises); returns the number of counters. A wide slot's first bits are two of them,
    read as one uint64 (little-endian: the first the low half, as ``_slot`` makes them)."""
    n = words.size
    for b in range(n // 4):
        w0, w1, w2, w3 = _words(seed, offset, b)
        words[4 * b] = w0
        words[4 * b + 1] = w1
        words[4 * b + 2] = w2
        words[4 * b + 3] = w3
    if n % 4:
        w = _words(seed, offset, n // 4)
        for j in range(n % 4):
            words[4 * (n // 4) + j] = w[j]
    return (n + 3) // 4


@njit(cache=True, inline="always")
def _threshold(span, wide):
    """``2**bits mod span`` (bits: 64 where ``wide``, else 32): the low parts under it are
    rejected."""
    return (np.uint64(0) - span) % span if wide else (_TWO32 - span) % span


@njit(cache=True, inline="always")
def _bounded(seed, offset, i, r, span, wide, threshold):
    """Slot ``i``'s integer in [0, ``span``) (uint64; 0 stands for 2**64) from its bits ``r``:
    Lemire's multiply-shift, the high part of ``r * span``, kept unless its low part is under
    ``threshold`` (``_threshold``; ``_UNKNOWN``: computed when the low part is under ``span``,
    rarely), else the slot's next attempt's bits."""
    attempt = 0
    while True:
        if wide:
            if span == 0:
                return r
            high, low = _product(r, span)
        else:
            m = r * span
            high, low = m >> _SHIFT, m & _LOW
        if low >= span or low >= (threshold if threshold != _UNKNOWN else
                                  _threshold(span, wide)):
            return high
        attempt += 1
        r = _slot(seed, offset, i, wide, attempt)


@njit(cache=True)
def _integers(seed, offset, span, low, out):
    """``low`` plus uniform integers in [0, ``span``), modulo 2**64, into uint64 ``out`` (whose
    memory holds the random words first: two a value where ``wide``, else one in its first half,
    mapped from the last value down so that no word is overwritten before it is read)."""
    n = out.size
    wide = span == 0 or span > _TWO32
    threshold = _threshold(span, wide) if span != 0 else np.uint64(0)
    words = out.view(np.uint32)
    used = _bits(seed, offset, words if wide else words[:n])
    for i in range(n - 1, -1, -1):
        r = out[i] if wide else np.uint64(words[i])
        out[i] = low + _bounded(seed, offset, i, r, span, wide, threshold)
    return used


@njit(cache=True)
def _permutation(seed, offset, out):
    """A uniform permutation of ``0 .. n - 1`` into uint64 ``out``: Fisher-Yates, inside out
    (step ``i`` moves the value at a uniform place ``j <= i``, slot ``i``'s, to place ``i`` and
    puts ``i`` at ``j``)."""
    n = out.size
    wide = np.uint64(n) > _TWO32
    bits = np.empty(n, np.uint64)
    words = bits.view(np.uint32)
    used = _bits(seed, offset, words if wide else words[:n])
    for i in range(n):
        r = bits[i] if wide else np.uint64(words[i])
        j = _bounded(seed, offset, i, r, np.uint64(i + 1), wide, _UNKNOWN)
        out[i] = out[j]
        out[j] = np.uint64(i)
    return used


@njit(cache=True)
def _categorical(cdf, u, out):
    """``out[r, s]``: the category of the uniform ``u[r, s]`` under row ``r`` of the cumulative
    weights ``cdf``: the first whose cumulative weight exceeds ``u`` times the row's total (never
    one of weight 0). The search starts at a guide table's entry (Chen and Asau's): for the
    ``m`` categories, ``guide[k]`` is the first category past ``k / m`` of the total, and the
    category of ``u`` is found from ``guide[floor(u * m)]`` in a step or two on average."""
    m = cdf.shape[1]
    guide = np.empty(m, np.int64)
    for r in range(out.shape[0]):
        row = cdf[r]
        total = row[m - 1]
        i = 0
        for k in range(m):
            while i < m - 1 and row[i] <= total * (k / m):
                i += 1
            guide[k] = i
        for s in range(out.shape[1]):
            target = u[r, s] * total
            i = guide[min(int(u[r, s] * m), m - 1)]
            while i > 0 and row[i - 1] > target:  # (the guide is a start; the answer is exact)
                i -= 1
            while i < m - 1 and row[i] <= target:
                i += 1
            while i > 0 and row[i] == row[i - 1]:  # (u * total rounded up to total)
                i -= 1
            out[r, s] = i


def _draw(state: np.ndarray, fill, *args) -> None:
    """Runs the kernel ``fill(seed, offset, *args)`` and advances ``state``'s offset past the
    counters it used (its result)."""
    state[1] += fill(int(state[0]), int(state[1]), *args)


def philox_uniform(state: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """Values uniform in [0, 1) of ``shape`` and ``dtype`` from the generator ``state`` (int64
    ``[seed, offset]``), whose offset advances past the counters used: float32 and float64
    drawn as such; float16 and bfloat16 from float32 draws cut to their own grid (11 and 8
    bits: below 1, as PyTorch's); a complex dtype's real and imaginary parts each uniform."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        return philox_uniform(state, tuple(shape) + (2,), part).view(dtype).reshape(shape)
    if dtype.itemsize == 2:
        digits = 11 if dtype == np.float16 else 8
        # (asarray: NumPy's floor of a 0-d array is a scalar)
        grid = np.asarray(np.floor(philox_uniform(state, shape, np.float32)
                                   * np.float32(1 << digits)))
        grid *= np.float32(1.0 / (1 << digits))
        return grid.astype(np.float16) if dtype == np.float16 else _lowp.f32_to_bf16(grid)
    out = _pool.empty(shape, dtype)
    _draw(state, _uniform32 if out.dtype == np.float32 else _uniform64, out.reshape(-1))
    return out


def _word_buffer() -> np.ndarray:
    """A normal draw's buffer of random words (``_normal32``), one per thread."""
    return np.empty(4 * _CHUNK, np.uint32)


# Normal draws of this many values, and more, share their counters among threads (the values
# are the counters', the same on any number of threads)
THREADED = 1 << 17


def philox_normal(state: np.ndarray, shape: tuple, dtype, mean=None, std=None) -> np.ndarray:
    """Standard normal values of ``shape`` and ``dtype`` from the generator ``state`` (advanced
    past the counters used); times ``std`` plus ``mean`` where given (numbers or arrays that
    broadcast to ``shape``; an array ``std`` with an element under 0 raises PyTorch's error).
    float32 values are computed in float32 from 24-bit uniforms (four values a counter:
    ``_normal32``), the others in float64 from 53-bit ones (two a counter: ``_normal64``) and
    rounded; values scaled in float64, then rounded. Large draws share their counters among
    threads (the values are the counters', the same on any number of threads)."""
    if std is not None and np.any(np.asarray(std) < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    dtype = np.dtype(dtype)
    if dtype.kind == "c":  # (real and imaginary parts each of variance 1/2: E|z|^2 = 1)
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        z = philox_normal(state, tuple(shape) + (2,), part) * part.type(math.sqrt(0.5))
        z = z.view(dtype).reshape(shape)
        if std is not None:
            z = z * std
        if mean is not None:
            z = z + mean
        return z.astype(dtype, copy=False)
    narrow = dtype == np.float32
    per = 4 if narrow else 2  # (values a counter)
    plain = mean is None and std is None  # (else scaled in float64, then rounded)
    out = _pool.empty(shape, dtype if narrow and plain else np.float64)
    flat = out.reshape(-1)
    kernel = _normal32 if narrow else _normal64
    seed, offset = int(state[0]), int(state[1])
    whole = flat.size // per  # (counters all of whose values are used)
    threads = _workers.threads_for(whole, flat.size >= THREADED)
    if threads <= 1:
        kernel(seed, offset, flat[:per * whole], 0, whole, _word_buffer())
    else:
        _workers.run(_workers.spans(whole, threads), lambda span, slot:
                     kernel(seed, offset, flat[:per * whole], *span, _word_buffer()), threads)
    if flat.size % per:  # (the last counter, some of whose values are used)
        last = np.empty(per, flat.dtype)
        kernel(seed, (offset + whole + 2 ** 63) % 2 ** 64 - 2 ** 63, last, 0, 1, _word_buffer())
        flat[per * whole:] = last[:flat.size % per]
    state[1] += whole + (flat.size % per > 0)
    if std is not None:
        out *= std
    if mean is not None:
        out += mean
    return out.astype(dtype, copy=False) if dtype.kind != "V" else _lowp.cast(out, dtype)


def philox_integers(state: np.ndarray, shape: tuple, low: int, high: int, dtype) -> np.ndarray:
    """Integers uniform in [``low``, ``high``) (Python ints, ``high - low`` at most 2**64) of
    ``shape``, as ``dtype``, from the generator ``state`` (advanced past the counters used)."""
    out = np.empty(shape, np.uint64)
    _draw(state, _integers, np.uint64((high - low) % 2 ** 64), np.uint64(low % 2 ** 64),
          out.reshape(-1))
    return out.view(np.int64).astype(dtype, copy=False)


def philox_permutation(state: np.ndarray, n: int, dtype) -> np.ndarray:
    """A uniform random permutation of ``0 .. n - 1`` as ``dtype``, from the generator ``state``
    (advanced past the counters used)."""
    out = np.empty(n, np.uint64)
    _draw(state, _permutation, out)
    return out.view(np.int64).astype(dtype, copy=False)


def _exponentials(state: np.ndarray, shape: tuple) -> np.ndarray:
    """Float64 exponential values of rate 1: ``-log(1 - u)`` of 53-bit uniforms (``1 - u`` in
    (0, 1]: finite, and u = 0 gives +0.0; NumPy's vectorised log1p)."""
    u = philox_uniform(state, shape, np.float64)
    np.negative(u, out=u)
    np.log1p(u, out=u)
    return np.negative(u, out=u)


def philox_exponential(state: np.ndarray, shape: tuple, dtype, lambd: float) -> np.ndarray:
    """Exponential values of rate ``lambd`` of ``shape`` and ``dtype``, from the generator
    ``state`` (advanced past the counters used)."""
    out = _exponentials(state, shape)
    if lambd != 1:
        out *= 1.0 / float(lambd)
    return out.astype(dtype, copy=False)


def philox_bernoulli(state: np.ndarray, p, shape: tuple, dtype) -> np.ndarray:
    """1 with probability ``p`` (a number or an array that broadcasts to ``shape``), else 0, of
    ``shape`` and float ``dtype``: a uniform of ``dtype`` under ``p``, from the generator
    ``state`` (advanced past the counters used). A ``p`` outside [0, 1] (NaN included) raises
    PyTorch's error."""
    if not np.all((np.asarray(p) >= 0) & (np.asarray(p) <= 1)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    dtype = np.dtype(dtype)
    if dtype.kind == "V":  # (bfloat16: its grid's uniforms, compared as float32)
        return _lowp.f32_to_bf16(
            (_lowp.to_float(philox_uniform(state, shape, dtype)) < p).astype(np.float32))
    return (philox_uniform(state, shape, dtype) < p).astype(dtype)


def philox_multinomial(state: np.ndarray, weights: np.ndarray, num_samples: int,
                       replacement: bool) -> np.ndarray:
    """``num_samples`` category indices (int64) per row of ``weights`` (1-D or 2-D, not
    necessarily normalised; the shapes checked by the caller), from the generator ``state``
    (advanced past the counters used). With replacement, each sample inverts the row's
    cumulative weights at a uniform; without, the categories of the ``num_samples`` smallest
    ``E / w`` (``E`` exponential of rate 1, one per category), in that order: the order in which
    exponential clocks of rates ``w`` ring, which is sampling without replacement with
    probabilities proportional to the weights left. Bad weights raise PyTorch's errors."""
    rows = np.ascontiguousarray(weights, np.float64).reshape(-1, weights.shape[-1])
    if replacement and rows.size:  # (PyTorch's sampler with replacement words it so; checked
        # here, in the recorded draw, so that a compiled call replays it without reading values)
        if not (rows >= 0).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                               "< 0)")
        if np.isinf(rows).any():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry "
                               "= infinity or NaN)")
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and (np.count_nonzero(rows, axis=1) < num_samples).any():
        raise RuntimeError("invalid multinomial distribution (with replacement=False, not "
                           "enough non-negative category to sample)")
    if replacement:
        out = np.empty((rows.shape[0], num_samples), np.int64)
        u = philox_uniform(state, out.shape, np.float64)
        _categorical(np.cumsum(rows, axis=1), u, out)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = np.where(rows > 0, _exponentials(state, rows.shape) / rows, np.inf)
        if num_samples < rows.shape[1]:  # (the smallest keys, then their order)
            out = np.argpartition(keys, num_samples - 1, axis=1)[:, :num_samples]
            order = np.argsort(np.take_along_axis(keys, out, 1), axis=1, kind="stable")
            out = np.take_along_axis(out, order, 1)
        else:
            out = np.argsort(keys, axis=1, kind="stable")
    return out.reshape(-1) if weights.ndim == 1 else out
