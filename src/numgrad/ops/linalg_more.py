"""Linear algebra beyond the matrix products (``numgrad.linalg`` and PyTorch's top-level names):
norms, determinants, inverses and solves, the Cholesky, QR, symmetric eigen- and singular value
decompositions, the pseudo-inverse and least squares, the cross product, with PyTorch's node
names, backward formulas (``FunctionsManual.cpp``'s, written with recorded ops so that second
derivatives work), result dtypes and error messages.

The arrays are computed by the device's ``K.linalg_*`` kernels (``kernels/*/linalg_more.py``:
LAPACK through NumPy on the CPU). A decomposition with several differentiable outputs (Q and R,
U, S and Vh, eigenvalues and eigenvectors, slogdet's sign and log) is computed once, before the
ops run; each output is then the result of an op of its own under PyTorch's node name, whose
backward is the decomposition's backward formula with that output's gradient alone (the formulas
are linear in the outputs' gradients, so the sum over the outputs is PyTorch's one node's). A
backward that is itself recorded (``create_graph``) recomputes the decomposition from the saved
input with recorded ops, so that its graph reaches the input, as PyTorch recomputes an LU.

Every op has CUDA kernels (``kernels/cuda/linalg_more.py``, for batches of small matrices: LU,
Cholesky, Householder QR, Jacobi eigh and SVD, one thread per matrix); the vectors of eigh and svd
are defined up to sign there as here, and may differ in sign from LAPACK's.
"""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor, _wrap_dim
from .reduction import _torch_name
from .reduction import norm as _reduction_norm
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register


class _LinAlgError(RuntimeError):
    """PyTorch's ``torch.linalg.LinAlgError``: a factorisation that failed (a singular matrix, one
    that is not positive-definite). A ``RuntimeError``, as PyTorch's."""


_LinAlgError.__module__ = "numgrad.linalg"
LinAlgError = _LinAlgError


def _ng():
    import numgrad

    return numgrad


# ------------------------------------------------------------------ argument checks
def _check_tensor(fn: str, A, name: str = "A") -> Tensor:
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn.split('.')[-1]}(): argument '{name}' (position 1) must be Tensor, "
                        f"not {type(A).__name__}")
    return A


def _check_float(fn: str, A: Tensor) -> None:
    if A._data.dtype.kind not in "fc":
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{_torch_name(A._data.dtype)}")


def _check_matrix(fn: str, A: Tensor, square: bool = True) -> None:
    """PyTorch's checks of a (batch of) matrices: at least 2-D, floating, square."""
    _check_tensor(fn, A)
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    _check_float(fn, A)
    if square and tuple(d.shape)[-1] != tuple(d.shape)[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are "
                           f"{tuple(d.shape)[-2]} by {tuple(d.shape)[-1]} matrices")


def _mH(t: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (of a real tensor, the transpose)."""
    t = t.transpose(-2, -1)
    return t.conj() if t._data.dtype.kind == "c" else t


def _diag(values: Tensor) -> Tensor:
    return _ng().diag_embed(values)


def _eye_like(A: Tensor) -> Tensor:
    n = A.shape[-1]
    return _ng().eye(n, dtype=A.dtype, device=A.device)


# ------------------------------------------------------------------ vector norms
def _vector_norm_array(K, a, ord, dims, keepdim):
    """``|a|_ord`` over ``dims`` with the kernels of ``a``'s device (no kernel of its own: the
    elementwise and reduction kernels, so every device has it)."""
    if ord == 2:
        if _count(a.shape, dims) == 1:
            out = K.unary(K.ABS, a)
            shape = tuple(1 if d in dims else n for d, n in enumerate(a.shape)) if keepdim else \
                tuple(n for d, n in enumerate(a.shape) if d not in dims)
            return K.copy(K.reshape_view(out, shape))
        return K.unary(K.SQRT, K.sum_dims(K.binary(K.MUL, a, a), dims, keepdim))
    if ord == 1:
        return K.sum_dims(K.unary(K.ABS, a), dims, keepdim)
    if ord == 0:
        return K.sum_dims(K.cast(K.binary(K.NE, a, K.zeros((), a.dtype)), a.dtype), dims,
                          keepdim)
    if math.isinf(ord):
        return K.reduce_dims(K.MAX if ord > 0 else K.MIN, K.unary(K.ABS, a), dims, keepdim)
    p = np.asarray(ord, a.dtype)
    powered = K.sum_dims(K.binary(K.POW, K.unary(K.ABS, a), p), dims, keepdim)
    return K.binary(K.POW, powered, np.asarray(1.0 / ord, a.dtype))


def _count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


@register
class LinalgVectorNorm(Op):
    name, node = "linalg_vector_norm", "LinalgVectorNormBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: m.linalg.vector_norm(a), ((3, 4),)),
        Sample(lambda m, a: m.linalg.vector_norm(a, 3, dim=(0, -1)), ((2, 3, 2),), low=0.2),
        Sample(lambda m, a: m.linalg.vector_norm(a, float("inf"), dim=1, keepdim=True), ((3, 4),)),
        Sample(lambda m, a: m.linalg.norm(a.t(), 1, dim=0), ((4, 3),), low=0.2, gradgrad=False),
    )

    @staticmethod
    def forward(K, a, *, ord, dims, keepdim):
        return _vector_norm_array(K, a, ord, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        p = ctx.params["ord"]
        dims = ctx.params["dims"]
        if not ctx.params["keepdim"] and x.ndim:
            shape = tuple(1 if d in dims else n for d, n in enumerate(x.shape))
            grad, norm = grad.reshape(shape), norm.reshape(shape)
        ng = _ng()
        if p == 0:  # (PyTorch's: no gradient)
            return (None,)
        if p == 1:
            return (x.sign() * grad,)
        if p == 2:
            return (grad * (x / norm).masked_fill(norm == 0, 0),)
        if math.isinf(p):
            ax = x.abs()
            mask = ng.where(ax.isnan(), True, ax == norm).to(x.dtype)
            return (x.sign() * ((grad / mask.sum(dims, True)) * mask),)
        if p < 1:
            scaled = x.sign() * x.abs().pow(p - 1).masked_fill(x == 0, 0)
            return (scaled * grad * norm.pow(1 - p),)
        scaled = x.sign() * x.abs().pow(p - 1) if p < 2 else x * x.abs().pow(p - 2)
        scale = (grad / norm.pow(p - 1)).masked_fill(norm == 0, 0)
        return (scaled * scale,)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.linalg.vector_norm``: the ``ord``-norm of the elements of ``x`` (all, or over
    ``dim``)."""
    _check_tensor("linalg.vector_norm", x, "input")
    if isinstance(ord, (str, bool)) or not isinstance(ord, (int, float, np.number)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    _check_float("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    data = x._data
    dims = _norm_dims(dim, data.ndim)
    ord = float(ord)
    if (ord < 0 or math.isinf(ord)) and (
            builtins.any(tuple(data.shape)[d] == 0 for d in dims) or (not dims and not data.size and data.ndim)):
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm on an empty tensor "
                "because the operation does not have an identity")
    if not math.isinf(ord) and ord == int(ord):
        ord = int(ord)
    return apply(LinalgVectorNorm, (x,), (data,), ord=ord, dims=dims, keepdim=bool(keepdim))


def _norm_dims(dim, ndim: int) -> tuple:
    """``dim`` (None or empty: all) wrapped, sorted, with PyTorch's error for a repeated one (-1
    and 0 are one dimension of a 0-d tensor)."""
    if dim is None or (isinstance(dim, (tuple, list)) and not len(dim)):
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    seen = []
    for d in dim:
        w = _wrap_dim(int(d), ndim) % builtins.max(ndim, 1)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return tuple(sorted(seen)) if ndim else ()


def _ord_name(ord: float) -> str:
    if math.isinf(ord):
        return "inf" if ord > 0 else "-inf"
    return f"{ord:g}"


# ------------------------------------------------------------------ matrix norms
_MATRIX_ORDS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """``torch.linalg.matrix_norm``: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2 of each matrix (over
    the two dimensions ``dim``), composed as PyTorch composes it."""
    _check_tensor("linalg.matrix_norm", A)
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    dim = tuple(_wrap_dim(int(d), A.ndim) for d in dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if dim[0] == dim[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        if ord == "fro":
            return vector_norm(A, 2, dim, keepdim)
        return _svd_norm(A, dim, keepdim, lambda s: s.sum(-1))
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_name(float(ord))} not supported.")
    if abs(ord) == 2:
        return _svd_norm(A, dim, keepdim, lambda s: s.amax(-1) if ord > 0 else s.amin(-1))
    # 1, -1 (over columns), inf, -inf (over rows): sums of absolute values, then their extreme
    d0, d1 = dim if abs(ord) == 1 else (dim[1], dim[0])
    if keepdim:
        sums = A.abs().sum(d0, keepdim=True)
    else:
        sums = A.abs().sum(d0)
        if d1 > d0:
            d1 -= 1
    if not tuple(sums.shape)[d1] if sums.ndim else False:
        raise IndexError(f"linalg.matrix_norm: Expected reduction dim {d1} to have non-zero size.")
    return sums.amax(d1, keepdim) if ord > 0 else sums.amin(d1, keepdim)


def _svd_norm(A: Tensor, dim, keepdim: bool, reduce) -> Tensor:
    """A norm of the singular values: the matrix dimensions moved last, reduced, put back."""
    ng = _ng()
    moved = ng.movedim(A, dim, (-2, -1))
    out = reduce(svdvals(moved))
    if keepdim:
        out = out.unsqueeze(-1).unsqueeze(-1)
        out = ng.movedim(out, (-2, -1), dim)
    return out


def linalg_norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.linalg.norm``: a vector norm (1-D ``A`` or an int ``dim``) or a matrix norm (2-D
    ``A`` or a 2-tuple ``dim``), the 2-norm of all elements when neither ``ord`` nor ``dim``."""
    _check_tensor("linalg.norm", A)
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if ord is not None:
        if dim is None and A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.ndim}D.")
        if isinstance(ord, str) or (dim is not None and len(dim) == 2) or \
                (dim is None and A.ndim == 2):
            return matrix_norm(A, ord, tuple(dim) if dim is not None else (-2, -1), keepdim,
                               dtype=dtype)
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro", tuple(dim), keepdim, dtype=dtype)
    return vector_norm(A, 2, dim, keepdim, dtype=dtype)


def _top_norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.norm``: 'fro' and numbers through ``vector_norm`` (over ``dim``, or all elements),
    'nuc' through ``matrix_norm``."""
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc":
        return matrix_norm(input, "nuc", tuple(dim) if dim is not None else (-2, -1), keepdim,
                           dtype=dtype)
    if p is None or p == "fro":
        if dim is not None and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported p {p}")  # noqa: TRY004  (PyTorch's class)
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


# ------------------------------------------------------------------ det, slogdet, logdet
@register
class LinalgDet(Op):
    name, node = "linalg_det", "LinalgDetBackward0"
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
        if not grad_mode.state.enabled:  # (a plain backward: at the array level, no read)
            K = kernels_for((A,))
            return (Tensor._wrap(K.linalg_det_backward(A._data, det._data, grad._data)),)
        g = grad * det
        d = _diag(g.unsqueeze(-1).expand(*g.shape, n))

        def nonsingular(M):
            return _bsolve(_mH(M), d)

        def singular(M):
            U, S, Vh = linalg_svd(M)
            alpha = det_of(U) * det_of(Vh) * grad
            eye = _eye_like(M) > 0.5
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


def det(A: Tensor) -> Tensor:
    """``torch.linalg.det``: the determinant of each square matrix."""
    _check_matrix("linalg.det", A)
    return det_of(A)


@register
class LinalgSlogdet(Op):
    """The log of the absolute determinant (slogdet's ``logabsdet``)."""

    name, node = "linalg_slogdet", "LinalgSlogdetBackward0"
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
        return (_bsolve(_mH(A), _diag(grad.unsqueeze(-1).expand(*grad.shape, A.shape[-1]))),)


@register
class LinalgSlogdetSign(Op):
    """slogdet's ``sign`` (of a real matrix: piecewise constant, its gradient zero)."""

    name, node = "linalg_slogdet_sign", "LinalgSlogdetBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (Sample(lambda m, a: m.linalg.slogdet(a).sign, ((3, 3),)),)

    @staticmethod
    def forward(K, sign):
        return sign

    @staticmethod
    def backward(ctx, grad):
        return (None,)


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


def logdet(input: Tensor) -> Tensor:
    """``torch.logdet``: log det (NaN for a negative determinant, -inf for a singular matrix),
    as PyTorch composes it (``where(sign == -1, nan, logabsdet)``)."""
    _check_matrix("linalg.slogdet", input)
    sign, logabs = slogdet(input)
    return _ng().where(sign == -1, math.nan, logabs)


# ------------------------------------------------------------------ inverse
@register
class LinalgInvEx(Op):
    name, node = "linalg_inv_ex", "LinalgInvExBackward0"
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


class _ExResult(tuple):
    """``torch.return_types.linalg_*_ex``: (result, info) under PyTorch's field names."""

    _fields = ("result", "info")
    _name = "linalg_inv_ex"

    def __new__(cls, *items):
        return super().__new__(cls, items)

    def __getattr__(self, name):
        try:
            return self[type(self)._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{self._name}(\n{body})"


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


class _renamed:
    """Renames the function a LinAlgError raised inside names (``linalg.inv`` as ``_ex``)."""

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if isinstance(error, _LinAlgError) and str(error).startswith(self.old + ":"):
            raise _LinAlgError(self.new + str(error)[len(self.old):]) from None
        return False


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
    _check_matrix(fn, A)
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
    from ._promote import broadcast_shapes

    batch = tuple(broadcast_shapes(tuple((a.shape)[:-2]), tuple((b.shape)[:-2])))
    a = K.ascontiguous(K.broadcast_to(a, batch + (n, n)))
    b = K.ascontiguous(K.broadcast_to(b, batch + tuple((b.shape)[-2:])))
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
    samples = (Sample(lambda m, a: m.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype, device=a.device)), ((3, 3),)),)


class _CholeskyExResult(_ExResult):
    _fields, _name = ("L", "info"), "linalg_cholesky_ex"


def _cholesky(op, A: Tensor, upper: bool, check: bool, fn: str):
    _check_matrix(fn, A)
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
    if isinstance(input, Tensor) and input.ndim >= 2 and input._data.dtype.kind not in "fc":
        raise NotImplementedError(f'"cholesky_cpu" not implemented for '
                                  f"'{_torch_name(input._data.dtype)}'")
    return _cholesky(CholeskyLegacy, input, upper, True, "cholesky")[0]


def _cholesky_solve_array(K, b, low, upper: bool):
    """``(L L^H)^-1 b`` at the array level: ``L`` the triangle of ``low`` that ``upper`` names
    (the other one is not read), two solves; ``b`` and ``low`` of one batch shape."""
    tri = K.ascontiguous(K.structure.tri(low, 0, bool(upper)))
    nd = len(tuple(tri.shape))
    trans = K.ascontiguous(K.transpose(tri, nd - 1, nd - 2))
    lower, upper_ = (trans, tri) if upper else (tri, trans)
    y, _ = K.linalg_solve(lower, b, True, False)
    x, _ = K.linalg_solve(upper_, y, True, False)
    return x


@register
class CholeskySolve(Op):
    name, node = "cholesky_solve", "CholeskySolveBackward0"
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
    if L.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-1]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} "
                           f"by {B.shape[-1]}")
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_torch_name(B._data.dtype)} and A of type "
                           f"{_torch_name(L._data.dtype)} instead.")
    from ._promote import broadcast_shapes

    batch = tuple(broadcast_shapes(tuple(B.shape[:-2]), tuple(L.shape[:-2])))
    return apply(CholeskySolve, (B, L), (B._data, L._data), upper=bool(upper), batch=batch)


@register
class CholeskyInverse(Op):
    name, node = "cholesky_inverse", "CholeskyInverseBackward0"
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
    if L._data.dtype.kind not in "fc":
        raise NotImplementedError(f'"cholesky_inverse_out_cpu" not implemented for '
                                  f"'{_torch_name(L._data.dtype)}'")
    return apply(CholeskyInverse, (L,), (L._data,), upper=bool(upper))


# ------------------------------------------------------------------ QR
def _qr_backward(gQ, gR, Q: Tensor, R: Tensor, mode: str) -> Tensor:
    """PyTorch's linalg_qr_backward (real matrices)."""
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
    gA = Q @ skew
    gA = _bsolve(_mH(R.narrow(-1, 0, m)), gA, left=False)
    zeros = ng.zeros(*R.shape[:-1], n - m, dtype=gA.dtype, device=gA.device)
    gA = ng.cat([gA, zeros], -1)
    if gR is not None:
        gA = gA + Q @ gR
    return gA


class _Factor(Op):
    """One output of a decomposition computed before the op runs (``forward`` passes it
    through); its backward is the decomposition's with this output's gradient alone."""

    save_inputs = (0,)
    index = 0

    @staticmethod
    def forward(K, factor, **params):
        return factor

    @classmethod
    def backward(cls, ctx, grad):
        (A,) = ctx.saved_tensors
        params = ctx.params
        if grad_mode.state.enabled:  # (a recorded backward: factors whose graph reaches A)
            factors = cls.recompute(A, params)
        else:
            factors = tuple(Tensor._wrap(f) for f in params["factors"])
        grads = [None] * len(factors)
        grads[cls.index] = grad
        return (cls.formula(grads, factors, params),)


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
    samples = (
        Sample(lambda m, a: m.linalg.qr(a.flip(0)), ((4, 3),)),
        Sample(lambda m, a: m.linalg.qr(a.flip(-2), mode="complete"), ((2, 2, 3),)),
        Sample(lambda m, a: m.qr(a + 3 * m.eye(3, dtype=a.dtype, device=a.device))[0], ((3, 3),)),
    )


@register
class LinalgQrR(_QrFactor):
    """QR's R (the second output of PyTorch's one node)."""

    name, node = "linalg_qr_r", "LinalgQrBackward0"
    index = 1
    samples = (Sample(lambda m, a: m.linalg.qr(a).R, ((3, 4),)),)


class _QrResult(_ExResult):
    _fields, _name = ("Q", "R"), "linalg_qr"


def linalg_qr(A: Tensor, mode: str = "reduced"):
    """``torch.linalg.qr``: (Q, R), ``mode`` 'reduced' (default), 'complete' or 'r' (Q empty)."""
    _check_matrix("linalg.qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    K = kernels_for((A,), LinalgQr)
    q, r = K.linalg_qr(A._data, mode)
    factors = (q, r)
    Q = apply(LinalgQr, (A,), (q,), mode=mode, factors=factors) if mode != "r" else \
        Tensor._wrap(q)
    return _QrResult(Q, apply(LinalgQrR, (A,), (r,), mode=mode, factors=factors))


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
    if not ctx.op.index:
        return ng.diagonal(dP, 0, -2, -1)
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
    samples = (
        Sample(lambda m, a: m.linalg.eigvalsh(a + a.mT), ((3, 3),)),
        Sample(lambda m, a: m.linalg.eigh(a + a.mT, UPLO="U")[0], ((2, 3, 3),)),
    )


@register
class LinalgEighVectors(_EighFactor):
    """eigh's eigenvectors (the second output of PyTorch's one node); samples take functions of
    them that do not depend on each vector's sign."""

    name, node = "linalg_eigh_vectors", "LinalgEighBackward0"
    index = 1
    samples = (
        Sample(lambda m, a: _eigh_squares(m.linalg.eigh(a + a.mT)), ((3, 3),)),
        Sample(lambda m, a: _eigh_rebuilt(m.linalg.eigh(a + a.mT)), ((2, 3, 3),)),
    )


class _EighResult(_ExResult):
    _fields, _name = ("eigenvalues", "eigenvectors"), "linalg_eigh"


def _check_uplo(UPLO) -> bool:
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO in ("U", "u")


def _check_eigh_dtype(A: Tensor, fn: str) -> None:
    if A._data.dtype.kind not in "fc":
        raise NotImplementedError(f'"linalg_eigh_cpu" not implemented for '
                                  f"'{_torch_name(A._data.dtype)}'")


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
    factors = (w, v)
    return _EighResult(apply(LinalgEigh, (A,), (w,), UPLO=UPLO, factors=factors),
                       apply(LinalgEighVectors, (A,), (v,), UPLO=UPLO, factors=factors))


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
    return apply(LinalgEigh, (A,), (w,), UPLO=UPLO, factors=(w, v))


# ------------------------------------------------------------------ SVD
def _svd_backward(gU, gS, gVh, U: Tensor, S: Tensor, Vh: Tensor) -> Tensor:
    """PyTorch's svd_backward (real matrices; reduced factors)."""
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
    samples = (
        Sample(lambda m, a: _svd_product(m.linalg.svd(a, full_matrices=False)), ((4, 3),)),
        Sample(lambda m, a: _svd_squares(m.linalg.svd(a + m.eye(2, 3, dtype=a.dtype, device=a.device),
                                                      full_matrices=False)), ((2, 2, 3),)),
    )


@register
class LinalgSvdS(_SvdFactor):
    """SVD's singular values (also ``svdvals``)."""

    name, node = "linalg_svd_s", "LinalgSvdBackward0"
    index = 1
    samples = (
        Sample(lambda m, a: m.linalg.svdvals(a), ((3, 4),)),
        Sample(lambda m, a: m.linalg.svd(a)[1], ((2, 3, 2),)),
    )


@register
class LinalgSvdVh(_SvdFactor):
    name, node = "linalg_svd_vh", "LinalgSvdBackward0"
    index = 2
    samples = (
        Sample(lambda m, a: _svd_gram(m.linalg.svd(a)), ((3, 3),)),
        Sample(lambda m, a: _svd_rebuilt(m.svd(a + m.eye(3, 2, dtype=a.dtype, device=a.device))), ((3, 2),)),
    )


class _SvdResult(_ExResult):
    _fields, _name = ("U", "S", "Vh"), "linalg_svd"


class _LegacySvdResult(_ExResult):
    _fields, _name = ("U", "S", "V"), "svd"


def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """``torch.linalg.svd``: (U, S, Vh), ``A = U diag(S) Vh``, S descending."""
    _check_matrix("linalg.svd", A, square=False)
    K = kernels_for((A,), LinalgSvdU)
    u, s, vh = K.linalg_svd(A._data, bool(full_matrices), True)
    factors = (u, s, vh)
    params = {"full_matrices": bool(full_matrices), "factors": factors}
    return _SvdResult(apply(LinalgSvdU, (A,), (u,), **params),
                      apply(LinalgSvdS, (A,), (s,), **params),
                      apply(LinalgSvdVh, (A,), (vh,), **params))


def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """``torch.linalg.svdvals``: the singular values, descending."""
    _check_matrix("linalg.svd", A, square=False)
    K = kernels_for((A,), LinalgSvdS)
    if A.requires_grad and grad_mode.state.enabled:
        u, s, vh = K.linalg_svd(A._data, False, True)
    else:
        u, s, vh = K.linalg_svd(A._data, False, False)
    return apply(LinalgSvdS, (A,), (s,), full_matrices=False, factors=(u, s, vh))


def _legacy_svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """``torch.svd``: (U, S, V), V not transposed; ``some=False`` full matrices; without
    ``compute_uv``, U and V are zeros."""
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
    if A.ndim < 2 or A._data.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.pinv({_torch_name(A._data.dtype)}{{{list(A.shape)}}}): "
                           "expected a tensor with 2 or more dimensions of float, double, cfloat "
                           "or cdouble types")
    atol, rtol = _tol(atol), _tol(rtol)
    return apply(LinalgPinv, (A,), (A._data,), atol=float(atol or 0.0),
                 rtol=None if rtol is None else float(rtol), hermitian=bool(hermitian))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return pinv(input, rtol=rcond)


@register
class LinalgLstsq(Op):
    name, node = "linalg_lstsq", "LinalgLstsqBackward0"
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
    if A._data.dtype.kind not in "f" or B._data.dtype.kind not in "f":
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
    K = kernels_for((A, B), LinalgLstsq)
    from ._promote import broadcast_shapes

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
        residuals = ((A @ X - Bm) ** 2).sum(-2)
    elif solution.requires_grad:  # (PyTorch's empty residuals are an output of its node too)
        residuals = solution.reshape(-1)[:0]
    return _LstsqResult(solution, residuals, rank, sv)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None,
                rtol=None) -> Tensor:
    """``torch.linalg.matrix_rank``: the number of singular values above ``max(atol, rtol *
    largest)`` (by default ``rtol = eps * max(m, n)``), int64."""
    _check_tensor("linalg.matrix_rank", A)
    if A._data.dtype.kind not in "f":
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 "
                           "dimensions.")
    ng = _ng()
    with ng.no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if tol is not None:
            atol, rtol = tol, 0.0
        atol, rtol = _tol(atol), _tol(rtol)
        m, n = A.shape[-2:]
        if rtol is None:
            rtol = float(np.finfo(A._data.dtype).eps) * max(m, n) if not atol else 0.0
        if not tuple(s.shape)[-1]:
            return ng.zeros(*tuple(s.shape)[:-1], dtype=ng.int64)
        top = s.amax(-1, keepdim=True)
        cut = ng.maximum(top * rtol, ng.full_like(top, float(atol or 0.0)))
        return (s > cut).sum(-1)


# ------------------------------------------------------------------ cross product
from .predicates import linalg_cross


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
    """``torch.linalg.vecdot``: ``(x * y).sum(dim)`` (real tensors), broadcast."""
    return (x * y).sum(dim)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.linalg.diagonal``: ``torch.diagonal`` with the last two dimensions by default."""
    return _ng().diagonal(A, offset, dim1, dim2)


def _top_norm_or_reduction(input: Tensor, p="fro", dim=None, keepdim: bool = False,
                           dtype=None) -> Tensor:
    """``torch.norm``: the reductions' 2-norm for 'fro' and 2 (over ``dim`` or all elements),
    ``vector_norm`` for other numbers, ``matrix_norm`` for 'nuc'."""
    if (p in ("fro", 2, 2.0) or p is None) and dtype is None and \
            not (isinstance(dim, (tuple, list)) and len(dim) > 2):
        return _reduction_norm(input, "fro", dim, keepdim)
    return _top_norm(input, p, dim, keepdim, dtype)


def _with_out(fn, name: str, same_dtype: bool = True):
    """``fn`` taking PyTorch's ``out=`` (``name`` ATen's, as its messages say): the result written
    into ``out`` (of the result's dtype), which is returned; refused where autograd would record
    the call; ``same_dtype`` False: ``out`` of another dtype gets the result cast, where it can
    hold it."""
    import functools

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        from .. import _out
        from .._dtype import c_name

        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if grad_mode.state.enabled and (out._requires_grad or builtins.any(
                t._requires_grad for t in _out._tensors(args, kwargs))):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.")
        result = fn(*args, **kwargs)
        if same_dtype and out._data.dtype != result._data.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {c_name(result._data.dtype)}, "
                               f"but got {c_name(out._data.dtype)} instead")
        _out.write(out, result)
        return out

    return call


def _no_out(fn, name: str):
    """``fn`` refusing ``out=`` (a tuple of results: not supported yet) with NotImplementedError."""
    import functools

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is not None:
            raise NotImplementedError(f"{name}: out= is not supported yet")
        return fn(*args, **kwargs)

    return call


inverse = _with_out(inv, "linalg_inv_ex")
cholesky = _with_out(_legacy_cholesky, "cholesky")
cholesky_solve = _with_out(_cholesky_solve, "cholesky_solve", same_dtype=False)
cholesky_inverse = _with_out(_cholesky_inverse, "cholesky_inverse")
matrix_power = _with_out(_matrix_power, "matmul")
chain_matmul = _with_out(_chain_matmul, "mm")
svd = _no_out(_legacy_svd, "svd")
qr = _no_out(_legacy_qr, "qr")
slogdet = _no_out(slogdet, "slogdet")
norm = _with_out(_top_norm_or_reduction, "linalg_vector_norm")

# numgrad.linalg's functions (numgrad/linalg.py)
LINALG = {
    "det": _with_out(det, "_linalg_det"), "slogdet": slogdet,
    "inv": _with_out(inv, "linalg_inv_ex"), "inv_ex": _no_out(inv_ex, "linalg.inv_ex"),
    "solve": _with_out(solve, "_linalg_solve_ex"), "solve_ex": _no_out(solve_ex, "linalg.solve_ex"),
    "cholesky": _with_out(linalg_cholesky, "linalg_cholesky_ex"),
    "cholesky_ex": _no_out(cholesky_ex, "linalg.cholesky_ex"),
    "qr": _no_out(linalg_qr, "linalg.qr"), "eigh": _no_out(eigh, "linalg.eigh"),
    "eigvalsh": _with_out(eigvalsh, "_linalg_eigh"), "svd": _no_out(linalg_svd, "linalg.svd"),
    "svdvals": _with_out(svdvals, "_linalg_svd"), "pinv": _with_out(pinv, "linalg_pinv", False),
    "lstsq": _no_out(lstsq, "linalg.lstsq"), "matrix_rank": _with_out(matrix_rank,
                                                                      "linalg_matrix_rank"),
    "matrix_power": matrix_power, "multi_dot": _with_out(multi_dot, "mm"),
    "vecdot": _with_out(vecdot, "linalg_vecdot"),
    "vector_norm": _with_out(vector_norm, "linalg_vector_norm"),
    "matrix_norm": _with_out(matrix_norm, "linalg_matrix_norm"),
    "norm": _with_out(linalg_norm, "linalg_norm"), "cross": _with_out(linalg_cross, "linalg_cross"),
    "diagonal": linalg_diagonal,
}

# What numgrad exports as functions (PyTorch's top-level names), and what Tensor gets as methods.
__all__ = [
    "chain_matmul",
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "det",
    "inverse",
    "logdet",
    "matrix_power",
    "norm",
    "pinverse",
    "qr",
    "slogdet",
    "svd",
]
METHODS = ("det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "cholesky_solve",
           "cholesky_inverse", "svd", "qr", "matrix_power", "norm")
