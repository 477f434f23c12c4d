"""Shape ops. Those that PyTorch makes views share the input's storage and version counter."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, _wrap_dim
from .registry import Op, Sample, apply, register


def _infer_shape(shape, numel: int) -> tuple:
    """``shape`` with a -1 filled in, checked against the number of elements."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@register
class View(Op):
    name, node = "view", "ViewBackward0"
    is_view = True
    samples = (
        Sample(lambda m, a: a.view(4, 3), ((3, 4),)),
        Sample(lambda m, a: a.reshape(-1), ((2, 3, 2),)),
        Sample(lambda m, a: m.reshape(a, (2, 6)), ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, shape):
        try:
            return np.reshape(a, shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class UnsafeView(Op):
    """``reshape`` of a tensor whose layout needs a copy."""

    name, node = "reshape_copy", "UnsafeViewBackward0"
    samples = (Sample(lambda m, a: a.t().reshape(-1), ((3, 4),)),)

    @staticmethod
    def forward(K, a, *, shape):
        return np.ascontiguousarray(a).reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class Transpose(Op):
    name, node = "transpose", "TransposeBackward0"
    is_view = True
    samples = (
        Sample(lambda m, a: a.transpose(0, 1), ((3, 4),)),
        Sample(lambda m, a: m.transpose(a, -1, 0), ((2, 3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, dim0, dim1):
        return np.swapaxes(a, dim0, dim1)

    @staticmethod
    def backward(ctx, grad):
        return (grad.transpose(ctx.params["dim0"], ctx.params["dim1"]),)


@register
class T(Op):
    name, node = "t", "TBackward0"
    is_view = True
    samples = (Sample(lambda m, a: a.t(), ((3, 4),)), Sample(lambda m, a: m.t(a), ((4,),)))

    @staticmethod
    def forward(K, a):
        return a.T

    @staticmethod
    def backward(ctx, grad):
        return (grad.t(),)


@register
class Permute(Op):
    name, node = "permute", "PermuteBackward0"
    is_view = True
    samples = (Sample(lambda m, a: a.permute(2, 0, 1), ((2, 3, 4),)), Sample(lambda m, a: a.T, ((3, 4),)))

    @staticmethod
    def forward(K, a, *, dims):
        return np.transpose(a, dims)

    @staticmethod
    def backward(ctx, grad):
        return (grad.permute(*np.argsort(ctx.params["dims"]).tolist()),)


@register
class Unsqueeze(Op):
    name, node = "unsqueeze", "UnsqueezeBackward0"
    is_view = True
    samples = (Sample(lambda m, a: a.unsqueeze(1), ((3, 4),)), Sample(lambda m, a: m.unsqueeze(a, -1), ((3,),)))

    @staticmethod
    def forward(K, a, *, dim):
        return np.expand_dims(a, dim)

    @staticmethod
    def backward(ctx, grad):
        return (grad.squeeze(ctx.params["dim"]),)


@register
class Squeeze(Op):
    name, node = "squeeze", "SqueezeBackward1"
    is_view = True
    samples = (Sample(lambda m, a: a.squeeze(0), ((1, 4),)), Sample(lambda m, a: m.squeeze(a, 1), ((3, 1),)))

    @staticmethod
    def forward(K, a, *, dim):
        return np.squeeze(a, dim) if a.ndim and a.shape[dim] == 1 else a.view()

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class SqueezeInplace(Squeeze):
    """``squeeze_(dim)`` on a fresh result, as PyTorch's matmul does for a 1-D left operand."""

    name, node = "squeeze_", "SqueezeBackward4"
    samples = (Sample(lambda m, v, a: v @ a, ((3,), (3, 4))),)


@register
class SqueezeAll(Op):
    name, node = "squeeze_all", "SqueezeBackward0"
    is_view = True
    samples = (Sample(lambda m, a: a.squeeze(), ((1, 4, 1),)),)

    @staticmethod
    def forward(K, a):
        return np.squeeze(a)

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class Expand(Op):
    name, node = "expand", "ExpandBackward0"
    is_view = True
    samples = (Sample(lambda m, a: a.expand(3, 4), ((1, 4),)), Sample(lambda m, a: a.expand(2, -1, 3), ((4, 1),)))

    @staticmethod
    def forward(K, a, *, shape):
        return np.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)  # the engine sums it back to the input's shape


# ------------------------------------------------------------------ public functions
def view(input: Tensor, *shape) -> Tensor:
    """The same data with another shape; never copies (raises where a copy would be needed)."""
    shape = _infer_shape(shape, input._data.size)
    return apply(View, (input,), (input._data,), shape=shape)


def reshape(input: Tensor, *shape) -> Tensor:
    """The same data with another shape: a view when the layout allows, else a copy."""
    data = input._data
    shape = _infer_shape(shape, data.size)
    if shape == data.shape:
        return apply(View, (input,), (data,), shape=shape)
    try:
        np.reshape(data, shape, copy=False)
    except ValueError:
        return apply(UnsafeView, (input,), (data,), shape=shape)
    return apply(View, (input,), (data,), shape=shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Flattens dimensions ``start_dim`` to ``end_dim`` into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s = _wrap_dim(start_dim, len(shape))
    e = _wrap_dim(end_dim, len(shape))
    if s == e:
        return input
    n = int(np.prod(shape[s:e + 1], dtype=np.int64))
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps dimensions ``dim0`` and ``dim1`` (a view)."""
    nd = input._data.ndim
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    return apply(Transpose, (input,), (input._data,), dim0=d0, dim1=d1)


def t(input: Tensor) -> Tensor:
    """Transposes a tensor of at most 2 dimensions."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    return apply(T, (input,), (input._data,))


def permute(input: Tensor, *dims) -> Tensor:
    """Reorders the dimensions (a view)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
            f"len(dims) = {len(dims)}"
        )
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return apply(Permute, (input,), (input._data,), dims=dims)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Inserts a dimension of size 1 at ``dim``."""
    d = _wrap_dim(dim, input._data.ndim + 1)
    return apply(Unsqueeze, (input,), (input._data,), dim=d)


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Removes dimensions of size 1 (all of them, or ``dim`` if it has size 1)."""
    if dim is None:
        return apply(SqueezeAll, (input,), (input._data,))
    nd = input._data.ndim
    d = _wrap_dim(dim, nd) if nd else 0
    return apply(Squeeze, (input,), (input._data,), dim=d)


def expand(input: Tensor, *sizes) -> Tensor:
    """A view with size-1 dimensions repeated to ``sizes`` (-1 keeps a size)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand(numgrad.{input.dtype.name}{{{list(shape)}}}, size={list(sizes)}): the number "
            "of sizes provided must be greater or equal to the number of dimensions in the tensor"
        )
    lead = len(sizes) - len(shape)
    target = []
    for i, s in enumerate(sizes):
        own = shape[i - lead] if i >= lead else None
        if s == -1:
            if own is None:
                raise RuntimeError("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0")
            s = own
        elif own is not None and own != s and own != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({own}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}"
            )
        target.append(int(s))
    return apply(Expand, (input,), (input._data,), shape=tuple(target))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)

# What numgrad exports as functions, and what Tensor gets as methods.
__all__ = ["reshape", "flatten", "transpose", "t", "permute", "unsqueeze", "squeeze"]
METHODS = ("view", "reshape", "flatten", "transpose", "t", "permute", "unsqueeze", "squeeze", "expand", "expand_as")
