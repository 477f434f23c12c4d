"""``torch.set_num_threads`` / ``get_num_threads``: the threads numgrad computes with.

numgrad computes on two thread pools: Numba's (the parallel variants of the elementwise kernels,
for large arrays) and NumPy's BLAS (matrix products, convolutions' im2col products). PyTorch's
``set_num_threads`` sets its one intra-op pool; here it sets both. On a machine whose cores are
busy with other work, ``set_num_threads(1)`` keeps BLAS's threads from waiting on each other
(they spin), which can make small products many times slower.

NumPy ships OpenBLAS (``scipy-openblas``); its thread count is set through the library's own
``*_set_num_threads`` function, found among the libraries already loaded in the process (as
threadpoolctl does, without depending on it). A BLAS without such a function is left alone.
"""
from __future__ import annotations

import ctypes
import glob
import os
import threading

import numba
import numpy as np

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads", "MKL_Set_Num_Threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads", "MKL_Get_Max_Threads")
_blas_setter = None  # the BLAS's set_num_threads function, once looked up (False: none found)
_blas_library = None  # the CDLL that holds it
_blas_getter = None  # and its get_num_threads (False: none)


def _blas_set_num_threads():
    """NumPy's BLAS's ``set_num_threads`` function, or None."""
    global _blas_setter, _blas_getter, _blas_library
    if _blas_setter is None:
        _blas_setter = _blas_getter = False
        folder = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
        for path in sorted(glob.glob(os.path.join(folder, "*blas*"))):
            try:
                library = ctypes.CDLL(path)  # (already loaded by NumPy: the same handle)
            except OSError:
                continue
            for name, getter_name in zip(_SETTERS, _GETTERS):
                setter = getattr(library, name, None)
                if setter is not None:
                    setter.argtypes = [ctypes.c_int]
                    _blas_setter, _blas_library = setter, library
                    getter = getattr(library, getter_name, None)
                    if getter is not None:
                        getter.restype = ctypes.c_int
                        _blas_getter = getter
                    break
            if _blas_setter:
                break
    return _blas_setter or None


def set_num_threads(n) -> None:
    """Sets the number of threads numgrad's parallel kernels and matrix products use (at most
    the cores Numba found), as ``torch.set_num_threads``."""
    if type(n) is not int:
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    setter = _blas_set_num_threads()
    if setter is not None:
        with _one_lock:
            if _one_held[0]:  # (inside a one_blas_thread block: n once the last one closes)
                _one_held[1] = n
            else:
                setter(n)
    global _threads
    _threads = n


_threads = None  # what set_num_threads was given, if it was called


_CORENAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
              "openblas_get_corename64_", "openblas_get_corename")
_blas_core = None  # OpenBLAS's kernel family, once read ("" where there is none to read)


def blas_core() -> str:
    """The kernel family NumPy's OpenBLAS chose for this CPU (``"SkylakeX"``, ``"Haswell"``,
    ``"Zen"``...: ``openblas_get_corename``), or ``""`` for another BLAS."""
    global _blas_core
    if _blas_core is None:
        _blas_core = ""
        if _blas_set_num_threads() is not None:
            for name in _CORENAMES:
                function = getattr(_blas_library, name, None)
                if function is not None:
                    function.restype = ctypes.c_char_p
                    _blas_core = (function() or b"").decode("ascii", "replace")
                    break
    return _blas_core


def blas_passive_wait() -> bool:
    """Makes OpenBLAS's idle threads sleep at once (its thread timeout at the minimum, 2**4
    cycles) rather than spin for up to 2**28 cycles (~0.1 s) after each threaded product, as
    ``OPENBLAS_THREAD_TIMEOUT=4`` in the environment before NumPy loads would: the variable is
    set, OpenBLAS reads its environment again and its threads are stopped (the next threaded
    product starts them with the new timeout). Process-wide: ``set_runtime_defaults``'s
    ``blas_wait="passive"`` only, before other threads run BLAS. False where NumPy's BLAS is
    not an OpenBLAS with these functions."""
    if _blas_set_num_threads() is None:
        return False
    library = _blas_library
    read_env = getattr(library, "openblas_read_env", None)
    shutdown = getattr(library, "blas_thread_shutdown_", None)
    timeout = getattr(library, "openblas_thread_timeout", None)
    if read_env is None or shutdown is None or timeout is None:
        return False
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"
    read_env()
    shutdown()
    return timeout() == 4


_one_lock = threading.Lock()
_one_held = [0, 1]  # (how many blocks of one_blas_thread are open, BLAS's threads before them)


class one_blas_thread:
    """BLAS on one thread inside the block (``with one_blas_thread(small):``, where ``small``
    says whether the products to come are small), then as set before: a loop of small products
    (an LSTM's steps) waits on BLAS's other threads at each call, which on a machine whose
    cores are busy costs many times the product itself. Process-wide, as BLAS's setting is:
    the blocks open in all threads are counted, the first sets one thread and the last to close
    sets the count back. (Each block restoring what it found let one thread's block end while
    another's products ran, on two BLAS threads, whose float64 sums of a split product's block
    came out 1 ulp off now and then, and a block opened inside another's left BLAS on one
    thread for good.)"""

    __slots__ = ("setter",)

    def __init__(self, small: bool = True):
        self.setter = _blas_set_num_threads() if small and _blas_setter is not False else None

    def __enter__(self):
        if self.setter is not None:
            with _one_lock:
                if _one_held[0] == 0:
                    _one_held[1] = _blas_getter() if _blas_getter else get_num_threads()
                    if _one_held[1] != 1:
                        self.setter(1)
                _one_held[0] += 1
        return self

    def __exit__(self, *exc):
        if self.setter is not None:
            with _one_lock:
                _one_held[0] -= 1
                if _one_held[0] == 0 and _one_held[1] != 1:
                    self.setter(_one_held[1])


def _forget_lock() -> None:
    global _one_lock
    _one_lock = threading.Lock()  # (a forked child: no other thread holds it there)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_lock)


def get_num_threads() -> int:
    """The number of threads numgrad computes with (``torch.get_num_threads``): as set, else
    the cores Numba found. Read without starting Numba's threading layer, which would fix the
    process's choice of layer for the user's own parallel code."""
    return _threads if _threads is not None else numba.config.NUMBA_NUM_THREADS


__all__ = ["set_num_threads", "get_num_threads"]
