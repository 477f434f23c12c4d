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
integers, one slot a step. Exponential values are ``-log(1 - u)`` of 53-bit uniforms (two a
counter); a categorical draw (``_categorical``) inverts the cumulative weights at one 53-bit
uniform a sample. The random bits are made in loops over whole counters that vectorise, and
mapped to their ranges after.
"""
import numpy as np
from numba import njit

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


@njit(cache=True)
def _normal(seed, offset, out):
    """Standard normal values (Box-Muller on pairs of 53-bit uniforms), in float64."""
    n = out.size
    for b in range((n + 1) // 2):
        w0, w1, w2, w3 = _words(seed, offset, b)
        r = np.sqrt(-2.0 * np.log(1.0 - _unit53(w0, w1)))  # (1 - u in (0, 1]: no log(0))
        t = 2.0 * np.pi * _unit53(w2, w3)
        out[2 * b] = r * np.cos(t)
        if 2 * b + 1 < n:
            out[2 * b + 1] = r * np.sin(t)
    return (n + 1) // 2


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
    """Values uniform in [0, 1) of ``shape`` and ``dtype`` (float32 or float64) from the
    generator ``state`` (int64 ``[seed, offset]``), whose offset advances past the counters
    used."""
    out = np.empty(shape, dtype)
    _draw(state, _uniform32 if out.dtype == np.float32 else _uniform64, out.reshape(-1))
    return out


def philox_normal(state: np.ndarray, shape: tuple, dtype, mean=None, std=None) -> np.ndarray:
    """Standard normal values of ``shape`` and ``dtype`` from the generator ``state`` (advanced
    past the counters used); times ``std`` plus ``mean`` where given (numbers or arrays that
    broadcast to ``shape``; an array ``std`` with an element under 0 raises PyTorch's error)."""
    if std is not None and np.any(np.asarray(std) < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    out = np.empty(shape, np.float64)
    _draw(state, _normal, out.reshape(-1))
    if std is not None:
        out *= std
    if mean is not None:
        out += mean
    return out.astype(dtype, copy=False)


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
