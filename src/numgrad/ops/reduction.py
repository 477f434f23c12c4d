"""Reductions over all elements or over ``dim`` (an int or a tuple), with ``keepdim``."""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ..autograd import grad_mode
from .. import dispatch
from .._dtype import FLOAT, from_numpy_dtype, to_dtype, torch_name
from ..tensor import Tensor, _wrap_dim
from ..autograd.graph import given_dims, keep_given
from . import _jvp
from ._names import Out, export
from .registry import Op, Sample, apply, kernels_for, kernels_of, register
from .elementwise import holomorphic_backward, maximum, minimum, where
from ..creation import full_like


def normalize_dims(dim, ndim: int) -> tuple[int, ...]:
    """``dim`` (None, an int or a sequence) as sorted, unique, non-negative dimensions; an empty
    sequence is every dimension, as PyTorch's reductions read it (``x.sum(())`` is ``x.sum()``);
    a repeated one gets PyTorch's error naming it."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    seen: set = set()
    for d in dim:
        w = _wrap_dim(int(d), ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.add(w)
    if not seen:
        return tuple(range(ndim))
    return tuple(sorted(seen)) if ndim else ()


def _keepdim_shape(shape: tuple, dims: tuple) -> tuple:
    return tuple(1 if d in dims else n for d, n in enumerate(shape))


def _result_shape(shape: tuple, dims: tuple, keepdim: bool) -> tuple:
    if keepdim:
        return _keepdim_shape(shape, dims)
    return tuple(n for d, n in enumerate(shape) if d not in dims)


def _torch_name(dtype) -> str:
    """PyTorch's name of a dtype (``Long``, ``Int``, ``Bool``...), for its error messages."""
    return torch_name(dtype)


def _grad_to_input(grad: Tensor, ctx, count: int = 1) -> Tensor:
    """A reduction's gradient (divided by ``count``, for a mean), reshaped to keep the reduced
    dimensions and expanded back. In a plain backward (no graph recorded) on a contiguous float
    gradient, at the array level: the same values and views as the ops (``grad / count``, a
    reshape, an expand), without three ops' dispatch."""
    shape = ctx.input_shapes[0]
    keep = not ctx.params["keepdim"] and grad._data.ndim  # (a 0-d gradient expands as it is)
    g = grad._data
    if not grad_mode.state.enabled and g.dtype.kind == "f":
        K = kernels_of(g)
        if K.is_contiguous(g):
            if count != 1:
                g = K.binary(K.DIV, g, g.dtype.type(count))
            if keep:
                g = K.reshape_view(g, _keepdim_shape(shape, ctx.params["dims"]))
            return Tensor._wrap(K.broadcast_to(g, shape))
    if count != 1:
        grad = grad / float(count)
    if keep:
        grad = grad.reshape(_keepdim_shape(shape, ctx.params["dims"]))
    return grad.expand(shape)


class _Sum(Op):
    jvp = _jvp.linear
    on_cuda = True
    complex_ok = True
    @staticmethod
    def forward(K, a, *, dims, keepdim):
        return K.sum_dims(a, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        return (_grad_to_input(grad, ctx),)


@register
class SumAll(_Sum):
    name, node = "sum", "SumBackward0"
    lane = "sum"  # (its fast apply, ``registry.LANES``: a float tensor's sum of everything)
    samples = (Sample(lambda m, a: a.sum(), ((3, 4),)), Sample(lambda m, a: m.sum(a), ((5,),)))


@register
class SumDim(_Sum):
    name, node = "sum_dim", "SumBackward1"
    samples = (
        Sample(lambda m, a: a.sum(0), ((3, 4),)),
        Sample(lambda m, a: a.sum(dim=(0, 2), keepdim=True), ((2, 3, 4),)),
        Sample(lambda m, a: m.sum(a, -1), ((2, 3, 4),)),
        Sample(lambda m, a: a.sum((0, 2)), ((2, 3, 4),)),
        Sample(lambda m, a: a.sum_to_size(1, 4), ((3, 4),)),
    )


_EXACT_COUNT = 1 << 24  # (counts below it are exact in float32, as the kernel's divisor is)
_FILL_BELOW = 4096  # (elements: a gradient of one value smaller than this is filled, as in
#                     ops.elementwise._times; larger ones stay broadcast views, with no pass)


class _Mean(Op):
    jvp = _jvp.linear
    on_cuda = True
    complex_ok = True
    @staticmethod
    def forward(K, a, *, dims, keepdim):
        total = K.sum_dims(a, dims, keepdim)
        count = _count(a.shape, dims)
        if (type(total) is np.ndarray and total.size == 1 and 0 < count < _EXACT_COUNT
                and (total.dtype == np.float64 or total.dtype == np.float32)
                and dispatch.current() is None):
            # One mean (of all elements, the common case): its quotient by Python's division in
            # the sum's fresh array, the kernel's value exactly (see backward), without a
            # second kernel call. Not while numgrad.compile traces (it reads the value).
            total.fill(total.item() / count)
            return total
        return K.binary(K.DIV, total, a.dtype.type(count))

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        count = _count(shape, ctx.params["dims"])
        g = grad._data
        if (isinstance(g, np.ndarray) and g.size == 1 and 0 < count < _FILL_BELOW
                and (g.dtype == np.float64 or g.dtype == np.float32)
                and not grad_mode.state.enabled):
            # One value over the input (the common ``loss.mean()``, count = the input's size):
            # one fill of grad / count, which is PyTorch's result (a contiguous tensor), not a
            # division, a view and a broadcast. The quotient is Python's (IEEE double) division,
            # which for float32 operands rounds to the float32 quotient exactly (53 >= 2 * 24 + 2
            # bits: the double rounding is innocuous) and warns for nothing (count >= 1).
            if dispatch.current() is None:
                out = np.empty(shape, g.dtype)
                out.fill(g.item() / count)
                return (Tensor._wrap(out),)
            # While numgrad.compile traces, the fill cannot be recorded (it reads the value, and
            # its array is no kernel's): the kernels' quotient (the same IEEE division) copied to
            # a fresh contiguous array, so that the formulas after it see eager's layout (a
            # broadcast view here would send a product's backward to its uniform-gradient
            # shortcut, another summation order than eager's two products).
            K = kernels_of(g)
            q = K.binary(K.DIV, K.reshape_view(g, ()), g.dtype.type(count))
            return (Tensor._wrap(K.copy(K.broadcast_to(q, shape))),)
        return (_grad_to_input(grad, ctx, count),)


@register
class MeanAll(_Mean):
    name, node = "mean", "MeanBackward0"
    lane = "mean"  # (its fast apply, ``registry.LANES``)
    samples = (Sample(lambda m, a: a.mean(), ((3, 4),)),)


@register
class MeanDim(_Mean):
    name, node = "mean_dim", "MeanBackward1"
    samples = (
        Sample(lambda m, a: a.mean(1), ((3, 4),)),
        Sample(lambda m, a: m.mean(a, (0, 1), keepdim=True), ((2, 3, 4),)),
    )


@register
class VectorNorm(Op):
    """The 2-norm over all elements or over ``dim``."""

    name, node = "norm", "LinalgVectorNormBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: a.norm(), ((3, 4),)),
        Sample(lambda m, a: a.norm(dim=1), ((3, 4),)),
        Sample(lambda m, a: m.norm(a, dim=0, keepdim=True), ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, dims, keepdim, dim=None):
        # (``dim``: as the caller gave it, for the node's ``_saved_dim``)
        if _count(a.shape, dims) == 1:
            # One element per slice: its absolute value, not sqrt(x * x), as PyTorch (so 1e30 in
            # float32 does not overflow); the backward's x / ||x|| is then sign(x).
            out = K.unary(K.ABS, a)
            return K.reshape_view(out, _result_shape(a.shape, dims, keepdim))
        return K.unary(K.SQRT, K.sum_dims(K.binary(K.MUL, a, a), dims, keepdim))

    @staticmethod
    def backward(ctx, grad):
        a, norm = ctx.saved_tensors
        if not ctx.params["keepdim"]:
            kshape = _keepdim_shape(ctx.input_shapes[0], ctx.params["dims"])
            grad, norm = grad.reshape(kshape), norm.reshape(kshape)
        # PyTorch's grad * (x / ||x||), the ratio taken as 0 where the norm is 0 (x / ||x|| first:
        # grad / ||x|| overflows for a subnormal norm).
        return (grad * (a / (norm + _inf_where_zero(norm))),)


def _inf_where_zero(t: Tensor) -> Tensor:
    """A constant, +inf where ``t`` is 0 and 0 elsewhere: ``x / (t + it)`` is 0 where ``t`` is 0."""
    return Tensor._wrap(kernels_for((t,)).inf_where_zero(t._data))


class _Prod(Op):
    jvp = _jvp.transposed_backward
    on_cuda = True
    complex_ok = True
    save_inputs = (0,)
    save_output = True

    @staticmethod
    def forward(K, a, *, dims, keepdim):
        return K.reduce_dims(K.PROD, a, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        if grad._data.dtype.kind == "c":
            return holomorphic_backward(_Prod._backward, ctx, grad)
        return _Prod._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad):
        a, out = ctx.saved_tensors
        grad, out = _keep(grad, ctx), _keep(out, ctx)
        K = kernels_for((a,))
        # No flag is read back to choose (on CUDA that would be a sync): both formulas, selected
        # elementwise by whether ``a`` holds a zero. Without a zero, ``grad * out / a``; with
        # one, out / a would be 0/0, so the product of the other elements is taken directly.
        # ``out / a`` is taken with a zero's divisor made +inf (0 there, not 0/0: no nan for a
        # second derivative), which adds 0 everywhere when there is no zero.
        others = Tensor._wrap(K.product_of_others(a._data, ctx.params["dims"]))
        has_zero = Tensor._wrap(K.any_equal_device(a._data, 0))
        ratio = grad * out / (a + _inf_where_zero(a))
        return (where(has_zero, grad * others, ratio),)


@register
class ProdAll(_Prod):
    name, node = "prod", "ProdBackward0"
    samples = (Sample(lambda m, a: a.prod(), ((2, 3),), low=0.5, high=1.5),
               Sample(lambda m, a: (a * (a > 0)).prod(), ((4,),), gradgrad=False))


@register
class ProdDim(_Prod):
    name, node = "prod_dim", "ProdBackward1"
    samples = (Sample(lambda m, a: a.prod(1), ((3, 4),), low=0.5, high=1.5),
               Sample(lambda m, a: m.prod(a, 0, keepdim=True), ((3, 2),), low=0.5, high=1.5))


def _keep(t: Tensor, ctx) -> Tensor:
    """A reduction's result (or gradient) with the reduced dimensions kept as size 1."""
    if ctx.params["keepdim"]:
        return t
    return t.reshape(_keepdim_shape(ctx.input_shapes[0], ctx.params["dims"]))


class _Extreme(Op):
    """amax/amin: ties share the gradient evenly; a slice whose extreme is NaN matches no
    element, so its gradient is NaN throughout (PyTorch's ``grad / count * mask``)."""

    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    code = ""

    @classmethod
    def forward(cls, K, a, *, dims, keepdim):
        return K.reduce_dims(getattr(K, cls.code), a, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's scale_grad_by_count: (grad / count) * mask (not grad * (mask / count),
        # which rounds differently).
        a, out = ctx.saved_tensors
        grad, out = _keep(grad, ctx), _keep(out, ctx)
        mask = (a.detach() == out.detach()).to(grad.dtype)
        count = mask.sum(ctx.params["dims"], keepdim=True)
        return ((grad / count) * mask,)


class _ExtremeAll(_Extreme):
    """max()/min() of all elements: PyTorch's ``evenly_distribute_backward``: the gradient is
    shared by the elements equal to the result, NaN matching NaN (one-hot at a single NaN), and
    is 0 elsewhere whatever the gradient (a fill, not a product)."""

    jvp = _jvp.evenly_read
    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        share = Tensor._wrap(kernels_for((a,)).extreme_share(a._data, out._data,
                                                             ctx.params["dims"], True))
        hit = share != 0
        return (where(hit, grad / hit.sum().to(grad.dtype), 0.0),)


@register
class Amax(_Extreme):
    name, node, code = "amax", "AmaxBackward0", "MAX"
    samples = (Sample(lambda m, a: a.amax(1), ((3, 4),)),
               Sample(lambda m, a: m.amax(a, (0, 2), keepdim=True), ((2, 3, 4),)),
               Sample(lambda m, a: (a * 0).amax(0) + a, ((3,),)))


@register
class Amin(_Extreme):
    name, node, code = "amin", "AminBackward0", "MIN"
    samples = (Sample(lambda m, a: a.amin(0), ((3, 4),)),)


@register
class MaxAll(_ExtremeAll):
    name, node, code = "max_all", "MaxBackward1", "MAX"
    samples = (Sample(lambda m, a: a.max(), ((3, 4),)), Sample(lambda m, a: m.max(a), ((5,),)))


@register
class MinAll(_ExtremeAll):
    name, node, code = "min_all", "MinBackward1", "MIN"
    samples = (Sample(lambda m, a: a.min(), ((3, 4),)),)


class _ExtremeDim(Op):
    """max/min along one dimension: the gradient goes to the index that was returned."""

    jvp = _jvp.transposed_backward
    on_cuda = True
    code = ""

    @classmethod
    def forward(cls, K, a, *, dims, keepdim, indices, dim=None):
        # (``dim``: as the caller gave it, for the node's ``_saved_dim``)
        return K.reduce_dims(getattr(K, cls.code), a, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.params["dims"]:  # a 0-d input (its dim 0 or -1): the one element was chosen
            return (grad,)
        (dim,) = ctx.params["dims"]
        indices = ctx.params["indices"]
        shape = ctx.input_shapes[0]
        K = kernels_for((grad,))
        if not ctx.params["keepdim"]:
            indices = K.reshape_view(indices, _keepdim_shape(shape, (dim,)))
        chosen = K.one_hot_dim(indices, shape, dim, grad._data.dtype)
        return (_keep(grad, ctx) * Tensor._wrap(chosen),)


@register
class MaxDim(_ExtremeDim):
    name, node, code = "max_dim", "MaxBackward0", "MAX"
    samples = (Sample(lambda m, a: a.max(1).values, ((3, 4),)),
               Sample(lambda m, a: m.max(a, 0, keepdim=True)[0], ((3, 4),)))


@register
class MinDim(_ExtremeDim):
    name, node, code = "min_dim", "MinBackward0", "MIN"
    samples = (Sample(lambda m, a: a.min(dim=-1).values, ((2, 3, 4),)),)


class _Var(Op):
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)

    @staticmethod
    def forward(K, a, *, dims, keepdim, correction, whole):
        count = _count(a.shape, dims)
        mean = K.binary(K.DIV, K.sum_dims(a, dims, True), dispatch.number_array(count, a.dtype))
        centred = K.binary(K.SUB, a, mean)
        squares = K.sum_dims(K.binary(K.MUL, centred, centred), dims, keepdim)
        return K.binary(K.DIV, squares, dispatch.number_array(
            count - correction if count > correction else 0, a.dtype))


def _count(shape, dims) -> int:
    """The number of elements a reduction over ``dims`` (normalised: unique) combines."""
    if len(dims) == len(shape):  # (all of them: the common ``loss.mean()``, without a generator)
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


def _var_backward(grad: Tensor, a: Tensor, ctx) -> Tensor:
    """PyTorch's var_backward, ``grad`` with the reduced dimensions kept: ``2 / dof * grad *
    (a - mean)``. Over every element (no ``dim`` given) with ``dof <= 0`` it is ``grad`` times NaN
    where ``a`` equals the mean and +inf elsewhere; with a ``dim``, 2 / 0 is +inf (so NaN where
    the deviation is 0) and a negative ``dof`` gives a finite negative scale."""
    dims = ctx.params["dims"]
    dof = _count(ctx.input_shapes[0], dims) - ctx.params["correction"]
    mean = a.mean(dims, keepdim=True)
    if dof <= 0 and ctx.params["whole"]:
        return grad * where(a == mean, math.nan, full_like(a, math.inf))
    return grad * (2.0 / dof if dof else math.inf) * (a - mean)


@register
class Var(_Var):
    name, node = "var", "VarBackward0"
    samples = (Sample(lambda m, a: a.var(), ((3, 4),)),
               Sample(lambda m, a: a.var(1, keepdim=True), ((3, 4),)),
               Sample(lambda m, a: m.var(a, (0, 2), correction=0), ((2, 3, 4),)))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (_var_backward(_keep(grad, ctx), a, ctx),)


@register
class Std(_Var):
    name, node = "std", "StdBackward0"
    save_output = True
    samples = (Sample(lambda m, a: a.std(), ((3, 4),)),
               Sample(lambda m, a: m.std(a, 0, unbiased=False), ((3, 4),)))

    @staticmethod
    def forward(K, a, **params):
        return K.unary(K.SQRT, _Var.forward(K, a, **params))

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        out = _keep(out, ctx)
        dof = _count(ctx.input_shapes[0], ctx.params["dims"]) - ctx.params["correction"]
        if dof > 0:
            # grad * centred / (std * dof), 0 where the deviation is 0 (as PyTorch).
            centred = a - a.mean(ctx.params["dims"], keepdim=True)
            return (_keep(grad, ctx) * centred / ((out + _inf_where_zero(out)) * dof),)
        # PyTorch's std_backward: var's backward of grad / (2 std), 0 where std is 0.
        return (_var_backward(_keep(grad, ctx) / ((out + _inf_where_zero(out)) * 2), a, ctx),)


def _stable_max(K, a: np.ndarray, dims) -> np.ndarray:
    """The max over ``dims`` (kept), with infinities replaced by 0 so that ``a - max`` stays finite."""
    return K.finite_or_zero(K.reduce_dims(K.MAX, a, dims, True))


@register
class Logsumexp(Op):
    name, node = "logsumexp", "LogsumexpBackward0"
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (Sample(lambda m, a: a.logsumexp(1), ((3, 4),)),
               Sample(lambda m, a: m.logsumexp(a * 100, (0, 1), keepdim=True), ((2, 3),)))

    @staticmethod
    def forward(K, a, *, dims, keepdim):
        if _count(a.shape, dims) == 0:  # the sum of no exponentials: log(0) = -inf
            return K.full(_result_shape(a.shape, dims, keepdim), -np.inf, a.dtype)
        m = _stable_max(K, a, dims)
        total = K.sum_dims(K.unary(K.EXP, K.binary(K.SUB, a, m)), dims, True)
        out = K.binary(K.ADD, K.unary(K.LOG, total), m)
        return out if keepdim else out.reshape([n for d, n in enumerate(out.shape) if d not in dims])

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        return (_keep(grad, ctx) * (a - _keep(out, ctx)).exp(),)

    @staticmethod
    def jvp(ctx, t):  # (the softmax-weighted sum of the tangent)
        return _logsumexp_tangent(ctx.inputs[0], t, ctx.params["dims"], ctx.params["keepdim"])


@register
class Softmax(Op):
    name, node = "softmax", "SoftmaxBackward0"
    on_cuda = True
    save_output = True
    samples = (Sample(lambda m, a: a.softmax(1), ((3, 4),)),
               Sample(lambda m, a: m.softmax(a * 50, 0), ((3, 4),)),
               Sample(lambda m, a: m.softmax(a, -1), ((2, 3, 4),)))

    @staticmethod
    def forward(K, a, *, dim):
        if a.ndim and not a.shape[dim]:
            return K.empty(a.shape, a.dtype)
        # Shifted by the plain max, as PyTorch: rows with NaN, +inf or only -inf give NaN.
        e = K.unary(K.EXP, K.binary(K.SUB, a, K.reduce_dims(K.MAX, a, (dim,), True)))
        return K.binary(K.DIV, e, K.sum_dims(e, (dim,), True))

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        dim = ctx.params["dim"]
        return (y * (grad - (grad * y).sum(dim, keepdim=True)),)

    @staticmethod
    def jvp(ctx, t):  # (the tangent less its softmax-weighted mean, times the result)
        dim = ctx.params["dim"]
        return ctx.result * (t - _logsumexp_tangent(ctx.inputs[0], t, (dim,), True))


@register
class LogSoftmax(Op):
    name, node = "log_softmax", "LogSoftmaxBackward0"
    on_cuda = True
    save_output = True
    samples = (Sample(lambda m, a: a.log_softmax(1), ((3, 4),)),
               Sample(lambda m, a: m.log_softmax(a * 100, 0), ((3, 4),)))

    @staticmethod
    def forward(K, a, *, dim):
        if dim == a.ndim - 1 and a.size and K.is_contiguous(a):
            return K.log_softmax_last(a)  # (one fused kernel on the CPU: kernels/cpu/softmax.py)
        if a.ndim and not a.shape[dim]:
            return K.empty(a.shape, a.dtype)
        # Shifted by the plain max, as PyTorch: rows with NaN, +inf or only -inf give NaN.
        shifted = K.binary(K.SUB, a, K.reduce_dims(K.MAX, a, (dim,), True))
        total = K.sum_dims(K.unary(K.EXP, shifted), (dim,), True)
        return K.binary(K.SUB, shifted, K.unary(K.LOG, total))

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        dim = ctx.params["dim"]
        g, o = grad._data, out._data
        K = kernels_for((grad, out))
        if (not grad_mode.state.enabled and dim == o.ndim - 1 and o.size and g.dtype == o.dtype
                and K.is_contiguous(g) and K.is_contiguous(o)):
            return (Tensor._wrap(K.log_softmax_backward_last(g, o)),)
        return (grad - out.exp() * grad.sum(dim, keepdim=True),)

    @staticmethod
    def jvp(ctx, t):  # (the tangent less its softmax-weighted mean)
        return t - _logsumexp_tangent(ctx.inputs[0], t, (ctx.params["dim"],), True)


def _logsumexp_tangent(x: Tensor, t: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    """The tangent of ``logsumexp(x, dims)``, the softmax-weighted sum of ``t``, as PyTorch's
    ``logsumexp_jvp`` computes it (which its softmax and log_softmax formulas use too):
    ``sum(e * t) / sum(e)``, ``e = exp(x - amax(x))``; its rounding is PyTorch's on float16 and
    bfloat16, where each of these ops rounds to the dtype."""
    e = (x - x.detach().amax(dims, keepdim=True)).exp() if x.numel() else x.exp()
    return (e * t).sum(dims, keepdim=keepdim) / e.sum(dims, keepdim=keepdim)


def _given(out: Tensor, dim, normalized) -> Tensor:
    """``out``, its node told ``dim`` as the caller gave it where that differs from the
    normalised ``dims`` (a tuple) or ``dim`` (an int): PyTorch's node shows it as given."""
    if type(normalized) is tuple:
        given = given_dims(dim, normalized)
        if given is not None:
            keep_given(out, dims=given)
    elif dim != normalized:
        keep_given(out, dim=int(dim))
    return out


def _reduce(op_all, op_dim, input: Tensor, dim, keepdim: bool, data=None) -> Tensor:
    """``data``: the input's values cast to a ``dtype`` the caller gave (the node's input is
    still ``input``, as PyTorch's: its gradient is cast back by the engine)."""
    data = input._data if data is None else data
    if dim is None:
        return apply(op_all, (input,), (data,), dims=tuple(range(data.ndim)), keepdim=False)
    dims = normalize_dims(dim, data.ndim)
    return _given(apply(op_dim, (input,), (data,), dims=dims, keepdim=keepdim), dim, dims)


@export(method=True, out=True)
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    if dtype is not None:
        differentiable_dtype(input, dtype)
        return _reduce(SumAll, SumDim, input, dim, keepdim, _cast_for(input, dtype))
    if dim is None:
        out = SumAll._fast(input)  # (the fast lane: float tensors, ``registry.LANES``)
        if out is not None:
            return out
    if input.dtype._category < FLOAT and input._data.dtype != np.int64:
        input = input.to(np.int64)
    return _reduce(SumAll, SumDim, input, dim, keepdim)


def differentiable_dtype(input: Tensor, dtype) -> None:
    """PyTorch's refusal of an integer or bool ``dtype`` for a sum, product or scan of a tensor
    that requires grad while grad mode records (its node could give no gradient)."""
    if dtype is not None and input._requires_grad and grad_mode.state.enabled:
        np_dtype = to_dtype(dtype).np
        if np_dtype.kind in "biu":
            raise RuntimeError(f"Autograd not support dtype: {torch_name(np_dtype)}")


def _cast_for(input: Tensor, dtype):
    """``input``'s values in ``dtype``, for a reduction whose node takes ``input`` itself (no
    ToCopyBackward0 before it, as in PyTorch)."""
    return input.detach().to(dtype)._data


@export(method=True, out=True)
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of all elements, or over ``dim``."""
    data = None
    if dtype is not None:
        data = _cast_for(input, dtype)
    elif dim is None:
        out = MeanAll._fast(input)  # (the fast lane: float tensors, ``registry.LANES``)
        if out is not None:
            return out
    kind = input._data.dtype if data is None else data.dtype
    if from_numpy_dtype(kind)._category < FLOAT:  # (not floating point nor complex)
        raise RuntimeError(
            f"mean(): could not infer output dtype. {'Input' if dtype is None else 'Optional'} "
            "dtype must be either a floating point or complex dtype. Got: "
            f"{_torch_name(kind)}"
        )
    return _reduce(MeanAll, MeanDim, input, dim, keepdim, data)


@export(method=True)
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False) -> Tensor:
    """The 2-norm (``p='fro'`` or 2) of all elements, or of each slice along ``dim``."""
    if input.dtype._category < FLOAT:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_torch_name(input._data.dtype)}")
    if p not in ("fro", 2, 2.0) or input.dtype.is_complex:
        # (PyTorch's torch.norm: linalg's vector norm for a number p, the nuclear norm by name)
        from . import linalg_norms
        if p == "nuc":
            return linalg_norms.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim,
                                            keepdim)
        if isinstance(p, str) and p != "fro":
            raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {p}")
        return linalg_norms.vector_norm(input, 2 if p == "fro" else p, dim, keepdim)
    data = input._data
    dims = normalize_dims(dim, data.ndim)
    return apply(VectorNorm, (input,), (data,), dims=dims,
                 keepdim=keepdim if dim is not None else False, dim=_as_given(dim))


def _as_given(dim):
    """A ``dim`` argument as PyTorch's node keeps an ``int[1]?`` one: None, or a tuple."""
    if dim is None:
        return None
    return (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)

def _float_input(input: Tensor, dtype=None) -> Tensor:
    if dtype is not None:
        return input.to(dtype)
    return input if input.dtype.is_floating_point or input.dtype.is_complex else \
        input.to(np.float32)


def _softmax_input(name: str, input: Tensor, dim: int, dtype):
    """The input of softmax/log_softmax (converted to ``dtype`` if given) and the dimension,
    wrapped; PyTorch's refusal of an integer or bool input (its kernel's name in the message)."""
    data = input if dtype is None else input.to(dtype)
    nd = data._data.ndim
    d = _wrap_dim(dim, nd) if nd else _wrap_dim(dim, 0) * 0  # (a 0-d tensor takes 0 and -1)
    if not data.dtype.is_floating_point and data._data.size:
        kernel = f"{name}_lastdim_kernel_impl" if d >= nd - 1 else f"{name}_kernel_impl"
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{_torch_name(data._data.dtype)}\'')
    return data, d


@export(method=True, out=True)
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The product of all elements, or over dimension ``dim``."""
    if dtype is not None:
        differentiable_dtype(input, dtype)
        input = input.to(dtype)
    elif input.dtype._category < FLOAT and input._data.dtype != np.int64:
        input = input.to(np.int64)  # integers and bools multiply in int64, as PyTorch
    return _reduce(ProdAll, ProdDim, input, dim, keepdim)


def _no_empty_slice(name: str, shape: tuple, dim, dims: tuple) -> None:
    """PyTorch's errors for a max/min-like reduction with nothing to reduce: over every dimension
    of an empty tensor (RuntimeError; IndexError for argmax/argmin), or over a dimension of size 0
    (IndexError, naming it as given for amax/amin, wrapped for max/min/argmax/argmin)."""
    if dim is None or dim == ():
        if math.prod(shape) == 0:
            error = IndexError if name.startswith("arg") else RuntimeError
            tail = "" if name.startswith("arg") else (
                " Specify the reduction dim with the 'dim' argument.")
            raise error(f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                        + tail)
        return
    given = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    for raw in given if name in ("amax", "amin") else dims:
        if shape and not shape[_wrap_dim(int(raw), len(shape))]:
            raise IndexError(f"{name}(): Expected reduction dim {raw} to have non-zero size.")


# PyTorch's message for an out= of amax/amin of another dtype than the result's
_OUT_DTYPE = ("Expected the dtype for input and out to match, but got {result} for input's dtype "
              "and {out} for out's dtype.")


@export(method=True, out=Out(same_dtype=_OUT_DTYPE))
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The maximum over ``dim`` (an int or a tuple; all dimensions if empty)."""
    dims = normalize_dims(dim if dim != () else None, input._data.ndim)
    if not input._data.size:
        _no_empty_slice("amax", input._data.shape, dim, dims)
    return _given(apply(Amax, (input,), (input._data,), dims=dims, keepdim=keepdim), dim,
                  dims)


@export(method=True, out=Out(same_dtype=_OUT_DTYPE))
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The minimum over ``dim`` (an int or a tuple; all dimensions if empty)."""
    dims = normalize_dims(dim if dim != () else None, input._data.ndim)
    if not input._data.size:
        _no_empty_slice("amin", input._data.shape, dim, dims)
    return _given(apply(Amin, (input,), (input._data,), dims=dims, keepdim=keepdim), dim,
                  dims)


class _ValuesIndices(tuple):
    """``(values, indices)``, as PyTorch's ``torch.return_types.max``."""

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    def __repr__(self) -> str:
        return f"numgrad.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


class _MaxResult(_ValuesIndices):
    _name = "max"


class _MinResult(_ValuesIndices):
    _name = "min"


def _extreme(op_all, op_dim, arg_code, result, pairwise, input, dim, keepdim):
    if not isinstance(input, Tensor):
        raise TypeError(f"{result._name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(dim, Tensor):
        return pairwise(input, dim)
    data = input._data
    if data.dtype.kind == "c" and dim is not None:
        raise RuntimeError(f"{result._name}(): does not support complex input")
    if dim is None:
        if data.size == 0:
            raise RuntimeError(
                f"{result._name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return apply(op_all, (input,), (data,), dims=tuple(range(data.ndim)), keepdim=False)
    dims = normalize_dims(dim, data.ndim)
    if not data.size:
        _no_empty_slice(result._name, data.shape, dim, dims)
    K = kernels_for((input,), op_dim)
    indices = K.arg_reduce_dims(getattr(K, arg_code), data, dims, keepdim)
    values = apply(op_dim, (input,), (data,), dims=dims, keepdim=keepdim, indices=indices,
                   dim=dim if type(dim) is int else None)
    return result(values, Tensor._wrap(indices))


@export(method=True)
def max(input: Tensor, dim=None, keepdim: bool = False):
    """The largest element; with ``dim``, ``(values, indices)`` along it; with a tensor, the
    elementwise maximum."""
    return _extreme(MaxAll, MaxDim, "ARGMAX", _MaxResult, maximum, input, dim, keepdim)


@export(method=True)
def min(input: Tensor, dim=None, keepdim: bool = False):
    """The smallest element; with ``dim``, ``(values, indices)`` along it; with a tensor, the
    elementwise minimum."""
    return _extreme(MinAll, MinDim, "ARGMIN", _MinResult, minimum, input, dim, keepdim)


def _arg(code: str, input: Tensor, dim, keepdim: bool) -> Tensor:
    K = kernels_for((input,))
    data = input._data
    if data.dtype == np.bool_:
        raise RuntimeError(f"{code.lower()}(): does not support bool input")
    if data.dtype.kind == "c":
        raise RuntimeError(f"{code.lower()}(): does not support complex input")
    if not data.size:
        _no_empty_slice(code.lower(), data.shape, dim, normalize_dims(dim, data.ndim))
    if dim is None:
        # Over every dimension: the index into the flattened (C-order) tensor.
        index = K.arg_reduce_dims(getattr(K, code), data, tuple(range(data.ndim)), False)
        return Tensor._wrap(index.reshape((1,) * data.ndim) if keepdim else index)
    dims = normalize_dims(dim, data.ndim)
    return Tensor._wrap(K.arg_reduce_dims(getattr(K, code), data, dims, keepdim))


@export(method=True)
def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (of the flattened tensor if ``dim`` is None)."""
    return _arg("ARGMAX", input, dim, keepdim)


@export(method=True)
def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the smallest element (of the flattened tensor if ``dim`` is None)."""
    return _arg("ARGMIN", input, dim, keepdim)


def _var_args(name, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # var(unbiased) in PyTorch's older overload
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    shape = input._data.shape
    dims = normalize_dims(dim, len(shape))
    out_numel = math.prod(n for d, n in enumerate(shape) if d not in dims)
    if (_count(shape, dims) if out_numel else 0) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    # ``whole``: no ``dim`` given (or a 0-d input), which selects PyTorch's backward formula.
    # (keepdim without a dim keeps every dimension as 1, as PyTorch does)
    return dict(dims=dims, keepdim=bool(keepdim), correction=correction,
                whole=dim is None or not shape)


def _var_given(out: Tensor, dim, unbiased, correction) -> Tensor:
    """``out`` of var/std, its node told the arguments as PyTorch's shows them: ``dim`` None
    when none was given, ``correction`` None when nothing chose it; a dim as given."""
    if dim is None or isinstance(dim, bool):
        if unbiased is None and correction is None and dim is None:
            keep_given(out, dims=None, correction=None)
        else:
            keep_given(out, dims=None)
        return out
    node = out._grad_fn
    return out if node is None else _given(out, dim, node.params["dims"])


@export(method=True, out=True)
def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """The variance over ``dim``, unbiased (``correction=1``) by default."""
    params = _var_args("var", input, dim, unbiased, keepdim, correction)
    if input.dtype.is_complex:
        return _complex_var(input, params)
    return _var_given(apply(Var, (input,), (input._data,), **params), dim, unbiased, correction)


def _complex_var(z: Tensor, params: dict) -> Tensor:
    """The variance of complex elements, ``sum |z - mean|**2 / (N - correction)``: the real
    parts' and the imaginary parts' added (real; its gradient PyTorch's,
    ``2 grad (z - mean) / (N - correction)``, through the parts' views)."""
    re, im = z.real, z.imag
    return apply(Var, (re,), (re._data,), **params) + apply(Var, (im,), (im._data,), **params)


@export(method=True, out=True)
def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """The standard deviation over ``dim``, unbiased (``correction=1``) by default."""
    params = _var_args("std", input, dim, unbiased, keepdim, correction)
    if input.dtype.is_complex:
        return _complex_var(input, params).sqrt()
    return _var_given(apply(Std, (input,), (input._data,), **params), dim, unbiased, correction)


@export(method=True, out=True)
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input)))`` over ``dim``, computed without overflow."""
    data = _float_input(input)
    dims = normalize_dims(dim, data._data.ndim)
    if data.dtype.is_complex:
        return _complex_logsumexp(data, dims, keepdim)
    return _given(apply(Logsumexp, (data,), (data._data,), dims=dims, keepdim=keepdim), dim,
                  dims)


def _complex_logsumexp(z: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    """PyTorch's logsumexp of a complex tensor: ``log(sum(exp(z - m))) + m``, ``m`` the largest
    real part (0 where it is infinite), composed of complex ops (their gradients: PyTorch's)."""
    m = z.detach().real.amax(dims, keepdim=True) if z.numel() else \
        _complex_zeros_like_real(z, dims)
    m = where(m.abs() == math.inf, 0.0, m)
    out = (z - m).exp().sum(dims, keepdim=True).log() + m
    return out if keepdim else out.squeeze(dims)


def _complex_zeros_like_real(z: Tensor, dims: tuple) -> Tensor:
    return z.detach().real.sum(dims, keepdim=True) * 0


@export(method=True, out=Out(same_dtype=True))
def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed without overflow."""
    data, d = _softmax_input("softmax", input, dim, dtype)
    if not data.dtype.is_floating_point:  # (empty: PyTorch returns it, runs no kernel)
        return Tensor._wrap(kernels_for((data,)).empty(data._data.shape, data._data.dtype))
    return _given(apply(Softmax, (data,), (data._data,), dim=d), dim, d)


@export(method=True, out=Out(same_dtype=True))
def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    data, d = _softmax_input("log_softmax", input, dim, dtype)
    if not data.dtype.is_floating_point:  # (empty: PyTorch returns it, runs no kernel)
        return Tensor._wrap(kernels_for((data,)).empty(data._data.shape, data._data.dtype))
    return _given(apply(LogSoftmax, (data,), (data._data,), dim=d), dim, d)


@export(function=False, method=True)
def sum_to_size(input: Tensor, *size) -> Tensor:
    """``input`` summed to ``size`` (which must expand to its shape): over its leading
    dimensions and over those where ``size`` has 1, as a broadcast's gradient is reduced."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(n) for n in size)
    shape = tuple(input.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(n != shape[lead + i] and n != 1 for i, n in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(size)
                                      if n == 1 and shape[lead + i] != 1)
    if not size:  # (ATen's sum_to: a sum of everything, even of a 0-d tensor)
        return input.sum()
    if not dims:
        return input
    out = input.sum(dims, keepdim=True)
    return out.view(size) if lead else out


@export(method=True)
def cov(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in its columns;
    a 1-D input is one variable), with integer frequency and float observation weights, as
    ATen computes it; a scalar for one variable."""
    if input.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    n = x.shape[1]
    w = None
    for name, t, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if t is None:
            continue
        if t.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {t.ndim} dimensions")
        if integral and t.dtype.is_floating_point or t.dtype.name == "bool":
            raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} "
                               f"with {torch_name(t._data.dtype)} dtype")
        if not integral and not t.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got "
                               f"{name} with {torch_name(t._data.dtype)} dtype")
        if t.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {t.numel()} != {n}")
        if t.numel() and bool((t.detach() < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = t if w is None else w * t
    if w is not None:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    else:
        w_sum = n
        avg = x.sum(1) / n
    if w is not None and correction != 0 and aweights is not None:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool(norm <= 0) if isinstance(norm, Tensor) else norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    centred = x - avg.unsqueeze(1)
    c = centred.mm((centred * w if w is not None else centred).t().conj())
    return (c / norm).squeeze()


@export(method=True)
def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in ``input``'s rows (``cov``
    normalised by the standard deviations, clipped to [-1, 1])."""
    if input.ndim > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.dtype.is_complex else d).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    if c.dtype.is_complex:  # (PyTorch clips the real and imaginary parts each)
        from .complex import complex as _make_complex
        return _make_complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


def _trapezoid_parts(y: Tensor, x, dim: int, name: str):
    """(the sums of neighbouring samples along ``dim``, the spacings ``x.diff`` shaped to
    broadcast against them, or None for a number)."""
    nd = y.ndim
    d = _wrap_dim(dim, nd)
    n = y.shape[d]
    left, right = y.narrow(d, 0, builtins.max(n - 1, 0)), y.narrow(d, builtins.min(1, n),
                                                                  builtins.max(n - 1, 0))
    if not isinstance(x, Tensor):
        return d, left + right, None
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        spacing = x.diff().reshape([-1 if i == d else 1 for i in range(nd)])
    else:
        spacing = x.diff(dim=dim)
    return d, left + right, spacing


@export
def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of the samples ``y`` along ``dim`` by the trapezoidal rule, at the points
    ``x`` or with the spacing ``dx`` (1 by default), as ATen computes it."""
    if isinstance(x, Tensor):
        if dx is not None:
            raise RuntimeError("trapezoid: received both x and dx")
        d, pairs, spacing = _trapezoid_parts(y, x, dim, "trapezoid")
        if not y.shape[d]:
            return (y * 1.0).sum(d)
        return (spacing * pairs).sum(d) / 2.0
    step = 1.0 if dx is None and x is None else float(dx if dx is not None else x)
    d = _wrap_dim(dim, y.ndim)
    if not y.shape[d]:
        return (y * 1.0).sum(d)
    ends = y.select(d, 0) + y.select(d, -1)
    return (y.sum(d) - ends * 0.5) * step


@export
def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """``trapezoid`` (its older name)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@export
def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of ``y`` along ``dim`` (one element fewer there)."""
    d, pairs, spacing = _trapezoid_parts(y, x, dim, "cumulative_trapezoid")
    if spacing is not None:
        return (spacing * pairs).cumsum(d) / 2.0
    step = 1.0 if dx is None and x is None else float(dx if dx is not None else x)
    return (step / 2.0 * pairs).cumsum(d)
