"""Linear algebra composed of the decompositions and products: ``linalg.solve_triangular``
(and the older ``triangular_solve``), ``linalg.tensorinv``/``tensorsolve``, ``linalg.cond``,
``linalg.vander`` and ``matrix_exp``.

Each is composed of numgrad's ops as ATen composes it (or, for the triangular solves and
``matrix_exp``, of ops whose derivative is the same function's), so gradients and second
derivatives are PyTorch's: a triangular solve reads, and its gradient reaches, only the
triangle it names (the strict triangle when ``unitriangular``).
"""
from __future__ import annotations

import math

from .._dtype import torch_name
from ..tensor import Tensor
from ._names import export
from .linalg_common import (
    _check_matrix, _check_solve_inputs, _check_tensor, _ExResult, _refuse_half,
)
from .linalg_decompositions import linalg_qr, linalg_svd, svdvals
from .linalg_norms import matrix_norm
from .linalg_solve import inv, inv_ex, solve
import numgrad


def _ng():
    return numgrad


def _prod(sizes) -> int:
    return math.prod(int(s) for s in sizes)


# ------------------------------------------------------------------ triangular solves
def _triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The triangle of ``A`` a triangular solve reads (with ones on the diagonal if unit)."""
    ng = _ng()
    if not unitriangular:
        return A.triu() if upper else A.tril()
    strict = A.triu(1) if upper else A.tril(-1)
    return strict + ng.eye(A.shape[-1], dtype=A.dtype, device=A.device)


@export(function=False, linalg=True)
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``) for ``A`` upper or lower triangular
    (its other triangle not read; ``unitriangular``: its diagonal taken as ones), batch
    dimensions broadcast."""
    fn = "linalg.solve_triangular"
    _check_tensor(fn, A)
    _check_tensor(fn, B, "B")
    for name, t in (("A", A), ("B", B)):
        if t.ndim < 2:
            raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
        if t is A and A.shape[-1] != A.shape[-2]:
            raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                               f"{A.shape[-2]} by {A.shape[-1]} matrices")
    n, k = (A.shape[-1], B.shape[-2]) if left else (A.shape[-2], B.shape[-1])
    if n != k:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {eq} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    _refuse_half(fn, A)  # (and integers: the kernel's refusal)
    return _solve_triangular(A, B, upper, left, unitriangular)


def _solve_triangular(A: Tensor, B: Tensor, upper: bool, left: bool = True,
                      unitriangular: bool = False) -> Tensor:
    """``solve_triangular`` of arguments checked (``lu_solve``'s: of float16/bfloat16 only
    empty ones, which PyTorch's ``lu_solve`` computes)."""
    if B.dtype != A.dtype:
        B = B.to(A.dtype)
    return solve(_triangle(A, upper, unitriangular), B, left=left)


class _TriangularSolveResult(_ExResult):
    _fields, _name = ("solution", "cloned_coefficient"), "triangular_solve"


@export(method=True)
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """``(X, A's copy)`` with ``A X = input`` (``transpose``: ``A^T X = input``); deprecated in
    PyTorch, with its warning (once a process)."""
    _ng()._warn_once(
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be "
        "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
        "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
        "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B).")
    for name, t in (("b", input), ("A", A)):
        _check_tensor("triangular_solve", t, name)
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 "
                               f"dimensions, but it has {t.ndim} dimensions instead")
    _check_solve_inputs(input, A, "triangular_solve")
    tri = _triangle(A, upper, unitriangular)
    X = solve(tri.mT if transpose else tri, input)
    return _TriangularSolveResult(X, A.clone())


# ------------------------------------------------------------------ tensor inverse and solve
@export(function=False, linalg=True)
def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` for ``tensordot`` over ``ind`` dimensions: ``A`` as a square matrix of
    its first ``ind`` and its other dimensions, inverted, reshaped to ``shape[ind:] +
    shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(rows) != _prod(cols):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_prod(cols)} != {_prod(rows)}")
    return inv(A.reshape(_prod(rows), _prod(cols))).reshape(cols + rows)


@export(function=False, linalg=True)
def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.ndim) == B`` (``dims``: ``A``'s dimensions moved to the end
    first)."""
    if dims is not None:
        dims = [d + A.ndim if d < 0 else d for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in dims], *dims)
    rest = tuple(A.shape[B.ndim:])
    if _prod(B.shape) != _prod(rest):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {_prod(rest)} != "
                           f"{_prod(B.shape)}")
    x = solve(A.reshape(_prod(B.shape), _prod(rest)), B.reshape(-1))
    return x.reshape(rest)


# ------------------------------------------------------------------ condition number
_COND_NORMS = (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc")


@export(function=False, linalg=True)
def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of each matrix in the norm ``p``: the ratio of its extreme singular
    values for ``None``/2/-2 (any shape); else ``norm(A) norm(inv(A))``, inf where ``A`` is
    singular (square matrices)."""
    _check_tensor("linalg.cond", A)
    fn = f"linalg.cond(ord={p})"
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions."
                           if isinstance(p, str) else
                           "linalg.cond: The input tensor must have at least 2 dimensions.")
    square = A.shape[-1] == A.shape[-2]
    if isinstance(p, str) and not square:  # (PyTorch's string norms: a square A first)
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if p not in _COND_NORMS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    ng = _ng()
    if A.numel() == 0:
        return ng.zeros(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    if not square:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if p == "nuc":  # (PyTorch's is of the singular values: svd's checks, its refusal of halves)
        _check_matrix("linalg.svd", A, square=False)
    inverse, info = inv_ex(A)  # (inv's checks of A's dtype)
    value = matrix_norm(A, p) * matrix_norm(inverse, p)
    return ng.where(info.detach() > 0, math.inf, value)


# ------------------------------------------------------------------ Householder product
@export(function=False, linalg=True)
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` the
    ``i``-th column of ``A`` below its diagonal, 1 on it (LAPACK's ``orgqr``)."""
    fn = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{fn}: tau dtype {torch_name(tau._data.dtype)} does not match input "
                           f"dtype {torch_name(A._data.dtype)}")
    _refuse_half(fn, A)
    ng = _ng()
    Q = ng.eye(m, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], m, m)
    for i in range(tau.shape[-1]):
        v = _reflector(A, i)
        Qv = (Q @ v.unsqueeze(-1))
        Q = Q - (Qv * tau[..., i, None, None]) @ v.conj().unsqueeze(-2)  # (v^H: complex)
    return Q[..., :, :n]


def _reflector(A: Tensor, i: int) -> Tensor:
    """The ``i``-th Householder vector of ``A`` (geqrf's storage): 1 at ``i``, ``A``'s column
    ``i`` below it, zeros above."""
    ng = _ng()
    rows = ng.arange(A.shape[-2], device=A.device)
    return A[..., :, i] * (rows > i).to(A.dtype) + (rows == i).to(A.dtype)


class _GeqrfResult(_ExResult):
    _fields, _name = ("a", "tau"), "geqrf"


@export(method=True)
def geqrf(input: Tensor):
    """LAPACK's QR factorisation ``(a, tau)``: ``R`` on and above ``a``'s diagonal, the
    Householder vectors below it, their scalars in ``tau`` (``beta = -sign(alpha) norm``, as
    ``dlarfg``); not differentiable, as PyTorch's."""
    ng = _ng()
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    cx = input.dtype.is_complex
    if not (input.dtype.is_floating_point or cx):
        raise NotImplementedError(f'"geqrf_cpu" not implemented for '
                                  f"'{torch_name(input._data.dtype)}'")
    _refuse_half("torch.geqrf", input)
    A = input.detach().clone()
    m, n = A.shape[-2], A.shape[-1]
    taus = []
    for j in range(min(m, n)):
        alpha, x = A[..., j, j], A[..., j + 1:, j]
        if cx:  # (zlarfg: beta real, -sign(re alpha) |(alpha, x)|; no reflection where x is 0
            # and alpha real)
            xnorm = (x.abs() ** 2).sum(-1).sqrt()
            zero = (xnorm == 0) & (alpha.imag == 0)
            size = (alpha.abs() ** 2 + xnorm * xnorm).sqrt()
            beta = -ng.copysign(size, alpha.real).to(alpha.dtype)
        else:
            xnorm = (x * x).sum(-1).sqrt()
            zero = xnorm == 0
            beta = -ng.copysign((alpha * alpha + xnorm * xnorm).sqrt(), alpha)
        tau = ng.where(zero, 0.0, (beta - alpha) / ng.where(zero, 1.0, beta))
        v = x / ng.where(zero, 1.0, alpha - beta).unsqueeze(-1)
        A[..., j, j] = ng.where(zero, alpha, beta)
        A[..., j + 1:, j] = v
        if j + 1 < n:  # (H^H applied to the columns on the right: conj(tau) w w^H)
            w = ng.cat([ng.ones_like(alpha).unsqueeze(-1), v], -1).unsqueeze(-1)
            C = A[..., j:, j + 1:]
            t = tau.conj() if cx else tau
            A[..., j:, j + 1:] = C - t[..., None, None] * w @ (w.mT.conj() @ C)
        taus.append(tau)
    tau = ng.stack(taus, -1) if taus else A.new_zeros((*A.shape[:-2], 0))
    return _GeqrfResult(A, tau)


@export(method=True)
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``Q other`` (``left=False``: ``other Q``; ``transpose``: ``Q^T``, ``Q^H`` of complex ``Q``)
    for ``Q`` the product of the Householder reflectors ``geqrf`` stores in ``input`` and
    ``tau``, applied one by one."""
    fn = "torch.ormqr"
    for name, t in (("input", input), ("other", other)):
        if t.ndim < 2:
            raise RuntimeError(f"{fn}: {name} must have at least 2 dimensions.")
    k = tau.shape[-1] if tau.ndim else 1
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{fn}: other.shape[{side}] must be equal to input.shape[-2]")
    if k > min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{fn}: tau.shape[-1] must be equal to min(other.shape[-2], "
                           "input.shape[-1])")
    _refuse_half(fn, input)
    order = range(k) if left == transpose else range(k - 1, -1, -1)
    C = other
    for i in order:  # (H_i = I - tau_i v v^H; Q^H's factors, for a complex transpose, conj(tau_i))
        v = _reflector(input, i).unsqueeze(-1)
        vh = v.mT.conj()
        t = tau[..., i, None, None]
        t = t.conj() if transpose else t
        C = C - t * v @ (vh @ C) if left else C - (C @ v) * t @ vh
    return C


# ------------------------------------------------------------------ randomized low-rank SVD
def _range_basis(X: Tensor, q: int, niter: int) -> Tensor:
    """An orthonormal basis (..., m, q) of most of ``X``'s range: a Gaussian sketch refined by
    ``niter`` power iterations (Halko, Martinsson and Tropp's algorithm 4.4)."""
    ng = _ng()
    R = ng.randn(*X.shape[:-2], X.shape[-1], q, dtype=X.dtype, device=X.device)
    Q = linalg_qr(X @ R)[0]
    for _ in range(niter):
        Q = linalg_qr(X.mT @ Q)[0]
        Q = linalg_qr(X @ Q)[0]
    return Q


@export
def svd_lowrank(A: Tensor, q=6, niter: int = 2, M=None):
    """``(U, S, V)``, an approximate truncated SVD of rank ``q`` of ``A - M`` from a random
    sketch (``U`` (..., m, q), ``S`` (..., q), ``V`` (..., n, q)); random, as PyTorch's."""
    q = 6 if q is None else q
    X = A if M is None else A - M
    m, n = X.shape[-2], X.shape[-1]
    if m < n:
        V, S, U = svd_lowrank(X.mT, q, niter)  # (the transpose's factors, swapped)
        return U, S, V
    Q = _range_basis(X, q, niter)
    U, S, Vh = linalg_svd(Q.mT @ X, full_matrices=False)
    return Q @ U, S, Vh.mT


@export
def pca_lowrank(A: Tensor, q=None, center: bool = True, niter: int = 2):
    """``svd_lowrank`` of ``A`` with its column means removed (``center``), of rank ``q``
    (``min(6, m, n)`` by default)."""
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)="
                         f"{min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter)
    return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter)


# ------------------------------------------------------------------ Vandermonde, exponential
@export(function=False, linalg=True)
def vander(x: Tensor, N=None) -> Tensor:
    """The Vandermonde matrix of the last dimension of ``x``: columns ``x**0 .. x**(N-1)``
    (``N`` defaults to that dimension's size)."""
    if x.dtype.name == "bool":
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, "
                           "but got Bool")
    n = (x.shape[-1] if x.ndim else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ng = _ng()
    x = x if x.ndim else x.reshape(1)
    ones = ng.ones((*x.shape, 1), dtype=x.dtype, device=x.device)
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return ng.cat([ones, powers], -1)


_TAYLOR_DEGREE = 18  # (1 / 19! < 1e-17: a float64 exponential of a matrix of norm <= 1/2)


@export(method=True, linalg=True)
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix: the Taylor series of degree 18 of ``A``
    scaled to a 1-norm of at most 1/2 by a power of two, then squared back; differentiable
    through the products."""
    _check_matrix("linalg.matrix_exp", A, low_precision=True)
    ng = _ng()
    if A._data.dtype.itemsize == 2 and A.numel():  # (float16, bfloat16)
        # Computed in float32, rounded once, as numgrad computes the narrow dtypes. (PyTorch
        # 2.13's CPU kernel returns NaN, inf or values near -2e4 (float16) and -1.3e30
        # (bfloat16) for a 2x2 or larger half matrix, even the identity's: no value to follow.)
        return matrix_exp(A.float()).to(A.dtype)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    if n == 1:
        return A.exp()
    norm = float(A.detach().abs().sum(-2).amax()) if A.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    if not math.isfinite(norm):
        squarings = 0
    X = A / (2.0 ** squarings) if squarings else A
    eye = ng.eye(n, dtype=A.dtype, device=A.device)
    E = eye + X / _TAYLOR_DEGREE
    for k in range(_TAYLOR_DEGREE - 1, 0, -1):
        E = eye + (X @ E) / k
    for _ in range(squarings):
        E = E @ E
    return E


orgqr = export(householder_product, "orgqr", method=True)
