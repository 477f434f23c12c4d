"""``linalg.eig`` and ``linalg.eigvals``: the eigen-decomposition of general square matrices
(LAPACK's geev, through NumPy), complex results, with PyTorch's backward (``linalg_eig_backward``:
``gA = V^-H (diag(gL) + P(V^H gV) / conj(L_j - L_i)) V^H``, ``P`` the projection that keeps the
columns of unit norm) and forward formula. Each eigenvector is of unit norm with its largest
component real, as LAPACK gives it; a loss that depends on the vectors' phases is refused in the
backward, as PyTorch refuses it.
"""
from __future__ import annotations

from ..tensor import Tensor
from ._names import export
from .linalg_common import _check_matrix, _ExResult, _Factor, _factor_results, _ng
from .registry import Sample, kernels_for, register

_PHASE = ("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
          "multiplication by e^{i phi}. The specified loss function depends on this quantity, so "
          "it is ill-defined.")


def _eig_backward(gL, gV, L: Tensor, V: Tensor) -> Tensor:
    """PyTorch's linalg_eig_backward for general (not Hermitian) matrices."""
    ng = _ng()
    Vh = V.mH
    if gV is None:  # (eigvals: V^-H diag(gL) V^H)
        return ng.linalg.solve(Vh, gL.unsqueeze(-1) * Vh)
    VhgV = Vh @ gV
    diag = VhgV.diagonal(0, -2, -1)
    if not bool(ng.allclose(diag.imag.detach(), ng.zeros_like(diag.imag), rtol=1e-2,
                            atol=1e-2)):
        raise RuntimeError(_PHASE)
    VhgV = VhgV - Vh @ (V * diag.real.unsqueeze(-2))
    eye = ng.eye(L.shape[-1], dtype=ng.bool, device=L.device)
    Lc = L.conj()
    gA = VhgV / ng.where(eye, 1, Lc.unsqueeze(-2) - Lc.unsqueeze(-1))
    if gL is not None:
        gA = ng.where(eye, ng.diag_embed(gL), gA)
    return ng.linalg.solve(Vh, gA @ Vh)


def _eig_jvp(ctx, t):
    """PyTorch's forward formula: with ``dP = V^-1 dA V``, the eigenvalues' tangent
    ``diag(dP)``, the eigenvectors' ``V (dP / (L_j - L_i))`` (zero diagonal) less its component
    that would change the columns' norms."""
    ng = _ng()
    L, V = eig(ctx.inputs[0])
    dP = ng.linalg.solve(V, t.to(V.dtype) @ V)
    if not ctx.op.index:
        return dP.diagonal(0, -2, -1)
    eye = ng.eye(L.shape[-1], dtype=ng.bool, device=L.device)
    dV = V @ ng.where(eye, 0, dP / ng.where(eye, 1, L.unsqueeze(-2) - L.unsqueeze(-1)))
    return dV - V * (V.mH @ dV).diagonal(0, -2, -1).real.unsqueeze(-2)


class _EigFactor(_Factor):
    jvp = _eig_jvp
    complex_ok = True

    @staticmethod
    def recompute(A, params):
        return tuple(eig(A))

    @staticmethod
    def formula(grads, factors, params):
        return _eig_backward(grads[0], grads[1], factors[0], factors[1])


def _phase_free(r):
    """Functions of eig's vectors that do not depend on each vector's phase."""
    return r[0], r[1].abs()


@register
class LinalgEig(_EigFactor):
    """eig's eigenvalues (also ``eigvals``)."""

    name, node = "linalg_eig", "LinalgEigBackward0"
    samples = (
        Sample(lambda m, a: m.view_as_real(m.linalg.eigvals(a)), ((3, 3),)),
        Sample(lambda m, a: m.linalg.eig(a)[0].abs(), ((2, 3, 3),)),
    )


@register
class LinalgEigVectors(_EigFactor):
    """eig's eigenvectors (the second output of PyTorch's one node); samples take functions of
    them that do not depend on each vector's phase."""

    name, node = "linalg_eig_vectors", "LinalgEigBackward0"
    index = 1
    samples = (Sample(lambda m, a: _phase_free(m.linalg.eig(a))[1], ((3, 3),)),)


_EIG_OPS = (LinalgEig, LinalgEigVectors)


class _EigResult(_ExResult):
    _fields, _name = ("eigenvalues", "eigenvectors"), "linalg_eig"


@export(function=False, linalg=True)
def eig(A: Tensor):
    """``torch.linalg.eig``: (eigenvalues, eigenvectors as columns) of each square matrix,
    complex; each eigenvector of unit norm."""
    _check_matrix("linalg.eig", A)
    w, v = kernels_for((A,), LinalgEig).linalg_eig(A._data)
    return _EigResult(*_factor_results(A, _EIG_OPS, (w, v)))


@export(function=False, linalg=True)
def eigvals(A: Tensor) -> Tensor:
    """``torch.linalg.eigvals``: the eigenvalues of each square matrix, complex."""
    _check_matrix("linalg.eigvals", A)
    w, v = kernels_for((A,), LinalgEig).linalg_eig(A._data)
    return _factor_results(A, _EIG_OPS, (w, v), (0,))[0]

