"""Process-wide settings numgrad can make faster, none of them made unless asked.

``import numgrad`` changes nothing outside numgrad's own objects (README, "Using numgrad inside a
library"): a library that imports it leaves its host's garbage collector, C allocator, Numba
threading layer, warnings filters, environment and signal handlers as they were. A program that
owns its process (a script, a benchmark, a training job) can opt in to four settings that make
numgrad faster there, each process-wide:

- ``gc_freeze``: ``gc.freeze()`` of every object alive now, so that later collections do not
  traverse the ~100k objects NumPy, Numba and numgrad made at import (~90 ms of a fresh
  process's collections). The host's objects alive now are frozen too: one that later becomes
  part of a reference cycle is never collected.
- ``malloc``: glibc's mmap threshold raised to 64 MiB and its trim threshold to 256 MiB, so that
  large temporaries come from the heap and go back to it instead of being page-faulted in anew
  (``_malloc.py``; skipped where the user set glibc's own variables, or on another C library).
- ``threading_layer``: Numba's threading layer (``numba.config.THREADING_LAYER``), before
  Numba's first parallel kernel runs. Without it numgrad uses Numba's choice (TBB, else OpenMP,
  else workqueue); under workqueue, which aborts when two Python threads enter parallel code at
  once, the compiler's generated loops run on one thread (``kernels/cpu/elementwise.py``).
- ``blas_wait="passive"``: OpenBLAS's idle threads sleep at once instead of spinning for up to
  ~0.1 s after each threaded matrix product (``_threads.blas_passive_wait``; the environment's
  ``OPENBLAS_THREAD_TIMEOUT=4`` set before the process starts does the same). On 2 cores the
  spinning thread takes the core numgrad's own worker threads (convolution batches, pooling
  planes, large elementwise kernels) need: the MNIST CNN's step took 138 ms with it, 81 ms
  without, quiet.

The same through the environment, read at import: ``NUMGRAD_GC_FREEZE=1`` (the freeze then
happens at the end of the import, as numgrad's objects are made), ``NUMGRAD_MALLOC_TUNING=1``;
the threading layer through Numba's own ``NUMBA_THREADING_LAYER``.
"""
from __future__ import annotations

import gc
import os

import numba
from numba.np.ufunc import parallel
from . import _lazy, _threads

__all__ = ["set_runtime_defaults"]


def set_runtime_defaults(*, gc_freeze: bool = False, malloc: bool = False,
                         threading_layer: str | None = None, blas_wait: str | None = None) -> dict:
    """Makes the process-wide settings asked for (see the module's docstring) and returns
    ``{setting: whether it was made}``. Nothing is made by default, nor at import."""
    done = {}
    if gc_freeze:
        gc.freeze()
        done["gc_freeze"] = True
    if malloc:
        _malloc = _lazy.module("_malloc")

        done["malloc"] = _malloc.tune()
    if threading_layer is not None:
        done["threading_layer"] = _set_threading_layer(threading_layer)
    if blas_wait is not None:
        if blas_wait != "passive":
            raise ValueError(f"blas_wait must be 'passive', got {blas_wait!r}")
        done["blas_wait"] = _threads.blas_passive_wait()
    return done


def _set_threading_layer(layer: str) -> bool:
    if getattr(parallel, "_is_initialized", False):  # (a parallel kernel has run: too late)
        current = numba.threading_layer()
        if current in {"threadsafe": ("tbb", "omp"), "safe": ("tbb",)}.get(layer, (layer,)):
            return False  # (already so)
        raise RuntimeError(f"Numba's threading layer is already {current!r} (a parallel kernel "
                           "has run); set it before the first one, or with NUMBA_THREADING_LAYER")
    numba.config.THREADING_LAYER = layer
    return True


def from_environment() -> bool:
    """The settings asked for through the environment at import, but the freeze (done by
    ``numgrad/__init__.py`` once its objects exist); returns whether the freeze is asked for."""
    if os.environ.get("NUMGRAD_MALLOC_TUNING") == "1":
        set_runtime_defaults(malloc=True)
    return os.environ.get("NUMGRAD_GC_FREEZE") == "1"
