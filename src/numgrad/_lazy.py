"""The imports numgrad makes on first use, in one place.

Two kinds stay out of a module's top-level imports:

- numgrad's own modules kept off ``import numgrad``'s start-up path (the compiler's tracer and
  replays, ``numgrad.func``, ``nn``, the CUDA kernels, which import ``numba.cuda``): ``module``;
- the optional dependencies, which numgrad runs without (``numba.cuda`` beyond the simulator,
  PyTorch for the bridges, mpi4py, graphviz, matplotlib, tqdm): ``optional``.

Each call after the first is a ``sys.modules`` look-up.
"""
from __future__ import annotations

import importlib
import sys


def module(name: str):
    """numgrad's module ``name`` (dotted, below the package: ``"compiler.tracer"``), imported on
    first use."""
    found = sys.modules.get("numgrad." + name)
    if found is None or getattr(getattr(found, "__spec__", None), "_initializing", False):
        # (not imported yet, or being imported by another thread: ``import_module`` waits for
        # that import to finish, where the module in ``sys.modules`` is still partly made)
        return importlib.import_module("numgrad." + name)
    return found


def optional(name: str):
    """The module ``name`` of an optional dependency (``"numba.cuda"``, ``"torch"``), imported on
    first use; its ``ImportError`` reaches the caller as it is."""
    found = sys.modules.get(name)
    if found is None or getattr(getattr(found, "__spec__", None), "_initializing", False):
        return importlib.import_module(name)
    return found
