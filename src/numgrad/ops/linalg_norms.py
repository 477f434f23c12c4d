"""Vector and matrix norms: ``torch.linalg.vector_norm`` (one op, ``LinalgVectorNormBackward0``),
``matrix_norm`` and ``norm`` (compositions of reductions and singular values), and the
top-level ``torch.norm``, with PyTorch's result dtypes and error messages.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import dispatch
from .._dtype import to_dtype, torch_name
from ..tensor import Tensor, _wrap_dim
from ._names import Out, export
from .reduction import norm as _reduction_norm
from . import _jvp
from .registry import Op, Sample, apply, register
from .linalg_common import _check_float, _check_tensor, _ng, _with_out
from ._common import _inplace
from .linalg_decompositions import svdvals


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
    p = dispatch.number_array(ord, a.dtype)
    powered = K.sum_dims(K.binary(K.POW, K.unary(K.ABS, a), p), dims, keepdim)
    return K.binary(K.POW, powered, dispatch.number_array(1.0 / ord, a.dtype))


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
    def forward(K, a, *, ord, dims, keepdim, dim=None, shown_ord=None):
        # (``dim``, ``shown_ord``: as the caller gave them, for the node's ``_saved_*``)
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
    if x._data.dtype.kind != "V":  # (bfloat16: a float dtype too, computed widened)
        _check_float("linalg.vector_norm", x)
    if dtype is not None:
        if to_dtype(dtype).np.kind not in "fcV":
            raise RuntimeError("linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {torch_name(to_dtype(dtype).np)}")
        x = x.to(dtype)
    if x._data.dtype.kind == "c":  # (the norm of the moduli; abs's gradient is PyTorch's)
        x = x.abs()
    data = x._data
    dims = _norm_dims(dim, data.ndim)
    given = None if dim is None else (int(dim),) if isinstance(dim, (int, np.integer)) else \
        tuple(int(d) for d in dim)
    shown_ord = ord if type(ord) in (int, float) else float(ord)
    ord = float(ord)
    if (ord < 0 or math.isinf(ord)) and (
            builtins.any(tuple(data.shape)[d] == 0 for d in dims) or (not dims and not data.size and data.ndim)):
            # (PyTorch's words: with ``dim``, the first empty one as given, its message's
            # space missing before "because")
            empty = [d for d in given or () if data.ndim and data.shape[d % data.ndim] == 0]
            where = f"on the dimension {empty[0]}because this dimension is empty and" if empty \
                else "on an empty tensor because"
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm {where} the "
                "operation does not have an identity")
    if not math.isinf(ord) and ord == int(ord):
        ord = int(ord)
    return apply(LinalgVectorNorm, (x,), (data,), ord=ord, dims=dims, keepdim=bool(keepdim),
                 dim=given, shown_ord=shown_ord)


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
    # (PyTorch's order: the order, A (at least 2-D, a float: not float16 or bfloat16 for the
    # norms of singular values, 'nuc' and ±2), dim)
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if not isinstance(ord, str) and ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_name(float(ord))} not supported.")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    _check_float("linalg.matrix_norm", A, low_precision=ord not in ("nuc", 2, -2))
    if dtype is not None:
        A = A.to(dtype)
    dim = tuple(_wrap_dim(int(d), A.ndim) for d in dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if dim[0] == dim[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, dim, keepdim)
        return _svd_norm(A, dim, keepdim, lambda s: s.sum(-1))
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


def _top_norm_or_reduction(input: Tensor, p="fro", dim=None, keepdim: bool = False,
                           dtype=None) -> Tensor:
    """``torch.norm``: the reductions' 2-norm for 'fro' and 2 (over ``dim`` or all elements),
    ``vector_norm`` for other numbers, ``matrix_norm`` for 'nuc'."""
    if (p in ("fro", 2, 2.0) or p is None) and dtype is None and \
            not (isinstance(dim, (tuple, list)) and len(dim) > 2):
        return _reduction_norm(input, "fro", dim, keepdim)
    return _top_norm(input, p, dim, keepdim, dtype)


norm = export(
    _with_out(_top_norm_or_reduction, "linalg_vector_norm"),
    "norm", method=True, out=Out(same_dtype=True))

# numgrad.linalg's functions (numgrad/linalg.py)
export(_with_out(vector_norm, "linalg_vector_norm"), function=False, linalg="vector_norm")
export(_with_out(matrix_norm, "linalg_matrix_norm"), function=False, linalg="matrix_norm")
export(_with_out(linalg_norm, "linalg_norm"), function=False, linalg="norm")


@export(method=True)
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down
    to norm ``maxnorm`` (``maxnorm / (norm + 1e-7)``, as ATen), the others as they are."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    d = _wrap_dim(dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norm = vector_norm(input, p, others, keepdim=True)

    return input * _ng().where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


renorm_ = export(_inplace(renorm, saves_self=True), "renorm_", function=False, method=True)
