"""Philox4x32-10, the counter-based generator of PyTorch's CUDA generator and of JAX (Salmon et
al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).

A draw is a pure function of a key (the seed) and a counter, so the generator's whole state is
two integers, ``state = [seed, offset]`` (an int64 array that the draw advances in place): eager
code and a compiled replay that call these kernels with the same state draw the same numbers,
and a replay reads and advances the state as eager does. Each counter gives four 32-bit words:
four float32 values, or two float64 values of 53 random bits.
"""
import numpy as np
from numba import njit

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


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
def _words(seed, offset, b):
    """The four words of the ``b``-th counter after ``offset`` under key ``seed``."""
    c = np.uint64(offset) + np.uint64(b)
    k = np.uint64(seed)
    return _block(c & _LOW, c >> _SHIFT, np.uint64(0), np.uint64(0), k & _LOW, k >> _SHIFT)


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


def philox_uniform(state: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """Values uniform in [0, 1) of ``shape`` and ``dtype`` (float32 or float64) from the
    generator ``state`` (int64 ``[seed, offset]``), whose offset advances past the counters
    used."""
    dtype = np.dtype(dtype)
    out = np.empty(shape, dtype)
    fill = _uniform32 if dtype == np.float32 else _uniform64
    state[1] += fill(int(state[0]), int(state[1]), out.reshape(-1))
    return out


def philox_normal(state: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """Standard normal values of ``shape`` and ``dtype`` from the generator ``state`` (advanced
    past the counters used)."""
    out = np.empty(shape, np.float64)
    state[1] += _normal(int(state[0]), int(state[1]), out.reshape(-1))
    return out.astype(dtype, copy=False)
