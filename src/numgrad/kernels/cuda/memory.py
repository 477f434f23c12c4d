"""Device memory and launch configuration for the CUDA kernels.

Every output goes through ``empty`` so that a caching pool can replace ``cuda.device_array``
there alone. Launch configurations are computed once per kernel and size class (a power of two)
and kept with the kernel already configured, so a launch costs one dict lookup.
"""
from __future__ import annotations

import warnings

from numba import config, cuda

from . import pool

try:
    from numba.cuda.core.errors import NumbaPerformanceWarning
except ImportError:  # numba-cuda before it vendored Numba's core
    from numba.core.errors import NumbaPerformanceWarning

# The simulator runs every thread as a Python thread: keep its grids tiny. On a GPU, enough
# blocks of 256 threads to fill it, each thread striding over the rest (grid-stride loops).
_SIMULATOR = bool(config.ENABLE_CUDASIM)
_THREADS = 32 if _SIMULATOR else 256
_MAX_BLOCKS = 1 if _SIMULATOR else 32 * 132  # 32 blocks per SM on the largest GPUs

_configured: dict = {}


def empty(shape, dtype) -> "cuda.devicearray.DeviceNDArray":
    """A new, uninitialised C-contiguous device array (the one place that allocates), from
    numgrad's caching pool (``pool.py``): no ``cudaMalloc`` once a block of its size class has
    been freed."""
    return pool.empty(shape, dtype)


def launch(kernel, n: int):
    """``kernel`` configured for ``n`` work items (grid-stride: any ``n`` up to its class)."""
    size_class = n.bit_length()
    key = (kernel, size_class)
    configured = _configured.get(key)
    if configured is None:
        threads = min(_THREADS, 1 << size_class)
        blocks = max(1, min(_MAX_BLOCKS, ((1 << size_class) + threads - 1) // threads))
        configured = _configured[key] = _configure(kernel, blocks, threads)
    return configured


def _configure(kernel, blocks: int, threads: int):
    """``kernel[blocks, threads]`` without numba-cuda's low-occupancy warning (for grids under
    128 blocks, which small arrays get on purpose): only that warning, only for our launches."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", r"Grid size \d+ will likely result in GPU under-utilization",
            NumbaPerformanceWarning)
        return kernel[blocks, threads]

