"""Work shared among Python threads: ``nogil`` Numba kernels called on parts of a large job from
up to ``get_num_threads()`` threads (this one included), one start and join per call.

Why not Numba's ``parallel=True``: its threads (OpenMP's, under the default layer) and BLAS's
take turns at each of many small steps and spin while they wait, which on a busy 2-core machine
made a step of the MNIST CNN's second convolution 30 to 80 times slower than on one thread; a
``parallel=True`` kernel is also compiled a second time (cold-cache time). Here the same serial
kernel runs on each part, BLAS on one thread meanwhile.
"""
from __future__ import annotations

import os

from ..._threads import get_num_threads, one_blas_thread

_pool = None


def threads_for(parts: int, large: bool) -> int:
    """How many threads a job of ``parts`` parts uses: one unless it is ``large``."""
    return min(get_num_threads(), parts) if large else 1


def run(items, work, threads: int) -> None:
    """``work(item, slot)`` for each of ``items``, ``slot`` the running thread's number (for
    its own buffers), on ``threads`` threads taking the next item when done with one."""
    if threads <= 1:
        for item in items:
            work(item, 0)
        return
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(max(2, get_num_threads()) - 1, "numgrad-work")
    queue = iter(items)  # (next() on a list's iterator is atomic under the GIL)

    def drain(slot):
        for item in queue:
            work(item, slot)

    with one_blas_thread():
        helpers = [_pool.submit(drain, slot) for slot in range(1, threads)]
        try:
            drain(0)
        finally:
            for helper in helpers:
                helper.result()


def spans(n: int, parts: int) -> list:
    """``parts`` (start, stop) spans of about equal size covering ``range(n)``."""
    parts = max(1, min(parts, n))
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def _forget_pool() -> None:
    global _pool
    _pool = None  # (a forked child has none of its parent's threads)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
