"""The device error flag: an index out of range cannot raise inside a kernel, so a bounds-checking
kernel (indexing's gather and scatter, ``gather_dim``/``scatter_dim``, the losses' class targets)
records the first bad value in a small device array, and ``check_errors`` raises it at the next
synchronisation that the user asks for (``to_host``, ``numgrad.cuda.synchronize()``): PyTorch's
device-side assert, with PyTorch's message."""
from __future__ import annotations

import numpy as np
from numba import cuda

# ------------------------------------------------------------------ the device error flag
# device int64 [flag, bad index, its index tensor's number, the dimension's size]; the flag is
# _INDEX for an index out of range, _TARGET for nll_loss's class target out of range (the
# target's value in [1]); the first error recorded wins until it is reported.
_ERRORS = None
_INDEX, _TARGET = 1, 2
_pending = False  # a bounds-checking kernel ran since the last check
_NO_ERROR = np.zeros(4, np.int64)


def _errors():
    """The device error array (4 int64, allocated once: outside the pool, like the meta arrays)."""
    global _ERRORS
    if _ERRORS is None:
        _ERRORS = cuda.to_device(_NO_ERROR)
    return _ERRORS


class DeviceIndexError(IndexError, RuntimeError):
    """An index out of range found on the device, raised at the next synchronisation (PyTorch
    raises its device-side assert there as a RuntimeError; an IndexError as on the CPU too)."""


def device_errors():
    """The device error array, for a kernel that records errors into it (``record_target``);
    the next ``check_errors`` reads it back."""
    global _pending
    _pending = True
    return _errors()


def check_errors() -> None:
    """Raises the out-of-range index that a kernel recorded since the last check, if any. Costs a
    32-byte copy from the device only when a bounds-checking kernel has run since then; the
    caller is synchronising anyway (it copies data to the host or waits for the device)."""
    global _pending
    if not _pending:
        return
    _pending = False
    err = _ERRORS.copy_to_host()
    if err[0]:
        _ERRORS.copy_to_device(_NO_ERROR)
        if err[0] == _TARGET:  # the CPU's (and PyTorch's) message for nll_loss
            raise DeviceIndexError(f"Target {err[1]} is out of bounds.")
        raise DeviceIndexError(
            f"index {err[1]} is out of bounds for dimension {err[2]} with size {err[3]} "
            "(CUDA device-side check: an index tensor on the GPU was out of range in an earlier "
            "indexing op; the elements it addressed were left unread/unwritten)")


@cuda.jit(device=True)
def _record(err, value, k, size):
    """Keeps the first out-of-range index (``cas`` on the flag picks one thread)."""
    if cuda.atomic.cas(err, 0, 0, _INDEX) == 0:
        err[1] = value
        err[2] = k
        err[3] = size


@cuda.jit(device=True)
def record_target(err, value):
    """Keeps a class target out of range (nll_loss), unless an error is already recorded."""
    if cuda.atomic.cas(err, 0, 0, _TARGET) == 0:
        err[1] = value
