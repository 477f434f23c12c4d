"""The Cholesky, QR, symmetric eigen- and singular value decompositions (``torch.linalg.cholesky``,
``qr``, ``eigh``, ``eigvalsh``, ``svd``, ``svdvals`` and the top-level ``cholesky``, ``qr``,
``svd``) and what is computed from the SVD (``pinv``, ``pinverse``, ``lstsq``, ``matrix_rank``),
with PyTorch's node names, backward formulas (``FunctionsManual.cpp``'s, written with
recorded ops so that second derivatives work), result dtypes and error messages.

The arrays are computed by the device's ``K.linalg_*`` kernels (``kernels/*/decompositions.py``:
LAPACK through NumPy on the CPU). A decomposition with several differentiable outputs (Q and R,
U, S and Vh, eigenvalues and eigenvectors) is computed once, before the ops run; each output is
then the result of an op of its own under PyTorch's node name, whose backward is the
decomposition's backward formula with that output's gradient alone (the formulas are linear in
the outputs' gradients, so the sum over the outputs is PyTorch's one node's). A backward that is
itself recorded (``create_graph``) uses the forward's outputs, rebuilt with their nodes as
``grad_fn`` (``linalg_common._Outputs``), as PyTorch unpacks its node's saved outputs, so that
its graph reaches the input through them and a second backward sums at each output's node what
reaches it.

Every op has CUDA kernels (``kernels/cuda/decompositions.py``, for batches of small matrices:
Cholesky, Householder QR, Jacobi eigh and SVD, one thread per matrix); the vectors of eigh and
svd are defined up to sign there as here, and may differ in sign from LAPACK's.
"""
from __future__ import annotations

import warnings

from ..autograd import grad_mode
from ..tensor import Tensor
from ._names import export
from .reduction import _torch_name
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from .linalg_common import (
    _ExResult, _Factor, _check_matrix, _check_tensor, _diag, _epsilon, _factor_results, _mH, _ng,
    _no_out, _refuse_half, _with_out,
)
from .linalg_solve import _bsolve
from ._promote import broadcast_shapes


# ------------------------------------------------------------------ Cholesky
def _cholesky_backward(gL: Tensor, L: Tensor, upper: bool) -> Tensor:
    """PyTorch's cholesky_backward (Murray 2016): ``gA = L^-H Phi(L^H gL) L^-1``, symmetrised."""
    if upper:
        L, gL = _mH(L), _mH(gL)
    gA = (_mH(L) @ gL).tril()
    gA = 0.5 * (gA + _mH(gA.tril(-1)))
    gA = _bsolve(_mH(L), gA)
    return _bsolve(L, gA, left=False)


def _cholesky_jvp(ctx, t):
    """PyTorch's forward formula: ``dL = L Phi(L^-1 dA L^-H)``, ``Phi`` the lower triangle with
    the diagonal halved, ``dA`` used whole (a tangent that is not symmetric too, as there)."""
    upper = ctx.params["upper"]
    L = _mH(ctx.result) if upper else ctx.result
    inner = _bsolve(_mH(L), _bsolve(L, t), left=False)
    inner = inner.tril() - _diag(0.5 * inner.diagonal(0, -2, -1))
    dL = L @ inner
    return _mH(dL) if upper else dL


class _Cholesky(Op):
    jvp = _cholesky_jvp
    on_cuda = True
    save_output = True

    @staticmethod
    def forward(K, factor, *, upper):
        return factor

    @staticmethod
    def backward(ctx, grad):
        (L,) = ctx.saved_tensors
        return (_cholesky_backward(grad, L, ctx.params["upper"]),)


@register
class LinalgCholeskyEx(_Cholesky):
    name, node = "linalg_cholesky_ex", "LinalgCholeskyExBackward0"
    complex_ok = True
    samples = (
        Sample(lambda m, a: m.linalg.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype, device=a.device)), ((3, 3),)),
        Sample(lambda m, a: m.linalg.cholesky(a @ a.mT + m.eye(2, dtype=a.dtype, device=a.device), upper=True),
               ((2, 2, 2),)),
        Sample(lambda m, a: m.linalg.cholesky_ex(a @ a.mT + m.eye(2, dtype=a.dtype, device=a.device)).L, ((2, 2),)),
    )


@register
class CholeskyLegacy(_Cholesky):
    """``torch.cholesky`` (deprecated): a node of its own."""

    name, node = "cholesky", "CholeskyBackward0"
    complex_ok = True
    samples = (Sample(lambda m, a: m.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype, device=a.device)), ((3, 3),)),)


class _CholeskyExResult(_ExResult):
    _fields, _name = ("L", "info"), "linalg_cholesky_ex"


def _cholesky(op, A: Tensor, upper: bool, check: bool, fn: str):
    _check_matrix("linalg.cholesky" if fn == "linalg.cholesky_ex" else fn, A)
    K = kernels_for((A,), op)
    factor, info = K.linalg_cholesky(A._data, bool(upper), check, fn)
    return apply(op, (A,), (factor,), upper=bool(upper)), Tensor._wrap(info)


def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """``torch.linalg.cholesky``: the lower (``upper``: upper) Cholesky factor of each
    Hermitian positive-definite matrix."""
    return _cholesky(LinalgCholeskyEx, A, upper, True, "linalg.cholesky")[0]


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False):
    """``torch.linalg.cholesky_ex``: (L, info)."""
    return _CholeskyExResult(*_cholesky(LinalgCholeskyEx, A, upper, bool(check_errors),
                                        "linalg.cholesky_ex"))


def _legacy_cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch, with its warning)."""
    warnings.warn(
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a "
        "future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\n"
        "L = torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced "
        "with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results "
        "for all valid (symmetric positive definite) inputs.", UserWarning, stacklevel=2)
    if isinstance(input, Tensor) and input.ndim >= 2 and input._data.dtype.kind not in "fcV":
        raise NotImplementedError(f'"cholesky_cpu" not implemented for '
                                  f"'{_torch_name(input._data.dtype)}'")
    return _cholesky(CholeskyLegacy, input, upper, True, "cholesky")[0]


# ------------------------------------------------------------------ QR
def _qr_backward(gQ, gR, Q: Tensor, R: Tensor, mode: str) -> Tensor:
    """PyTorch's linalg_qr_backward (real or complex matrices)."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if gQ is not None:
        gA = (gR @ _mH(R) - _mH(Q) @ gQ) if gR is not None else -(_mH(Q) @ gQ)
    else:
        gA = gR @ _mH(R)
    ng = _ng()
    if m >= n:
        sym = gA.triu()
        sym = sym + _mH(sym)
        sym = sym - _diag(ng.diagonal(sym, 0, -2, -1) * 0.5)
        gA = Q @ sym
        if gQ is not None:
            gA = gA + gQ
        return _bsolve(_mH(R), gA, left=False)
    X = -gA
    skew = (X - _mH(X)).tril()
    if skew.dtype.is_complex:  # (PyTorch's trilImInvAdjSkew: its imaginary diagonal halved)
        skew = skew - _diag(ng.diagonal(skew, 0, -2, -1) * 0.5)
    gA = Q @ skew
    gA = _bsolve(_mH(R.narrow(-1, 0, m)), gA, left=False)
    zeros = ng.zeros(*R.shape[:-1], n - m, dtype=gA.dtype, device=gA.device)
    gA = ng.cat([gA, zeros], -1)
    if gR is not None:
        gA = gA + Q @ gR
    return gA


class _QrFactor(_Factor):
    jvp = _jvp.transposed_backward
    on_cuda = True

    @staticmethod
    def recompute(A, params):
        return tuple(linalg_qr(A, params["mode"]))

    @staticmethod
    def formula(grads, factors, params):
        return _qr_backward(grads[0], grads[1], factors[0], factors[1], params["mode"])


@register
class LinalgQr(_QrFactor):
    name, node = "linalg_qr", "LinalgQrBackward0"
    complex_ok = True
    samples = (
        Sample(lambda m, a: m.linalg.qr(a.flip(0)), ((4, 3),)),
        Sample(lambda m, a: m.linalg.qr(a.flip(-2), mode="complete"), ((2, 2, 3),)),
        Sample(lambda m, a: m.qr(a + 3 * m.eye(3, dtype=a.dtype, device=a.device))[0], ((3, 3),)),
    )


@register
class LinalgQrR(_QrFactor):
    """QR's R (the second output of PyTorch's one node)."""

    name, node = "linalg_qr_r", "LinalgQrBackward0"
    complex_ok = True
    index = 1
    samples = (Sample(lambda m, a: m.linalg.qr(a).R, ((3, 4),)),)


class _QrResult(_ExResult):
    _fields, _name = ("Q", "R"), "linalg_qr"


def linalg_qr(A: Tensor, mode: str = "reduced"):
    """``torch.linalg.qr``: (Q, R), ``mode`` 'reduced' (default), 'complete' or 'r' (Q empty)."""
    _check_matrix("linalg.qr", A, square=False, refuse_half=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _refuse_half("linalg.qr", A)
    K = kernels_for((A,), LinalgQr)
    q, r = K.linalg_qr(A._data, mode)
    if mode == "r":  # (Q empty, no output of the node)
        return _QrResult(Tensor._wrap(q), *_factor_results(A, (None, LinalgQrR), (q, r), (1,),
                                                           mode=mode))
    return _QrResult(*_factor_results(A, (LinalgQr, LinalgQrR), (q, r), mode=mode))


def _legacy_qr(input: Tensor, some: bool = True):
    """``torch.qr`` (deprecated): ``some=False`` is mode 'complete'."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                  "future PyTorch release.", UserWarning, stacklevel=2)
    Q, R = linalg_qr(input, "reduced" if some else "complete")
    return _ExResultQR(Q, R)


class _ExResultQR(_ExResult):
    _fields, _name = ("Q", "R"), "qr"


# ------------------------------------------------------------------ eigh
def _eigh_backward(gL, gV, L: Tensor, V: Tensor) -> Tensor:
    """PyTorch's linalg_eig_backward for Hermitian (here real symmetric) matrices."""
    Vh = _mH(V)
    if gV is None:
        return (V * gL.unsqueeze(-2)) @ Vh
    ng = _ng()
    VhgV = Vh @ gV
    VhgV = 0.5 * (VhgV - _mH(VhgV))
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + _diag(ng.ones_like(L))
    gA = VhgV / E
    if gL is not None:
        gA = gA - _diag(ng.diagonal(gA, 0, -2, -1)) + _diag(gL)
    return V @ (gA @ Vh)


def _eigh_squares(r):
    return r[0], r[1].pow(2)  # (the squares do not depend on each vector's sign)


def _eigh_rebuilt(r):
    return (r[1] * r[0].unsqueeze(-2)) @ r[1].mT


def _eigh_jvp(ctx, t):
    """PyTorch's forward formula: with ``dP = V^H dA V`` (``dA`` used whole), the eigenvalues'
    tangent ``diag(dP)``, the eigenvectors' ``V (dP / (L_j - L_i))`` with a zero diagonal."""
    ng = _ng()
    L, V = eigh(ctx.inputs[0], ctx.params["UPLO"])
    dP = _mH(V) @ t @ V
    if not ctx.op.index:  # (real eigenvalues: the real part, of a complex Hermitian dA)
        dL = ng.diagonal(dP, 0, -2, -1)
        return dL.real if dL.is_complex() else dL
    n = L.shape[-1]
    off = ng.eye(n, dtype=ng.bool).logical_not()
    return V @ ng.where(off, dP / (L.unsqueeze(-2) - L.unsqueeze(-1)), 0.0)


class _EighFactor(_Factor):
    jvp = _eigh_jvp
    on_cuda = True

    @staticmethod
    def recompute(A, params):
        return tuple(eigh(A, params["UPLO"]))

    @staticmethod
    def formula(grads, factors, params):
        return _eigh_backward(grads[0], grads[1], factors[0], factors[1])


@register
class LinalgEigh(_EighFactor):
    """eigh's eigenvalues (also ``eigvalsh``)."""

    name, node = "linalg_eigh", "LinalgEighBackward0"
    complex_ok = True
    samples = (
        Sample(lambda m, a: m.linalg.eigvalsh(a + a.mT), ((3, 3),)),
        Sample(lambda m, a: m.linalg.eigh(a + a.mT, UPLO="U")[0], ((2, 3, 3),)),
    )


@register
class LinalgEighVectors(_EighFactor):
    """eigh's eigenvectors (the second output of PyTorch's one node); samples take functions of
    them that do not depend on each vector's sign."""

    name, node = "linalg_eigh_vectors", "LinalgEighBackward0"
    complex_ok = True
    index = 1
    samples = (
        Sample(lambda m, a: _eigh_squares(m.linalg.eigh(a + a.mT)), ((3, 3),)),
        Sample(lambda m, a: _eigh_rebuilt(m.linalg.eigh(a + a.mT)), ((2, 3, 3),)),
    )


_EIGH_OPS = (LinalgEigh, LinalgEighVectors)


class _EighResult(_ExResult):
    _fields, _name = ("eigenvalues", "eigenvectors"), "linalg_eigh"


def _check_uplo(UPLO) -> bool:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO in ("U", "u")


def _check_eigh_dtype(A: Tensor, fn: str) -> None:
    if A._data.dtype.kind not in "fcV":
        raise NotImplementedError(f'"linalg_eigh_cpu" not implemented for '
                                  f"'{_torch_name(A._data.dtype)}'")
    _refuse_half("linalg.eigh", A)


def eigh(A: Tensor, UPLO: str = "L"):
    """``torch.linalg.eigh``: (eigenvalues ascending, eigenvectors as columns) of each real
    symmetric matrix, read from its lower (``UPLO='U'``: upper) triangle."""
    _check_tensor("linalg.eigh", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.eigh: The input tensor A must have at least 2 dimensions.")
    upper = _check_uplo(UPLO)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.eigh: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    _check_eigh_dtype(A, "linalg.eigh")
    K = kernels_for((A,), LinalgEigh)
    w, v = K.linalg_eigh(A._data, upper, True)
    return _EighResult(*_factor_results(A, _EIGH_OPS, (w, v), UPLO=UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """``torch.linalg.eigvalsh``: the eigenvalues (ascending) of each real symmetric matrix."""
    _check_tensor("linalg.eigvalsh", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.eigh: The input tensor A must have at least 2 dimensions.")
    upper = _check_uplo(UPLO)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.eigh: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    _check_eigh_dtype(A, "linalg.eigvalsh")
    K = kernels_for((A,), LinalgEigh)
    needs = A.requires_grad and grad_mode.state.enabled
    w, v = K.linalg_eigh(A._data, upper, needs)
    return _factor_results(A, _EIGH_OPS, (w, v), (0,), UPLO=UPLO)[0]


# ------------------------------------------------------------------ SVD
def _svd_backward(gU, gS, gVh, U: Tensor, S: Tensor, Vh: Tensor) -> Tensor:
    """PyTorch's svd_backward (reduced factors; real or complex matrices)."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    ng = _ng()

    def skew(X):
        return X - _mH(X)

    UhgU = skew(_mH(U) @ gU) if gU is not None else None
    VhgV = skew(Vh @ _mH(gVh)) if gVh is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _diag(ng.ones_like(S))
    if gU is not None and gVh is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif gU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + _diag(gS)
    if gU is not None and U.dtype.is_complex:  # (complex factors: PyTorch's term of the
        # imaginary diagonal of U^H gU, which the skew parts above cancel)
        gA = gA + _diag((_mH(U) @ gU).diagonal(0, -2, -1).imag / S * 1j)
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (_mH(U) @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ _mH(Vh)) @ Vh
        return U @ gA
    return U @ (gA @ Vh) if m >= n else (U @ gA) @ Vh


def _svd_product(r):
    return r[0] @ r[2], r[1]  # (U Vh: the sign of a pair u_i, v_i cancels)


def _svd_squares(r):
    return (r[0] * r[1].unsqueeze(-2)).pow(2), (r[1].unsqueeze(-1) * r[2]).pow(2)


def _svd_gram(r):
    return r[2].mT @ (r[1].unsqueeze(-1) * r[2])


def _svd_rebuilt(r):  # (torch.svd's (U, S, V))
    return (r[0] * r[1].unsqueeze(-2)) @ r[2].mT


class _SvdFactor(_Factor):
    jvp = _jvp.transposed_backward
    on_cuda = True

    @staticmethod
    def recompute(A, params):
        return tuple(linalg_svd(A, full_matrices=params["full_matrices"]))

    @staticmethod
    def formula(grads, factors, params):
        U, S, Vh = factors
        gU, gS, gVh = grads
        if params["full_matrices"]:
            k = S.shape[-1]
            U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
            gU = gU.narrow(-1, 0, k) if gU is not None else None
            gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
        return _svd_backward(gU, gS, gVh, U, S, Vh)


@register
class LinalgSvdU(_SvdFactor):
    """SVD's U; samples take functions of U and Vh that do not depend on the singular vectors'
    signs (``U @ Vh``, squares), as PyTorch's OpInfo does."""

    name, node = "linalg_svd", "LinalgSvdBackward0"
    complex_ok = True
    samples = (
        Sample(lambda m, a: _svd_product(m.linalg.svd(a, full_matrices=False)), ((4, 3),)),
        Sample(lambda m, a: _svd_squares(m.linalg.svd(a + m.eye(2, 3, dtype=a.dtype, device=a.device),
                                                      full_matrices=False)), ((2, 2, 3),)),
    )


@register
class LinalgSvdS(_SvdFactor):
    """SVD's singular values (also ``svdvals``)."""

    name, node = "linalg_svd_s", "LinalgSvdBackward0"
    complex_ok = True
    index = 1
    samples = (
        Sample(lambda m, a: m.linalg.svdvals(a), ((3, 4),)),
        Sample(lambda m, a: m.linalg.svd(a)[1], ((2, 3, 2),)),
    )


@register
class LinalgSvdVh(_SvdFactor):
    name, node = "linalg_svd_vh", "LinalgSvdBackward0"
    complex_ok = True
    index = 2
    samples = (
        Sample(lambda m, a: _svd_gram(m.linalg.svd(a)), ((3, 3),)),
        Sample(lambda m, a: _svd_rebuilt(m.svd(a + m.eye(3, 2, dtype=a.dtype, device=a.device))), ((3, 2),)),
    )


_SVD_OPS = (LinalgSvdU, LinalgSvdS, LinalgSvdVh)


class _SvdResult(_ExResult):
    _fields, _name = ("U", "S", "Vh"), "linalg_svd"


class _LegacySvdResult(_ExResult):
    _fields, _name = ("U", "S", "V"), "svd"


def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """``torch.linalg.svd``: (U, S, Vh), ``A = U diag(S) Vh``, S descending."""
    _check_matrix("linalg.svd", A, square=False)
    K = kernels_for((A,), LinalgSvdU)
    u, s, vh = K.linalg_svd(A._data, bool(full_matrices), True)
    return _SvdResult(*_factor_results(A, _SVD_OPS, (u, s, vh),
                                       full_matrices=bool(full_matrices)))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """``torch.linalg.svdvals``: the singular values, descending."""
    _check_matrix("linalg.svd", A, square=False)
    K = kernels_for((A,), LinalgSvdS)
    if A.requires_grad and grad_mode.state.enabled:
        u, s, vh = K.linalg_svd(A._data, False, True)
    else:
        u, s, vh = K.linalg_svd(A._data, False, False)
    return _factor_results(A, _SVD_OPS, (u, s, vh), (1,), full_matrices=False)[0]


def _legacy_svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """``torch.svd``: (U, S, V), V not transposed; ``some=False`` full matrices; without
    ``compute_uv``, U and V are zeros."""
    if isinstance(input, Tensor) and input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input.ndim} dimensions instead")
    _check_matrix("linalg.svd", input, square=False)
    if not compute_uv:
        ng = _ng()
        s = svdvals(input)
        m, n = tuple(input.shape)[-2:]
        return _LegacySvdResult(ng.zeros(*tuple(input.shape)[:-2], m, m, dtype=input.dtype),
                                s, ng.zeros(*tuple(input.shape)[:-2], n, n, dtype=input.dtype))
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return _LegacySvdResult(U, S, _mH(Vh))


# ------------------------------------------------------------------ pinv and lstsq
def _pinv_backward(grad: Tensor, pinvA: Tensor, A: Tensor) -> Tensor:
    m, n = A.shape[-2], A.shape[-1]
    pinvAh = _mH(pinvA)
    gradh = _mH(grad)
    if m <= n:
        K = gradh @ pinvA
        KpinvAh = K @ pinvAh
        return -_mH(pinvA @ K) + KpinvAh - (A @ pinvA) @ KpinvAh + \
            (pinvAh @ pinvA) @ (gradh - K @ A)
    K = pinvA @ gradh
    pinvAhK = pinvAh @ K
    return -_mH(K @ pinvA) + ((gradh - A @ K) @ pinvA) @ pinvAh + pinvAhK - \
        (pinvAhK @ pinvA) @ A


@register
class LinalgPinv(Op):
    name, node = "linalg_pinv", "LinalgPinvBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: m.linalg.pinv(a), ((4, 3),)),
        Sample(lambda m, a: m.pinverse(a), ((2, 2, 3),)),
    )

    @staticmethod
    def forward(K, a, *, atol, rtol, hermitian):
        return K.linalg_pinv(a, atol, rtol, hermitian)

    @staticmethod
    def backward(ctx, grad):
        A, pinvA = ctx.saved_tensors
        return (_pinv_backward(grad, pinvA, A),)


def _tol(value):
    if isinstance(value, Tensor):
        return float(value.item())
    return value


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """``torch.linalg.pinv``: the pseudo-inverse, singular values at most ``max(atol, rtol *
    largest)`` dropped (by default ``rtol = eps * max(m, n)``)."""
    _check_tensor("linalg.pinv", A)
    if atol is not None and not isinstance(atol, Tensor) and rtol is None:
        # (PyTorch's default rtol beside a number atol: of the dtype's epsilon, the size of the
        # matrices read first; before its checks of A)
        if A.ndim < 2:
            raise IndexError("Dimension specified as -2 but tensor has no dimensions" if not
                             A.ndim else "Dimension out of range (expected to be in range of "
                             "[-1, 0], but got -2)")
        _epsilon(A)
    _refuse_half("linalg.pinv", A)
    if A.ndim < 2 or A._data.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.pinv({_torch_name(A._data.dtype)}{{{list(A.shape)}}}): "
                           "expected a tensor with 2 or more dimensions of float, double, cfloat "
                           "or cdouble types")
    atol, rtol = _tol(atol), _tol(rtol)
    return apply(LinalgPinv, (A,), (A._data,), atol=float(atol or 0.0),
                 rtol=None if rtol is None else float(rtol), hermitian=bool(hermitian))


@export(method=True)
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


@register
class LinalgLstsq(Op):
    name, node = "linalg_lstsq", "LinalgLstsqBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, a, b: m.linalg.lstsq(a, b).solution, ((4, 3), (4, 2))),
        Sample(lambda m, a, b: m.linalg.lstsq(a + 3 * m.eye(3, dtype=a.dtype, device=a.device),
                                              b)[0], ((2, 3, 3), (2, 3, 1))),
    )

    @staticmethod
    def forward(K, x, b, *, vector):
        return x

    @staticmethod
    def backward(ctx, grad):
        A, B = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        vector = ctx.params["vector"]
        gX = grad.unsqueeze(-1) if vector else grad
        Bm = B.unsqueeze(-1) if vector else B
        pinvA = pinv(A)
        gA = _pinv_backward(gX @ _mH(Bm), pinvA, A) if need_a else None
        gB = None
        if need_b:
            gB = _mH(pinvA) @ gX
            gB = gB.squeeze(-1) if vector else gB
        return gA, gB


class _LstsqResult(_ExResult):
    _fields = ("solution", "residuals", "rank", "singular_values")
    _name = "linalg_lstsq"


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """``torch.linalg.lstsq``: (solution, residuals, rank, singular_values) as PyTorch's
    drivers give them: the least-squares solution (minimum-norm); the rank (int64) from 'gelsy'
    (the CPU default), 'gelsd' and 'gelss'; the singular values from 'gelsd' and 'gelss'; the
    squared residuals (per column of B) where A is tall (m > n), by 'gels' and, where every
    matrix has full rank, by 'gelsd' and 'gelss'; what a driver does not compute is empty."""
    _check_tensor("linalg.lstsq", A)
    if driver is None:
        driver = "gels" if A.device.type == "cuda" else "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    if A.device.type == "cuda" and driver != "gels":
        raise RuntimeError("torch.linalg.lstsq: `driver` other than `gels` is not supported on "
                           "CUDA")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if A._data.dtype.kind not in "fcV" or B._data.dtype.kind not in "fcV":
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_torch_name(A._data.dtype)} and "
                           f"other's dtype {_torch_name(B._data.dtype)}")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    vector = B.ndim == A.ndim - 1
    if (B.shape[-1] if vector else B.shape[-2]) != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-" +
                           ("1)" if vector else "2)"))
    if rcond is None:  # (PyTorch's default, of the dtype's epsilon: float16/bfloat16 refused)
        _epsilon(A)
    _refuse_half("torch.linalg.lstsq", A)
    K = kernels_for((A, B), LinalgLstsq)

    b = K.unsqueeze(B._data, B.ndim) if vector else B._data
    batch = tuple(broadcast_shapes(tuple(A.shape[:-2]), tuple((b.shape)[:-2])))
    a = K.ascontiguous(K.broadcast_to(A._data, batch + tuple(A.shape[-2:])))
    b = K.ascontiguous(K.broadcast_to(b, batch + tuple((b.shape)[-2:])))
    x, residuals, rank, sv = K.linalg_lstsq(a, b, rcond)
    if vector:
        x = K.reshape_view(x, tuple((x.shape)[:-1]))
    solution = apply(LinalgLstsq, (A, B), (x, B._data), vector=vector)
    rank, sv = Tensor._wrap(rank), Tensor._wrap(sv)
    ng = _ng()
    m, n = A.shape[-2:]
    if driver == "gels":
        rank = ng.zeros(0, dtype=ng.int64, device=A.device)
    if driver in ("gelsd", "gelss"):
        with ng.no_grad():
            sv = svdvals(Tensor._wrap(a))
    residuals = Tensor._wrap(residuals)
    if m > n and (driver == "gels" or driver != "gelsy" and bool((rank == n).all())):
        X = solution.unsqueeze(-1) if vector else solution
        Bm = B.unsqueeze(-1) if vector else B
        error = A @ X - Bm
        residuals = ((error.abs() if error.dtype.is_complex else error) ** 2).sum(-2)
    elif solution.requires_grad:  # (PyTorch's empty residuals are an output of its node too)
        residuals = solution.reshape(-1)[:0]
        residuals = residuals.real if residuals.dtype.is_complex else residuals
    return _LstsqResult(solution, residuals, rank, sv)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None,
                rtol=None) -> Tensor:
    """``torch.linalg.matrix_rank``: the number of singular values above ``max(atol, rtol *
    largest)`` (by default ``rtol = eps * max(m, n)``), int64."""
    _check_tensor("linalg.matrix_rank", A)
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    if A._data.dtype.kind not in "fcV":
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tol(atol), _tol(rtol)
    m, n = A.shape[-2:]
    if rtol is None:  # (of the dtype's epsilon, which PyTorch reads beside an atol too: of
        # float16/bfloat16, its refusal)
        eps = _epsilon(A)
        rtol = eps * max(m, n) if not atol else 0.0
    ng = _ng()
    with ng.no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if not tuple(s.shape)[-1]:
            return ng.zeros(*tuple(s.shape)[:-1], dtype=ng.int64)
        top = s.amax(-1, keepdim=True)
        cut = ng.maximum(top * rtol, ng.full_like(top, float(atol or 0.0)))
        return (s > cut).sum(-1)


cholesky = export(_with_out(_legacy_cholesky, "cholesky"), "cholesky", method=True)


svd = export(_no_out(_legacy_svd, "svd"), "svd", method=True)


qr = export(_no_out(_legacy_qr, "qr"), "qr", method=True)

# numgrad.linalg's functions (numgrad/linalg.py)
export(_with_out(linalg_cholesky, "linalg_cholesky_ex"), function=False, linalg="cholesky")
export(_no_out(cholesky_ex, "linalg.cholesky_ex"), function=False, linalg="cholesky_ex")
export(_no_out(linalg_qr, "linalg.qr"), function=False, linalg="qr")
export(_no_out(eigh, "linalg.eigh"), function=False, linalg="eigh")
export(_with_out(eigvalsh, "_linalg_eigh"), function=False, linalg="eigvalsh")
export(_no_out(linalg_svd, "linalg.svd"), function=False, linalg="svd")
export(_with_out(svdvals, "_linalg_svd"), function=False, linalg="svdvals")
export(_with_out(pinv, "linalg_pinv", False), function=False, linalg="pinv")
export(_no_out(lstsq, "linalg.lstsq"), function=False, linalg="lstsq")
export(_with_out(matrix_rank, "linalg_matrix_rank"), function=False, linalg="matrix_rank")
