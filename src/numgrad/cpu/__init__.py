"""``numgrad.cpu``: PyTorch's ``torch.cpu`` module (the CPU as a device module, and its
deprecated ``amp`` spellings)."""
from . import amp  # noqa: F401

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    """The CPU is always available."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work is done when its call returns."""
