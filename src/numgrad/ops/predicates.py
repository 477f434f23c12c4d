"""Predicates and the reductions users reach for next, with PyTorch's names and rules.

Predicates (no gradient): ``isnan``, ``isinf``, ``isposinf``, ``isneginf``, ``isfinite``,
``any``, ``all``, ``count_nonzero``, ``isclose``, ``allclose``, ``equal``, ``isin``.
Differentiable: ``nan_to_num`` (``NanToNumBackward0``), ``nansum`` (``NansumBackward0``),
``nanmean`` (PyTorch's composite: ``nansum / count``), ``median`` / ``nanmedian`` (all elements:
``MedianBackward0``, the gradient shared by the elements equal to the result; along ``dim``:
``(values, indices)``, ``MedianBackward1``, the gradient to the index returned; PyTorch's lower
middle; a NaN makes ``median`` NaN, at the first NaN's index), ``mode`` (``ModeBackward0``: the
most frequent value, the smallest of a tie, at its last index; ``K.mode_dim``), ``std_mean`` / ``var_mean`` (both
results' node is ``StdMeanBackward0`` / ``VarMeanBackward0``), ``aminmax``, ``cross`` /
``linalg_cross`` (``LinalgCrossBackward0``), ``dist`` (``DistBackward0``) and ``cdist``
(``CdistBackward0``; PyTorch's matrix-product form ``EuclideanDistBackward0`` where it uses it).

Everything is computed by the device's kernel module ``K`` (comparisons, sums, the rank sort of
``order_dim``, ``gather_dim``), so that CUDA tensors stay on the device (no value is read back:
the median's position is chosen on the device) and ``numgrad.compile`` traces them. ``allclose``
and ``equal`` return Python bools, a read of the values (a sync on CUDA, a graph break when
compiled), as in PyTorch.
"""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np
from .. import _lowp
from ..autograd import grad_mode
from .._dtype import FLOAT, to_dtype
from .._typeinfo import finfo as _finfo

from ..tensor import Tensor, _wrap_dim
from ._names import Out, export
from .reduction import (
    differentiable_dtype,
    Std,
    Var,
    _count,
    _Extreme,
    _ExtremeAll,
    _grad_to_input,
    _result_shape,
    _torch_name,
    _ValuesIndices,
    _Var,
    _var_args,
    _var_given,
    normalize_dims,
)
from . import _jvp
from .registry import Op, Sample, apply, apply_parts, kernels_for, register
from .._dtype import get_default_dtype
from ._promote import binary_operands
from .reduction import _given, _inf_where_zero
from .inplace import _write
from .elementwise import holomorphic_backward, where
from ..creation import tensor
from .gather import _scatter_into_zeros

_BOOL = np.bool_


def _kernels(*tensors):
    return kernels_for(tensors)


def _tensor(input, name: str, arg: str = "input", position: int = 1) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(input).__name__}")
    return input


def _or(K, x, y):
    return K.where(x, x, y)


def _and(K, x, y):
    return K.where(x, y, x)


def _not(K, x):
    return K.binary(K.EQ, x, _BOOL(False), _BOOL)


def _isnan(K, d):
    d = _bf16_widened(K, d)
    if d.dtype.kind not in "fc":
        return K.zeros(d.shape, _BOOL)
    return K.binary(K.NE, d, d, _BOOL)  # (a complex NaN: either part)


def _isfinite(K, d):
    d = _bf16_widened(K, d)
    if d.dtype.kind not in "fc":
        return K.full(d.shape, True, _BOOL)
    # x - x is 0 for a finite x, NaN for ±inf and NaN.
    return K.binary(K.EQ, K.binary(K.SUB, d, d), d.dtype.type(0), _BOOL)


def _bf16_widened(K, d):
    """``d``, a bfloat16 array as float32 (its values, numgrad._lowp: NumPy's "V2" holds no
    numbers, and a test of its kind would take it for a non-float)."""
    return K.cast(d, np.dtype(np.float32)) if d.dtype.kind == "V" else d


def _nonzero_mask(K, d):
    if d.dtype == _BOOL:
        return d
    d = _bf16_widened(K, d)
    return K.binary(K.NE, d, d.dtype.type(0), _BOOL)


# ------------------------------------------------------------------ elementwise predicates
@export(method=True)
def isnan(input: Tensor) -> Tensor:
    """Whether each element is NaN (bool)."""
    input = _tensor(input, "isnan")
    return Tensor._wrap(_isnan(_kernels(input), input._data))


@export(method=True)
def isfinite(input: Tensor) -> Tensor:
    """Whether each element is finite: not ±inf, not NaN (bool; True for integers)."""
    input = _tensor(input, "isfinite")
    return Tensor._wrap(_isfinite(_kernels(input), input._data))


def _inf_test(input: Tensor, name: str, sign: int) -> Tensor:
    input = _tensor(input, name)
    K, d = _kernels(input), _bf16_widened(_kernels(input), input._data)
    if d.dtype.kind == "c":
        if sign:
            raise RuntimeError(f"{name} does not support complex inputs.")
        # (either part infinite: PyTorch's isinf of a complex element)
        return Tensor._wrap(_or(K, _inf_test(Tensor._wrap(K.complex_real(d)), name, 0)._data,
                                _inf_test(Tensor._wrap(K.complex_imag(d)), name, 0)._data))
    if d.dtype.kind != "f":
        return Tensor._wrap(K.zeros(d.shape, _BOOL))
    if sign == 0:
        return Tensor._wrap(K.binary(K.EQ, K.unary(K.ABS, d), d.dtype.type(math.inf), _BOOL))
    return Tensor._wrap(K.binary(K.EQ, d, d.dtype.type(sign * math.inf), _BOOL))


@export(method=True)
def isinf(input: Tensor) -> Tensor:
    """Whether each element is +inf or -inf (bool)."""
    return _inf_test(input, "isinf", 0)


@export(method=True)
def isposinf(input: Tensor) -> Tensor:
    """Whether each element is +inf (bool)."""
    return _inf_test(input, "isposinf", 1)


@export(method=True)
def isneginf(input: Tensor) -> Tensor:
    """Whether each element is -inf (bool)."""
    return _inf_test(input, "isneginf", -1)


# ------------------------------------------------------------------ any, all, count_nonzero
def _dims_listed(dim, ndim: int) -> tuple:
    """``dim`` (None, an int or a sequence) as sorted dimensions, with PyTorch's message for a
    repeated one (``dim 0 appears multiple times in the list of dims``)."""
    if dim is None:
        return tuple(range(ndim))
    given = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    seen = []
    for d in given:
        w = _wrap_dim(int(d), ndim) % builtins.max(ndim, 1)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return tuple(sorted(seen)) if ndim else ()


def _true_count(input: Tensor, dims: tuple, keepdim: bool):
    K, d = _kernels(input), input._data
    return K, K.sum_dims(K.cast(_nonzero_mask(K, d), np.int64), dims, keepdim)


@export(method=True)
def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether any element (over ``dim``: an int or a tuple) is nonzero; bool."""
    input = _tensor(input, "any")
    dims = _dims_listed(dim, input._data.ndim)
    K, count = _true_count(input, dims, keepdim)
    return Tensor._wrap(K.binary(K.GT, count, np.int64(0), _logical_result(input)))


@export(method=True)
def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every element (over ``dim``: an int or a tuple) is nonzero; bool."""
    input = _tensor(input, "all")
    dims = _dims_listed(dim, input._data.ndim)
    K, count = _true_count(input, dims, keepdim)
    return Tensor._wrap(K.binary(K.EQ, count, np.int64(_count(input._data.shape, dims)),
                                 _logical_result(input)))


def _logical_result(input: Tensor):
    """``any``'s and ``all``'s dtype: bool, but uint8 for a uint8 input (PyTorch's)."""
    return np.dtype(np.uint8) if input._data.dtype == np.uint8 else _BOOL


@export(method=True)
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """The number of nonzero elements (over ``dim``: an int or a tuple); int64."""
    input = _tensor(input, "count_nonzero")
    dims = _dims_listed(None if dim == () or dim == [] else dim, input._data.ndim)
    return Tensor._wrap(_true_count(input, dims, False)[1])


# ------------------------------------------------------------------ isclose, allclose, equal
@export(method=True)
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Whether ``|input - other| <= atol + rtol * |other|`` elementwise (broadcast), or equal;
    NaNs equal each other only with ``equal_nan``. Both tensors of one dtype, as PyTorch."""
    input = _tensor(input, "isclose")
    other = _tensor(other, "isclose", "other", 2)
    a, b = input._data, other._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"{_torch_name(a.dtype)} did not match {_torch_name(b.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    K = _kernels(input, other)
    if a.dtype.kind in "fV":  # one pass (kernels/*/predicates.py; float16, bfloat16: widened)
        return Tensor._wrap(_lowp.wider(K.isclose, a, b, float(rtol), float(atol),
                                        bool(equal_nan)))
    close = K.binary(K.EQ, a, b, _BOOL)
    if a.dtype.kind == "c":  # (PyTorch's: the moduli of the error and of rtol * other)
        if equal_nan:
            close = _or(K, close, _and(K, _isnan(K, a), _isnan(K, b)))
        if rtol == 0 and atol == 0:
            return Tensor._wrap(close)
        allowed = K.binary(K.ADD, K.complex_abs(K.binary(K.MUL, b, a.dtype.type(rtol))),
                           a.real.dtype.type(atol))
        actual = K.complex_abs(K.binary(K.SUB, a, b))
        within = _and(K, _isfinite(K, actual), K.binary(K.LE, actual, allowed, _BOOL))
        return Tensor._wrap(_or(K, close, within))
    if rtol == 0 and atol == 0:
        return Tensor._wrap(close)
    # integers and bools: the error in the default float dtype

    ft = np.dtype(get_default_dtype().name)
    a, b = K.cast(a, ft), K.cast(b, ft)
    t = a.dtype.type
    allowed = K.binary(K.ADD, K.unary(K.ABS, K.binary(K.MUL, b, t(rtol))), t(atol))
    actual = K.unary(K.ABS, K.binary(K.SUB, a, b))
    within = _and(K, _isfinite(K, actual), K.binary(K.LE, actual, allowed, _BOOL))
    return Tensor._wrap(_or(K, close, within))


@export(method=True)
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether ``isclose`` holds for every element (a Python bool: reads the result)."""
    return builtins.bool(all(isclose(input, other, rtol, atol, equal_nan)).item())


@export(method=True)
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether both have the same shape and elements (a Python bool: reads the result)."""
    input = _tensor(input, "equal")
    other = _tensor(other, "equal", "other", 2)
    if tuple(input.shape) != tuple(other.shape):
        return False
    a, b = binary_operands(input, other)
    K = _kernels(input, other)
    eq = K.binary(K.EQ, a, b, _BOOL)
    return builtins.bool(all(Tensor._wrap(eq)).item())


@export
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is in ``test_elements`` (either may be a number); bool of
    ``elements``' shape. A comparison of every pair (memory: both sizes multiplied)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: at least one of "
                        "elements and test_elements must be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = tensor(elements, device=like.device)
    if not isinstance(test_elements, Tensor):
        test_elements = tensor([test_elements], device=like.device)
    shape = tuple(elements.shape)
    # every element against every test element: (n, 1) against (m,), in their common dtype
    a, b = binary_operands(elements.reshape(-1, 1), test_elements.reshape(-1))
    K = _kernels(elements, test_elements)
    hits = K.sum_dims(K.cast(K.binary(K.EQ, a, b, _BOOL), np.int64), (1,), False)
    hits = K.reshape_view(hits, shape)
    return Tensor._wrap(K.binary(K.EQ if invert else K.GT, hits, np.int64(0), _BOOL))


# ------------------------------------------------------------------ nan_to_num, nansum, nanmean
@register
class NanToNum(Op):
    name, node = "nan_to_num", "NanToNumBackward0"
    jvp = _jvp.finite_only
    on_cuda = True
    save_inputs = (0,)
    samples = (
        Sample(lambda m, a: m.nan_to_num(m.where(a > 0, a, a.log()), nan=0.5), ((3, 4),)),
        Sample(lambda m, a: a.t().nan_to_num(posinf=1.0), ((3, 2),)),
    )

    @staticmethod
    def forward(K, a, *, nan, posinf, neginf):
        if a.dtype.kind != "f":
            return K.copy(a)
        return K.nan_to_num(a, nan, posinf, neginf)  # (one pass: kernels/*/predicates.py)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (where(isfinite(a), grad, 0.0),)


@export(method=True, out=Out(
    same_dtype="nan_to_num: dtype of out: {out} should be same as input: {result}"))
def nan_to_num(input: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default 0 and the
    dtype's largest and lowest finite values)."""
    input = _tensor(input, "nan_to_num")
    d = input._data
    if d.dtype.kind == "c":  # (the parts each, PyTorch's; no gradient, as PyTorch has none)
        if input.requires_grad and grad_mode.state.enabled:
            raise RuntimeError("nan_to_num does not support automatic differentiation for "
                               "outputs with complex dtype.")
        from .complex import complex as _make_complex
        with grad_mode.no_grad():
            return _make_complex(nan_to_num(input.real, nan, posinf, neginf),
                                 nan_to_num(input.imag, nan, posinf, neginf))
    info = _finfo(input.dtype) if d.dtype.kind in "fV" else None  # ("V": bfloat16)
    posinf = (float(info.max) if info is not None else 0.0) if posinf is None else posinf
    neginf = (float(info.min) if info is not None else 0.0) if neginf is None else neginf
    return apply(NanToNum, (input,), (d,), nan=float(nan), posinf=float(posinf),
                 neginf=float(neginf))


@export(method=True)
def nan_to_num_(input: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """``nan_to_num`` in place (recorded as PyTorch's, ``NanToNumBackward0``)."""
    return _write(_tensor(input, "nan_to_num_"), nan_to_num, nan, posinf, neginf)


@register
class Nansum(Op):
    name, node = "nansum", "NansumBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    samples = (
        Sample(lambda m, a: m.nansum(m.where(a > 0.5, a.log() - a, a)), ((3, 4),)),
        Sample(lambda m, a: a.nansum(1, keepdim=True), ((3, 4),)),
        Sample(lambda m, a: m.nansum(m.where(a > 0, a, a.log()), (0, 2)), ((2, 3, 2),)),
    )

    @staticmethod
    def forward(K, a, *, dims, keepdim):
        if a.dtype.kind == "f":
            a = K.where(_isnan(K, a), K.full((), a.dtype.type(0), a.dtype), a)
        return K.sum_dims(a, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (where(isnan(a), 0.0, _grad_to_input(grad, ctx)),)


@export(method=True, out=True)
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The sum of the elements that are not NaN (over ``dim``)."""
    input = _tensor(input, "nansum")
    if input.dtype.is_complex or dtype is not None and to_dtype(dtype).is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None:
        differentiable_dtype(input, dtype)
        input = input.to(dtype)
    elif input.dtype._category < FLOAT and input._data.dtype != np.int64:
        input = input.to(np.int64)
    dims = normalize_dims(None if dim == () or dim == [] else dim, input._data.ndim)
    out = apply(Nansum, (input,), (input._data,), dims=dims, keepdim=keepdim)
    return out if dim is None else _given(out, dim, dims)


@export(method=True, out=True)
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the elements that are not NaN (over ``dim``): PyTorch's
    ``nansum(input) / (count of non-NaN)``."""
    input = _tensor(input, "nanmean")
    if input.dtype.is_complex:  # (its nansum's refusal)
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_torch_name(input._data.dtype)}")
    factor = Tensor._wrap(_not(_kernels(input), _isnan(_kernels(input), input._data)))
    factor = factor.sum(dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / factor


# ------------------------------------------------------------------ median, nanmedian
class _MedianResult(_ValuesIndices):
    _name = "median"


class _NanmedianResult(_ValuesIndices):
    _name = "nanmedian"


def _median_positions(K, x, dim: int, ignore_nan: bool):
    """Sorted values and indices of ``x`` along ``dim`` and, per slice (kept as size 1), the
    sorted position of its median: the lower middle; for ``median`` the first NaN where the
    slice holds one; for ``nanmedian`` the lower middle of the values that are not NaN."""
    values, indices = K.order_dim(x, dim)
    n = x.shape[dim]
    nans = K.sum_dims(K.cast(_isnan(K, x), np.int64), (dim,), True)
    if ignore_nan:
        # (n - nans - 1) // 2, and 0 for a slice of NaNs only
        pos = K.binary(K.DIV_FLOOR, K.binary(K.RSUB, nans, np.int64(n - 1)), np.int64(2))
        pos = K.binary(K.MAXIMUM, pos, np.int64(0))
    else:
        first_nan = K.binary(K.RSUB, nans, np.int64(n))
        pos = K.where(K.binary(K.GT, nans, np.int64(0), _BOOL), first_nan,
                      K.full((), np.int64((n - 1) // 2), np.dtype(np.int64)))
    return values, indices, pos


class _MedianAllOp(_ExtremeAll):
    jvp = _jvp.evenly_read
    on_cuda = True
    ignore_nan = False

    @classmethod
    def forward(cls, K, a, *, dims, keepdim):
        if not a.size:
            return K.full((), a.dtype.type(math.nan), a.dtype)
        flat = K.reshape_view(K.ascontiguous(a), (a.size,))
        values, _, pos = _median_positions(K, flat, 0, cls.ignore_nan)
        return K.reshape_view(K.gather_dim(values, 0, pos), ())


@register
class MedianAll(_MedianAllOp):
    name, node = "median", "MedianBackward0"
    samples = (Sample(lambda m, a: a.median(), ((3, 4),)),
               Sample(lambda m, a: m.median(a.t()), ((2, 3),)))


@register
class NanmedianAll(_MedianAllOp):
    name, node = "nanmedian", "NanmedianBackward0"
    ignore_nan = True
    samples = (Sample(lambda m, a: m.nanmedian(m.where(a > 0.5, a.log() - a, a)), ((3, 4),)),)


class _MedianDimOp(Op):
    """The values selected along ``dim`` (computed with their indices before the op runs); the
    gradient goes back to the indices (``indices``: kept as size 1)."""

    jvp = _jvp.transposed_backward
    on_cuda = True

    @staticmethod
    def forward(K, values, *, dim, indices, keepdim):
        return values

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        if not shape:
            return (grad,)

        dim = ctx.params["dim"]
        if not ctx.params["keepdim"]:
            grad = grad.unsqueeze(dim)
        return (_scatter_into_zeros(shape, dim, ctx.params["indices"], grad),)


@register
class MedianDim(_MedianDimOp):
    name, node = "median_dim", "MedianBackward1"
    samples = (Sample(lambda m, a: a.median(1).values, ((3, 4),)),
               Sample(lambda m, a: m.median(a, 0, keepdim=True)[0], ((3, 2),)))


@register
class NanmedianDim(_MedianDimOp):
    name, node = "nanmedian_dim", "NanmedianBackward1"
    samples = (Sample(lambda m, a: m.where(a > 0.5, a.log() - a, a).nanmedian(-1)[0], ((3, 5),)),)


def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool):
    name = "nanmedian" if ignore_nan else "median"
    input = _tensor(input, name)
    data = input._data
    if data.dtype == _BOOL or data.dtype.kind == "c":
        kernel = "median_cpu" if dim is None else "median_out"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_torch_name(data.dtype)}'")
    if dim is None:
        op = NanmedianAll if ignore_nan else MedianAll
        return apply(op, (input,), (data,), dims=tuple(range(data.ndim)), keepdim=False)
    nd = data.ndim
    d = _wrap_dim(int(dim), nd) % builtins.max(nd, 1)
    op = NanmedianDim if ignore_nan else MedianDim
    result = _NanmedianResult if ignore_nan else _MedianResult
    K = kernels_for((input,), op)
    if nd == 0:
        values, indices = K.copy(data), K.zeros((), np.dtype(np.int64))
        out = _given(apply(op, (input,), (values,), dim=0, indices=indices,
                           keepdim=bool(keepdim)), dim, 0)  # (both as given, as PyTorch's node)
        return result(out, Tensor._wrap(indices))
    if not data.shape[d]:  # (nanmedian's too: PyTorch's words)
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    values, indices, pos = _median_positions(K, data, d, ignore_nan)
    chosen = K.gather_dim(indices, d, pos)
    picked = _lowp.wider(K.gather_dim, values, d, pos)  # (float16: gathered as float32)
    shape = _result_shape(data.shape, (d,), keepdim)
    out = _given(apply(op, (input,), (K.reshape_view(picked, shape),), dim=d, indices=chosen,
                       keepdim=keepdim), dim, d)
    return result(out, Tensor._wrap(K.reshape_view(chosen, shape)))


@export(method=True)
def median(input: Tensor, dim=None, keepdim: bool = False):
    """The median (the lower of the two middle values for an even count; NaN if there is a NaN)
    of all elements, or ``(values, indices)`` along ``dim``."""
    return _median(input, dim, keepdim, False)


@export(method=True)
def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """``median`` of the values that are not NaN."""
    return _median(input, dim, keepdim, True)


class _ModeResult(_ValuesIndices):
    _name = "mode"


@register
class Mode(_MedianDimOp):
    name, node = "mode", "ModeBackward0"
    samples = (Sample(lambda m, a: m.mode(a, 1).values, ((3, 4),)),
               Sample(lambda m, a: a.t().mode(0, keepdim=True)[0], ((3, 2),)))


@export(method=True)
def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest of equally
    frequent ones; NaN counts as equal to NaN) and the last index where it occurs."""
    input = _tensor(input, "mode")
    data = input._data
    if data.dtype.kind == "c":
        raise NotImplementedError(f"\"mode_cpu\" not implemented for '{_torch_name(data.dtype)}'")
    nd = data.ndim
    d = _wrap_dim(int(dim), nd) % builtins.max(nd, 1)
    if nd and not data.shape[d]:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    K = kernels_for((input,), Mode)
    values, indices = K.mode_dim(data, d)
    if nd == 0:
        out = _given(apply(Mode, (input,), (values,), dim=0, indices=indices,
                           keepdim=bool(keepdim)), dim, 0)
        return _ModeResult(out, Tensor._wrap(indices))
    shape = _result_shape(data.shape, (d,), keepdim)
    out = _given(apply(Mode, (input,), (K.reshape_view(values, shape),), dim=d, indices=indices,
                       keepdim=keepdim), dim, d)
    return _ModeResult(out, Tensor._wrap(K.reshape_view(indices, shape)))


# ------------------------------------------------------------------ var_mean, std_mean
def _pair_backward(first):
    """The backward of ``var_mean``/``std_mean``'s one node for both results (``apply_parts``):
    ``first`` (var's or std's formula) for the first result's gradient plus the mean's for the
    second's, each where one arrived (PyTorch's ``var_mean_backward``)."""
    def backward(ctx, grad):
        if not isinstance(grad, list):  # (the first result's alone: its jvp, transposed)
            return first(ctx, grad)
        g, g_mean = grad
        total = None if g is None else first(ctx, g)[0]
        if g_mean is not None:
            mean = _MeanOfPair.backward(ctx, g_mean)[0]
            total = mean if total is None else total + mean
        return (total,)
    return staticmethod(backward)


@register
class VarMeanVar(_Var):
    """``var_mean``: var and mean, outputs 0 and 1 of one node (``apply_parts``), as PyTorch's
    ``VarMeanBackward0``."""

    name, node = "var_mean", "VarMeanBackward0"
    several = True
    samples = (Sample(lambda m, a: m.var_mean(a), ((3, 4),)),
               Sample(lambda m, a: m.var_mean(a, 1, keepdim=True, correction=0), ((3, 4),)))
    backward = _pair_backward(Var.backward)


@register
class StdMeanStd(_Var):
    name, node = "std_mean", "StdMeanBackward0"
    save_output = True
    several = True
    samples = (Sample(lambda m, a: m.std_mean(a, (0, 1)), ((2, 3, 2),)),
               Sample(lambda m, a: m.std_mean(a, unbiased=False), ((5,),)))
    forward = Std.forward
    backward = _pair_backward(Std.backward)


class _MeanOfPair(Op):
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)  # (unread: PyTorch's one node for both results keeps its input)

    @staticmethod
    def forward(K, a, *, dims, keepdim, correction, whole):
        total = K.sum_dims(a, dims, keepdim)
        return K.binary(K.DIV, total, a.dtype.type(_count(a.shape, dims)))

    @staticmethod
    def backward(ctx, grad):
        return (_grad_to_input(grad, ctx, _count(ctx.input_shapes[0], ctx.params["dims"])),)


@register
class VarMeanMean(_MeanOfPair):
    name, node = "var_mean_mean", "VarMeanBackward0"
    samples = (Sample(lambda m, a: m.var_mean(a, 0)[1], ((3, 2),)),)


@register
class StdMeanMean(_MeanOfPair):
    name, node = "std_mean_mean", "StdMeanBackward0"
    samples = (Sample(lambda m, a: m.std_mean(a, -1, keepdim=True)[1], ((3, 2),)),)


def _pair(ops, name, input, dim, unbiased, keepdim, correction) -> tuple:
    """The two results of ``var_mean``/``std_mean``, each node told the arguments as PyTorch's
    one node shows them (``_var_given``)."""
    params = _var_args(name, _tensor(input, name), dim, unbiased, keepdim, correction)
    if input.dtype.is_complex:  # (var and mean composed: the complex variance is real)
        from .reduction import _complex_var, mean
        spread = _complex_var(input, params)
        centre = mean(input, params["dims"], keepdim=params["keepdim"])
        return (spread if name == "var_mean" else spread.sqrt()), centre
    parts = apply_parts(tuple((op, params) for op in ops), (input,), (input._data,))
    _var_given(parts[0], dim, unbiased, correction)  # (their one node)
    return parts


@export
def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over ``dim`` (unbiased, ``correction=1``, by default)."""
    return _pair((VarMeanVar, VarMeanMean), "var_mean", input, dim, unbiased, keepdim, correction)


@export
def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over ``dim`` (unbiased, ``correction=1``, by default)."""
    return _pair((StdMeanStd, StdMeanMean), "std_mean", input, dim, unbiased, keepdim, correction)


# ------------------------------------------------------------------ aminmax
class _AminmaxResult(tuple):
    """``(min, max)``, as PyTorch's ``torch.return_types.aminmax``."""

    min = property(lambda self: self[0])
    max = property(lambda self: self[1])

    def __new__(cls, lo, hi):
        return super().__new__(cls, (lo, hi))

    def __repr__(self) -> str:
        return f"numgrad.return_types.aminmax(\nmin={self[0]!r},\nmax={self[1]!r})"


@register
class AminmaxMin(_Extreme):
    name, node, code = "aminmax_min", "AminmaxBackward0", "MIN"
    samples = (Sample(lambda m, a: m.aminmax(a)[0], ((3, 4),)),)


@register
class AminmaxMax(_Extreme):
    name, node, code = "aminmax_max", "AminmaxBackward0", "MAX"
    samples = (Sample(lambda m, a: a.aminmax(dim=1, keepdim=True).max, ((3, 4),)),)


@export(method=True, out=Out(same_dtype=True, several=True))
def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """``(min, max)`` of all elements, or along ``dim``."""
    input = _tensor(input, "aminmax")
    data = input._data
    if dim is None:
        dims, keepdim = tuple(range(data.ndim)), False
        if not data.size:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
    else:
        dims = normalize_dims(int(dim), data.ndim)
        if data.ndim and not data.shape[dims[0]]:
            raise IndexError("aminmax: Expected reduction dim "  # (PyTorch's words)
                             f"{dims[0]} to have non-zero size.")
    return _AminmaxResult(apply(AminmaxMin, (input,), (data,), dims=dims, keepdim=keepdim),
                          apply(AminmaxMax, (input,), (data,), dims=dims, keepdim=keepdim))


# ------------------------------------------------------------------ cross, dist, cdist
def _component(K, a, dim: int, i: int):
    return K.view_index(a, (slice(None),) * dim + (i,))


@register
class LinalgCross(Op):
    name, node = "linalg_cross", "LinalgCrossBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 0}
    samples = (
        Sample(lambda m, a, b: m.cross(a, b, dim=-1), ((4, 3), (4, 3))),
        Sample(lambda m, a, b: m.cross(a, b, dim=0), ((3, 2), (3, 1))),
    )

    @staticmethod
    def forward(K, a, b, *, dim):
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        a, b = K.broadcast_to(a, shape), K.broadcast_to(b, shape)
        x = [_component(K, a, dim, i) for i in range(3)]
        y = [_component(K, b, dim, i) for i in range(3)]

        def term(i, j):
            return K.binary(K.SUB, K.binary(K.MUL, x[i], y[j]), K.binary(K.MUL, x[j], y[i]))

        return K.stack([term(1, 2), term(2, 0), term(0, 1)], dim)

    complex_ok = True

    @staticmethod
    def backward(ctx, grad):
        if grad._data.dtype.kind == "c":
            return holomorphic_backward(LinalgCross._backward, ctx, grad)
        return LinalgCross._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad):
        a, b = ctx.saved_tensors
        dim = ctx.params["dim"]
        need_a, need_b = ctx.needs_input_grad
        return (linalg_cross(b, grad, dim=dim) if need_a else None,
                linalg_cross(grad, a, dim=dim) if need_b else None)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (broadcast), as ``torch.linalg.cross``."""
    a, b = binary_operands(input, other)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    nd = a.ndim
    d = _wrap_dim(int(dim), nd)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    return _given(apply(LinalgCross, (input, other), (a, b), dim=d % len(shape)), dim,
                  d % len(shape))


@export(method=True, out=Out(same_dtype=True))
def cross(input: Tensor, other: Tensor, dim=None) -> Tensor:
    """``linalg_cross`` along ``dim``; without ``dim``, the first dimension of size 3 (PyTorch's
    deprecated default, with its warning)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=2)
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(other.shape)))
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


def _p_norm_forward(K, d, p: float, dims: tuple, keepdim: bool):
    """The ``p``-norm of ``d`` over ``dims``."""
    if p == 2:
        return K.unary(K.SQRT, K.sum_dims(K.binary(K.MUL, d, d), dims, keepdim))
    absd = K.unary(K.ABS, d)
    if p == math.inf:
        if not d.size:
            return K.zeros(_result_shape(d.shape, dims, keepdim), d.dtype)
        return K.reduce_dims(K.MAX, absd, dims, keepdim)
    if p == 0:
        return K.cast(K.sum_dims(K.cast(_nonzero_mask(K, d), np.int64), dims, keepdim), d.dtype)
    if p == 1:
        return K.sum_dims(absd, dims, keepdim)
    t = d.dtype.type
    total = K.sum_dims(K.binary(K.POW, absd, t(p)), dims, keepdim)
    return K.binary(K.POW, total, t(1.0 / p))


def _p_norm_backward(diff: Tensor, norm: Tensor, grad: Tensor, p: float, dims: tuple) -> Tensor:
    """PyTorch's norm_backward: the gradient of ``||diff||_p`` (``norm`` and ``grad`` with the
    reduced dimensions kept), 0 where the norm is 0."""
    if p == 0:
        return diff * 0.0
    if p == 1:
        return diff.sign() * grad
    safe = norm + _inf_where_zero(norm)
    if p == 2:
        return diff * (grad / safe)
    if p == math.inf:
        hit = (diff.abs() == norm).to(diff.dtype)
        return diff.sign() * hit * (grad / hit.sum(dims, keepdim=True))
    scaled = diff * diff.abs().pow(p - 2) / safe.pow(p - 1)
    return where(norm == 0, 0.0, scaled * grad)


@register
class Dist(Op):
    name, node = "dist", "DistBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_output = True
    samples = (
        Sample(lambda m, a, b: m.dist(a, b), ((3, 4), (3, 4))),
        Sample(lambda m, a, b: a.dist(b, 3), ((2, 3), (3,))),
    )

    @staticmethod
    def forward(K, a, b, *, p):
        d = K.binary(K.SUB, a, b)
        return _p_norm_forward(K, d, p, tuple(range(d.ndim)), False)

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        diff = a - b
        g = _p_norm_backward(diff, out, grad, ctx.params["p"], tuple(range(diff.ndim)))
        need_a, need_b = ctx.needs_input_grad
        return (g if need_a else None, -g if need_b else None)


@export(method=True)
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast)."""
    a, b = binary_operands(input, other)
    if a.dtype.kind == "c":  # (the norm of the moduli of the difference)
        from .linalg_norms import vector_norm
        return vector_norm(input - other, p)
    if a.dtype.kind not in "fV":  # ("V": bfloat16, computed widened)
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_torch_name(a.dtype)}")
    return apply(Dist, (input, other), (a, b), p=float(p))  # (binary_operands checked the shapes)


@register
class Cdist(Op):
    name, node = "cdist", "CdistBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_output = True
    samples = (
        Sample(lambda m, a, b: m.cdist(a, b), ((3, 2), (4, 2))),
        Sample(lambda m, a, b: m.cdist(a, b, p=1.5), ((2, 3, 2), (2, 2, 2)), gradgrad=False),
    )

    @staticmethod
    def forward(K, a, b, *, p):
        nd = a.ndim
        x = K.unsqueeze(a, nd - 1)  # (..., P, 1, M)
        y = K.unsqueeze(b, nd - 2)  # (..., 1, R, M)
        return _p_norm_forward(K, K.binary(K.SUB, x, y), p, (nd,), False)

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        diff = a.unsqueeze(-2) - b.unsqueeze(-3)  # (..., P, R, M)
        g = _p_norm_backward(diff, out.unsqueeze(-1), grad.unsqueeze(-1), ctx.params["p"],
                             (diff.ndim - 1,))
        need_a, need_b = ctx.needs_input_grad
        return (g.sum(-2) if need_a else None, -g.sum(-3) if need_b else None)


@register
class EuclideanDist(Op):
    """PyTorch's ``_euclidean_dist``, the matrix-product form of ``cdist`` with p=2 (what
    ``cdist`` uses for more than 25 rows on either side, or with
    ``compute_mode='use_mm_for_euclid_dist'``): ``sqrt(max(|x|² - 2 x·y + |y|², 1e-30))`` of
    batches (B, P, M) and (B, R, M)."""

    name, node = "_euclidean_dist", "EuclideanDistBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_output = True
    samples = (
        Sample(lambda m, a, b: m.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
               ((3, 2), (4, 2))),
    )

    @staticmethod
    def forward(K, a, b):
        def squares(x):
            return K.sum_dims(K.binary(K.MUL, x, x), (2,), True)

        ones_a = K.full(tuple(a.shape[:2]) + (1,), 1, a.dtype)
        ones_b = K.full(tuple(b.shape[:2]) + (1,), 1, b.dtype)
        left = K.cat([K.binary(K.MUL, a, a.dtype.type(-2)), squares(a), ones_a], 2)
        right = K.cat([b, ones_b, squares(b)], 2)
        product = K.matmul(left, right, False, True)
        return K.unary(K.SQRT, K.binary(K.MAXIMUM, product, a.dtype.type(1e-30)))

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        ratio = where(out == 0, 0.0, grad / out)
        need_a, need_b = ctx.needs_input_grad
        return (a * ratio.sum(-1, keepdim=True) - ratio.matmul(b) if need_a else None,
                b * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(a) if need_b else None)


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                  "donot_use_mm_for_euclid_dist")


@export
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distance between each pair of rows of ``x1`` (..., P, M) and ``x2``
    (..., R, M): (..., P, R). With p=2 and more than 25 rows on either side (or
    ``compute_mode='use_mm_for_euclid_dist'``), PyTorch's matrix-product form
    (``EuclideanDistBackward0``, then a view), else the direct one (``CdistBackward0``)."""
    a, b = x1._data, x2._data
    sa, sb = tuple(a.shape), tuple(b.shape)  # (the simulator's shapes take no negative index)
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    if sa[-1] != sb[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. X1: "
                           f"{sa[-1]} X2: {sb[-1]}")
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{_torch_name(a.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"X1 and X2 must have the same dtype, but got: "
                           f"{_torch_name(a.dtype)} and {_torch_name(b.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    rows_a, rows_b, m = sa[-2], sb[-2], sa[-1]
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
            compute_mode == "use_mm_for_euclid_dist_if_necessary"
            and (rows_a > 25 or rows_b > 25))):
        # PyTorch's matrix-product form, on the batches flattened, viewed back
        count = int(np.prod(batch, dtype=np.int64))  # (not -1: ambiguous for empty batches)
        a3 = x1.expand(batch + (rows_a, m)).reshape(count, rows_a, m)
        b3 = x2.expand(batch + (rows_b, m)).reshape(count, rows_b, m)
        out = apply(EuclideanDist, (a3, b3), (a3._data, b3._data))
        return out.view(batch + (rows_a, rows_b))
    K = kernels_for((x1, x2), Cdist)
    a = K.broadcast_to(a, batch + sa[-2:])
    b = K.broadcast_to(b, batch + sb[-2:])
    return apply(Cdist, (x1, x2), (a, b), p=float(p))
