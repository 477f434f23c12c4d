"""Philox4x32-10 on CUDA: the CPU's generator (``kernels/cpu/philox.py``), with its interface
and its state, the host int64 array ``[seed, offset]`` of the generator's CPU tensor, advanced
by the same counters for the same draw.

The words of a counter are computed by the CPU's own functions (``_block``, ``_words``,
``_unit53``, compiled as device functions from their Python source), one counter a thread, so
uniform values are the CPU's bit for bit: dropout masks and ``bernoulli_`` draws on a GPU are
the CPU's for the same seed. Normal values are the same Box-Muller of the same uniforms, the
CPU's own functions too (``_gaussians``, ``_gaussians32``: the logarithm, sine and cosine as
series in arithmetic alone), with a correctly rounded square root: the simulator gives the
CPU's values bit for bit; a GPU may round a last bit otherwise where NVVM fuses a multiply and
an add (as PyTorch's CUDA and CPU normals differ). The draws with data-dependent work
(bounded integers with rejection, permutations, categorical draws) and those with array
parameters run on the host, the CPU's kernels, and are uploaded.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..cpu import philox as _cpu
from .elementwise import upload
from .memory import empty, launch
from .layout import flat

_block = cuda.jit(device=True)(_cpu._block.py_func)
_unit53 = cuda.jit(device=True)(_cpu._unit53.py_func)
_LOW, _SHIFT = _cpu._LOW, _cpu._SHIFT


@cuda.jit(device=True)
def _words(seed, offset, b):
    """The four words of the ``b``-th counter after ``offset`` under key ``seed`` (the CPU's
    ``_words`` at attempt 0)."""
    c = np.uint64(offset) + np.uint64(b)
    k = np.uint64(seed)
    return _block(c & _LOW, c >> _SHIFT, np.uint64(0), np.uint64(0), k & _LOW, k >> _SHIFT)


@cuda.jit
def _uniform32_k(seed, offset, out):
    scale = np.float32(1.0 / 16777216.0)  # (24 bits a value: [0, 1), as the CPU's)
    eight = np.uint64(8)
    n = out.size
    for b in range(cuda.grid(1), (n + 3) // 4, cuda.gridsize(1)):
        w0, w1, w2, w3 = _words(seed, offset, b)
        i = 4 * b
        out[i] = np.float32(w0 >> eight) * scale
        if i + 1 < n:
            out[i + 1] = np.float32(w1 >> eight) * scale
        if i + 2 < n:
            out[i + 2] = np.float32(w2 >> eight) * scale
        if i + 3 < n:
            out[i + 3] = np.float32(w3 >> eight) * scale


@cuda.jit
def _uniform64_k(seed, offset, out):
    n = out.size
    for b in range(cuda.grid(1), (n + 1) // 2, cuda.gridsize(1)):
        w0, w1, w2, w3 = _words(seed, offset, b)
        out[2 * b] = _unit53(w0, w1)
        if 2 * b + 1 < n:
            out[2 * b + 1] = _unit53(w2, w3)


_gaussians = cuda.jit(device=True)(_cpu._gaussians.py_func)
_gaussians32 = cuda.jit(device=True)(_cpu._gaussians32.py_func)


@cuda.jit(device=True)
def _pair(u1, u2):
    """The CPU's ``_pair``: ``_gaussians`` of two float64 uniforms, the square root taken."""
    squared, c, t = _gaussians(u1, u2)
    r = math.sqrt(squared)
    return r * c, r * t


@cuda.jit(device=True)
def _pair32(w1, w2):
    """The CPU's ``_pair32``: ``_gaussians32`` of the 24-bit uniforms of two words (the square
    root correctly rounded to float32, as the CPU's and, from float64, the simulator's)."""
    scale = np.float32(1.0 / 16777216.0)
    squared, c, t = _gaussians32(np.float32(np.uint32(w1) >> np.uint32(8)) * scale,
                                 np.float32(np.uint32(w2) >> np.uint32(8)) * scale)
    r = np.float32(math.sqrt(squared))
    return r * c, r * t


@cuda.jit
def _normal32_k(seed, offset, scaled, mean, std, out):
    """float32 normal values into ``out``, the CPU's ``_normal`` (two pairs of 24-bit uniforms a
    counter, ``_gaussians32``), one counter a thread: times ``std`` plus ``mean`` in float64
    where ``scaled``, then rounded."""
    n = out.size
    for b in range(cuda.grid(1), (n + 3) // 4, cuda.gridsize(1)):
        w0, w1, w2, w3 = _words(seed, offset, b)
        z0, z1 = _pair32(w0, w1)
        z2, z3 = _pair32(w2, w3)
        i = 4 * b
        out[i] = np.float64(z0) * std + mean if scaled else z0
        if i + 1 < n:
            out[i + 1] = np.float64(z1) * std + mean if scaled else z1
        if i + 2 < n:
            out[i + 2] = np.float64(z2) * std + mean if scaled else z2
        if i + 3 < n:
            out[i + 3] = np.float64(z3) * std + mean if scaled else z3


@cuda.jit
def _normal64_k(seed, offset, scaled, mean, std, out):
    """float64 normal values into ``out``, the CPU's ``_normal`` (one pair of 53-bit uniforms a
    counter, ``_gaussians``), one counter a thread: times ``std`` plus ``mean`` where
    ``scaled``."""
    n = out.size
    for b in range(cuda.grid(1), (n + 1) // 2, cuda.gridsize(1)):
        w0, w1, w2, w3 = _words(seed, offset, b)
        z0, z1 = _pair(_unit53(w0, w1), _unit53(w2, w3))
        out[2 * b] = z0 * std + mean if scaled else z0
        if 2 * b + 1 < n:
            out[2 * b + 1] = z1 * std + mean if scaled else z1


def _counters(n: int, per: int) -> int:
    return (n + per - 1) // per


def philox_uniform(state: np.ndarray, shape: tuple, dtype):
    """Values uniform in [0, 1) of ``shape`` and ``dtype`` (float32 or float64), a new device
    array, from the generator ``state`` (the host's ``[seed, offset]``, advanced past the
    counters used): the CPU's values (for other dtypes, half precision and complex, the CPU's
    kernel's, uploaded)."""
    if np.dtype(dtype) not in (np.float32, np.float64):
        return upload(_cpu.philox_uniform(state, shape, dtype))
    out = empty(tuple(shape), np.dtype(dtype))
    n = out.size
    wide = out.dtype == np.float64
    used = _counters(n, 2 if wide else 4)
    if n:
        launch(_uniform64_k if wide else _uniform32_k, used)(int(state[0]), int(state[1]),
                                                             flat(out))
    state[1] += used
    return out


def philox_normal(state: np.ndarray, shape: tuple, dtype, mean=None, std=None):
    """Normal values of ``shape`` and ``dtype`` from the generator ``state`` (advanced past the
    counters used), times ``std`` plus ``mean`` where given: on the device for numbers and
    float32 or float64, on the host (the CPU's kernel, uploaded) for arrays and other dtypes."""
    dtype = np.dtype(dtype)
    if isinstance(mean, np.ndarray) or isinstance(std, np.ndarray) or \
            dtype not in (np.float32, np.float64):
        return upload(_cpu.philox_normal(state, shape, dtype, mean, std))
    if std is not None and std < 0:
        raise RuntimeError("normal expects all elements of std >= 0.0")
    out = empty(tuple(shape), dtype)
    n = out.size
    narrow = dtype == np.float32
    used = _counters(n, 4 if narrow else 2)
    scaled = mean is not None or std is not None
    if n:
        launch(_normal32_k if narrow else _normal64_k, used)(
            int(state[0]), int(state[1]), scaled, 0.0 if mean is None else float(mean),
            1.0 if std is None else float(std), flat(out))
    state[1] += used
    return out


def philox_bernoulli(state: np.ndarray, p, shape: tuple, dtype):
    """1 with probability ``p`` (a number or a host array), else 0: the CPU's, uploaded."""
    return upload(_cpu.philox_bernoulli(state, p, shape, dtype))


def philox_integers(state: np.ndarray, shape: tuple, low: int, high: int, dtype):
    """Integers uniform in [``low``, ``high``): the CPU's, uploaded."""
    return upload(_cpu.philox_integers(state, shape, low, high, dtype))


def philox_permutation(state: np.ndarray, n: int, dtype):
    """A uniform random permutation of ``0 .. n - 1``: the CPU's, uploaded."""
    return upload(_cpu.philox_permutation(state, n, dtype))


def philox_exponential(state: np.ndarray, shape: tuple, dtype, lambd: float):
    """Exponential values of rate ``lambd``: the CPU's, uploaded."""
    return upload(_cpu.philox_exponential(state, shape, dtype, lambd))


def philox_multinomial(state: np.ndarray, weights: np.ndarray, num_samples: int,
                       replacement: bool):
    """Category indices per row of the host ``weights``: the CPU's, uploaded."""
    return upload(_cpu.philox_multinomial(state, weights, num_samples, replacement))
