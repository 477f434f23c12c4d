"""Pooling as ops: max pooling (with its indices), average pooling and the adaptive forms, over
the last two dimensions of a (C, H, W) or (N, C, H, W) input; the 1-D forms are the 2-D ops on a
height of 1 (``unsqueeze(-2)``, then ``squeeze(-2)``), as PyTorch's, so their nodes are PyTorch's
(``SqueezeBackward1`` over ``MaxPool2DWithIndicesBackward0`` over ``UnsqueezeBackward0``).

Each backward is an op of its own, as ATen's, so second derivatives work:

- max pooling's gradient is a scatter of ``grad`` by the saved indices
  (``max_pool2d_with_indices_backward``, ``adaptive_max_pool2d_backward``); its derivative with
  respect to ``grad`` is the gather by the same indices (``max_pool_gather``, node
  ``GatherBackward0``, viewed as PyTorch's ``max_pool_double_backward`` does), whose derivative is
  the scatter again;
- average pooling's gradient (``avg_pool2d_backward``, ``_adaptive_avg_pool2d_backward``) is
  linear in ``grad``, and its derivative with respect to ``grad`` is the pooling itself.

The derivative of a backward op with respect to its ``self`` (which gives only a shape) is zeros,
as PyTorch's. ``numgrad.nn.functional`` has PyTorch's signatures and checks (``max_pool1d``,
``max_pool2d``, ``avg_pool1d``, ``avg_pool2d``, ``adaptive_avg_pool1d/2d``,
``adaptive_max_pool1d/2d``); they are defined here.
"""
from __future__ import annotations

import numbers

from .._dtype import torch_name
from ..autograd.graph import keep_given
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register



def _F(m):
    return m.nn.functional


def _type_name(t: Tensor) -> str:
    return torch_name(t._data.dtype)


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _zeros_like_input(grad: Tensor, shape) -> Tensor:
    """PyTorch's derivative of a backward op with respect to ``self``: zeros of its shape."""
    K = kernels_for((grad,))
    return Tensor._wrap(K.zeros(tuple(shape), grad._data.dtype))


# ---------------------------------------------------------------------- max pooling
class _MaxPoolWithIndices(Op):
    """The largest element of each window of the last ``dims`` dimensions (its index into the
    plane, or the volume, saved); ties go to the first, NaN wins. ``pool_kernel`` names the
    ``K.pooling`` function, ``backward_op`` the gradient's op; ``self_saved``: the saved input is
    its ``self`` (3-D), else None."""

    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)  # (backward needs only its shape; saved as PyTorch saves it)
    pool_kernel = ""
    backward_op: type = None
    self_saved = False

    @classmethod
    def forward(cls, K, x, *, indices, kernel, stride, padding, dilation, out_size, ceil_mode):
        # One kernel call gives both: the indices go to ``indices`` (a list, empty until now),
        # which the caller returns and backward reads.
        out, found = getattr(K.pooling, cls.pool_kernel)(x, kernel, stride, padding, dilation,
                                                         out_size)
        indices.append(found)
        return out

    @classmethod
    def backward(cls, ctx, grad):
        p = ctx.params
        return (_index_scatter(cls.backward_op, grad, _self(cls, ctx),
                               tuple(ctx.input_shapes[0]), p["indices"][0],
                               dict(kernel=p["kernel"], stride=p["stride"],
                                    padding=p["padding"], dilation=p["dilation"],
                                    ceil_mode=p["ceil_mode"])),)


def _self(op, ctx):
    """The ``self`` an op passes to its backward op: its saved input where ``op.self_saved``."""
    return ctx.saved_tensors[0] if op.self_saved else None


@register
class MaxPool2dWithIndices(_MaxPoolWithIndices):
    name, node = "max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0"
    pool_kernel = "max_pool2d"
    samples = (
        Sample(lambda m, x: _F(m).max_pool2d(x, 2), ((2, 3, 4, 5),)),
        Sample(lambda m, x: _F(m).max_pool2d(x, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2),
                                             ceil_mode=True), ((2, 5, 6),)),
        Sample(lambda m, x: _F(m).max_pool1d(x, 3, stride=2, padding=1,
                                             return_indices=True)[0], ((2, 3, 7),)),
    )


@register
class AdaptiveMaxPool2d(Op):
    """The largest element of each adaptive window (``[floor(i*H/OH), ceil((i+1)*H/OH))``)."""

    name, node = "adaptive_max_pool2d", "AdaptiveMaxPool2DBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)  # (backward needs only its shape; saved as PyTorch saves it)
    samples = (
        Sample(lambda m, x: _F(m).adaptive_max_pool2d(x, (2, 3)), ((2, 2, 5, 7),)),
        Sample(lambda m, x: _F(m).adaptive_max_pool1d(x, 3, return_indices=True)[0], ((2, 5),)),
    )

    @staticmethod
    def forward(K, x, *, indices, out_size):
        out, found = K.pooling.adaptive_max_pool2d(x, out_size)
        indices.append(found)  # (as max_pool2d_with_indices's)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (_index_scatter(AdaptiveMaxPool2dBackward, grad, None, tuple(ctx.input_shapes[0]),
                               ctx.params["indices"][0], {}),)


class _IndexScatter(Op):
    """``grad`` added at the saved indices into zeroed planes of ``shape``: the gradient of max
    pooling. Linear in ``grad``; its adjoint is the gather by the same indices."""

    jvp = _jvp.transposed_backward
    on_cuda = True

    dims = 2  # (the pooled dimensions: 3 for max_pool3d's)

    @classmethod
    def forward(cls, K, grad, *, shape, indices, **pool):
        return K.pooling.max_pool_scatter(grad, indices, tuple(shape[-cls.dims:]))

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        need_grad, need_self = ctx.needs_input_grad
        dims = getattr(ctx.op, "dims", 2)
        return (_max_pool_gather(grad, p["indices"], dims) if need_grad else None,
                _zeros_like_input(grad, p["shape"]) if need_self else None)


def _mp_backward(m, g, x):
    """``max_pool2d_with_indices_backward`` of a (2, 2) pooling of ``x`` (for the samples)."""
    idx = _F(m).max_pool2d(x.detach(), 2, stride=1, return_indices=True)[1]
    return m.ops.max_pool2d_with_indices_backward(g, x, [2, 2], [1, 1], [0, 0], [1, 1], False,
                                                  idx)


def _mp_double(m, g, x, v):
    """The derivative of max pooling's backward with respect to its ``grad`` (a gather)."""
    return m.autograd.grad(_mp_backward(m, g, x), g, v, create_graph=True)[0]


@register
class MaxPool2dWithIndicesBackward(_IndexScatter):
    name, node = "max_pool2d_with_indices_backward", "MaxPool2DWithIndicesBackwardBackward0"
    samples = (
        Sample(_mp_backward, ((2, 2, 3), (2, 3, 4))),
        Sample(lambda m, g, x: m.ops.max_pool2d_with_indices_backward(
            g, x, [2, 2], [2, 2], [1, 0], [1, 1], True,
            _F(m).max_pool2d(x.detach(), 2, padding=(1, 0), ceil_mode=True,
                             return_indices=True)[1]), ((1, 2, 2, 3), (1, 2, 3, 5))),
    )


MaxPool2dWithIndices.backward_op = MaxPool2dWithIndicesBackward


@register
class AdaptiveMaxPool2dBackward(_IndexScatter):
    name, node = "adaptive_max_pool2d_backward", "AdaptiveMaxPool2DBackwardBackward0"
    samples = (
        Sample(lambda m, g, x: m.ops.adaptive_max_pool2d_backward(
            g, x, _F(m).adaptive_max_pool2d(x.detach(), (2, 3), return_indices=True)[1]),
            ((2, 2, 3), (2, 3, 5))),
    )


@register
class MaxPoolGather(Op):
    """``x`` (..., P) read at ``indices`` (..., Q) of each row: the derivative of max pooling's
    backward with respect to its ``grad`` (PyTorch's ``max_pool_double_backward`` gathers the
    same way). Its adjoint is the scatter by the same indices."""

    name, node = "max_pool_gather", "GatherBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(_mp_double, ((2, 2, 3), (2, 3, 4), (2, 3, 4))),
    )

    @staticmethod
    def forward(K, x, *, indices):
        return K.pooling.max_pool_gather(x, indices)

    @staticmethod
    def backward(ctx, grad):
        shape = tuple(ctx.input_shapes[0])
        return (_index_scatter(MaxPool2dWithIndicesBackward, grad, None,
                               shape[:-1] + (1, shape[-1]), ctx.params["indices"],
                               {}).reshape(shape),)


def _index_scatter(op, grad: Tensor, self, shape, indices, pool: dict) -> Tensor:
    return apply(op, (grad, self), (grad._data,), shape=tuple(shape), indices=indices, **pool)


def _max_pool_gather(grad: Tensor, indices, dims: int = 2) -> Tensor:
    """``grad`` (..., H, W) gathered at ``indices`` (..., OH, OW) of each plane (of each volume
    for ``dims`` 3), as PyTorch's ``max_pool_double_backward``: a gather of rows, viewed as the
    indices."""
    K = kernels_for((grad,))
    lead = tuple(tuple(indices.shape)[:-dims])
    count = size = 1
    for v in tuple(indices.shape)[-dims:]:
        count *= int(v)
    for v in tuple(grad._data.shape)[-dims:]:
        size *= int(v)
    rows = K.reshape_view(K.ascontiguous(indices), lead + (1, count))
    flat = grad.contiguous().reshape(lead + (size,))
    gathered = apply(MaxPoolGather, (flat,), (K.reshape_view(flat._data, lead + (1, size)),),
                     indices=rows)
    return gathered.reshape(lead + (count,)).view(tuple(indices.shape))


@export(aten=True)
def max_pool2d_with_indices_backward(grad_output: Tensor, self: Tensor, kernel_size, stride,
                                     padding, dilation, ceil_mode: bool, indices: Tensor) -> Tensor:
    """ATen's ``max_pool2d_with_indices_backward``: ``grad_output`` scattered by ``indices``
    into zeros of ``self``'s shape."""
    K = kernels_for((grad_output, self, indices), MaxPool2dWithIndicesBackward)
    kernel, stride_, pad, dil = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    _float_only("max_pool2d_backward", grad_output)
    return _index_scatter(MaxPool2dWithIndicesBackward, grad_output, self, tuple(self._data.shape),
                          K.copy(indices._data),
                          dict(kernel=kernel, stride=stride_, padding=pad, dilation=dil,
                               ceil_mode=bool(ceil_mode)))


@export(aten=True)
def adaptive_max_pool2d_backward(grad_output: Tensor, self: Tensor, indices: Tensor) -> Tensor:
    """ATen's ``adaptive_max_pool2d_backward``."""
    K = kernels_for((grad_output, self, indices), AdaptiveMaxPool2dBackward)
    _float_only("adaptive_max_pool2d_backward", grad_output)
    return _index_scatter(AdaptiveMaxPool2dBackward, grad_output, self, tuple(self._data.shape),
                          K.copy(indices._data), {})


# ---------------------------------------------------------------------- average pooling
class _AvgPool(Op):
    """The mean of each window of the last ``dims`` dimensions (PyTorch's divisors:
    ``count_include_pad``, ``divisor_override``). ``pool_kernel``, ``backward_op`` and
    ``self_saved`` as ``_MaxPoolWithIndices``'s."""

    jvp = _jvp.linear
    on_cuda = True
    save_inputs = (0,)  # (backward needs only its shape; saved as PyTorch saves it)
    pool_kernel = ""
    backward_op: type = None
    self_saved = False

    @classmethod
    def forward(cls, K, x, *, kernel, stride, padding, out_size, ceil_mode, count_include_pad,
                divisor_override):
        return getattr(K.pooling, cls.pool_kernel)(x, kernel, stride, padding, out_size,
                                                   count_include_pad, divisor_override or 0)

    @classmethod
    def backward(cls, ctx, grad):
        return (_avg_pool_backward(cls.backward_op, grad, _self(cls, ctx),
                                   tuple(ctx.input_shapes[0]), ctx.params),)


class _AvgPoolBackward(Op):
    """The gradient of average pooling: each output's gradient spread over its window. Linear in
    ``grad``; its adjoint is the pooling (``forward_op``) with the same arguments."""

    jvp = _jvp.linear
    on_cuda = True
    dims = 2
    pool_kernel = ""
    forward_op: type = None

    @classmethod
    def forward(cls, K, grad, *, shape, kernel, stride, padding, out_size, ceil_mode,
                count_include_pad, divisor_override):
        return getattr(K.pooling, cls.pool_kernel)(grad, tuple(shape[-cls.dims:]), kernel,
                                                   stride, padding, count_include_pad,
                                                   divisor_override or 0)

    @classmethod
    def backward(cls, ctx, grad):
        p = dict(ctx.params)
        shape = p.pop("shape")
        need_grad, need_self = ctx.needs_input_grad
        return (apply(cls.forward_op, (grad,), (grad._data,), **p) if need_grad else None,
                _zeros_like_input(grad, shape) if need_self else None)


def _avg_pool_backward(op, grad: Tensor, self, shape, p: dict) -> Tensor:
    return apply(op, (grad, self), (grad._data,), shape=tuple(shape), kernel=p["kernel"],
                 stride=p["stride"], padding=p["padding"], out_size=p["out_size"],
                 ceil_mode=p["ceil_mode"], count_include_pad=p["count_include_pad"],
                 divisor_override=p["divisor_override"])


@register
class AvgPool2d(_AvgPool):
    name, node = "avg_pool2d", "AvgPool2DBackward0"
    pool_kernel = "avg_pool2d"
    samples = (
        Sample(lambda m, x: _F(m).avg_pool2d(x, 2), ((2, 3, 4, 5),)),
        Sample(lambda m, x: _F(m).avg_pool2d(x, (3, 2), stride=(2, 1), padding=1, ceil_mode=True,
                                             count_include_pad=False), ((2, 5, 6),)),
        Sample(lambda m, x: _F(m).avg_pool2d(x, 3, stride=2, padding=1, divisor_override=5),
               ((1, 2, 5, 4),)),
        Sample(lambda m, x: _F(m).avg_pool1d(x, 3, stride=2, padding=1, ceil_mode=True),
               ((2, 3, 6),)),
    )


@register
class AvgPool2dBackward(_AvgPoolBackward):
    name, node = "avg_pool2d_backward", "AvgPool2DBackwardBackward0"
    pool_kernel, forward_op = "avg_pool2d_backward", AvgPool2d
    samples = (
        Sample(lambda m, g, x: m.ops.avg_pool2d_backward(g, x, [2, 2], [1, 2], [1, 0], True,
                                                         False, None), ((2, 4, 2), (2, 3, 4))),
        Sample(lambda m, g, x: m.ops.avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 1], False,
                                                         True, 4), ((1, 2, 2, 2), (1, 2, 4, 3))),
    )


AvgPool2d.backward_op = AvgPool2dBackward


@export(aten=True)
def avg_pool2d_backward(grad_output: Tensor, self: Tensor, kernel_size, stride, padding,
                        ceil_mode: bool, count_include_pad: bool, divisor_override) -> Tensor:
    """ATen's ``avg_pool2d_backward``: the gradient of ``avg_pool2d`` for the input ``self``."""
    kernel, stride_, pad, _ = _pool_args("avg_pool2d", kernel_size, stride, padding, 1)
    out_size = tuple(grad_output._data.shape[-2:])
    shape = tuple(self._data.shape)
    if len(shape) >= 2:
        _shape_check(self, kernel, stride_, pad, (1, 1),
                     _output_sizes(shape, kernel, pad, stride_, (1, 1), ceil_mode))
    if grad_output._data.dtype.kind not in "fV" and grad_output._data.dtype.name != "int64":
        _not_implemented("avg_pool2d_backward", grad_output)
    return _avg_pool_backward(AvgPool2dBackward, grad_output, self, tuple(self._data.shape), dict(
        kernel=kernel, stride=stride_, padding=pad, out_size=out_size, ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad), divisor_override=divisor_override))


class _AdaptiveAvgPool(Op):
    """The mean of each adaptive window of the last ``dims`` dimensions: its sum divided by its
    size along each dimension in turn. ``pool_kernel``, ``backward_op`` and ``self_saved`` as
    ``_MaxPoolWithIndices``'s."""

    jvp = _jvp.linear
    on_cuda = True
    save_inputs = (0,)  # (backward needs only its shape; saved as PyTorch saves it)
    pool_kernel = ""
    backward_op: type = None
    self_saved = False

    @classmethod
    def forward(cls, K, x, *, out_size):
        return getattr(K.pooling, cls.pool_kernel)(x, tuple(out_size))

    @classmethod
    def backward(cls, ctx, grad):
        return (_adaptive_avg_backward(cls.backward_op, grad, _self(cls, ctx),
                                       tuple(ctx.input_shapes[0])),)


class _AdaptiveAvgPoolBackward(Op):
    """The gradient of adaptive average pooling; its adjoint is the pooling (``forward_op``)."""

    jvp = _jvp.linear
    on_cuda = True
    dims = 2
    pool_kernel = ""
    forward_op: type = None

    @classmethod
    def forward(cls, K, grad, *, shape):
        return getattr(K.pooling, cls.pool_kernel)(grad, tuple(shape[-cls.dims:]))

    @classmethod
    def backward(cls, ctx, grad):
        need_grad, need_self = ctx.needs_input_grad
        pooled = None
        if need_grad:
            out_size = tuple(tuple(ctx.input_shapes[0])[-cls.dims:])
            pooled = apply(cls.forward_op, (grad,), (grad._data,), out_size=out_size)
        return pooled, (_zeros_like_input(grad, ctx.params["shape"]) if need_self else None)


def _adaptive_avg_backward(op, grad: Tensor, self, shape) -> Tensor:
    return apply(op, (grad, self), (grad._data,), shape=tuple(shape))


@register
class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    name, node = "adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0"
    pool_kernel = "adaptive_avg_pool2d"
    samples = (
        Sample(lambda m, x: _F(m).adaptive_avg_pool2d(x, (2, 3)), ((2, 2, 5, 7),)),
        Sample(lambda m, x: _F(m).adaptive_avg_pool2d(x, (None, 4)), ((3, 3, 6),)),
        Sample(lambda m, x: _F(m).adaptive_avg_pool1d(x, 3), ((2, 2, 7),)),
    )


@register
class AdaptiveAvgPool2dBackward(_AdaptiveAvgPoolBackward):
    name, node = "adaptive_avg_pool2d_backward", "AdaptiveAvgPool2DBackwardBackward0"
    pool_kernel, forward_op = "adaptive_avg_pool2d_backward", AdaptiveAvgPool2d
    samples = (
        Sample(lambda m, g, x: m.ops._adaptive_avg_pool2d_backward(g, x), ((2, 2, 3), (2, 5, 7))),
    )


AdaptiveAvgPool2d.backward_op = AdaptiveAvgPool2dBackward


@export(aten=True)
def _adaptive_avg_pool2d_backward(grad_output: Tensor, self: Tensor) -> Tensor:
    """ATen's ``_adaptive_avg_pool2d_backward``."""
    kernels_for((grad_output, self), AdaptiveAvgPool2dBackward)
    _float_only("adaptive_avg_pool2d_backward", grad_output)
    return _adaptive_avg_backward(AdaptiveAvgPool2dBackward, grad_output, self,
                                  tuple(self._data.shape))


# ---------------------------------------------------------------------- arguments and checks
def _tuple(value, name: str = "", arg: str = "", position: int = 0) -> tuple:
    """An int or a sequence of ints as a tuple; anything else raises PyTorch's TypeError."""
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if not isinstance(v, numbers.Integral) and name == "avg_pool2d":  # (its parser's)
                raise TypeError(f"{name}(): argument '{arg}' failed to unpack the object at pos "
                                f"{position} with error \"type must be tuple of ints,but got "
                                f"{type(v).__name__}\"")
            if not isinstance(v, numbers.Integral):
                raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be tuple "
                                f"of ints, but found element of type {type(v).__name__} at pos "
                                f"{i}")
        return tuple(int(v) for v in value)
    if not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be tuple of ints, "
                        f"not {type(value).__name__}")
    return (int(value),)


def _pool_args(name: str, kernel_size, stride, padding, dilation, n: int = 2,
               must: str = "must either be"):
    """PyTorch's checks of the ``n``-D pooling arguments' lengths (one, or ``n``), in its order,
    and the ``n``-tuples; ``must`` is "must be" in avg_pool3d's messages."""
    count = {2: "two", 3: "three"}[n]

    def expand(values: tuple) -> tuple:
        return values * n if len(values) == 1 else values

    k = _tuple(kernel_size, name, "kernel_size", 2)
    if len(k) not in (1, n):
        raise RuntimeError(f"{name}: kernel_size {must} a single int, or a tuple of {count} ints")
    kernel = expand(k)
    s = () if stride is None else _tuple(stride, name, "stride", 3)
    if len(s) not in (0, 1, n):
        raise RuntimeError(f"{name}: stride {must} omitted, a single int, or a tuple of {count} "
                           "ints")
    strides = expand(s) if s else kernel
    p = _tuple(padding, name, "padding", 4)
    if len(p) not in (1, n):
        raise RuntimeError(f"{name}: padding {must} a single int, or a tuple of {count} ints")
    d = _tuple(dilation, name, "dilation", 5)
    if len(d) not in (1, n):
        raise RuntimeError(f"{name}: dilation must be either a single int, or a tuple of {count} "
                           "ints")
    return kernel, strides, expand(p), expand(d)


def _cdiv(a: int, b: int) -> int:
    """C++'s integer division (truncating)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _output_size(size: int, kernel: int, pad: int, stride: int, dilation: int,
                 ceil_mode: bool) -> int:
    """ATen's ``pooling_output_shape``, with its checks."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > _cdiv((kernel - 1) * dilation + 1, 2):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={pad}, kernel_size={kernel} and dilation={dilation}")
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) \
        // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _output_sizes(shape, kernel, padding, stride, dilation, ceil_mode: bool) -> tuple:
    """``_output_size`` of each of the last ``len(kernel)`` dimensions of ``shape``."""
    n = len(kernel)
    return tuple(_output_size(shape[-n + i], kernel[i], padding[i], stride[i], dilation[i],
                              bool(ceil_mode)) for i in range(n))


def _shape_check(x: Tensor, kernel, stride, padding, dilation, out_size) -> None:
    """ATen's ``pool2d_shape_check``."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    shape = tuple(x._data.shape)
    if kw <= 0 or kh <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sw <= 0 or sh <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilationH: "
                           f"{dh} dilationW: {dw}")
    ndim = len(shape)
    valid = ndim >= 3 and shape[1] != 0 and shape[2] != 0
    if not ((ndim == 3 and shape[0] != 0 and valid) or (ndim == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{_sizes(shape)}")
    if kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but got "
                           f"padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}")
    oh, ow = out_size
    if ow < 1 or oh < 1:
        planes, h, w = shape[-3], shape[-2], shape[-1]
        raise RuntimeError(f"Given input size: ({planes}x{h}x{w}). Calculated output size: "
                           f"({planes}x{oh}x{ow}). Output size is too small")


# The dtypes ATen's CPU avg_pool3d takes (neither float16, bfloat16 nor the smaller integers)
_AVG_POOL3D_DTYPES = frozenset({"float32", "float64", "int64"})


def _not_implemented(kernel: str, x: Tensor) -> None:
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(x)}'")


def _float_only(kernel: str, x: Tensor) -> None:
    if x._data.dtype.kind not in "fV":  # ("V": bfloat16, computed widened)
        _not_implemented(kernel, x)


def _max_pool(n: int, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool):
    """(output, indices) of ``n``-D max pooling (2 or 3), with ATen's checks
    (``max_pool2d_with_indices``, ``max_pool3d_with_indices``)."""
    name = f"max_pool{n}d"
    kernel, strides, pads, dils = _pool_args(name, kernel_size, stride, padding, dilation, n)
    shape = tuple(input._data.shape)
    if len(shape) not in (n + 1, n + 2):
        raise RuntimeError(f"non-empty {n + 1}D or {n + 2}D (batch mode) tensor expected for "
                           "input")
    out_size = _output_sizes(shape, kernel, pads, strides, dils, ceil_mode)
    if n == 2:
        _shape_check(input, kernel, strides, pads, dils, out_size)
    else:
        _shape_check3d(input, kernel, strides, pads, dils, out_size, False)
    if input._data.dtype.kind not in "fiuV":  # ("V": bfloat16, computed widened)
        _not_implemented(name, input)
    indices = []
    result = apply(MaxPool2dWithIndices if n == 2 else MaxPool3dWithIndices, (input,),
                   (input._data,), indices=indices, kernel=kernel, stride=strides, padding=pads,
                   dilation=dils, out_size=out_size, ceil_mode=bool(ceil_mode))
    return result, Tensor._wrap(indices[0])


@export(function=False, functional=True)
def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """``(output, indices)`` of 2-D max pooling (``F.max_pool2d_with_indices``)."""
    out, indices = _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)
    _stride_given(out, stride)
    return out, indices


def _stride_given(out: Tensor, stride) -> None:
    """PyTorch's node shows the stride as given: () where none was (the kernel's size used)."""
    if stride is None or stride == []:
        keep_given(out, stride=())


@export(functional=True)
def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """The largest element of each ``kernel_size`` window of the last two dimensions of a
    (C, H, W) or (N, C, H, W) input, windows ``stride`` apart (default ``kernel_size``) over the
    input padded by ``padding`` (-inf) on each side, their elements ``dilation`` apart;
    ``ceil_mode`` rounds the output size up. With ``return_indices``, also the index of each
    maximum in its plane (``h * W + w``)."""
    out, indices = _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)
    _stride_given(out, stride)
    return (out, indices) if return_indices else out


def _check_dim_range(name: str, x: Tensor, low: int, high: int) -> None:
    """ATen's ``checkDimRange`` (``high`` exclusive)."""
    ndim = x._data.ndim
    if not low <= ndim < high:
        raise RuntimeError(f"Expected {low} to {high - 1} dimensions, but got {ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for {name})")


def _check1d(name: str, arg: str, values: tuple) -> None:
    if len(values) != 1:
        raise RuntimeError(f"{name}() argument '{arg}' should contain one int (got "
                           f"{len(values)})")


def _check_max_pool1d(input: Tensor, kernel, stride, padding, dilation, ceil_mode) -> None:
    """ATen's ``max_pool1d`` checks (``check_max_pool1d``)."""
    shape = tuple(input._data.shape)
    if not ((len(shape) == 2 and shape[0] != 0 and shape[1] != 0)
            or (len(shape) == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{_sizes(shape)}")
    if len(kernel) != 1:
        raise RuntimeError("max_pool1d() kernel_size must be an int, list of ints or tuple of "
                           f"ints of size 1 but got size {len(kernel)}")
    if len(stride) not in (0, 1):
        raise RuntimeError("max_pool1d() stride must be None, an int, list of ints, or tuple of "
                           f"ints of size 1 but got size {len(stride)}")
    if len(padding) != 1:
        raise RuntimeError("max_pool1d() padding must be an int, list of ints, or tuple of ints "
                           f"of size 1 but got size {len(padding)}")
    if len(dilation) != 1:
        raise RuntimeError("max_pool1d() dilation must be an int, list of ints or tuple of ints "
                           f"of size 1 but got size {len(dilation)}")
    stride = stride or kernel
    (k,), (s,), (p,), (d,) = kernel, stride, padding, dilation
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={p} and kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _output_size(shape[-1], k, p, s, d, bool(ceil_mode))
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


@export(functional=True)
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """1-D max pooling of a (C, L) or (N, C, L) input: ``max_pool2d`` on a height of 1."""
    kernel = _tuple(kernel_size, "max_pool1d", "kernel_size", 2)
    strides = () if stride is None else _tuple(stride, "max_pool1d", "stride", 3)
    pads = _tuple(padding, "max_pool1d", "padding", 4)
    dils = _tuple(dilation, "max_pool1d", "dilation", 5)
    if return_indices:
        _check_dim_range("max_pool1d", input, 2, 4)
        for arg, values in (("kernel_size", kernel), ("stride", strides or kernel),
                            ("padding", pads), ("dilation", dils)):
            _check1d("max_pool1d", arg, values)
    else:
        _check_max_pool1d(input, kernel, strides, pads, dils, ceil_mode)
        if input._data.dtype.kind not in "fV":
            _not_implemented("max_pool1d_impl", input)
    strides = strides or kernel
    out, indices = _max_pool(2, input.unsqueeze(-2), (1, kernel[0]), (1, strides[0]),
                             (0, pads[0]), (1, dils[0]), ceil_mode)
    out = out.squeeze(-2)
    return (out, indices.squeeze(-2)) if return_indices else out


@export(functional=True)
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@export(function=False, functional=True)
def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each ``kernel_size`` window of the last two dimensions of a (C, H, W) or
    (N, C, H, W) input, windows ``stride`` apart (default ``kernel_size``), over the input padded
    by ``padding`` zeros; the divisor is the window's size within the padded input
    (``count_include_pad``), within the input (without it), or ``divisor_override``."""
    kernel, strides, pads, _ = _pool_args("avg_pool2d", kernel_size, stride, padding, 1)
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    shape = tuple(input._data.shape)
    for dim in (-3, -2, -1):
        if len(shape) < -dim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[{-max(len(shape), 1)}, {max(len(shape), 1) - 1}], but got {dim})")
    out_size = _output_sizes(shape, kernel, pads, strides, (1, 1), ceil_mode)
    _shape_check(input, kernel, strides, pads, (1, 1), out_size)
    if input._data.dtype.kind not in "fV" and input._data.dtype.name != "int64":
        _not_implemented("avg_pool2d", input)
    out = _avg_pool(AvgPool2d, input, kernel, strides, pads, out_size, ceil_mode,
                    count_include_pad, divisor_override)
    _stride_given(out, stride)
    return out


def _avg_pool(op, input: Tensor, kernel, strides, pads, out_size, ceil_mode: bool,
              count_include_pad: bool, divisor_override) -> Tensor:
    """Average pooling (``op`` AvgPool2d or AvgPool3d) of a checked input."""
    return apply(op, (input,), (input._data,), kernel=kernel, stride=strides, padding=pads,
                 out_size=out_size, ceil_mode=bool(ceil_mode),
                 count_include_pad=bool(count_include_pad),
                 divisor_override=None if divisor_override is None else int(divisor_override))


@export(functional=True)
def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-D average pooling of a (C, L) or (N, C, L) input: ``avg_pool2d`` on a height of 1."""
    kernel = _tuple(kernel_size, "avg_pool1d", "kernel_size", 2)
    strides = () if stride is None else _tuple(stride, "avg_pool1d", "stride", 3)
    strides = strides or kernel
    pads = _tuple(padding, "avg_pool1d", "padding", 4)
    _check_dim_range("avg_pool1d", input, 2, 4)
    for arg, values in (("kernel_size", kernel), ("stride", strides), ("padding", pads)):
        _check1d("avg_pool1d", arg, values)
    out = avg_pool2d(input.unsqueeze(-2), (1, kernel[0]), (1, strides[0]), (0, pads[0]),
                     ceil_mode, count_include_pad)
    return out.squeeze(-2)


def _output_size_arg(output_size, shape) -> tuple:
    """``output_size`` (an int, or a tuple whose None entries keep the input's size), as
    ``torch.nn.functional``'s ``_list_with_default``."""
    if isinstance(output_size, (list, tuple)):
        if len(shape) <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        defaults = shape[len(shape) - len(output_size):]
        return tuple(d if v is None else int(v) for v, d in zip(output_size, defaults))
    if output_size is None:
        raise TypeError("object of type 'NoneType' has no len()")
    return (int(output_size),) * 2


@export(function=False, functional=True)
def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """The mean of each of ``output_size`` windows that tile the last two dimensions (window
    ``i`` of ``n`` over a size ``L``: ``[floor(i*L/n), ceil((i+1)*L/n))``); an output of (1, 1)
    is the mean over those dimensions, as PyTorch's."""
    out_size = _output_size_arg(output_size, tuple(input._data.shape))
    return _adaptive_avg_pool2d(input, out_size)


def _adaptive_avg_pool2d(input: Tensor, out_size: tuple) -> Tensor:
    if len(out_size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if out_size[0] < 0 or out_size[1] < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or "
                           f"equal to 0 but received {{{out_size[0]}, {out_size[1]}}}")
    if out_size == (1, 1):
        return input.mean((-1, -2), keepdim=True)
    shape = tuple(input._data.shape)
    ndim = len(shape)
    if ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{_sizes(shape)}")
    for dim in (-2, -1):
        if shape[dim] <= 0:
            raise RuntimeError("adaptive_avg_pool2d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_sizes(shape)} with "
                               f"dimension {dim + ndim} being empty")
    if input._data.dtype.kind not in "fV":
        _not_implemented("adaptive_avg_pool2d", input)
    return apply(AdaptiveAvgPool2d, (input,), (input._data,), out_size=tuple(out_size))


@export(functional=True)
def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """1-D adaptive average pooling of a (C, L) or (N, C, L) input."""
    _check_dim_range("adaptive_avg_pool1d", input, 2, 4)
    size = _tuple(output_size)
    _check1d("adaptive_avg_pool1d", "output_size", size)
    return _adaptive_avg_pool2d(input.unsqueeze(-2), (1, size[0])).squeeze(-2)


def _adaptive_max_pool2d(input: Tensor, out_size: tuple, name: str = "adaptive_max_pool2d"):
    shape = tuple(input._data.shape)
    ndim = len(shape)
    if ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{_sizes(shape)}")
    for dim in range(1, ndim):
        if shape[dim] <= 0:
            raise RuntimeError("adaptive_max_pool2d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_sizes(shape)} with "
                               f"dimension {dim} being empty")
    if len(out_size) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    if out_size[0] < 0 or out_size[1] < 0:
        bad = next(s for s in out_size if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                           f"{_sizes(shape[:-2] + tuple(out_size))}")
    if input._data.dtype.kind not in "fV":
        _not_implemented(name, input)
    indices = []
    out = apply(AdaptiveMaxPool2d, (input,), (input._data,), indices=indices,
                out_size=tuple(out_size))
    return out, Tensor._wrap(indices[0])


@export(function=False, functional=True)
def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """The largest element of each of ``output_size`` windows that tile the last two
    dimensions (as ``adaptive_avg_pool2d``'s); with ``return_indices``, also its index in its
    plane."""
    size = _output_size_arg(output_size, tuple(input._data.shape))
    out, indices = _adaptive_max_pool2d(input, size)
    return (out, indices) if return_indices else out


@export(function=False, functional=True)
def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """1-D adaptive max pooling of a (C, L) or (N, C, L) input."""
    _check_dim_range("adaptive_max_pool1d", input, 2, 4)
    size = _tuple(output_size)
    _check1d("adaptive_max_pool1d", "output_size", size)
    shape = tuple(input._data.shape)
    for dim in range(1, len(shape)):
        if shape[dim] <= 0:
            raise RuntimeError("adaptive_max_pool1d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_sizes(shape)} with "
                               f"dimension {dim} being empty")
    out, indices = _adaptive_max_pool2d(input.unsqueeze(-2), (1, size[0]))
    out = out.squeeze(-2)
    return (out, indices.squeeze(-2)) if return_indices else out


# ---------------------------------------------------------------------- 3-D pooling
@register
class MaxPool3dWithIndices(_MaxPoolWithIndices):
    name, node = "max_pool3d_with_indices", "MaxPool3DWithIndicesBackward0"
    pool_kernel = "max_pool3d"
    self_saved = True
    samples = (
        Sample(lambda m, x: _F(m).max_pool3d(x, 2), ((2, 2, 4, 4, 3),)),
        Sample(lambda m, x: _F(m).max_pool3d(x, (3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1),
                                             dilation=(1, 2, 1), ceil_mode=True),
               ((2, 5, 4, 3),)),
    )


@register
class MaxPool3dWithIndicesBackward(_IndexScatter):
    name, node = "max_pool3d_with_indices_backward", "MaxPool3DWithIndicesBackwardBackward0"
    dims = 3
    samples = (
        Sample(lambda m, x, v: m.autograd.grad(_F(m).max_pool3d(x, 2, stride=1), x, v,
                                               create_graph=True)[0],
               ((1, 2, 3, 3, 2), (1, 2, 2, 2, 1))),
    )


MaxPool3dWithIndices.backward_op = MaxPool3dWithIndicesBackward


@register
class AvgPool3d(_AvgPool):
    name, node = "avg_pool3d", "AvgPool3DBackward0"
    pool_kernel = "avg_pool3d"
    self_saved = True
    samples = (
        Sample(lambda m, x: _F(m).avg_pool3d(x, 2), ((2, 2, 4, 4, 3),)),
        Sample(lambda m, x: _F(m).avg_pool3d(x, (3, 2, 2), stride=(2, 1, 2), padding=1,
                                             ceil_mode=True, count_include_pad=False),
               ((2, 5, 4, 3),)),
        Sample(lambda m, x: _F(m).avg_pool3d(x, 2, padding=(0, 1, 1), divisor_override=3),
               ((1, 1, 2, 3, 3),)),
    )


@register
class AvgPool3dBackward(_AvgPoolBackward):
    name, node = "avg_pool3d_backward", "AvgPool3DBackwardBackward0"
    dims = 3
    pool_kernel, forward_op = "avg_pool3d_backward", AvgPool3d
    samples = (
        Sample(lambda m, x, v: m.autograd.grad(_F(m).avg_pool3d(x, 2, stride=1, padding=1), x,
                                               v, create_graph=True)[0],
               ((1, 2, 2, 3, 2), (1, 2, 3, 4, 3))),
    )


AvgPool3d.backward_op = AvgPool3dBackward


@register
class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    name, node = "adaptive_avg_pool3d", "AdaptiveAvgPool3DBackward0"
    pool_kernel = "adaptive_avg_pool3d"
    self_saved = True
    samples = (
        Sample(lambda m, x: _F(m).adaptive_avg_pool3d(x, (2, 3, 2)), ((2, 2, 3, 5, 4),)),
        Sample(lambda m, x: _F(m).adaptive_avg_pool3d(x, (None, 2, 3)), ((2, 3, 4, 5),)),
    )


@register
class AdaptiveAvgPool3dBackward(_AdaptiveAvgPoolBackward):
    name, node = "adaptive_avg_pool3d_backward", "AdaptiveAvgPool3DBackwardBackward0"
    dims = 3
    pool_kernel, forward_op = "adaptive_avg_pool3d_backward", AdaptiveAvgPool3d
    samples = (
        Sample(lambda m, x, v: m.autograd.grad(_F(m).adaptive_avg_pool3d(x, (2, 2, 3)), x, v,
                                               create_graph=True)[0],
               ((1, 2, 3, 3, 4), (1, 2, 2, 2, 3))),
    )


AdaptiveAvgPool3d.backward_op = AdaptiveAvgPool3dBackward


def _shape_check3d(x: Tensor, kernel, stride, padding, dilation, out_size, avg: bool) -> None:
    """ATen's ``pool3d_shape_check``."""
    shape = tuple(x._data.shape)
    (kt, kh, kw), (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = kernel, stride, padding, dilation
    if kt <= 0 or kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {kt} kH: {kh} "
                           f"kW: {kw}")
    if st <= 0 or sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {st} dH: {sh} "
                           f"dW: {sw}")
    if dt <= 0 or dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {dt} "
                           f"dilationH: {dh} dilationW: {dw}")
    fn = "avg_pool3d()" if avg else "max_pool3d_with_indices_out_cpu_template()"
    for dim in range(1 if len(shape) == 5 else 0, len(shape)):
        if shape[dim] <= 0:  # (ATen prints the size, so always "dimension 0")
            raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {_sizes(shape)} and non-batch "
                               f"dimension {shape[dim]} has length zero!")
    it, ih, iw = shape[-3:]
    if avg and (it < kt or ih < kh or iw < kw):
        raise RuntimeError(f"input image (T: {it} H: {ih} W: {iw}) smaller than kernel size "
                           f"(kT: {kt} kH: {kh} kW: {kw})")
    if kt // 2 < pt or kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {kt} kW: {kw} kH: {kh} padT: {pt} padW: {pw} padH: {ph}")
    ot, oh, ow = out_size
    if ot < 1 or oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({shape[-4]}x{it}x{ih}x{iw}). Calculated output "
                           f"size: ({shape[-4]}x{ot}x{oh}x{ow}). Output size is too small")


@export(functional=True)
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """The largest element of each ``kernel_size`` window of the last three dimensions of a
    (C, D, H, W) or (N, C, D, H, W) input (as ``max_pool2d``'s, with a depth); with
    ``return_indices``, also the index of each maximum in its volume (``(d*H + h)*W + w``)."""
    out, indices = _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)
    _stride_given(out, stride)
    return (out, indices) if return_indices else out


@export(function=False, functional=True)
def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """``(output, indices)`` of 3-D max pooling."""
    out, indices = _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)
    _stride_given(out, stride)
    return out, indices


@export(function=False, functional=True)
def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """The mean of each ``kernel_size`` window of the last three dimensions of a (C, D, H, W)
    or (N, C, D, H, W) input, with ``avg_pool2d``'s divisors."""
    kernel, strides, pads, _ = _pool_args("avg_pool3d", kernel_size, stride, padding, 1, 3,
                                          "must be")
    shape = tuple(input._data.shape)
    if len(shape) not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    out_size = _output_sizes(shape, kernel, pads, strides, (1, 1, 1), ceil_mode)
    _shape_check3d(input, kernel, strides, pads, (1, 1, 1), out_size, True)
    if input._data.dtype.name not in _AVG_POOL3D_DTYPES:
        _not_implemented("avg_pool3d_out_frame", input)
    out = _avg_pool(AvgPool3d, input, kernel, strides, pads, out_size, ceil_mode,
                    count_include_pad, divisor_override)
    _stride_given(out, stride)
    return out


@export(function=False, functional=True)
def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """The mean of each of ``output_size`` adaptive windows of the last three dimensions (an
    int, or a triple whose None entries keep the input's size); (1, 1, 1) is the mean."""
    shape = tuple(input._data.shape)
    if isinstance(output_size, (list, tuple)):
        out_size = _output_size_arg(output_size, shape)
    elif output_size is None:
        raise TypeError("object of type 'NoneType' has no len()")
    else:
        out_size = (int(output_size),) * 3
    if len(out_size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    if any(v < 0 for v in out_size):
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than or "
                           f"equal to 0 but received {{{out_size[0]}, {out_size[1]},"
                           f"{out_size[2]}}}")
    if out_size == (1, 1, 1):
        return input.mean((-1, -2, -3), keepdim=True)
    ndim = len(shape)
    if ndim not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{_sizes(shape)}")
    for dim in range(1, ndim):
        if shape[dim] <= 0:
            raise RuntimeError("adaptive_avg_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {_sizes(shape)} with "
                               f"dimension {dim} being empty")
    if input._data.dtype.kind not in "fV":
        _not_implemented("adaptive_avg_pool3d_cpu", input)
    kernels_for((input,), AdaptiveAvgPool3d)
    return apply(AdaptiveAvgPool3d, (input,), (input._data,), out_size=tuple(out_size))
