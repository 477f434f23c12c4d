"""Reductions over all elements or over ``dim`` (an int or a tuple), with ``keepdim``."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, _wrap_dim
from ._promote import floating_operand
from .registry import Op, Sample, apply, register


def normalize_dims(dim, ndim: int) -> tuple[int, ...]:
    """``dim`` (None, an int or a sequence) as sorted, unique, non-negative dimensions."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    dims = sorted({_wrap_dim(int(d), ndim) for d in dim})
    if len(dims) != len(tuple(dim)):
        raise RuntimeError("dim appears multiple times in the list of dims")
    return tuple(dims) if ndim else ()


def _keepdim_shape(shape: tuple, dims: tuple) -> tuple:
    return tuple(1 if d in dims else n for d, n in enumerate(shape))


def _grad_to_input(grad: Tensor, ctx) -> Tensor:
    """A reduction's gradient, reshaped to keep the reduced dimensions and expanded back."""
    shape = ctx.input_shapes[0]
    if not ctx.params["keepdim"]:
        grad = grad.reshape(_keepdim_shape(shape, ctx.params["dims"]))
    return grad.expand(shape)


class _Sum(Op):
    @staticmethod
    def forward(K, a, *, dims, keepdim):
        return K.sum_dims(a, dims, keepdim)

    @staticmethod
    def backward(ctx, grad):
        return (_grad_to_input(grad, ctx),)


@register
class SumAll(_Sum):
    name, node = "sum", "SumBackward0"
    samples = (Sample(lambda m, a: a.sum(), ((3, 4),)), Sample(lambda m, a: m.sum(a), ((5,),)))


@register
class SumDim(_Sum):
    name, node = "sum_dim", "SumBackward1"
    samples = (
        Sample(lambda m, a: a.sum(0), ((3, 4),)),
        Sample(lambda m, a: a.sum(dim=(0, 2), keepdim=True), ((2, 3, 4),)),
        Sample(lambda m, a: m.sum(a, -1), ((2, 3, 4),)),
        Sample(lambda m, a: a.sum((0, 2)), ((2, 3, 4),)),
    )


class _Mean(Op):
    @staticmethod
    def forward(K, a, *, dims, keepdim):
        total = K.sum_dims(a, dims, keepdim)
        count = int(np.prod([a.shape[d] for d in dims], dtype=np.int64))
        return K.binary(K.DIV, total, np.array(count, a.dtype))

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        count = int(np.prod([shape[d] for d in ctx.params["dims"]], dtype=np.int64))
        return (_grad_to_input(grad / count, ctx),)


@register
class MeanAll(_Mean):
    name, node = "mean", "MeanBackward0"
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
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: a.norm(), ((3, 4),)),
        Sample(lambda m, a: a.norm(dim=1), ((3, 4),)),
        Sample(lambda m, a: m.norm(a, dim=0, keepdim=True), ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, dims, keepdim):
        return K.unary(K.SQRT, K.sum_dims(K.binary(K.MUL, a, a), dims, keepdim))

    @staticmethod
    def backward(ctx, grad):
        a, norm = ctx.saved_tensors
        if not ctx.params["keepdim"]:
            kshape = _keepdim_shape(ctx.input_shapes[0], ctx.params["dims"])
            grad, norm = grad.reshape(kshape), norm.reshape(kshape)
        # x / ||x||, taken as 0 where the norm is 0 (dividing by +inf there instead of 0).
        at_zero = Tensor._wrap(np.where(norm._data == 0, np.inf, 0).astype(norm._data.dtype))
        return (a * (grad / (norm + at_zero)),)


def _reduce(op_all, op_dim, input: Tensor, dim, keepdim: bool) -> Tensor:
    data = input._data
    if dim is None:
        return apply(op_all, (input,), (data,), dims=tuple(range(data.ndim)), keepdim=False)
    dims = normalize_dims(dim, data.ndim)
    return apply(op_dim, (input,), (data,), dims=dims, keepdim=keepdim)


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point and input._data.dtype != np.int64:
        input = input.to(np.int64)
    return _reduce(SumAll, SumDim, input, dim, keepdim)


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of all elements, or over ``dim``."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {input._data.dtype.name.capitalize()}"
        )
    return _reduce(MeanAll, MeanDim, input, dim, keepdim)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False) -> Tensor:
    """The 2-norm (``p='fro'`` or 2) of all elements, or of each slice along ``dim``."""
    if p not in ("fro", 2, 2.0):
        raise NotImplementedError("norm supports p=2 only so far")
    data = floating_operand(input)
    dims = normalize_dims(dim, data.ndim)
    return apply(VectorNorm, (input,), (data,), dims=dims, keepdim=keepdim if dim is not None else False)

# What numgrad exports as functions, and what Tensor gets as methods.
__all__ = ["sum", "mean", "norm"]
METHODS = ("sum", "mean", "norm")
