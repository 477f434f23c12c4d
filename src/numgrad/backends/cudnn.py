"""``numgrad.backends.cudnn``: PyTorch's cuDNN switches. numgrad does not use cuDNN (its CUDA
kernels are its own, and deterministic): the flags hold what programs set and change nothing."""
from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """False: numgrad has no cuDNN."""
    return False


def version():
    """None: no cuDNN (as PyTorch without it)."""
    return None
