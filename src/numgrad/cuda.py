"""``numgrad.cuda``: the CUDA device. Not built yet; asking for it says so clearly."""
from __future__ import annotations


def is_available() -> bool:
    """Whether a CUDA GPU can be used. The CUDA target is not built yet, so always False."""
    return False


def device_count() -> int:
    return 0


def _unavailable():
    raise RuntimeError(
        "No CUDA GPUs are available: numgrad's CUDA target needs an NVIDIA GPU and driver and the "
        "'cuda' extra (pip install numgrad[cuda]); check with numgrad.cuda.is_available()."
    )


def synchronize() -> None:
    _unavailable()
