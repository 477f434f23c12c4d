"""Keep large arrays on the C heap, where freed memory is reused, instead of fresh mmap()s.

glibc serves allocations above its mmap threshold (128 KiB to start with) with a new mapping each
time and unmaps them on free, so every large temporary of an op (a 1M-element float32 array is
4 MiB) is page-faulted in anew, touch by touch: measured here, that doubled the time of a 1M-
element forward+backward. Raising the threshold (and the trim threshold with it) lets those arrays
come from, and go back to, the heap. This is process-wide, like the MALLOC_MMAP_THRESHOLD_
environment variable that does the same, so it is done only when asked for
(``numgrad.set_runtime_defaults(malloc=True)`` or ``NUMGRAD_MALLOC_TUNING=1``, ``_runtime.py``);
it is skipped if the user set glibc's own variables (that one, MALLOC_TRIM_THRESHOLD_ or
GLIBC_TUNABLES) and on C libraries other than glibc.
"""
from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20  # arrays up to 64 MiB come from the heap
TRIM_THRESHOLD = 256 << 20  # free heap memory kept for reuse before it is returned to the OS


def tune() -> bool:
    """Raises glibc's mmap and trim thresholds; returns whether it did."""
    if not sys.platform.startswith("linux"):
        return False
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library already loaded (no library search)
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
