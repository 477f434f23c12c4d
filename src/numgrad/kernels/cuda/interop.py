"""The CUDA Array Interface (``__cuda_array_interface__``, version 3): how CUDA tensors are shared
with CuPy, PyTorch, JAX, Numba and others without a copy, in both directions.

On a GPU, export is the device array's own interface and import is ``numba.cuda.as_cuda_array``
(which keeps the exporting object alive and synchronises the stream it names). Numba's CUDA
simulator has neither: its device arrays are NumPy arrays, so a simulated "device pointer" is a
host address, and the functions below build the same description from, and the same zero-copy
view over, that memory. The simulator thus checks the plumbing (no copy, shapes, strides, dtypes,
lifetimes); that real device pointers round-trip is for a GPU to show (benchmarks/gpu_check.py).
"""
from __future__ import annotations

import numpy as np
from numba import config, cuda

_SIMULATOR = bool(config.ENABLE_CUDASIM)
if _SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray


def export_interface(a) -> dict:
    """The ``__cuda_array_interface__`` of the device array ``a``."""
    if not _SIMULATOR:
        return a.__cuda_array_interface__
    host = a._ary  # the simulator's FakeCUDAArray wraps a NumPy array
    return {
        "shape": tuple(host.shape),
        "strides": None if host.flags.c_contiguous else tuple(host.strides),
        "data": (host.ctypes.data if host.size else 0, False),
        "typestr": host.dtype.str,
        "stream": None,
        "version": 3,
    }


def has_interface(obj) -> bool:
    """Whether ``obj`` exports device memory through the CUDA Array Interface."""
    return hasattr(obj, "__cuda_array_interface__")


class _Borrowed:
    """Simulator only: a NumPy view's base over foreign memory, keeping its exporter alive."""

    def __init__(self, desc: dict, owner):
        self.owner = owner
        self.__array_interface__ = {
            "data": (desc["data"][0], False), "shape": tuple(desc["shape"]),
            "strides": None if desc.get("strides") is None else tuple(desc["strides"]),
            "typestr": desc["typestr"], "version": 3,
        }


def import_interface(obj):
    """A device array over the memory that ``obj`` exports (no copy; ``obj`` is kept alive).
    All of numgrad's work runs on the default stream: an array bound to the exporter's stream
    (which ``as_cuda_array`` has synchronised) is rebound to it."""
    if not _SIMULATOR:
        a = cuda.as_cuda_array(obj)
        return a.bind(0) if a.stream else a
    desc = obj.__cuda_array_interface__
    if desc.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    if not desc["data"][0]:  # an empty array exports a NULL pointer
        return cuda.device_array(tuple(desc["shape"]), np.dtype(desc["typestr"]))
    return FakeCUDAArray(np.asarray(_Borrowed(desc, obj)))
