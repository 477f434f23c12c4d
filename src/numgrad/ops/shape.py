"""Shape ops. Those that PyTorch makes views share the input's storage and version counter."""
from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from ..autograd import grad_mode
from .._dtype import promote_types
from ..tensor import Tensor, _wrap_dim
from ..autograd.graph import keep_given
from . import _jvp
from ._names import Out, export
from . import registry
from .registry import Op, Sample, apply, apply_parts, kernels_for, register
from .._dtype import dtype as _dtype_class
from .._dtype import torch_name
from .index_views import tensor_split


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
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               "because the unspecified dimension size -1 can be any value and "
                               "is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@register
class View(Op):
    name, node = "view", "ViewBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (
        Sample(lambda m, a: a.view(4, 3), ((3, 4),)),
        Sample(lambda m, a: a.reshape(-1), ((2, 3, 2),)),
        Sample(lambda m, a: m.reshape(a, (2, 6)), ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, shape):
        try:
            return K.reshape_view(a, shape)
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
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: a.t().reshape(-1), ((3, 4),)),)

    @staticmethod
    def forward(K, a, *, shape):
        return K.ascontiguous(a).reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class Transpose(Op):
    name, node = "transpose", "TransposeBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (
        Sample(lambda m, a: a.transpose(0, 1), ((3, 4),)),
        Sample(lambda m, a: m.transpose(a, -1, 0), ((2, 3, 4),)),
        Sample(lambda m, a: a.mH, ((2, 3, 4),)),
        Sample(lambda m, a: a.H, ((3, 4),)),
    )

    @staticmethod
    def forward(K, a, *, dim0, dim1):
        if dim0 == dim1:  # (also a 0-d tensor's transpose(0, -1)): a view of the same layout
            return K.permute(a, tuple(range(a.ndim)))
        return K.transpose(a, dim0, dim1)

    @staticmethod
    def backward(ctx, grad):
        return (grad.transpose(ctx.params["dim0"], ctx.params["dim1"]),)


@register
class T(Op):
    name, node = "t", "TBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.t(), ((3, 4),)), Sample(lambda m, a: m.t(a), ((4,),)))

    @staticmethod
    def forward(K, a):
        return K.transpose(a, 0, 1) if a.ndim == 2 else K.squeeze(a, ())

    @staticmethod
    def backward(ctx, grad):
        return (grad.t(),)


@register
class Permute(Op):
    name, node = "permute", "PermuteBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.permute(2, 0, 1), ((2, 3, 4),)), Sample(lambda m, a: a.T, ((3, 4),)))

    @staticmethod
    def forward(K, a, *, dims):
        return K.permute(a, dims)

    @staticmethod
    def backward(ctx, grad):
        return (grad.permute(tuple(np.argsort(ctx.params["dims"]).tolist())),)


@register
class Unsqueeze(Op):
    name, node = "unsqueeze", "UnsqueezeBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.unsqueeze(1), ((3, 4),)), Sample(lambda m, a: m.unsqueeze(a, -1), ((3,),)))

    @staticmethod
    def forward(K, a, *, dim):
        return K.unsqueeze(a, dim)

    @staticmethod
    def backward(ctx, grad):
        return (grad.squeeze(ctx.params["dim"]),)


@register
class Squeeze(Op):
    name, node = "squeeze", "SqueezeBackward1"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.squeeze(0), ((1, 4),)), Sample(lambda m, a: m.squeeze(a, 1), ((3, 1),)))

    @staticmethod
    def forward(K, a, *, dim):
        return K.squeeze(a, (dim,) if a.ndim and a.shape[dim] == 1 else ())

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class SqueezeInplace(Squeeze):
    """``squeeze_(dim)`` on a fresh result, as PyTorch's matmul does for a 1-D left operand."""

    name, node = "squeeze_", "SqueezeBackward4"
    jvp = _jvp.linear
    samples = (Sample(lambda m, v, a: v @ a, ((3,), (3, 4))),
               Sample(lambda m, a: (a * 1).squeeze_(-1), ((3, 1),)))


@register
class SqueezeDims(Op):
    """``squeeze_(dims)``, each of several dimensions of size 1 at once (PyTorch's
    ``squeeze_.dims``)."""

    name, node = "squeeze_dims_", "SqueezeBackward5"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: (a * 1).squeeze_((0, 2)), ((1, 4, 1),)),)

    @staticmethod
    def forward(K, a, *, dims):
        return K.squeeze(a, tuple(d for d in dims if a.shape[d] == 1))

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


@register
class SqueezeAll(Op):
    name, node = "squeeze_all", "SqueezeBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.squeeze(), ((1, 4, 1),)),)

    @staticmethod
    def forward(K, a):
        return K.squeeze(a, tuple(d for d, n in enumerate(a.shape) if n == 1))

    @staticmethod
    def backward(ctx, grad):
        return (grad.reshape(ctx.input_shapes[0]),)


# The nodes of the in-place view ops (``t_``, ``transpose_`` ...): the view's, under PyTorch's
# name for the in-place form.
@register
class TInplace(T):
    name, node = "t_", "TBackward1"
    samples = (Sample(lambda m, a: (a * 1).t_(), ((3, 4),)),)


@register
class TransposeInplace(Transpose):
    name, node = "transpose_", "TransposeBackward1"
    samples = (Sample(lambda m, a: (a * 1).transpose_(0, -1), ((2, 3, 4),)),
               Sample(lambda m, a: (a * 1).swapaxes_(1, 0), ((3, 4),)))


@register
class UnsqueezeInplace(Unsqueeze):
    name, node = "unsqueeze_", "UnsqueezeBackward1"
    samples = (Sample(lambda m, a: (a * 1).unsqueeze_(1), ((3, 4),)),)


@register
class SqueezeAllInplace(SqueezeAll):
    name, node = "squeeze_all_", "SqueezeBackward3"
    samples = (Sample(lambda m, a: (a * 1).squeeze_(), ((1, 4, 1),)),)


@register
class Expand(Op):
    name, node = "expand", "ExpandBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.expand(3, 4), ((1, 4),)), Sample(lambda m, a: a.expand(2, -1, 3), ((4, 1),)))

    @staticmethod
    def forward(K, a, *, shape):
        return K.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx, grad):
        return (grad,)  # the engine sums it back to the input's shape


@register
class Narrow(Op):
    """``length`` elements of dimension ``dim`` from ``start`` (a view)."""

    name, node = "narrow", "SliceBackward0"
    jvp = _jvp.linear
    is_view = True
    on_cuda = True
    samples = (Sample(lambda m, a: a.narrow(0, 1, 2), ((3, 4),)), Sample(lambda m, a: m.narrow(a, -1, 0, 1), ((2, 3),)))

    @staticmethod
    def forward(K, a, *, dim, start, length):
        return K.view_index(a, (slice(None),) * dim + (slice(start, start + length),))

    @staticmethod
    def backward(ctx, grad):
        dim, start = ctx.params["dim"], ctx.params["start"]
        shape = ctx.input_shapes[0]
        before = start
        after = shape[dim] - start - ctx.params["length"]
        return (_pad_dim(grad, dim, before, after),)


def _split_backward(ctx, grad):
    """The input's gradient of ``split``'s one node for all parts (``registry.apply_parts``):
    the parts' gradients joined along ``dim`` (recorded: ``cat``), zeros for a part that
    received none, as PyTorch's ``split_backward``."""
    if not isinstance(grad, list):  # (a split into one part)
        return Narrow.backward(ctx, grad)
    given = [g for g in grad if g is not None]
    K = kernels_for(given)
    dtype = given[0]._data.dtype
    parts = [g if g is not None else Tensor._wrap(K.zeros(shape, dtype))
             for g, shape in zip(grad, ctx.output_shapes)]
    return (cat(parts, ctx.params["dim"]),)


@register
class SplitPart(Narrow):
    """``split``/``chunk`` by a size: each part ``narrow`` under PyTorch's node name, the parts
    outputs 0, 1, ... of one node (``apply_parts``) that keeps ``split_size`` for
    ``_saved_split_size``."""

    name, node = "split", "SplitBackward0"
    several = True
    samples = (Sample(lambda m, a: a.split(2, 1)[1], ((3, 4),)),
               Sample(lambda m, a: m.chunk(a, 2, -1)[0], ((2, 3),)),
               Sample(lambda m, a: m.stack(a.split(2, 1)[::-1]), ((3, 4),)))
    backward = staticmethod(_split_backward)

    @staticmethod
    def forward(K, a, *, dim, start, length, split_size):
        return Narrow.forward(K, a, dim=dim, start=start, length=length)


@register
class SplitWithSizesPart(Narrow):
    """``split`` by a list of sizes (``split_with_sizes``), as ``SplitPart``."""

    name, node = "split_with_sizes", "SplitWithSizesBackward0"
    several = True
    samples = (Sample(lambda m, a: a.split([1, 3], 1)[1], ((3, 4),)),
               Sample(lambda m, a: (lambda p: p[2] * p[0])(a.split([1, 0, 3], 1)), ((3, 4),)))
    backward = staticmethod(_split_backward)

    @staticmethod
    def forward(K, a, *, dim, start, length, split_sizes):
        return Narrow.forward(K, a, dim=dim, start=start, length=length)


@register
class UnsafeSplitPart(SplitPart):
    """One part of ``unsafe_split``/``unsafe_chunk`` (``UnsafeSplitBackward0``)."""

    name, node = "unsafe_split", "UnsafeSplitBackward0"
    samples = (Sample(lambda m, a: m.unsafe_split(a, 2, 1)[1], ((3, 4),)),
               Sample(lambda m, a: m.unsafe_chunk(a, 2, -1)[0], ((2, 3),)))


@register
class UnsafeSplitWithSizesPart(SplitWithSizesPart):
    """One part of ``unsafe_split_with_sizes`` (``UnsafeSplitWithSizesBackward0``)."""

    name, node = "unsafe_split_with_sizes", "UnsafeSplitWithSizesBackward0"
    samples = (Sample(lambda m, a: m.unsafe_split_with_sizes(a, [1, 3], 1)[1], ((3, 4),)),)


def _pad_dim(grad: Tensor, dim: int, before: int, after: int) -> Tensor:
    """``grad`` with zeros added before and after it along ``dim`` (recorded, via cat)."""
    parts = []
    for n in (before, None, after):
        if n is None:
            parts.append(grad)
        elif n:
            shape = list(grad._data.shape)
            shape[dim] = n
            parts.append(Tensor._wrap(kernels_for((grad,)).zeros(tuple(shape), grad._data.dtype)))
    if len(parts) == 1:
        return parts[0]
    if not grad_mode.state.enabled:  # (a plain backward: the kernel, without cat's checks)
        return Tensor._wrap(kernels_for((grad,)).cat(tuple(p._data for p in parts), dim))
    return cat(parts, dim)


@register
class Cat(Op):
    name, node = "cat", "CatBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: m.cat([a, b]), ((2, 3), (4, 3))),
        Sample(lambda m, a, b: m.cat((a, b, a), dim=1), ((2, 3), (2, 1))),
    )

    @staticmethod
    def forward(K, *arrays, dim):
        return K.cat(arrays, dim)

    @staticmethod
    def backward(ctx, grad):
        dim = ctx.params["dim"]
        grads, start = [], 0
        for shape, needed in zip(ctx.input_shapes, ctx.needs_input_grad):
            n = shape[dim]
            grads.append(narrow(grad, dim, start, n) if needed else None)
            start += n
        return tuple(grads)


@register
class Stack(Op):
    name, node = "stack", "StackBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, a, b: m.stack([a, b]), ((2, 3), (2, 3))),
        Sample(lambda m, a, b: m.stack((a, b), dim=-1), ((4,), (4,))),
    )

    @staticmethod
    def forward(K, *arrays, dim):
        return K.stack(arrays, dim)

    @staticmethod
    def backward(ctx, grad):
        dim = ctx.params["dim"]
        return tuple(narrow(grad, dim, i, 1).squeeze(dim) if needed else None
                     for i, needed in enumerate(ctx.needs_input_grad))


@register
class Repeat(Op):
    name, node = "repeat", "RepeatBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (Sample(lambda m, a: a.repeat(2, 3), ((2, 3),)), Sample(lambda m, a: a.repeat(2, 1, 2), ((3,),)))

    @staticmethod
    def forward(K, a, *, repeats):
        return K.repeat(a, repeats)

    @staticmethod
    def backward(ctx, grad):
        repeats = ctx.params["repeats"]
        shape = ctx.input_shapes[0]
        padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
        split = []
        for r, n in zip(repeats, padded):
            split += [r, n]
        summed = grad.reshape(split).sum(tuple(range(0, 2 * len(repeats), 2)))
        return (summed.reshape(shape),)


# ------------------------------------------------------------------ public functions
@export(function=False, method=True)
def view(input: Tensor, *shape) -> Tensor:
    """The same data with another shape; never copies (raises where a copy would be needed).
    ``view(dtype)``: the same bytes read as another dtype (not differentiable, as PyTorch's)."""
    if len(shape) == 1 and isinstance(shape[0], _dtype_class):
        return _view_dtype(input, shape[0])
    shape = _infer_shape(shape, input._data.size)
    return apply(View, (input,), (input._data,), shape=shape)


def _view_dtype(input: Tensor, dtype) -> Tensor:
    """The same memory as ``dtype``; with a different element size the last dimension (of
    stride 1) is rescaled, as PyTorch does."""
    data = input._data
    new = np.dtype(dtype.np)
    if new.itemsize != data.dtype.itemsize:
        what = (f"to view {torch_name(data.dtype)} as {torch_name(new)} (different element "
                "sizes)")
        if data.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        stride = data.strides[-1] // data.dtype.itemsize if data.shape[-1] != 1 else 1
        if stride != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride}")
        if new.itemsize > data.dtype.itemsize:
            ratio = new.itemsize // data.dtype.itemsize
            if data.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                                   f"{data.shape[-1]}")
    out = Tensor._wrap(data.view(new))
    out._version_counter = input._version_counter  # (one memory: writes through either count)
    return out


@export(method=True)
def reshape(input: Tensor, *shape) -> Tensor:
    """The same data with another shape: a view when the layout allows, else a copy."""
    data = input._data
    shape = _infer_shape(shape, data.size)
    if shape == data.shape:
        return apply(View, (input,), (data,), shape=shape)
    try:
        kernels_for((input,)).reshape_view(data, shape)
    except ValueError:
        return apply(UnsafeView, (input,), (data,), shape=shape)
    return apply(View, (input,), (data,), shape=shape)


@export(function=False, method=True)
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.size())``."""
    return view(input, other._data.shape)


@export(function=False, method=True)
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.reshape(other.size())``."""
    return reshape(input, other._data.shape)


@export(method=True)
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Flattens dimensions ``start_dim`` to ``end_dim`` into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s = _wrap_dim(start_dim, len(shape))
    e = _wrap_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = int(np.prod(shape[s:e + 1], dtype=np.int64))
    return reshape(input, shape[:s] + (n,) + shape[e + 1:])


@export(method=True)
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps dimensions ``dim0`` and ``dim1`` (a view)."""
    nd = input._data.ndim
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    if not nd:  # (0 and -1 both name a 0-d tensor's one pseudo-dimension)
        d0 = d1 = 0
    out = apply(Transpose, (input,), (input._data,), dim0=d0, dim1=d1)
    if d0 != dim0 or d1 != dim1:  # (PyTorch's node shows the dims as given)
        keep_given(out, dim0=int(dim0), dim1=int(dim1))
    return out


@export(method=True)
def t(input: Tensor) -> Tensor:
    """Transposes a tensor of at most 2 dimensions."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    return apply(T, (input,), (input._data,))


@export(method=True)
def permute(input: Tensor, *dims) -> Tensor:
    """Reorders the dimensions (a view)."""
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
            f"len(dims) = {len(dims)}"
        )
    given, dims = dims, tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    out = apply(Permute, (input,), (input._data,), dims=dims)
    if given != dims:  # (PyTorch's node shows the dims as given)
        keep_given(out, dims=tuple(int(d) for d in given))
    return out


@export(method=True)
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Inserts a dimension of size 1 at ``dim``."""
    d = _wrap_dim(dim, input._data.ndim + 1)
    return _dim_given(apply(Unsqueeze, (input,), (input._data,), dim=d), dim, d)


def _dim_given(out: Tensor, dim, d: int) -> Tensor:
    """``out``, its node told ``dim`` as the caller gave it where it is not the wrapped ``d``
    (PyTorch's node shows it as given: ``2**64 - 1`` for -1)."""
    if dim != d:
        keep_given(out, dim=int(dim))
    return out


@export(method=True)
def squeeze(input: Tensor, dim=None) -> Tensor:
    """Removes dimensions of size 1 (all of them, or ``dim`` if it has size 1)."""
    if dim is None:
        return apply(SqueezeAll, (input,), (input._data,))
    nd = input._data.ndim
    if isinstance(dim, (tuple, list)):  # each of several dims that has size 1
        dims = [_wrap_dim(d, nd) if nd else _wrap_dim(d, 0) * 0 for d in dim]
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out = input if dims else view(input, input._data.shape)
        for d in sorted(dims, reverse=True):
            out = apply(Squeeze, (out,), (out._data,), dim=d)
        return out
    d = _wrap_dim(dim, nd) if nd else _wrap_dim(dim, 0) * 0  # (a 0-d tensor takes 0 and -1)
    return _dim_given(apply(Squeeze, (input,), (input._data,), dim=d), dim, d)


def _restride(input: Tensor, view) -> Tensor:
    """``input`` made, in place, the view ``view(input)`` of its memory (PyTorch's in-place view
    ops: ``t_``, ``squeeze_``, ``as_strided_`` ...): its data is rebound to that view and its
    version moves on, as PyTorch's. Recorded, its history becomes the view's node over its old
    one (the gradient flows through the change); a leaf that requires grad, or a view of one, is
    refused with PyTorch's error, as by any in-place op."""
    from .inplace import _check_leaf

    _check_leaf(input)
    with grad_mode.no_grad():
        out = view(input)
    fn = view(input).grad_fn if grad_mode.state.enabled and input._requires_grad else None
    tangents = None
    if registry._forward_ad is not None:  # (forward AD: the tangents take the view's strides)
        from ..autograd import forward_ad

        tangents = forward_ad.tangents_of(out)
    input._data = out._data
    input._version_counter.value += 1
    if fn is not None:
        input.grad_fn = fn  # (a view's history: current as of the version just set)
    if tangents is not None:
        forward_ad.restride_tangents(input, tangents)
    return input


@export(function=False, method=True)
def t_(input: Tensor) -> Tensor:
    """``t`` in place: the tensor's two dimensions swapped (at most 2)."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{input._data.ndim}D")
    return _restride(input, lambda x: apply(TInplace, (x,), (x._data,)))


@export(function=False, method=True)
def transpose_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose`` in place: dimensions ``dim0`` and ``dim1`` swapped."""
    nd = input._data.ndim
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    if not nd:
        d0 = d1 = 0
    return _restride(input, lambda x: apply(TransposeInplace, (x,), (x._data,), dim0=d0,
                                            dim1=d1))


@export(function=False, method=True)
def swapaxes_(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``transpose_`` (NumPy's name)."""
    return transpose_(input, axis0, axis1)


@export(function=False, method=True)
def swapdims_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose_``."""
    return transpose_(input, dim0, dim1)


@export(function=False, method=True)
def unsqueeze_(input: Tensor, dim: int) -> Tensor:
    """``unsqueeze`` in place: a dimension of size 1 inserted at ``dim``."""
    d = _wrap_dim(dim, input._data.ndim + 1)
    return _restride(input, lambda x: apply(UnsqueezeInplace, (x,), (x._data,), dim=d))


@export(function=False, method=True)
def squeeze_(input: Tensor, dim=None) -> Tensor:
    """``squeeze`` in place: the dimensions of size 1 removed (all of them, or those of ``dim``,
    an int or a tuple, that have size 1)."""
    nd = input._data.ndim
    if dim is None:
        return _restride(input, lambda x: apply(SqueezeAllInplace, (x,), (x._data,)))
    if isinstance(dim, (tuple, list)):
        dims = [_wrap_dim(d, nd) if nd else _wrap_dim(d, 0) * 0 for d in dim]
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        return _restride(input, lambda x: apply(SqueezeDims, (x,), (x._data,),
                                                dims=tuple(dims)))
    d = _wrap_dim(dim, nd) if nd else _wrap_dim(dim, 0) * 0
    return _restride(input, lambda x: apply(SqueezeInplace, (x,), (x._data,), dim=d))


@export(method=True)
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (of a real tensor, a view: its
    transpose); PyTorch's warning and ``conj`` on a 0-d tensor, its error on a 1-D one."""
    nd = input._data.ndim
    if nd < 2:
        if nd:
            raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                               f"matrices. Got {nd}-D tensor.")
        from .. import _warn_once

        _warn_once("adjoint() is deprecated on 0-D tensors. Consider using x.conj().")
        return input.conj()
    return transpose(input, -2, -1).conj()


@export(function=False, method=True)
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


@export(function=False, method=True)
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other._data.shape)

@export(method=True)
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` elements along ``dim`` starting at ``start`` (a view; ``start`` may be a 0-d
    integer tensor)."""
    if isinstance(start, Tensor):
        if start.ndim or start._data.dtype.kind not in "iu":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = int(start)
    nd = input._data.ndim
    if not nd:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, nd)
    size = input._data.shape[d]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _dim_given(apply(Narrow, (input,), (input._data,), dim=d, start=start, length=length),
                      dim, d)


def _check_same_rank(tensors, what: str):
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList" if what == "stack" else
                           f"{what}(): expected a non-empty list of Tensors")
    first = tensors[0]._data
    for i, t in enumerate(tensors[1:], 1):
        if t._data.ndim != first.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.ndim} and {t._data.ndim}"
            )


def _common(tensors):
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = promote_types(dt, t.dtype)
    K = kernels_for(tensors)
    return [t._data if t._data.dtype == dt.np else K.cast(t._data, dt.np) for t in tensors]


@export(out=Out(no_overlap=True))
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenates tensors along an existing dimension."""
    if isinstance(tensors, Tensor):
        raise TypeError("cat(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        "Tensor")
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    for i, t in enumerate(tensors):
        if not t._data.ndim:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # (PyTorch's legacy rule: an empty 1-D tensor, shape [0], joins any others, as an empty
    # slice of their shape: its dtype still promotes, its gradient is its empty one)
    shaped = next((t for t in tensors if t._data.shape != (0,)), None)
    if shaped is not None and shaped._data.ndim != 1:
        empty = list(shaped._data.shape)
        empty[_wrap_dim(dim, len(empty))] = 0
        tensors = [t.reshape(empty) if t._data.shape == (0,) else t for t in tensors]
    _check_same_rank(tensors, "cat")
    d = _wrap_dim(dim, tensors[0]._data.ndim)
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        shape = t._data.shape
        for k, (x, y) in enumerate(zip(ref, shape)):
            if k != d and x != y:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {x} but "
                    f"got size {y} for tensor number {i} in the list."
                )
    return _dim_given(apply(Cat, tuple(tensors), tuple(_common(tensors)), dim=d), dim, d)


@export(out=True)
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Stacks tensors of one shape along a new dimension."""
    tensors = list(tensors)
    _check_same_rank(tensors, "stack")
    d = _wrap_dim(dim, tensors[0]._data.ndim + 1)
    for i, t in enumerate(tensors):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0]._data.shape)} "
                f"at entry 0 and {list(t._data.shape)} at entry {i}"
            )
    return _dim_given(apply(Stack, tuple(tensors), tuple(_common(tensors)), dim=d), dim, d)


@export(method=True)
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Splits into chunks of ``split_size`` (the last may be smaller) or of the given sizes."""
    return _split(tensor, split_size_or_sections, dim, (SplitPart, SplitWithSizesPart))


def _split(tensor: Tensor, split_size_or_sections, dim: int, ops: tuple) -> tuple:
    """``split``, its parts recorded by ``ops`` (by a size, by a list of sizes)."""
    if not tensor._data.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, tensor._data.ndim)
    size = tensor._data.shape[d]
    by_size = isinstance(split_size_or_sections, (int, np.integer))
    if by_size:
        step = int(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and size:
            raise RuntimeError("split_size can only be 0 if dimension size is 0, but got dimension "
                               f"size of {size}")
        sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]
    else:
        sizes = [int(n) for n in split_size_or_sections]
        if builtins.any(n < 0 for n in sizes):
            raise RuntimeError("split_with_sizes expects split_sizes have only non-negative entries, "
                               f"but got split_sizes={sizes}")
        if builtins.sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sizes}"
            )
    op, arg = (ops[0], {"split_size": step}) if by_size else (
        ops[1], {"split_sizes": tuple(sizes)})
    calls, start = [], 0
    for n in sizes:
        calls.append((op, {"dim": d, "start": start, "length": n, **arg}))
        start += n
    parts = apply_parts(calls, (tensor,), (tensor._data,))  # (one node for all, as PyTorch's)
    if ops is not _UNSAFE and grad_mode.state.enabled:  # (PyTorch's MULTI_OUTPUT_NODE views)
        for i, p in enumerate(parts):
            p._multi_nr = i
    if d != dim:
        _dim_given(parts[0], dim, d)
    return parts


@export(method=True)
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Splits into ``chunks`` pieces of (nearly) equal size along ``dim``."""
    return _chunk(input, chunks, dim, (SplitPart, SplitWithSizesPart))


def _chunk(input: Tensor, chunks: int, dim: int, ops: tuple) -> tuple:
    if not input._data.ndim:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input._data.ndim)
    size = input._data.shape[d]
    if not size:  # ``chunks`` empty pieces, as PyTorch (split would give one)
        return _split(input, [0] * chunks, d, ops)
    return _split(input, -(-size // chunks), dim, ops)


@export(method=True)
def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split`` into parts of the given sizes (which must add up to the dimension's)."""
    return split(input, list(split_sizes), dim)


_UNSAFE = (UnsafeSplitPart, UnsafeSplitWithSizesPart)


@export(method=True)
def unsafe_split(input: Tensor, split_size, dim: int = 0) -> tuple:
    """``split`` (PyTorch's variant whose parts are not views to autograd's checks; here they
    are, and its node names are PyTorch's)."""
    return _split(input, split_size, dim, _UNSAFE)


@export(method=True)
def unsafe_split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split_with_sizes``, as ``unsafe_split`` is ``split``."""
    return _split(input, list(split_sizes), dim, _UNSAFE)


@export(method=True)
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk``, as ``unsafe_split`` is ``split``."""
    return _chunk(input, chunks, dim, _UNSAFE)


def _directional_split(name: str, dim_of):
    def fn(input: Tensor, indices_or_sections) -> tuple:
        nd = input._data.ndim
        d = dim_of(nd)
        need = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[name]
        if nd < need:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, "
                               f"but got a tensor with {nd} dimensions!")
        if not isinstance(indices_or_sections, (int, np.integer, list, tuple, Tensor)):
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(Tensor, {type(indices_or_sections).__name__}), but expected one "
                            "of:\n * (Tensor input, int sections)\n * (Tensor input, tuple of "
                            "ints indices)")
        if isinstance(indices_or_sections, (int, np.integer)):
            n, size = int(indices_or_sections), input._data.shape[d]
            if n == 0 or size % n:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but "
                                   f"the size of the dimension {size} is not divisible by the "
                                   f"split_size {n}!")
        return tensor_split(input, indices_or_sections, d)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``tensor_split`` along dimension {dim_of(3)} ({name}), sections that must "
                  "divide it exactly or the indices to split at.")
    return fn


hsplit = export(_directional_split("hsplit", lambda nd: 1 if nd > 1 else 0), "hsplit", method=True)
vsplit = export(_directional_split("vsplit", lambda nd: 0), "vsplit", method=True)
dsplit = export(_directional_split("dsplit", lambda nd: 2), "dsplit", method=True)


def _copy_of(view_name: str):
    """``{view}_copy``: the view's values in new (contiguous) memory, differentiable through the
    view and a copy."""
    def fn(input: Tensor, *args, **kwargs):
        from . import METHODS

        view = METHODS.get(view_name) or getattr(Tensor, view_name)
        out = view(input, *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(o.clone() for o in out)
        return out.clone()

    fn.__name__ = fn.__qualname__ = view_name + "_copy"
    fn.__doc__ = f"``{view_name}``'s values in new memory (PyTorch's ``{view_name}_copy``)."
    return fn


_COPIES = ("view", "t", "transpose", "unsqueeze", "squeeze", "permute", "expand", "unbind",
           "unfold", "split_with_sizes", "split", "select", "detach")
for _name in _COPIES:
    globals()[_name + "_copy"] = export(_copy_of(_name), _name + "_copy")


@export(method=True)
def narrow_copy(input: Tensor, dim: int, start, length: int) -> Tensor:
    """``narrow``'s values in new memory, with PyTorch's own checks of ``narrow_copy`` (a ``dim``
    past the last and a negative ``length`` are refused in its words)."""
    nd = input.ndim
    if nd and dim >= nd:
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    if nd and isinstance(start, int) and length < 0:
        size = input.shape[dim]
        first = start + size if -size <= start < 0 else start
        raise RuntimeError(f"start ({first}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return narrow(input, dim, start, length).clone()


@export
def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (PyTorch's ``alias_copy``)."""
    return input.clone()


@export(function=False, method=True)
def repeat(input: Tensor, *repeats) -> Tensor:
    """The tensor tiled ``repeats`` times along each dimension."""
    if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)):
        repeats = tuple(repeats[0])
    if len(repeats) < input._data.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    return apply(Repeat, (input,), (input._data,), repeats=tuple(int(r) for r in repeats))
