"""Products of several matrices and ``torch.linalg``'s other compositions of existing ops:
``matrix_power`` (repeated squaring, or the inverse's powers), ``multi_dot`` and ``chain_matmul``
(the cheapest order of the products), ``vecdot``, ``diagonal`` and ``cross``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from ._names import export
from .predicates import linalg_cross
from .linalg_common import _check_tensor, _eye_like, _ng, _with_out
from .linalg_solve import inv


# ------------------------------------------------------------------ compositions
def _matrix_power(A: Tensor, n: int) -> Tensor:
    """``torch.linalg.matrix_power``: ``A`` to the integer power ``n`` (by repeated squaring, as
    PyTorch; a negative ``n`` inverts first; ``n = 0`` the identity)."""
    _check_tensor("linalg.matrix_power", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    n = int(n)
    if n == 0:  # (PyTorch's: a clone of A overwritten by the identity, gradient zero)
        return A.clone().copy_(_eye_like(A).expand(*A.shape))
    if n < 0:
        A = inv(A)
        n = -n
    if n == 1:
        return A.clone()
    if n == 2:
        return A @ A
    if n == 3:
        return (A @ A) @ A
    result = None
    z = A
    while n:
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
        if n:
            z = z @ z
    return result


def multi_dot(tensors) -> Tensor:
    """``torch.linalg.multi_dot``: the product of the matrices (the first and last may be
    vectors), in the order of fewest multiplications."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    mats = list(tensors)
    if first.ndim == 1:
        mats[0] = first.unsqueeze(0)
    if last.ndim == 1:
        mats[-1] = last.unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(mats[i].shape)} and "
                f"{list(mats[i + 1].shape)} cannot be multiplied")
    if len(mats) == 2:
        out = mats[0] @ mats[1]
    else:
        out = _chain(mats, _order(mats), 0, len(mats) - 1)
    shape = ([] if first.ndim == 1 else [out.shape[0]]) + ([] if last.ndim == 1 else [tuple(out.shape)[1]])
    return out.view(*shape)


def _order(mats):
    """The matrix-chain order: ``split[i][j]``, the best split of the product of i..j."""
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return _chain(mats, split, i, k) @ _chain(mats, split, k + 1, j)


def _chain_matmul(*matrices) -> Tensor:
    """``torch.chain_matmul`` (deprecated): ``multi_dot`` of 2-D matrices."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """``torch.linalg.vecdot``: ``(x.conj() * y).sum(dim)``, broadcast (PyTorch's: the first
    vector conjugated)."""
    return ((x.conj() if x.dtype.is_complex else x) * y).sum(dim)


@export(function=False, linalg="diagonal")
def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.linalg.diagonal``: ``torch.diagonal`` with the last two dimensions by default."""
    return _ng().diagonal(A, offset, dim1, dim2)


matrix_power = export(_with_out(_matrix_power, "matmul"), "matrix_power", method=True,
                      linalg=True)


chain_matmul = export(_with_out(_chain_matmul, "mm"), "chain_matmul")

# numgrad.linalg's functions (numgrad/linalg.py)
export(_with_out(multi_dot, "mm"), function=False, linalg="multi_dot")
export(_with_out(vecdot, "linalg_vecdot"), function=False, linalg="vecdot")
export(_with_out(linalg_cross, "linalg_cross"), function=False, linalg="cross")
