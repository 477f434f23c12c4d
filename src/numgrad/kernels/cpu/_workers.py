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
import threading
import time

import numba
import numpy as np

from ..._threads import get_num_threads, one_blas_thread

_pool = None  # the helper threads (``_Helper``), made on first use
_pool_lock = threading.Lock()

# A machine is busy when its load (the 1-minute average of runnable tasks, which counts this
# process's threads too) is BUSY_LOAD times its cores or more (NUMGRAD_BUSY_LOAD; inf: never,
# as the tests set it, so that the load picks no path there); read again after BUSY_RECHECK s.
BUSY_LOAD = float(os.environ.get("NUMGRAD_BUSY_LOAD", "1.5"))
BUSY_RECHECK = 1.0
_busy = [-BUSY_RECHECK, False]  # (when last read, the answer)


def busy() -> bool:
    """Whether the machine is so loaded that a job split between threads waits for a helper
    thread with no core, as OpenMP's ``OMP_DYNAMIC`` and MKL's ``MKL_DYNAMIC`` judge. Then the
    kernels whose values do not depend on the split (elementwise maps, rows, pooling planes,
    optimizer parts, convolution batches) run on one thread. Under a load of 8 on 2 cores a
    0.5M-element GELU took 23 ms on two of Numba's threads against 1.2 ms on one.

    BLAS's and Numba's own thread counts are left as they are: they are the process's settings
    (the host's NumPy shares BLAS), and OpenBLAS's products on one thread may round differently,
    so the load would decide a product's last bits, and a compiled call would differ from an
    eager one run at another load. False where the load is not known."""
    now = time.monotonic()
    if now - _busy[0] < BUSY_RECHECK:
        return _busy[1]
    try:
        load = os.getloadavg()[0]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1
    except OSError:
        load, cores = 0.0, 1
    _busy[0], _busy[1] = now, load >= BUSY_LOAD * cores
    return _busy[1]


def count() -> int:
    """How many parts a large job whose parts' results are combined (a long sum's partial sums)
    has: ``get_num_threads()``, at most the cores Numba found, whether or not threads compute
    them (so that the machine's load never changes a result's last bits)."""
    return min(get_num_threads(), numba.config.NUMBA_NUM_THREADS)


def threads_for(parts: int, large: bool) -> int:
    """How many threads a job of ``parts`` parts uses: one unless it is ``large`` and the
    machine not ``busy`` (the callers' values do not depend on the number)."""
    return min(get_num_threads(), parts) if large and not busy() else 1


# After a job a helper thread waits for the next one this many rounds (each a ``sched_yield``,
# ~1 us: the core stays with whatever else can run) before it sleeps; the thread that started a
# job waits for its helpers the same way. A core left idle for a few hundred microseconds is
# slow to come back on a shared (virtual) machine: a 64 x 784 x 256 half-product took 194 us on a
# helper that had just worked and 250-390 us on one idle for 0.3-3 ms before; its wake-up took
# 26-39 us more. OpenMP's threads (PyTorch's, Numba's) spin likewise between parallel regions.
# 1,000 rounds (0.47 ms here) left the helper asleep at 8-9 of the tiny GPT's 45 split products
# a step (single-threaded work of 0.5-1.4 ms before them: dropout, the loss, the optimizer):
# those then went as Python jobs, 20% slower. 3,000 rounds (1.4 ms): the GPT's and the
# character LSTM's steps 0.977-0.978 of their time (medians of 40 alternating pairs).
SPIN_ROUNDS = 3000
_spin_wait = None  # the nogil spin kernel once set up (False: none here)
# The helpers' spin that also computes the products posted to them (``_spin.serve``), the posting
# side (``_spin.run_split``), once set up (False: none here, where NumPy's BLAS cannot be called
# from Numba); ``_jobs``: a row of ``_spin.JOB_FIELDS`` a helper (slot ``s`` serves row
# ``s - 1``), ``_mine``: the posting thread's own block.
_serve = _run_split = None
_jobs = _mine = None
_fields = None  # the ``_spin`` module, for its field numbers, once set up


def _spin_setup() -> None:
    """Sets the spin kernels up (``_spin.wait``, ``_spin.serve``) once, where a pool is made."""
    global _spin_wait, _serve, _run_split, _jobs, _mine, _fields
    if _spin_wait is None:
        from . import _spin, blas

        _fields = _spin

        if _spin.serve is not None and blas.AVAILABLE:
            _jobs = np.zeros((max(1, numba.config.NUMBA_NUM_THREADS), _spin.JOB_FIELDS),
                             np.int64)
            _mine = np.zeros(_spin.JOB_FIELDS, np.int64)
            _serve, _run_split = _spin.serve, _spin.run_split
        else:
            _serve = _run_split = False
        _spin_wait = _spin.wait or False


def _spin(flags, index: int) -> None:
    if _spin_wait and SPIN_ROUNDS > 0:
        _spin_wait(flags, index, SPIN_ROUNDS)


class _Helper:
    """A worker thread and its two hand-off locks: ``go`` released to start it on ``job``,
    ``done`` released by it when that job is drained (a lock each way: a wake-up is one futex
    call, where a ``ThreadPoolExecutor``'s future took a condition, a queue and a result), and
    ``flags``, the same two signals as numbers (``[0]`` a job handed over, ``[1]`` it is done)
    for the threads to spin on a while before they sleep on a lock (``SPIN_ROUNDS``)."""

    __slots__ = ("go", "done", "job", "error", "thread", "flags")

    def __init__(self, slot: int):
        self.go, self.done = threading.Lock(), threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.job = self.error = None
        self.flags = np.zeros(2, np.int64)
        self.thread = threading.Thread(target=self._loop, args=(slot,), daemon=True,
                                       name=f"numgrad-work-{slot}")
        self.thread.start()

    def _loop(self, slot: int) -> None:
        flags = self.flags
        job = _jobs[slot - 1] if _serve and slot <= len(_jobs) else None
        while True:
            if job is not None and _spin_wait and SPIN_ROUNDS > 0:
                _serve(flags, job, SPIN_ROUNDS)  # (computing the products posted meanwhile)
            else:
                _spin(flags, 0)
            self.go.acquire()
            flags[0] = 0
            try:
                self.job(slot)
            except BaseException as error:  # (handed to the thread that started the job)
                self.error = error
            self.job = None
            flags[1] = 1
            self.done.release()


_job_lock = threading.Lock()  # held while a job runs on the helpers


def _helpers(count: int) -> list:
    """At least ``count`` helper threads, made on first use (numbered from slot 1)."""
    global _pool
    if _pool is None or len(_pool) < count:
        _spin_setup()
        with _pool_lock:  # (two threads' first large jobs at once: one pool)
            pool = list(_pool or ())
            while len(pool) < count:
                pool.append(_Helper(len(pool) + 1))
            _pool = pool
    return _pool


def run(items, work, threads: int, blas: bool = True) -> None:
    """``work(item, slot)`` for each of ``items``, ``slot`` the running thread's number (for
    its own buffers), on ``threads`` threads taking the next item when done with one. BLAS is
    on one thread meanwhile unless the work calls none (``blas=False``: elementwise loops).
    Where the helper threads are busy with another job (another thread's, or a job started by a
    part of the running one), the calling thread does all the items itself."""
    if threads <= 1:
        for item in items:
            work(item, 0)
        return
    if not _job_lock.acquire(blocking=False):
        with one_blas_thread(blas):  # (the parts' products as the threads would compute them)
            for item in items:
                work(item, 0)
        return
    try:
        helpers = _helpers(threads - 1)[:threads - 1]
        queue = iter(items)  # (next() on a list's iterator is atomic under the GIL)

        def drain(slot):
            for item in queue:
                work(item, slot)

        with one_blas_thread(blas):
            for helper in helpers:
                helper.job = drain
                helper.flags[0] = 1
                helper.go.release()
            try:
                drain(0)
            finally:
                for helper in helpers:
                    _spin(helper.flags, 1)
                    helper.done.acquire()
                    helper.flags[1] = 0
                errors = [helper.error for helper in helpers if helper.error is not None]
                for helper in helpers:
                    helper.error = None
        if errors:  # (a part's error on a helper thread, raised here as eager raises it)
            raise errors[0]
    finally:
        _job_lock.release()


def post_products(blocks) -> bool:
    """Computes the products ``blocks`` describe (each a tuple of the fields ``_spin.ITEM`` to
    ``_spin.ROW`` of a posted product: item size, transpositions, m, n, k, addresses and leading
    dimensions, the row's address or 0), the first on this thread and each other one on a
    helper spinning in ``_spin.serve`` (or here, where it does not take it in time), BLAS on one
    thread meanwhile; False, having computed nothing, where the helpers are not all spinning
    (asleep, or busy with another thread's job: then ``run``'s hand-off, which wakes them)."""
    count = len(blocks) - 1
    if not _run_split or count < 1 or _pool is None or len(_pool) < count or count > len(_jobs):
        return False
    if not _job_lock.acquire(blocking=False):
        return False
    try:
        f, jobs = _fields, _jobs
        for h in range(count):
            if jobs[h, f.SPINNING] != 1 or jobs[h, f.STATE] != f.IDLE:
                return False
        for h in range(count):
            jobs[h, f.ITEM:f.ROW + 1] = blocks[h + 1]
        _mine[f.ITEM:f.ROW + 1] = blocks[0]
        with one_blas_thread():
            _run_split(jobs, count, _mine)
    finally:
        _job_lock.release()
    return True


def posting() -> bool:
    """Whether products can be computed by ``post_products`` and ``run_products`` here (the
    spin kernels set up, NumPy's BLAS callable from Numba)."""
    _spin_setup()
    return bool(_run_split)


def run_products(blocks, threads: int) -> None:
    """Computes the products ``blocks`` describe (as ``post_products``) with the same kernel,
    each block a Python job of ``run``'s on ``threads`` threads, BLAS on one thread: where they
    cannot be posted (the helpers not all spinning, or a busy machine), the same calls, so the
    same bits."""
    f = _fields
    rows = np.zeros((len(blocks), f.JOB_FIELDS), np.int64)
    rows[:, f.ITEM:f.ROW + 1] = blocks
    with one_blas_thread():
        run(range(len(blocks)), lambda i, slot: _run_split(_jobs, 0, rows[i]), threads,
            blas=False)


def run_parts(part, args: tuple, chunks: int) -> None:
    """``part(*args, chunks, c)`` for each chunk ``c`` of ``range(chunks)``: a compiled program's
    split loop (``compiler/lower.py``, ``threads_variant``) on the worker threads, each chunk
    one item (on this thread alone where the machine is busy: the same chunks)."""
    run(range(chunks), lambda c, slot: part(*args, chunks, c), threads_for(chunks, True),
        blas=False)


def spans(n: int, parts: int) -> list:
    """``parts`` (start, stop) spans of about equal size covering ``range(n)``."""
    parts = max(1, min(parts, n))
    return [(n * i // parts, n * (i + 1) // parts) for i in range(parts)]


def _forget_pool() -> None:
    global _pool, _pool_lock, _job_lock
    _pool = None  # (a forked child has none of its parent's threads)
    if _jobs is not None:
        _jobs[:] = 0  # (nor their spinning, nor their posted products)
    _pool_lock, _job_lock = threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
