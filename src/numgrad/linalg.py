"""``numgrad.linalg``: PyTorch's ``torch.linalg`` (the ops are in ``ops/linalg_more.py``, the
matrix products in ``ops/linalg.py``)."""
from __future__ import annotations

from .ops.linalg import matmul
from .ops.linalg_more import (
    LinAlgError,
    cholesky_ex,
    det,
    eigh,
    eigvalsh,
    inv,
    inv_ex,
    lstsq,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    pinv,
    slogdet,
    solve,
    solve_ex,
    svdvals,
    vecdot,
    vector_norm,
)
from .ops.linalg_more import linalg_cholesky as cholesky
from .ops.linalg_more import linalg_cross as cross
from .ops.linalg_more import linalg_diagonal as diagonal
from .ops.linalg_more import linalg_norm as norm
from .ops.linalg_more import linalg_qr as qr
from .ops.linalg_more import linalg_svd as svd

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh",
           "eigvalsh", "inv", "inv_ex", "lstsq", "matmul", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "svd",
           "svdvals", "vecdot", "vector_norm"]
