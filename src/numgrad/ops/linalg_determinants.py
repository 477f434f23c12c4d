"""Determinants: ``det`` (``LinalgDetBackward0``), ``slogdet`` (its sign and log each an op of its
own, under PyTorch's node names) and ``logdet``, on the device's ``K.linalg_det``/``slogdet``
kernels (an LU factorisation); the backward of a singular matrix goes through the SVD, as
PyTorch's, and is written with recorded ops, so that second derivatives work.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register
from .linalg_common import _check_matrix, _diag, _eye_like, _mH, _ng, _no_out, _with_out
from .linalg_solve import _bsolve
from .linalg_decompositions import linalg_svd


# ------------------------------------------------------------------ det, slogdet, logdet
@register
class LinalgDet(Op):
    name, node = "linalg_det", "LinalgDetBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: m.linalg.det(a), ((3, 3),)),
        Sample(lambda m, a: m.det(a.mT), ((2, 3, 3),)),
        Sample(lambda m, a: a.det(), ((1, 1),)),
    )

    @staticmethod
    def forward(K, a):
        return K.linalg_det(a)

    @staticmethod
    def backward(ctx, grad):
        A, det = ctx.saved_tensors
        ng = _ng()
        if not A.numel():
            return (ng.zeros_like(A),)
        n = A.shape[-1]
        cx = A._data.dtype.kind == "c"  # (the gradient is grad conj(cofactors(A)))
        if not grad_mode.state.enabled:  # (a plain backward: at the array level, no read)
            K = kernels_for((A,))
            a, d = A._data, det._data
            if cx:  # (grad det A^-T of conj(A), conj(det): grad conj(det) A^-H)
                a, d = a.conj(), d.conj()
            return (Tensor._wrap(K.linalg_det_backward(a, d, grad._data)),)
        g = grad * (det.conj() if cx else det)
        d = _diag(g.unsqueeze(-1).expand(*g.shape, n))

        def nonsingular(M):
            return _bsolve(_mH(M), d)

        def singular(M):
            U, S, Vh = linalg_svd(M)
            alpha = det_of(U) * det_of(Vh)
            alpha = (alpha.conj() if cx else alpha) * grad
            eye = (_eye_like(M).real if cx else _eye_like(M)) > 0.5
            others = ng.where(eye, 1.0, S.unsqueeze(-2).expand(*S.shape, n)).prod(-1)
            D = alpha.unsqueeze(-1) * others
            return (U * D.unsqueeze(-2)) @ Vh

        if n == 1:
            return (grad.unsqueeze(-1).unsqueeze(-1).expand(*A.shape),)
        eps = float(np.finfo(A._data.dtype).eps)
        is_singular = det.abs() < 100 * eps
        flags = is_singular.reshape(-1).tolist()
        if not builtins.any(flags):
            return (nonsingular(A),)
        if builtins.all(flags):
            return (singular(A),)
        mask = is_singular.unsqueeze(-1).unsqueeze(-1)
        eye = _eye_like(A).expand(*A.shape)
        distinct = _diag(ng.ones_like(A[..., 0]).cumsum(-1))
        return (ng.where(mask, singular(ng.where(mask, A, distinct)),
                         nonsingular(ng.where(mask, eye, A))),)


def det_of(A: Tensor) -> Tensor:
    return apply(LinalgDet, (A,), (A._data,))


@export(method=True)
def det(A: Tensor) -> Tensor:
    """``torch.linalg.det``: the determinant of each square matrix."""
    _check_matrix("linalg.det", A)
    return det_of(A)


@register
class LinalgSlogdet(Op):
    """The log of the absolute determinant (slogdet's ``logabsdet``)."""

    name, node = "linalg_slogdet", "LinalgSlogdetBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    samples = (
        Sample(lambda m, a: m.linalg.slogdet(a)[1], ((3, 3),)),
        Sample(lambda m, a: m.slogdet(a).logabsdet, ((2, 2, 2),)),
        Sample(lambda m, a: m.logdet(a @ a.mT + m.eye(3, dtype=a.dtype, device=a.device)), ((3, 3),)),
    )

    @staticmethod
    def forward(K, logabs, *, sign):
        return logabs

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        if A.dtype.is_complex:  # (the real gradient of log|det| in the complex solve)
            grad = grad.to(A.dtype)
        return (_bsolve(_mH(A), _diag(grad.unsqueeze(-1).expand(*grad.shape, A.shape[-1]))),)


@register
class LinalgSlogdetSign(Op):
    """slogdet's ``sign`` (of a real matrix: piecewise constant, its gradient zero; of a complex
    one the determinant's phase, PyTorch's ``slogdet_backward``: ``i Im(grad conj(sign))``
    where log|det| has ``grad``)."""

    name, node = "linalg_slogdet_sign", "LinalgSlogdetBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    samples = (Sample(lambda m, a: m.linalg.slogdet(a).sign, ((3, 3),)),)

    @staticmethod
    def forward(K, sign):
        return sign

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        if not A.dtype.is_complex:
            return (None,)
        det = det_of(A)  # (the sign again, differentiable: det / |det|)
        sign = det / det.abs()
        g = (grad * sign.conj()).imag.to(A.dtype) * 1j
        return (_bsolve(_mH(A), _diag(g.unsqueeze(-1).expand(*g.shape, A.shape[-1]))),)


class _SlogdetResult(tuple):
    """``torch.return_types.linalg_slogdet``: (sign, logabsdet)."""

    def __new__(cls, sign, logabsdet):
        return super().__new__(cls, (sign, logabsdet))

    sign = property(lambda self: self[0])
    logabsdet = property(lambda self: self[1])

    def __repr__(self):
        return f"torch.return_types.linalg_slogdet(\nsign={self[0]!r},\nlogabsdet={self[1]!r})"


def slogdet(A: Tensor):
    """``torch.linalg.slogdet``: (sign, log|det|) of each square matrix."""
    _check_matrix("linalg.slogdet", A)
    K = kernels_for((A,), LinalgSlogdet)
    sign, logabs = K.linalg_slogdet(A._data)
    return _SlogdetResult(apply(LinalgSlogdetSign, (A,), (sign,)),
                          apply(LinalgSlogdet, (A,), (logabs,), sign=sign))


@export(method=True)
def logdet(input: Tensor) -> Tensor:
    """``torch.logdet``: log det (NaN for a negative determinant, -inf for a singular matrix),
    as PyTorch composes it (``where(sign == -1, nan, logabsdet)``; of a complex matrix
    ``log(sign) + logabsdet``)."""
    _check_matrix("logdet", input)
    sign, logabs = slogdet(input)
    if sign.dtype.is_complex:  # (PyTorch's: the log of the phase added)
        return sign.log() + logabs
    return _ng().where(sign == -1, math.nan, logabs)


slogdet = export(_no_out(slogdet, "slogdet"), "slogdet", method=True, linalg=True)

# numgrad.linalg's functions (numgrad/linalg.py)
export(_with_out(det, "_linalg_det"), function=False, linalg="det")
