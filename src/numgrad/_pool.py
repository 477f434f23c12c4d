"""Large host arrays: outputs that glibc would page-fault in anew at every step.

glibc serves an allocation above its mmap threshold with a fresh ``mmap`` and unmaps it on free,
and gives the free memory at the top of its heap back to the system whenever that exceeds its
trim threshold; each 4 KiB page of such memory is then faulted in again when next written (about
3 us a fault on this machine). Both thresholds start low (128 KiB, 256 KiB) and adapt: a freed
mapped block raises the mmap threshold to its size, up to 32 MiB, and the trim threshold to
twice that. Measured, each model of ``benchmarks/models.py`` alone in its process (as a user's
script runs it), one thread: the tiny GPT's step took 10,000 faults, the MNIST CNN's 3,000, the
word-LM's 1,000-4,000, and ``numgrad.compile``'s whole programs (whose arrays Numba allocates)
11,000-13,000 a step. Two remedies, neither a setting of the process:

- ``adapt_malloc``: numgrad's first large output (``ADAPT_FROM`` bytes or more, through
  ``empty``/``zeros``/``empty_like``) first allocates and frees one block just under 32 MiB, as
  any large temporary does: glibc's adaptive thresholds rise to their ceiling, so blocks up to
  that size come from the heap and 64 MiB of free heap is kept before it is trimmed. With it the
  three models' steps, eager and compiled, take no page faults (``tests/test_pool.py``). glibc's
  own tuning (``numgrad.set_runtime_defaults(malloc=True)``, mallopt) would set them for the
  whole process, which ``import numgrad`` must not do; a user's ``MALLOC_MMAP_THRESHOLD_`` or
  ``mallopt`` turns the adaptation off, and then this does nothing.
- The pool: outputs of ``POOL_FROM`` bytes (32 MiB) and more, above glibc's ceiling, which it
  always maps anew, come from arrays that earlier outputs of the same shape and dtype freed. An
  output is a new view of the whole of an array the pool made and owns (``out[...]``): what
  reads an array's ``base`` for its storage (an output's adoption as ``.grad``, the serialisers,
  ``as_strided``, ``storage_offset``) finds exactly the output's memory, as with ``np.empty``,
  and each output is a new object (weak references, ids). The pool hands an array out again once
  nothing references it: NumPy's views, and views of views, hold that array itself as ``base``,
  so an array no tensor or view references has only the pool's references, which
  ``sys.getrefcount`` counts. Bounded and given back: it holds at most ``LIMIT`` bytes (beyond
  that, plain ``np.empty``); ``numgrad.empty_cache()`` frees every unreferenced array now, and an
  array not handed out for ``IDLE_S`` seconds is freed at the pool's next use after that (looked
  for at most once every ``_TRIM_EVERY`` seconds). Thread-safe (one lock, taken only for
  outputs of ``POOL_FROM`` bytes or more).
"""
from __future__ import annotations

import math
import sys
import threading
import time

import numpy as np

POOL_FROM = 32 << 20  # bytes: smaller arrays come from malloc (its heap, once adapted)
ADAPT_FROM = 256 << 10  # bytes: the first output this large adapts glibc's thresholds
LIMIT = 1 << 30  # bytes of arrays the pool holds at most
IDLE_S = 10.0  # an array not handed out for this long is freed at the pool's next use
_TRIM_EVERY = 1.0  # seconds between two looks for idle arrays

_lock = threading.Lock()
_arrays: dict = {}  # (shape, dtype) -> [[array, time last handed out], ...]
_held = 0  # bytes in _arrays
_refs: int | None = None  # sys.getrefcount of an array that only the pool references
_trimmed = [0.0]  # when idle arrays were last looked for
_adapted = [False]  # whether ``adapt_malloc`` has run


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
        if nbytes >= ADAPT_FROM and not _adapted[0]:
            adapt_malloc()
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


def adapt_malloc() -> None:
    """Allocates and frees one block just under 32 MiB, once, as any large temporary does: glibc
    then serves blocks up to that size from its heap and keeps twice that free before it trims
    the heap (its adaptive thresholds, which a freed mapped block raises, up to 32 MiB; nothing
    is set, and where they are set or the C library is another, nothing changes)."""
    _adapted[0] = True
    np.empty((32 << 20) - (64 << 10), np.uint8)


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
