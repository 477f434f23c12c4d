"""``numgrad.version``: PyTorch's ``torch.version`` (``cuda`` is None: numgrad does not build
against a CUDA toolkit; its CUDA kernels are numba-cuda's)."""
from __future__ import annotations

from . import __version__  # noqa: F401

cuda = None
hip = None
debug = False
git_version = "unknown"
