"""DLPack (``numgrad.from_dlpack``, ``numgrad.utils.dlpack``), the zero-copy exchange of tensors with NumPy, PyTorch, JAX,
CuPy and other array libraries, as ``torch.utils.dlpack``.

A CPU tensor exports its NumPy array's memory (``Tensor.__dlpack__``, built on NumPy's own DLPack
support, versioned capsules included) and ``from_dlpack`` wraps what another library exports
without a copy, so a write through either side is seen by the other. Each side keeps its own
version counter, as PyTorch's ``from_dlpack`` does: an in-place op bumps the counter of the tensor
it runs on. CUDA tensors are exchanged through ``__cuda_array_interface__`` (numgrad's device
arrays, Numba's, have no DLPack export): ``__dlpack_device__`` says ``kDLCUDA``, ``from_dlpack``
imports another library's CUDA array through its CUDA Array Interface, and ``__dlpack__`` of a
CUDA tensor raises a BufferError that says so.
"""
from __future__ import annotations

import numpy as np

from . import creation
from ._dtype import DLDeviceType
from ._dtype import device as _device
from ._dtype import from_numpy_dtype
from .tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


def to_dlpack(tensor):
    """A DLPack capsule (unversioned, DLPack 0.8, as ``torch.utils.dlpack.to_dlpack``) over the
    tensor's memory; prefer passing the tensor itself to the consumer's ``from_dlpack``."""
    return tensor.__dlpack__()


class _Capsule:
    """A bare capsule (``to_dlpack``'s), given the protocol's methods for NumPy to consume it."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self.capsule

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCPU, 0)


class _Writable:
    """The base of a writable NumPy view of ``array``'s memory (keeping ``array`` alive)."""

    def __init__(self, array):
        self.array = array
        desc = array.__array_interface__
        self.__array_interface__ = {"data": (desc["data"][0], False), "shape": desc["shape"],
                                    "strides": desc["strides"], "typestr": desc["typestr"],
                                    "version": 3}


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor over the memory of ``ext_tensor``, an object with ``__dlpack__`` (a NumPy array,
    a PyTorch tensor, a JAX array ...) or a DLPack capsule, without a copy unless ``copy=True``
    (``copy=False``: never one) or ``device`` asks for another device. A CUDA array (its
    ``__dlpack_device__`` says ``kDLCUDA``) is imported through ``__cuda_array_interface__``."""
    if isinstance(ext_tensor, Tensor):
        t = Tensor._wrap(ext_tensor._data.copy() if copy else ext_tensor._data)
        return t if device is None else t.to(device)
    legacy = type(ext_tensor).__name__ == "PyCapsule"
    if legacy:
        ext_tensor = _Capsule(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    where = getattr(ext_tensor, "__dlpack_device__", None)
    kind = int(where()[0]) if where is not None else DLDeviceType.kDLCPU
    if kind in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
        if not hasattr(ext_tensor, "__cuda_array_interface__"):
            raise BufferError("from_dlpack: numgrad imports CUDA arrays through "
                              "__cuda_array_interface__, which this object does not have")
        t = creation.tensor(ext_tensor) if copy else creation.as_tensor(ext_tensor)
        return t if device is None else t.to(device)
    if kind not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        raise BufferError(f"from_dlpack: numgrad has no device for DLPack device type {kind}")
    try:
        array = np.from_dlpack(ext_tensor, copy=copy)
    except TypeError:  # (a producer without the newer keywords)
        array = np.from_dlpack(_Capsule(ext_tensor.__dlpack__()))
        if copy:
            array = array.copy()
    if legacy and not array.flags.writeable:
        # An unversioned capsule has no read-only flag: NumPy takes it as read-only, PyTorch (and
        # numgrad) as the writable memory it is.
        array = np.asarray(_Writable(array))
    from_numpy_dtype(array.dtype)  # (numgrad's dtypes only: a TypeError naming it otherwise)
    t = Tensor._wrap(array)
    return t if device is None or _device(device).type == "cpu" else t.to(device)
