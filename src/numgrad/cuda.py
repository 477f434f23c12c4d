"""``numgrad.cuda``: the CUDA device, on ``numba.cuda`` (the optional ``cuda`` extra, numba-cuda).

Nothing here imports numba-cuda until CUDA is asked for, so ``import numgrad`` stays as fast as
the CPU needs. Without numba-cuda or without a GPU (and outside Numba's CUDA simulator,
``NUMBA_ENABLE_CUDASIM=1``), ``is_available()`` is False and using CUDA raises a clear error.
"""
from __future__ import annotations

import importlib
import os as _os
import sys

import numpy as np

from .ops import registry
from . import _lazy


def _apply_numpy_shims() -> None:
    """numba-cuda 0.30.4 registers an overload for ``np.row_stack`` when it compiles a kernel,
    and numpy 2.5 removed ``np.row_stack`` (deprecated since 2.0 as an alias of ``np.vstack``):
    without the alias every kernel compilation fails with an AttributeError. Restore the alias,
    only when missing, before numba-cuda is imported. Remove once numba-cuda no longer needs it."""
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack


def _numba_cuda():
    """``numba.cuda`` (with the shims applied first), or None when numba-cuda is not installed."""
    _apply_numpy_shims()
    try:
        return _lazy.optional("numba.cuda")
    except ImportError:
        return None


def is_available() -> bool:
    """Whether CUDA can be used: numba-cuda is installed and sees a GPU (or the simulator)."""
    cuda = _numba_cuda()
    if cuda is None:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver or toolkit counts as no GPU
        return False


def device_count() -> int:
    """The number of CUDA devices (numgrad uses the first)."""
    if not is_available():
        return 0
    return len(_numba_cuda().gpus)


def _unavailable():
    raise RuntimeError(
        "No CUDA GPUs are available: numgrad's CUDA target needs an NVIDIA GPU and driver and the "
        "'cuda' extra (pip install numgrad[cuda]); check with numgrad.cuda.is_available()."
    )


_KERNELS = None


def kernels():
    """The CUDA kernel module (``numgrad.kernels.cuda``), loaded on first use; raises the
    'No CUDA GPUs are available' RuntimeError where CUDA cannot be used."""
    global _KERNELS
    if _KERNELS is None:
        if not is_available():
            _unavailable()
        module = _lazy.module("kernels.cuda")
        registry.enable_device_dispatch(module)
        _KERNELS = module
    return _KERNELS


def synchronize() -> None:
    """Waits for every kernel launched on the GPU to finish; raises an index that one of them
    found out of range (a device-side check, as PyTorch's device-side assert surfaces here)."""
    K = kernels()
    _numba_cuda().synchronize()
    K.check_errors()


# ---------------------------------------------------------------------- the caching allocator
def _pool():
    """numgrad's CUDA memory pool (``kernels/cuda/pool.py``), or None before CUDA memory has
    been allocated in this process (then, as in PyTorch, the statistics are 0)."""
    module = sys.modules.get(__name__.rpartition(".")[0] + ".kernels.cuda.pool")
    return None if module is None else module.current()


def empty_cache() -> None:
    """Gives the memory that numgrad's pool holds for reuse, but no tensor uses, back to the GPU
    (for other libraries and processes); tensors' memory is untouched."""
    pool = _pool()
    if pool is not None:
        pool.empty_cache()


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory that tensors use now (counted by the pool's rounded block sizes)."""
    pool = _pool()
    return 0 if pool is None else pool.memory_allocated()


def memory_reserved(device=None) -> int:
    """Bytes of GPU memory that numgrad's pool holds: in use plus cached for reuse."""
    pool = _pool()
    return 0 if pool is None else pool.memory_reserved()


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated()`` since the start or ``reset_peak_memory_stats()``."""
    pool = _pool()
    return 0 if pool is None else pool.max_memory_allocated()


def reset_peak_memory_stats(device=None) -> None:
    """Restarts ``max_memory_allocated()`` from the current ``memory_allocated()``."""
    pool = _pool()
    if pool is not None:
        pool.reset_peak_memory_stats()


def memory_stats(device=None) -> dict:
    """The pool's statistics: bytes allocated, reserved, cached and the peak; counts of raw
    allocations and frees, of requests served from the cache and of retries after a failed
    allocation; blocks in use and cached. Empty before the first CUDA allocation."""
    pool = _pool()
    return {} if pool is None else pool.memory_stats()


def __getattr__(name: str):
    """``numgrad.cuda.amp`` (PyTorch's deprecated ``torch.cuda.amp``), imported on first use."""
    if name == "amp":
        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# (``numgrad.cuda`` is a module; its submodule ``amp`` lives in ``numgrad/_cuda/``)
__path__ = [_os.path.join(_os.path.dirname(__file__), "_cuda")]
