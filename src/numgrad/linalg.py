"""``numgrad.linalg``: PyTorch's ``torch.linalg`` (the ops are in ``ops/linalg_<concept>.py``:
solves, decompositions, determinants, norms, compositions, and the derived, LU, LDL and eig ones;
the matrix products in ``ops/linalg.py``). The functions with one result take ``out=``; those
with several refuse it (NotImplementedError)."""
from __future__ import annotations

from ._out import with_out as _with_out
from .ops import linalg as _products
from .ops import linalg_compositions as _compositions
from .ops import linalg_decompositions as _decompositions
from .ops import linalg_derived as _derived  # (solve_triangular, cond, vander ...)
from .ops import linalg_determinants as _determinants
from .ops import linalg_eig as _eig  # (eig, eigvals)
from .ops import linalg_ldl as _ldl  # (ldl_factor, ldl_factor_ex, ldl_solve)
from .ops import linalg_lu as _lu  # (lu_factor, lu, lu_solve)
from .ops import linalg_norms as _norms
from .ops import linalg_solve as _solve
from .ops.linalg_common import LinAlgError

matmul = _with_out(_products.matmul, "matmul")
_LINALG = {**_solve.LINALG, **_decompositions.LINALG, **_determinants.LINALG, **_norms.LINALG,
           **_compositions.LINALG}
globals().update(_LINALG)

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh",  # noqa: F822
           "eigvalsh", "inv", "inv_ex", "lstsq", "matmul", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "svd",
           "svdvals", "vecdot", "vector_norm"]
assert sorted(__all__) == sorted(["LinAlgError", "matmul", *_LINALG])

globals().update(_derived.LINALG)
globals().update(_lu.LINALG)
globals().update(_ldl.LINALG)
globals().update(_eig.LINALG)
__all__ += list(_derived.LINALG) + list(_lu.LINALG) + list(_ldl.LINALG) + list(_eig.LINALG)
