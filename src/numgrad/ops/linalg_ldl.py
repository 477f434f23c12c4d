"""The LDL^T factorisation of symmetric matrices: ``linalg.ldl_factor``, ``ldl_factor_ex`` and
``ldl_solve``, with Bunch-Kaufman pivoting as LAPACK's ``?sytrf`` gives it (the kernels are in
``kernels/cpu/ldl.py``; PyTorch returns LAPACK's packed factors and pivots).

PyTorch defines no derivative for them: their results require grad when an input does, through
a node whose backward raises (``NotImplemented``), and so do numgrad's. ``hermitian`` changes
nothing for real matrices.
"""
from __future__ import annotations

from ..tensor import Tensor
from ._names import export
from .linalg_common import _check_matrix, _ExResult, _refuse_half
from .reduction import _torch_name
from .registry import Op, Sample, apply, kernels_for, register
from ._promote import broadcast_shapes


def _sym(m, a):
    """A symmetric matrix from ``a`` (a sample's input)."""
    return a + a.mT


class _NoDerivative(Op):
    node = "torch::autograd::NotImplemented"

    @classmethod
    def jvp(cls, ctx, *tangents):
        """PyTorch defines no derivative here, in either mode: forward AD raises its error."""
        raise NotImplementedError(f"Trying to use forward AD with aten::{cls.name} that does not "
                                  "support it.")

    @staticmethod
    def forward(K, result, *inputs):
        return result


@register
class LinalgLdlFactorEx(_NoDerivative):
    name = "linalg_ldl_factor_ex"
    samples = (
        Sample(lambda m, a: m.linalg.ldl_factor(_sym(m, a)), ((5, 5),), grad=False),
        Sample(lambda m, a: m.linalg.ldl_factor_ex(_sym(m, a), hermitian=True)[:2], ((2, 4, 4),),
               grad=False),
        # (the node's backward raises, so the gradient flows around it; the factored matrix is
        # piecewise constant in ``a``)
        Sample(lambda m, a: m.linalg.ldl_factor(_sym(m, (a * 4).floor().detach()))[0] * a,
               ((3, 3),)),
    )

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::linalg_ldl_factor_ex is not implemented")


@register
class LinalgLdlSolve(_NoDerivative):
    name = "linalg_ldl_solve"
    samples = (
        Sample(lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(_sym(m, a)), b),
               ((4, 4), (3, 4, 2)), grad=False),
        Sample(lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(
            _sym(m, (a * 4).floor().detach())), (b * 4).floor().detach()) * b, ((3, 3), (3, 1))),
    )

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::linalg_ldl_solve is not implemented")


class _LdlFactorResult(_ExResult):
    _fields, _name = ("LD", "pivots"), "linalg_ldl_factor"


class _LdlFactorExResult(_ExResult):
    _fields, _name = ("LD", "pivots", "info"), "linalg_ldl_factor_ex"


def _factor(A: Tensor):
    _check_matrix("torch.linalg.ldl_factor_ex", A)
    if A._data.dtype.kind == "c":  # (the Bunch-Kaufman kernel is real's; its kernel's words)
        raise NotImplementedError("\"linalg_ldl_factor_ex\" not implemented for "
                                  f"'{_torch_name(A._data.dtype)}'")
    K = kernels_for((A,), LinalgLdlFactorEx)
    ld, pivots, info = K.ldl_factor(A._data)
    return apply(LinalgLdlFactorEx, (A,), (ld,)), Tensor._wrap(pivots), Tensor._wrap(info)


def _raise_if_failed(fn: str, info: Tensor) -> None:
    """PyTorch's error where a pivot is zero (its message, which calls the code unknown)."""
    flat = info.reshape(-1)
    bad = (flat != 0).nonzero()
    if bad.shape[0]:
        raise RuntimeError(f"{fn}: Unknown error code: {int(flat[int(bad[0, 0])])}.")


@export(function=False, linalg=True)
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False):
    """``(LD, pivots, info)``: ``L`` (unit lower, its diagonal implied) below the diagonal, the
    1x1 and 2x2 blocks of ``D`` on it and the first subdiagonal, LAPACK's 1-based int32 pivots,
    and the first zero pivot (1-based, 0 if none)."""
    LD, pivots, info = _factor(A)
    if check_errors:
        _raise_if_failed("torch.linalg.ldl_factor_ex", info)
    return _LdlFactorExResult(LD, pivots, info)


@export(function=False, linalg=True)
def ldl_factor(A: Tensor, *, hermitian: bool = False):
    """``(LD, pivots)``, raising where a pivot is zero."""
    LD, pivots, info = _factor(A)
    _raise_if_failed("torch.linalg.ldl_factor", info)
    return _LdlFactorResult(LD, pivots)


@export(function=False, linalg=True)
def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """``X`` with ``A X = B`` for ``A`` as ``ldl_factor`` returns it; batch dimensions
    broadcast."""
    fn = "torch.linalg.ldl_solve"
    _check_matrix(fn, LD, refuse_half=False)
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{fn}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pivots.shape)} instead")
    if pivots.dtype.is_floating_point or pivots.dtype.name == "bool":
        raise RuntimeError(f"{fn}: Expected pivots to be integers. Got "
                           f"{_torch_name(pivots._data.dtype)}")
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(B.ndim, 1)}, {max(B.ndim, 1) - 1}], but got -2)")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_torch_name(B._data.dtype)} and A of type "
                           f"{_torch_name(LD._data.dtype)} instead.")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {fn}: each A matrix is {n} by {n} but "
                           f"each b matrix is {B.shape[-2]} by {B.shape[-1]}")

    broadcast_shapes(tuple(B.shape[:-2]), tuple(LD.shape[:-2]))  # (PyTorch's error)
    _refuse_half(fn, LD)
    K = kernels_for((LD, pivots, B), LinalgLdlSolve)
    x = K.ldl_solve(LD._data, pivots._data, B._data)
    return apply(LinalgLdlSolve, (LD, B), (x,))
