"""Large host arrays reused: the outputs of numgrad's kernels of ``POOL_FROM`` bytes and more
(256 KiB) come from a pool of arrays that earlier outputs of the same shape and dtype freed, as
PyTorch's caching allocators serve CUDA memory.

Why: glibc serves an allocation above its mmap threshold with a fresh ``mmap`` and unmaps it on
free, and gives the free memory at the top of its heap back to the system whenever that exceeds
its trim threshold; the thresholds adapt (to the largest block freed, up to 32 MiB), but a
training step's churn of outputs keeps crossing them, so each such output is page-faulted in
anew, page by page (about 3 us a fault on this machine). Measured, each model of
``benchmarks/models.py`` alone in its process at one thread: the tiny GPT's step took 6,000 to
10,000 faults (its 1.5 MiB products, 2 MiB GELU outputs, attention), the MNIST CNN's 2,000 to
5,000. glibc's own tuning (``numgrad.set_runtime_defaults(malloc=True)``) removes them for the
whole process, which ``import numgrad`` must not change; this pool removes them for numgrad's own
outputs. A pooled array is already mapped and touched.

What it hands out: a new view of the whole of an array the pool made and owns (``out[...]``),
of the very shape and dtype asked for; a training step makes the same shapes at every step. So
what reads an array's ``base`` for its storage (an output's adoption as ``.grad``, the
serialisers, ``as_strided``, ``storage_offset``) finds an array of exactly the output's memory, as
with ``np.empty``; and each output is a new object, which dies as any other (weak references to
it, ids). The pool keeps each array it made (``_arrays``, by shape and dtype) and hands it out
again once nothing references it: NumPy's views, and views of views, hold that array itself as
``base``, so an array no tensor or view references has only the pool's references, which
``sys.getrefcount`` counts. Nothing is returned by a finaliser, so a view that outlives its
tensor still keeps the array out of the pool.

Bounded and given back: the pool holds at most ``LIMIT`` bytes (beyond that, outputs are plain
``np.empty``); ``numgrad.empty_cache()`` frees every unreferenced array now, and an array not
handed out for ``IDLE_S`` seconds is freed at the pool's next use after that (looked for at most
once every ``_TRIM_EVERY`` seconds). Thread-safe (one lock, taken only for outputs of
``POOL_FROM`` bytes or more).
"""
from __future__ import annotations

import math
import sys
import threading
import time

import numpy as np

POOL_FROM = 256 << 10  # bytes: smaller arrays come from malloc (its heap, below its threshold)
LIMIT = 1 << 30  # bytes of arrays the pool holds at most
IDLE_S = 10.0  # an array not handed out for this long is freed at the pool's next use
_TRIM_EVERY = 1.0  # seconds between two looks for idle arrays

_lock = threading.Lock()
_arrays: dict = {}  # (shape, dtype) -> [[array, time last handed out], ...]
_held = 0  # bytes in _arrays
_refs: int | None = None  # sys.getrefcount of an array that only the pool references
_trimmed = [0.0]  # when idle arrays were last looked for


def empty(shape, dtype) -> np.ndarray:
    """``np.empty(shape, dtype)``, from the pool where it holds ``POOL_FROM`` bytes or more."""
    out = _pooled(shape, dtype)
    return np.empty(shape, dtype) if out is None else out


def zeros(shape, dtype) -> np.ndarray:
    """``np.zeros(shape, dtype)``, from the pool where it holds ``POOL_FROM`` bytes or more (a
    pooled array filled with zeros: writing them takes a fraction of the time that faulting in
    calloc's fresh zero pages takes)."""
    out = _pooled(shape, dtype)
    if out is None:
        return np.zeros(shape, dtype)
    out.fill(0)
    return out


def empty_like(a: np.ndarray) -> np.ndarray:
    """``np.empty_like(a)``, its memory laid out as ``a``'s (the axes in the order of ``a``'s
    strides: a transposed view of a pooled array), from the pool where it holds ``POOL_FROM``
    bytes or more. Where two axes of more than one element have the same stride, or an axis has
    one element (NumPy orders those by rules of its own), it is ``np.empty_like`` itself."""
    if a.flags.c_contiguous:
        return empty(a.shape, a.dtype)
    strides = [abs(s) for s in a.strides]
    if 1 in a.shape or len(set(strides)) < a.ndim or a.nbytes < POOL_FROM:
        return np.empty_like(a)
    order = sorted(range(a.ndim), key=lambda i: -strides[i])
    out = _pooled(tuple(a.shape[i] for i in order), a.dtype)
    if out is None:
        return np.empty_like(a)
    return out.transpose([order.index(i) for i in range(a.ndim)])


def _pooled(shape, dtype):
    """A free pooled array of ``shape`` and ``dtype`` (made if there is none and the pool has
    room), or None (small, or no room)."""
    dtype = np.dtype(dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < POOL_FROM or dtype.hasobject:
        return None
    global _held, _refs
    now = time.monotonic()
    key = (shape, dtype)
    with _lock:
        if _refs is None:
            probe = [np.empty(1, np.uint8), 0.0]
            _refs = sys.getrefcount(probe[0])
        if now - _trimmed[0] >= _TRIM_EVERY:
            _trimmed[0] = now
            _trim(now - IDLE_S)
        entries = _arrays.get(key)
        if entries is None:
            entries = _arrays[key] = []
        for entry in entries:
            if _free(entry):
                entry[1] = now
                return entry[0][...]
        if _held + nbytes > LIMIT:
            return None
        out = np.empty(shape, dtype)
        entries.append([out, now])
        _held += nbytes
        return out[...]


def _free(entry) -> bool:
    # (references: the entry's list, and getrefcount's argument)
    return sys.getrefcount(entry[0]) == _refs


def _trim(before: float) -> None:
    """Frees the unreferenced arrays last handed out before ``before`` (under the lock)."""
    global _held
    for key, entries in list(_arrays.items()):
        kept = []
        for entry in entries:
            if entry[1] < before and _free(entry):
                _held -= entry[0].nbytes
            else:
                kept.append(entry)
        if kept:
            _arrays[key] = kept
        else:
            del _arrays[key]


def empty_cache() -> None:
    """Frees every pooled array no tensor references any more."""
    with _lock:
        _trim(float("inf"))


def held() -> int:
    """Bytes of arrays the pool holds now (referenced or not)."""
    return _held
