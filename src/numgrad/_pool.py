"""Large host buffers reused: the outputs of elementwise kernels of 32 MiB and more come from a
pool of buffers that earlier outputs freed, as PyTorch's caching allocators serve CUDA memory.

Why: glibc serves an allocation this large with a fresh ``mmap`` (its threshold adapts up to
32 MiB, no further) and unmaps it on free, so each such output is page-faulted in anew, page by
page: a ``relu`` of 10M float64 values spent more time faulting its 80 MB in than computing it.
A pooled buffer is already mapped and touched.

How a buffer is known to be free: the pool keeps every buffer it made (``_blocks``), and an
array it hands out is a view of one (NumPy's views, and views of views, all hold their buffer
itself as ``base``). A buffer no array references any more has only the pool's references:
``sys.getrefcount`` then reads ``_FREE``. Nothing is returned by a finaliser, so a view that
outlives the array it was made from still keeps the memory out of the pool.

Bounded and given back: the pool holds at most ``LIMIT`` bytes of buffers (beyond that, outputs
are plain ``np.empty``); ``numgrad.empty_cache()`` frees every unreferenced buffer now, and a
buffer not handed out for ``IDLE_S`` seconds is freed at the pool's next use. Thread-safe (one
lock, taken only for outputs of ``POOL_FROM`` bytes or more).
"""
from __future__ import annotations

import math
import sys
import threading
import time

import numpy as np

POOL_FROM = 32 << 20  # bytes: smaller arrays come from malloc, which reuses freed memory itself
LIMIT = 1 << 30  # bytes of buffers the pool holds at most
IDLE_S = 10.0  # a buffer not handed out for this long is freed at the pool's next use
_ALIGN = 2 << 20  # buffer sizes are rounded up to this (a huge page)

_lock = threading.Lock()
_blocks: dict = {}  # rounded size -> [[buffer, time last handed out], ...]
_held = 0  # bytes in _blocks
_refs: int | None = None  # sys.getrefcount of a buffer that only the pool references


def empty(shape, dtype) -> np.ndarray:
    """``np.empty(shape, dtype)``, from the pool where it holds ``POOL_FROM`` bytes or more."""
    dtype = np.dtype(dtype)
    nbytes = (math.prod(shape) if isinstance(shape, tuple) else shape) * dtype.itemsize
    if nbytes < POOL_FROM:
        return np.empty(shape, dtype)
    block = _take(-(-nbytes // _ALIGN) * _ALIGN)
    if block is None:
        return np.empty(shape, dtype)
    return block[:nbytes].view(dtype).reshape(shape)


def _free(entry) -> bool:
    # (references: the entry's list, and getrefcount's argument)
    return sys.getrefcount(entry[0]) == _refs


def _take(size: int):
    """An unreferenced buffer of ``size`` bytes (made if none is free and the pool has room),
    or None."""
    global _held, _refs
    now = time.monotonic()
    with _lock:
        if _refs is None:
            probe = [np.empty(1, np.uint8), 0.0]
            _refs = sys.getrefcount(probe[0])
        _trim(now - IDLE_S)
        entries = _blocks.setdefault(size, [])
        for entry in entries:
            if _free(entry):
                entry[1] = now
                return entry[0]
        if _held + size > LIMIT:
            return None
        block = np.empty(size, np.uint8)
        entries.append([block, now])
        _held += size
        return block


def _trim(before: float) -> None:
    """Frees the unreferenced buffers last handed out before ``before`` (under the lock)."""
    global _held
    for size, entries in list(_blocks.items()):
        kept = []
        for entry in entries:
            if entry[1] < before and _free(entry):
                _held -= size
            else:
                kept.append(entry)
        if kept:
            _blocks[size] = kept
        else:
            del _blocks[size]


def empty_cache() -> None:
    """Frees every pooled buffer no tensor references any more."""
    with _lock:
        _trim(float("inf"))


def held() -> int:
    """Bytes of buffers the pool holds now (referenced or not)."""
    return _held
