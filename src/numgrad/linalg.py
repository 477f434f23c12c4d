"""``numgrad.linalg``: PyTorch's ``torch.linalg`` (the ops are in ``ops/linalg_<concept>.py``:
solves, decompositions, determinants, norms, compositions, and the derived, LU, LDL and eig ones;
the matrix products in ``ops/linalg.py``), each declared there with ``export(..., linalg=)``
(``ops/_names.py``). The functions with one result take ``out=``; those with several refuse it
(NotImplementedError)."""
from __future__ import annotations

from ._out import with_out as _with_out
from .ops._names import export as _export
from .ops._names import facade as _facade
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

_export(LinAlgError, "LinAlgError")  # (this module's own names start its __all__)
matmul = _export(_with_out(_products.matmul, "matmul"), "matmul")
_LINALG = _facade("linalg", (_solve, _decompositions, _determinants, _norms, _compositions,
                            _derived, _lu, _ldl, _eig))
globals().update(_LINALG)
__all__ += list(_LINALG)  # noqa: F821  (filled by _export above)
del _export, _facade
