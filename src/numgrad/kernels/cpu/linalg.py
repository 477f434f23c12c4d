"""Matrix products on the CPU: BLAS through NumPy (a tuned GEMM beats any JIT loop). Transposed
operands are NumPy views, which BLAS takes as they are (no copy)."""
from __future__ import annotations

import numpy as np


def _t(x: np.ndarray) -> np.ndarray:
    return x.T if x.ndim == 2 else np.swapaxes(x, -1, -2)


def matmul(a: np.ndarray, b: np.ndarray, trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """``op(a) @ op(b)``, ``op`` transposing the last two dimensions where asked: ``a`` 2-D or
    3-D (a batch), ``b`` 1-D (a vector, never transposed), 2-D or 3-D (the same batch)."""
    if trans_a:
        a = _t(a)
    if trans_b and b.ndim > 1:
        b = _t(b)
    return np.matmul(a, b)


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The dot product of two vectors, as a 0-d array."""
    return np.asarray(np.dot(a, b))
