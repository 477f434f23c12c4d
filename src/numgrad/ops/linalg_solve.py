"""Inverses and solves: ``inv``/``inv_ex`` (and the top-level ``inverse``), ``solve``/``solve_ex``,
``cholesky_solve`` and ``cholesky_inverse``, with PyTorch's node names, backward formulas
(written with recorded ops, so that second derivatives work), result dtypes and error messages;
on the device's ``K.linalg_*`` kernels (``kernels/*/decompositions.py``: LU with partial
pivoting, the Cholesky factor's substitutions).
"""
from __future__ import annotations

from ..tensor import Tensor
from ._names import export
from .reduction import _torch_name
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from .linalg_common import (
    _ExResult, _check_matrix, _check_solve_inputs, _check_tensor, _mH, _no_out, _refuse_half,
    _renamed, _with_out,
)
from ._promote import broadcast_shapes


# ------------------------------------------------------------------ inverse
@register
class LinalgInvEx(Op):
    name, node = "linalg_inv_ex", "LinalgInvExBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_output = True
    samples = (
        Sample(lambda m, a: m.linalg.inv(a + 3 * m.eye(3, dtype=a.dtype, device=a.device)), ((3, 3),)),
        Sample(lambda m, a: m.inverse(a.mT + 3 * m.eye(2, dtype=a.dtype, device=a.device)), ((2, 2, 2),)),
        Sample(lambda m, a: m.linalg.inv_ex(a + 3 * m.eye(2, dtype=a.dtype, device=a.device))[0], ((2, 2),)),
    )

    @staticmethod
    def forward(K, inverse):
        return inverse

    @staticmethod
    def backward(ctx, grad):
        (inv,) = ctx.saved_tensors
        h = _mH(inv)
        return (-(h @ (grad @ h)),)


class _InvExResult(_ExResult):
    _fields, _name = ("inverse", "info"), "linalg_inv_ex"


def inv_ex(A: Tensor, *, check_errors: bool = False):
    """``torch.linalg.inv_ex``: (inverse, info); info is getrf's (int32), nonzero for a singular
    matrix, which raises only with ``check_errors``."""
    _check_matrix("linalg.inv", A)
    K = kernels_for((A,), LinalgInvEx)
    with _renamed("linalg.inv", "linalg.inv_ex"):
        inverse, info = K.linalg_inv(A._data, bool(check_errors))
    return _InvExResult(apply(LinalgInvEx, (A,), (inverse,)), Tensor._wrap(info))


def inv(A: Tensor) -> Tensor:
    """``torch.linalg.inv``: the inverse of each square matrix (LinAlgError if singular)."""
    _check_matrix("linalg.inv", A)
    K = kernels_for((A,), LinalgInvEx)
    inverse, _ = K.linalg_inv(A._data, True)
    return apply(LinalgInvEx, (A,), (inverse,))


# ------------------------------------------------------------------ solve
def _is_vector_rhs(A, B) -> bool:
    """PyTorch's: ``B`` is a vector (batch) when 1-D, or of ``A``'s batch shape plus ``n``."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


@register
class LinalgSolveEx(Op):
    name, node = "linalg_solve_ex", "LinalgSolveExBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a, b: m.linalg.solve(a + 3 * m.eye(3, dtype=a.dtype, device=a.device), b), ((3, 3), (3, 2))),
        Sample(lambda m, a, b: m.linalg.solve(a + 3 * m.eye(3, dtype=a.dtype, device=a.device), b), ((2, 3, 3), (3,))),
        Sample(lambda m, a, b: m.linalg.solve(a.mT + 3 * m.eye(2, dtype=a.dtype, device=a.device), b, left=False),
               ((2, 2), (2, 3, 2))),
    )

    @staticmethod
    def forward(K, x, b, *, left, vector):
        return x

    @staticmethod
    def backward(ctx, grad):
        A, X = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        left, vector = ctx.params["left"], ctx.params["vector"]
        gX = grad.unsqueeze(-1) if vector else grad
        gB = _bsolve(_mH(A), gX, left=left)
        gA = None
        if need_a:
            Xm = X.unsqueeze(-1) if vector else X
            gA = -(gB @ _mH(Xm)) if left else -(_mH(Xm) @ gB)
        if vector:
            gB = gB.squeeze(-1)
        return gA, (gB if need_b else None)


class _SolveExResult(_ExResult):
    _fields, _name = ("result", "info"), "linalg_solve_ex"


def _solve(A: Tensor, B: Tensor, left: bool, check: bool):
    fn = "linalg.solve"
    _check_matrix(fn, A, refuse_half=False)
    _check_tensor(fn, B, "B")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {_torch_name(A._data.dtype)} and B of type "
                           f"{_torch_name(B._data.dtype)} instead")
    if B.ndim < 1:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    vector = left and _is_vector_rhs(A, B)
    K = kernels_for((A, B), LinalgSolveEx)
    a, b = A._data, B._data
    n = tuple(a.shape)[-1]
    if vector:
        b = K.unsqueeze(b, b.ndim)
    if b.ndim < 2:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {b.shape[0]}x1)")
    rows = tuple(b.shape)[-2] if left else tuple(b.shape)[-1]
    if rows != n:
        shape = f"{tuple(b.shape)[-2]}x{tuple(b.shape)[-1]}"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape})")

    batch = tuple(broadcast_shapes(tuple((a.shape)[:-2]), tuple((b.shape)[:-2])))
    a = K.ascontiguous(K.broadcast_to(a, batch + (n, n)))
    b = K.ascontiguous(K.broadcast_to(b, batch + tuple((b.shape)[-2:])))
    _refuse_half(fn, A)
    x, info = K.linalg_solve(a, b, bool(left), check)
    if vector:
        x = K.reshape_view(x, tuple((x.shape)[:-1]))
    out = apply(LinalgSolveEx, (A, B), (x, B._data), left=bool(left), vector=vector)
    return out, Tensor._wrap(info)


def _bsolve(A: Tensor, B: Tensor, left: bool = True) -> Tensor:
    """A solve inside a backward formula: a singular matrix gives infinities or NaN, as
    PyTorch's backward (an unchecked LU solve), not an error."""
    return _solve(A, B, left, False)[0]


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``torch.linalg.solve``: ``X`` with ``A X = B`` (``left=False``: ``X A = B``), batch
    dimensions broadcast; ``B`` a vector where it is 1-D or ``A``'s batch plus ``n``."""
    return _solve(A, B, left, True)[0]


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """``torch.linalg.solve_ex``: (result, info)."""
    with _renamed("torch.linalg.solve", "torch.linalg.solve_ex"):
        return _SolveExResult(*_solve(A, B, left, bool(check_errors)))


def _cholesky_solve_array(K, b, low, upper: bool):
    """``(L L^H)^-1 b`` at the array level: ``L`` the triangle of ``low`` that ``upper`` names
    (the other one is not read), two solves; ``b`` and ``low`` of one batch shape."""
    tri = K.ascontiguous(K.structure.tri(low, 0, bool(upper)))
    nd = len(tuple(tri.shape))
    trans = K.ascontiguous(K.transpose(tri, nd - 1, nd - 2))
    if tri.dtype.kind == "c":  # (L^H: the conjugate transpose)
        trans = K.complex_conj(trans)
    lower, upper_ = (trans, tri) if upper else (tri, trans)
    y, _ = K.linalg_solve(lower, b, True, False)
    x, _ = K.linalg_solve(upper_, y, True, False)
    return x


@register
class CholeskySolve(Op):
    name, node = "cholesky_solve", "CholeskySolveBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (1,)
    save_output = True
    samples = (
        Sample(lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(_spd_of(m, a))),
               ((3, 2), (3, 3))),
        Sample(lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(_spd_of(m, a), upper=True),
                                                upper=True), ((2, 2, 1), (2, 2))),
    )

    @staticmethod
    def forward(K, b, low, *, upper, batch):
        nb, nl = len(tuple(b.shape)), len(tuple(low.shape))
        b = K.ascontiguous(K.broadcast_to(b, batch + tuple(b.shape)[nb - 2:]))
        low = K.ascontiguous(K.broadcast_to(low, batch + tuple(low.shape)[nl - 2:]))
        return _cholesky_solve_array(K, b, low, upper)

    @staticmethod
    def backward(ctx, grad):
        L, X = ctx.saved_tensors
        upper = ctx.params["upper"]
        need_b, need_l = ctx.needs_input_grad
        gB = _cholesky_solve(grad, L, upper)
        gL = None
        if need_l:
            common = gB @ _mH(X)
            common = common + _mH(common)
            gL = -(L @ common) if upper else -(common @ L)
        return (gB if need_b else None), gL


def _spd_of(m, a):
    return a @ a.mT + m.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky_solve``: ``X`` with ``(L L^H) X = B`` from the Cholesky factor ``L``
    (``upper``: ``U^H U``), batch dimensions broadcast."""
    if B.ndim < 2 or L.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           "instead" if B.ndim < 2 else
                           f"u should have at least 2 dimensions, but has {L.ndim} dimensions "
                           "instead")
    _check_solve_inputs(B, L, "cholesky_solve")

    batch = tuple(broadcast_shapes(tuple(B.shape[:-2]), tuple(L.shape[:-2])))
    return apply(CholeskySolve, (B, L), (B._data, L._data), upper=bool(upper), batch=batch)


@register
class CholeskyInverse(Op):
    name, node = "cholesky_inverse", "CholeskyInverseBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: m.cholesky_inverse(m.linalg.cholesky(_spd_of(m, a))), ((3, 3),)),
        Sample(lambda m, a: m.cholesky_inverse(m.linalg.cholesky(_spd_of(m, a), upper=True),
                                               upper=True), ((2, 2, 2),)),
    )

    @staticmethod
    def forward(K, low, *, upper):
        shape = tuple(low.shape)
        nd = len(shape)
        eye = K.structure.embed_diagonal(K.full(shape[:-1], 1, low.dtype), shape, 0, nd - 2,
                                         nd - 1)
        return _cholesky_solve_array(K, eye, K.ascontiguous(low), upper)

    @staticmethod
    def backward(ctx, grad):
        L, inverse = ctx.saved_tensors
        common = grad + _mH(grad)
        common = inverse @ (common @ inverse)
        return (-(L @ common) if ctx.params["upper"] else -(common @ L),)


def _cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky_inverse``: ``(L L^H)^-1`` (``upper``: ``(U^H U)^-1``) from the Cholesky
    factor."""
    if L.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 "
                           "dimensions.")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are "
                           f"{L.shape[-2]} by {L.shape[-1]} matrices")
    if L._data.dtype.kind not in "fcV":
        raise NotImplementedError(f'"cholesky_inverse_out_cpu" not implemented for '
                                  f"'{_torch_name(L._data.dtype)}'")
    _refuse_half("cholesky_inverse", L)
    return apply(CholeskyInverse, (L,), (L._data,), upper=bool(upper))


inverse = export(_with_out(inv, "linalg_inv_ex"), "inverse", method=True)


cholesky_solve = export(
    _with_out(_cholesky_solve, "cholesky_solve", same_dtype=False),
    "cholesky_solve", method=True)


cholesky_inverse = export(
    _with_out(_cholesky_inverse, "cholesky_inverse"),
    "cholesky_inverse", method=True)

# numgrad.linalg's functions (numgrad/linalg.py)
export(_with_out(inv, "linalg_inv_ex"), function=False, linalg="inv")
export(_no_out(inv_ex, "linalg.inv_ex"), function=False, linalg="inv_ex")
export(_with_out(solve, "_linalg_solve_ex"), function=False, linalg="solve")
export(_no_out(solve_ex, "linalg.solve_ex"), function=False, linalg="solve_ex")
