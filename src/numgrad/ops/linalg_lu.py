"""The LU decomposition with partial pivoting, ``A = P L U``, and what uses it:
``linalg.lu_factor``/``lu_factor_ex`` (``L`` and ``U`` packed in one matrix, LAPACK's 1-based
int32 row swaps), ``linalg.lu``, ``lu_unpack``, ``linalg.lu_solve`` and the older ``torch.lu``
and ``torch.lu_solve``.

The factorisation is Gaussian elimination written with numgrad's ops, one column a step (the
pivot, the first largest magnitude as LAPACK's ``getrf`` picks it, chosen on the values), so its
gradient is the derivative of the factors for the pivots chosen, as PyTorch's
``linalg_lu_backward`` computes it, and second derivatives follow. The solves go through
``solve_triangular``.
"""
from __future__ import annotations

from ..tensor import Tensor
from .._dtype import torch_name
from ._names import export
from .linalg_derived import _solve_triangular
from .linalg_common import _ExResult, _check_float, _check_matrix, _check_tensor, _refuse_half
import numgrad


def _ng():
    return numgrad


class _LuFactorResult(_ExResult):
    _fields, _name = ("LU", "pivots"), "linalg_lu_factor"


class _LuFactorExResult(_ExResult):
    _fields, _name = ("LU", "pivots", "info"), "linalg_lu_factor_ex"


class _LuResult(_ExResult):
    _fields, _name = ("P", "L", "U"), "linalg_lu"


class _LuUnpackResult(_ExResult):
    _fields, _name = ("P", "L", "U"), "lu_unpack"


_TORCH_NAMES = {"int64": "Long", "int32": "Int", "bool": "Bool"}


def _check(fn: str, A: Tensor, pivot: bool) -> None:
    """PyTorch's checks, its messages naming ``fn`` for the dimensions."""
    _check_tensor(fn, A)
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f'"lu_cpu" not implemented for '
                                  f"'{_TORCH_NAMES.get(A.dtype.name, A.dtype.name)}'")
    _refuse_half(fn, A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _factor(A: Tensor):
    """(the packed factors, the 1-based int32 pivots, LAPACK's int32 info)."""
    ng = _ng()
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    rows = ng.arange(m, device=A.device)
    W = A.clone()
    pivots, info = [], ng.zeros(batch, dtype=ng.int32, device=A.device)
    for j in range(k):
        column = W.detach()[..., j:, j]
        # (the first of the largest, as LAPACK's idamax; of complex entries izamax's measure,
        # |re| + |im|)
        size = column.real.abs() + column.imag.abs() if column.dtype.is_complex else column.abs()
        p = size.argmax(-1) + j
        pivots.append(p)
        if m > 1:
            swap = ng.where(rows == j, p.unsqueeze(-1), ng.where(rows == p.unsqueeze(-1), j, rows))
            W = W.gather(-2, swap.unsqueeze(-1).expand(*batch, m, n))
        d = W[..., j, j]
        zero = d.detach() == 0
        info = ng.where(zero & (info == 0), j + 1, info).to(ng.int32)
        if j + 1 < m:  # (out of place: the rows below, their multiplier and trailing update)
            below = (W[..., j + 1:, j] / ng.where(zero, 1.0, d).unsqueeze(-1)).unsqueeze(-1)
            trailing = W[..., j + 1:, j + 1:] - below * W[..., j, j + 1:].unsqueeze(-2)
            rows_below = ng.cat([W[..., j + 1:, :j], below, trailing], -1)
            W = ng.cat([W[..., :j + 1, :], rows_below], -2)
    if pivots:
        piv = ng.stack(pivots, -1) + 1
    else:
        piv = ng.zeros((*batch, 0), dtype=ng.int64, device=A.device)
    return W, piv.to(ng.int32), info


def _raise_if_singular(fn: str, info: Tensor) -> None:
    """PyTorch's error for the first matrix with a zero pivot (info > 0), if any."""
    flat = info.reshape(-1)
    bad = (flat > 0).nonzero()
    if not bad.shape[0]:
        return
    b = int(bad[0, 0])
    k = int(flat[b])
    where = f"(Batch element {b}): " if info.ndim else ""
    raise RuntimeError(f"{fn}: {where}U[{k},{k}] is zero and using it on lu_solve would result "
                       "in a division by zero. If you still want to perform the factorization, "
                       "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@export(function=False, linalg=True)
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """``(LU, pivots, info)``: ``L`` (unit lower, its diagonal implied) and ``U`` in one matrix,
    the row swapped with each row (1-based), and the first zero pivot (1-based; 0 if none)."""
    _check("torch.lu_factor", A, pivot)
    LU, piv, info = _factor(A)
    if check_errors:
        _raise_if_singular("torch.linalg.lu_factor_ex", info)
    return _LuFactorExResult(LU, piv, info)


@export(function=False, linalg=True)
def lu_factor(A: Tensor, *, pivot: bool = True):
    """``(LU, pivots)``, raising where ``A`` is singular."""
    _check("torch.lu_factor", A, pivot)
    LU, piv, info = _factor(A)
    _raise_if_singular("torch.linalg.lu_factor", info)
    return _LuFactorResult(LU, piv)


def _permutation(pivots: Tensor, m: int, dtype, device) -> Tensor:
    """P (m x m) with ``A = P L U`` from LAPACK's sequence of row swaps."""
    ng = _ng()
    batch = tuple(pivots.shape[:-1])
    rows = ng.arange(m, device=device)
    perm = rows.expand(*batch, m).clone()
    p = pivots.to(ng.int64) - 1
    for j in range(pivots.shape[-1]):
        pj = p[..., j:j + 1]
        a, b = perm[..., j:j + 1], perm.gather(-1, pj)
        perm = perm.scatter(-1, pj, a).scatter(-1, ng.full_like(pj, j), b)
    # row i of P^T A is row perm[i] of A: P^T = I[perm]
    return (perm.unsqueeze(-1) == rows).to(dtype).mT


@export(method=True)
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True):
    """``(P, L, U)`` from ``lu_factor``'s packed factors and pivots."""
    ng = _ng()
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + ng.eye(m, k, dtype=LU_data.dtype,
                                                   device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    else:
        L = U = LU_data.new_empty((0,))
    if unpack_pivots:
        if LU_pivots.dtype.name != "int32":
            raise RuntimeError("lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                               "torch.int32 dtype.\nNote: this function is intended to be used "
                               "with the output produced by torch.linalg.lu_factor")
        P = _permutation(LU_pivots, m, LU_data.dtype, LU_data.device)
    else:
        P = LU_data.new_empty((0,))
    return _LuUnpackResult(P, L, U)


@export(function=False, linalg="lu")
def linalg_lu(A: Tensor, *, pivot: bool = True):
    """``linalg.lu``: ``(P, L, U)`` with ``A = P L U``."""
    _check("linalg.lu", A, pivot)
    LU, piv, _ = _factor(A)
    return _LuResult(*lu_unpack(LU, piv))


def _check_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool) -> None:
    """PyTorch's checks of ``linalg.lu_solve``'s arguments, in its order."""
    fn = "torch.linalg.lu_solve"
    _check_tensor(fn, LU, "LU")
    _check_float(fn, LU)
    _check_tensor(fn, B, "B")
    if B.dtype is not LU.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {torch_name(LU._data.dtype)} and B of type "
                           f"{torch_name(B._data.dtype)} instead")
    if pivots.dtype is not _ng().int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    _check_matrix(fn, LU, refuse_half=False)
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    if pivots.ndim < 1 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the "
                           f"same, but got pivots with shape {list(pivots.shape)} instead")
    _refuse_half(fn, LU)


@export(function=False, linalg="lu_solve")
def linalg_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
                    adjoint: bool = False) -> Tensor:
    """``X`` with ``A X = B`` (``adjoint``: ``A^H X = B``; ``left=False``: ``X A = B``) for
    ``A = P L U`` given as ``lu_factor`` returns it."""
    _check_lu_solve(LU, pivots, B, left)
    P, L, U = lu_unpack(LU, pivots)
    if left and not adjoint:  # U^-1 L^-1 P^T B
        Y = _solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
        return _solve_triangular(U, Y, upper=True)
    if left:  # A^H X = B: P L^-H U^-H B (P real)
        Y = _solve_triangular(U.mT.conj(), B, upper=False)
        return P @ _solve_triangular(L.mT.conj(), Y, upper=True, unitriangular=True)
    if not adjoint:  # X P L U = B: B U^-1 L^-1 P^T
        Y = _solve_triangular(U, B, upper=True, left=False)
        return _solve_triangular(L, Y, upper=False, left=False, unitriangular=True) @ P.mT
    # X U^H L^H P^T = B: B P L^-H U^-H
    Y = _solve_triangular(L.mT.conj(), B @ P, upper=True, left=False,
                          unitriangular=True)
    return _solve_triangular(U.mT.conj(), Y, upper=False, left=False)


@export(method=True)
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """``torch.lu`` (deprecated, with PyTorch's warning once a process): ``(LU, pivots)``,
    raising where ``A`` is singular, or with ``get_infos`` the infos too."""
    _ng()._warn_once(
        "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex "
        "and will be removed in a future PyTorch release.\nLU, pivots = torch.lu(A, "
        "compute_pivots)\nshould be replaced with\nLU, pivots = torch.linalg.lu_factor(A, "
        "compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)"
        "\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
        "compute_pivots)")
    LU, piv, info = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (LU, piv, info) if get_infos else (LU, piv)


@export(method=True)
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``torch.lu_solve(b, LU_data, LU_pivots)``: ``linalg.lu_solve(LU_data, LU_pivots, b)``."""
    return linalg_lu_solve(LU_data, LU_pivots, b)
