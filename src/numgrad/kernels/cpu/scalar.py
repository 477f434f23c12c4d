"""CPU variants of scalar formulas (the table in ``kernels/formulas.py`` names them): rounding.

NumPy's ``floor``/``ceil``/``rint`` lower to LLVM's rounding intrinsics on the CPU, which vectorise
and keep the float type (``math.floor`` gives an integer there).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(inline="always")
def floor(x):
    return np.floor(x)


@njit(inline="always")
def ceil(x):
    return np.ceil(x)


@njit(inline="always")
def rint(x):
    """Round half to even, as ``torch.round``."""
    return np.rint(x)
