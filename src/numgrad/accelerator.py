"""``numgrad.accelerator``: PyTorch's device-generic accelerator API, which the setup lines of
current programs use (``device = torch.accelerator.current_accelerator() or "cpu"``). numgrad's
one accelerator is CUDA (``numgrad.cuda``); without a GPU there is none, as in PyTorch."""
from __future__ import annotations

from . import cuda as _cuda
from ._dtype import device as _device


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU) can be used."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device(type='cuda')`` where CUDA can be used, else None (as PyTorch without one)."""
    return _device("cuda") if _cuda.is_available() else None


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    return _cuda.device_count() if _cuda.is_available() else 0


def current_device_index() -> int:
    """The index of the current accelerator device (numgrad uses device 0)."""
    return 0


current_device_idx = current_device_index


def set_device_index(device) -> None:
    """Selects the accelerator device: numgrad has device 0 alone."""
    index = device.index if isinstance(device, _device) else device
    if index not in (None, 0, -1):
        raise RuntimeError(f"numgrad uses one CUDA device, device 0; got index {index}")


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Waits for the accelerator's queued work (nothing to wait for without one)."""
    if _cuda.is_available():
        _cuda.synchronize()


def empty_cache() -> None:
    """Frees the cached, unused device memory."""
    if _cuda.is_available():
        _cuda.empty_cache()
