"""Padding as ops: ``constant_pad_nd`` (any number of trailing dimensions, negative pads crop),
reflection and replication padding of the last dimension (``reflection_pad1d``,
``replication_pad1d``: (C, W) or (N, C, W)), of the last two (``reflection_pad2d``,
``replication_pad2d``: (C, H, W) or (N, C, H, W)) or of the last three (``reflection_pad3d``,
``replication_pad3d``: (C, D, H, W) or (N, C, D, H, W)), and ``pad``, ``torch.nn.functional.pad``'s
dispatch among them with PyTorch's checks and messages; 'circular' is PyTorch's composite of
slice copies (nodes ``CopySlices``).

``constant_pad_nd`` is a fill and one strided copy (``K.full``, ``K.assign``); its backward is
``constant_pad_nd`` of the gradient with the pads negated, as ATen's. Reflection and replication
gather from the input (``K.pooling.pad2d``); each one's backward is an op of its own (ATen's
``reflection_pad2d_backward`` ...) that adds each output's gradient to the element it copies, and
whose derivative with respect to the gradient is the padding again.
"""
from __future__ import annotations

import numbers

from ..tensor import Tensor
from ._names import export
from .pooling import _sizes, _type_name, _zeros_like_input
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from ..creation import empty

REFLECT, REPLICATE = 0, 1  # kernels/*/pooling.py's modes


def _F(m):
    return m.nn.functional


# ---------------------------------------------------------------------- constant
def _narrow_message() -> RuntimeError:
    return RuntimeError("narrow(): length must be non-negative.")


@register
class ConstantPadNd(Op):
    """``value`` around the input (``pad`` = (left, right) of the last dimension, then of the one
    before, ...; negative pads crop)."""

    name, node = "constant_pad_nd", "ConstantPadNdBackward0"
    complex_ok = True
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, x: _F(m).pad(x, (1, 2)), ((2, 3),)),
        Sample(lambda m, x: _F(m).pad(x, (2, -1, -1, 1, 0, 1), value=0.5), ((2, 3, 4),)),
        Sample(lambda m, x: m.nn.ZeroPad2d((1, 0, 2, 1))(x), ((1, 2, 2, 3),)),
    )

    @staticmethod
    def forward(K, x, *, pad, value):
        shape = tuple(x.shape)
        n = len(pad) // 2
        out_shape = list(shape)
        src, dst = [slice(None)] * len(shape), [slice(None)] * len(shape)
        for i in range(n):
            dim = len(shape) - 1 - i
            left, right = pad[2 * i], pad[2 * i + 1]
            out_shape[dim] = shape[dim] + left + right
            src[dim] = slice(max(-left, 0), shape[dim] - max(-right, 0))
            dst[dim] = slice(max(left, 0), out_shape[dim] - max(right, 0))
        out = K.full(tuple(out_shape), value, x.dtype)
        if x.size and all(s.stop > s.start for s, d in zip(src, dst) if s.start is not None):
            K.assign(K.view_index(out, tuple(dst)), K.view_index(x, tuple(src)))
        return out

    @staticmethod
    def backward(ctx, grad):
        pad = tuple(-p for p in ctx.params["pad"])
        return (apply(ConstantPadNd, (grad,), (grad._data,), pad=pad, value=0),)


@export
def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """ATen's ``constant_pad_nd``: ``input`` padded by ``value`` (negative pads crop)."""
    pad = tuple(int(p) for p in pad)
    shape = tuple(input._data.shape)
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals " f"{len(pad)}")
    if len(pad) // 2 > len(shape):
        raise RuntimeError("Length of pad should be no more than twice the number of dimensions "
                           f"of the input. Pad length is {len(pad)} while the input has "
                           f"{len(shape)} dimensions.")
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        size = shape[dim]
        left, right = pad[2 * i], pad[2 * i + 1]
        if left < 0:
            size += left
            if size < 0:
                raise _narrow_message()
        if right < 0:
            size += right
            if size < 0:
                raise _narrow_message()
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        new = shape[dim] + pad[2 * i] + pad[2 * i + 1]
        if new < 0:
            raise RuntimeError(f"The input size {shape[dim]}, plus negative padding "
                               f"{pad[2 * i]} and {pad[2 * i + 1]} resulted in a negative output "
                               f"size, which is invalid. Check dimension {dim} of your input.")
    kind = input._data.dtype.kind
    value = bool(value) if kind == "b" else int(value) if kind in "iu" else \
        complex(value) if kind == "c" else float(value)
    return apply(ConstantPadNd, (input,), (input._data,), pad=pad, value=value)


# ---------------------------------------------------------------------- reflection, replication
class _Pad(Op):
    """Reflection or replication padding of the last ``dims`` dimensions."""

    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    save_inputs = (0,)  # (backward needs only its shape; saved as PyTorch saves it)
    mode = REFLECT
    dims = 2
    backward_op: type = None

    @classmethod
    def forward(cls, K, x, *, pad):
        return _pad_kernel(K, x, pad, cls.mode, cls.dims)

    @classmethod
    def backward(cls, ctx, grad):
        shape = tuple(ctx.input_shapes[0])
        return (apply(cls.backward_op, (grad, None), (grad._data,), shape=shape,
                      pad=ctx.params["pad"]),)


def _pad_kernel(K, x, pad, mode: int, dims: int):
    """``x`` padded over its last ``dims`` dimensions through the kernels' 2-D padding: a 1-D
    padding is a 2-D one of height 1; a 3-D one pads (H, W) of each depth slice, then the depth
    (the padding is a product of one map per dimension, so the two passes make it exactly)."""
    x = K.ascontiguous(x)
    shape = tuple(x.shape)
    if dims == 1:
        out = K.pooling.pad2d(K.reshape_view(x, shape[:-1] + (1, shape[-1])),
                              (pad[0], pad[1], 0, 0), mode)
        return K.reshape_view(out, shape[:-1] + (tuple(out.shape)[-1],))
    if dims == 2:
        return K.pooling.pad2d(x, tuple(pad), mode)
    lead, (depth, height, width) = shape[:-3], shape[-3:]
    planes = _prod(lead)
    inner = K.pooling.pad2d(K.reshape_view(x, (planes * depth, height, width)), tuple(pad[:4]),
                            mode)
    oheight, owidth = tuple(inner.shape)[-2:]
    out = K.pooling.pad2d(K.reshape_view(inner, (planes, depth, oheight * owidth)),
                          (0, 0, pad[4], pad[5]), mode)
    return K.reshape_view(out, lead + (depth + pad[4] + pad[5], oheight, owidth))


def _pad_backward_kernel(K, grad, shape, pad, mode: int, dims: int):
    """The gradient of ``_pad_kernel`` for an input of ``shape``."""
    grad = K.ascontiguous(grad)
    gshape = tuple(grad.shape)
    if dims == 1:
        g = K.reshape_view(grad, gshape[:-1] + (1, gshape[-1]))
        out = K.pooling.pad2d_backward(g, (1, shape[-1]), (pad[0], pad[1], 0, 0), mode)
        return K.reshape_view(out, shape)
    if dims == 2:
        return K.pooling.pad2d_backward(grad, shape[-2:], tuple(pad), mode)
    lead, (depth, height, width) = shape[:-3], shape[-3:]
    planes = _prod(lead)
    odepth, oheight, owidth = gshape[-3:]
    outer = K.pooling.pad2d_backward(K.reshape_view(grad, (planes, odepth, oheight * owidth)),
                                     (depth, oheight * owidth), (0, 0, pad[4], pad[5]), mode)
    inner = K.pooling.pad2d_backward(K.reshape_view(outer, (planes * depth, oheight, owidth)),
                                     (height, width), tuple(pad[:4]), mode)
    return K.reshape_view(inner, shape)


def _prod(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


class _PadBackward(Op):
    """The gradient of a padding: each output's gradient added to the element it copies. Linear
    in ``grad``; its adjoint is the padding."""

    complex_ok = True
    jvp = _jvp.linear
    on_cuda = True
    forward_op: type = None

    @classmethod
    def forward(cls, K, grad, *, shape, pad):
        op = cls.forward_op
        return _pad_backward_kernel(K, grad, tuple(shape), pad, op.mode, op.dims)

    @classmethod
    def backward(cls, ctx, grad):
        need_grad, need_self = ctx.needs_input_grad
        p = ctx.params
        padded = apply(cls.forward_op, (grad,), (grad._data,), pad=p["pad"]) if need_grad \
            else None
        return padded, (_zeros_like_input(grad, p["shape"]) if need_self else None)


@register
class ReflectionPad1d(_Pad):
    name, node, mode, dims = "reflection_pad1d", "ReflectionPad1DBackward0", REFLECT, 1
    samples = (
        Sample(lambda m, x: _F(m).pad(x, (2, 1), mode="reflect"), ((2, 2, 4),)),
        Sample(lambda m, x: m.nn.ReflectionPad1d((-1, 3))(x), ((3, 5),)),
    )


@register
class ReflectionPad2d(_Pad):
    name, node, mode, dims = "reflection_pad2d", "ReflectionPad2DBackward0", REFLECT, 2
    samples = (
        Sample(lambda m, x: _F(m).pad(x, (2, 1, 1, 2), mode="reflect"), ((1, 2, 3, 4),)),
        Sample(lambda m, x: m.nn.ReflectionPad2d((0, 2, -1, 1))(x), ((2, 4, 3),)),
    )


@register
class ReplicationPad1d(_Pad):
    name, node, mode, dims = "replication_pad1d", "ReplicationPad1DBackward0", REPLICATE, 1
    samples = (
        Sample(lambda m, x: _F(m).pad(x, (3, 1), mode="replicate"), ((2, 2, 3),)),
        Sample(lambda m, x: m.nn.ReplicationPad1d((2, -1))(x), ((3, 4),)),
    )


@register
class ReplicationPad2d(_Pad):
    name, node, mode, dims = "replication_pad2d", "ReplicationPad2DBackward0", REPLICATE, 2
    samples = (
        Sample(lambda m, x: _F(m).pad(x, (1, 3, 2, 0), mode="replicate"), ((1, 2, 3, 2),)),
        Sample(lambda m, x: m.nn.ReplicationPad2d(1)(x), ((2, 3, 3),)),
    )


@register
class ReflectionPad3d(_Pad):
    name, node, mode, dims = "reflection_pad3d", "ReflectionPad3DBackward0", REFLECT, 3
    samples = (
        Sample(lambda m, x: _F(m).pad(x, (1, 2, -1, 1, 2, 1), mode="reflect"), ((1, 1, 3, 3, 4),)),
    )


@register
class ReplicationPad3d(_Pad):
    name, node, mode, dims = "replication_pad3d", "ReplicationPad3DBackward0", REPLICATE, 3
    samples = (
        Sample(lambda m, x: m.nn.ReplicationPad3d((2, 0, 1, 1, 0, 2))(x), ((2, 2, 3, 2),)),
    )


def _backward_sample(name: str, pad, shapes):
    return Sample(lambda m, g, x: getattr(m.ops, name)(g, x, list(pad)), shapes)


@register
class ReflectionPad1dBackward(_PadBackward):
    name, node = "reflection_pad1d_backward", "ReflectionPad1DBackwardBackward0"
    forward_op = ReflectionPad1d
    samples = (_backward_sample("reflection_pad1d_backward", (2, 1), ((2, 7), (2, 4))),)


@register
class ReflectionPad2dBackward(_PadBackward):
    name, node = "reflection_pad2d_backward", "ReflectionPad2DBackwardBackward0"
    forward_op = ReflectionPad2d
    samples = (_backward_sample("reflection_pad2d_backward", (1, 2, 2, 1),
                                ((1, 2, 6, 6), (1, 2, 3, 3))),)


@register
class ReplicationPad1dBackward(_PadBackward):
    name, node = "replication_pad1d_backward", "ReplicationPad1DBackwardBackward0"
    forward_op = ReplicationPad1d
    samples = (_backward_sample("replication_pad1d_backward", (3, 1), ((2, 2, 6), (2, 2, 2))),)


@register
class ReplicationPad2dBackward(_PadBackward):
    name, node = "replication_pad2d_backward", "ReplicationPad2DBackwardBackward0"
    forward_op = ReplicationPad2d
    samples = (_backward_sample("replication_pad2d_backward", (2, 0, 1, 1),
                                ((2, 5, 5), (2, 3, 3))),)


@register
class ReflectionPad3dBackward(_PadBackward):
    name, node = "reflection_pad3d_backward", "ReflectionPad3DBackwardBackward0"
    forward_op = ReflectionPad3d
    samples = (_backward_sample("reflection_pad3d_backward", (1, 0, 2, 1, 1, 1),
                                ((1, 4, 6, 4), (1, 2, 3, 3))),)


@register
class ReplicationPad3dBackward(_PadBackward):
    name, node = "replication_pad3d_backward", "ReplicationPad3DBackwardBackward0"
    forward_op = ReplicationPad3d
    samples = (_backward_sample("replication_pad3d_backward", (0, 2, 1, 0, 2, -1),
                                ((1, 1, 3, 3, 4), (1, 1, 2, 2, 2))),)


for _op in (ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
            ReplicationPad2d, ReplicationPad3d):
    _op.backward_op = {ReflectionPad1d: ReflectionPad1dBackward,
                       ReflectionPad2d: ReflectionPad2dBackward,
                       ReflectionPad3d: ReflectionPad3dBackward,
                       ReplicationPad1d: ReplicationPad1dBackward,
                       ReplicationPad2d: ReplicationPad2dBackward,
                       ReplicationPad3d: ReplicationPad3dBackward}[_op]


def _check_valid_input(x: Tensor, dims: int, pad) -> None:
    """ATen's ``padding::check_valid_input``."""
    shape = tuple(x._data.shape)
    if len(pad) != 2 * dims:
        raise RuntimeError(f"padding size is expected to be {2 * dims}, but got: {len(pad)}")
    batch = len(shape) == dims + 2
    if batch:
        valid = all(s != 0 for s in shape[1:])
    else:
        valid = all(s != 0 for s in shape)
    if not valid or len(shape) not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with "
                           "possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {_sizes(shape)}")


def _check_pad(op: type, x: Tensor, pad) -> tuple:
    """ATen's checks of reflection and replication padding, in its order."""
    pad = tuple(int(p) for p in pad)
    dims = op.dims
    _check_valid_input(x, dims, pad)
    shape = tuple(x._data.shape)
    ndim = len(shape)
    width = shape[-1]
    out_w = width + pad[0] + pad[1]
    if dims == 1:
        if op.mode == REFLECT and not (pad[0] < width and pad[1] < width):
            raise RuntimeError("Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({pad[0]}, {pad[1]}) at "
                               f"dimension {ndim - 1} of input {_sizes(shape)}")
        if out_w < 1:
            raise RuntimeError(f"input (W: {width}) is too small. Calculated output W: {out_w}")
    elif dims == 3:
        height, depth = shape[-2], shape[-3]
        out_h = height + pad[2] + pad[3]
        out_d = depth + pad[4] + pad[5]
        if op.mode == REFLECT:
            for arg, (a, b), size, dim in ((4, pad[0:2], width, ndim - 1),
                                           (6, pad[2:4], height, ndim - 2),
                                           (8, pad[4:6], depth, ndim - 3)):
                if not (a < size and b < size):
                    raise RuntimeError(f"Argument #{arg}: Padding size should be less than the "
                                       "corresponding input dimension, but got: padding "
                                       f"({a}, {b}) at dimension {dim} of input "
                                       f"{_sizes(shape)}")
        if out_w < 1 and out_h < 1 and out_d < 1:
            raise RuntimeError(f"input (D: {depth} H: {height}, W: {width}) is too small. "
                               f"Calculated output D: {out_d} H: {out_h} W: {out_w}")
        if out_w < 0 or out_h < 0 or out_d < 0:
            bad = next(s for s in (out_d, out_h, out_w) if s < 0)
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                               f"{_sizes(shape[:-3] + (out_d, out_h, out_w))}")
    else:
        height = shape[-2]
        out_h = height + pad[2] + pad[3]
        if op.mode == REFLECT:
            if not (pad[0] < width and pad[1] < width):
                raise RuntimeError("Argument #4: Padding size should be less than the "
                                   "corresponding input dimension, but got: padding "
                                   f"({pad[0]}, {pad[1]}) at dimension {ndim - 1} of input "
                                   f"{_sizes(shape)}")
            if not (pad[2] < height and pad[3] < height):
                raise RuntimeError("Argument #6: Padding size should be less than the "
                                   "corresponding input dimension, but got: padding "
                                   f"({pad[2]}, {pad[3]}) at dimension {ndim - 2} of input "
                                   f"{_sizes(shape)}")
        if out_w < 1 and out_h < 1:
            space = " " if op.mode == REPLICATE else ""
            raise RuntimeError(f"input (H: {height}, W: {width}{space}) is too small. Calculated "
                               f"output H: {out_h} W: {out_w}")
        if out_w < 0 or out_h < 0:
            if op.mode == REFLECT:
                raise RuntimeError("numel: integer multiplication overflow")
            bad = out_h if out_h < 0 else out_w
            raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                               f"{_sizes(shape[:-2] + (out_h, out_w))}")
    if x._data.dtype.kind not in "fiucV":  # ("V": bfloat16, computed widened)
        raise NotImplementedError(f"\"{op.name}\" not implemented for '{_type_name(x)}'")
    return pad


def _padded(op: type, input: Tensor, pad) -> Tensor:
    pad = _check_pad(op, input, pad)
    return apply(op, (input,), (input._data,), pad=pad)


def reflection_pad3d(input: Tensor, padding) -> Tensor:
    return _padded(ReflectionPad3d, input, padding)


def replication_pad3d(input: Tensor, padding) -> Tensor:
    return _padded(ReplicationPad3d, input, padding)


@export(aten=True)
def reflection_pad3d_backward(grad_output: Tensor, self: Tensor, padding) -> Tensor:
    return _pad_backward(ReflectionPad3dBackward, grad_output, self, padding)


@export(aten=True)
def replication_pad3d_backward(grad_output: Tensor, self: Tensor, padding) -> Tensor:
    return _pad_backward(ReplicationPad3dBackward, grad_output, self, padding)


def reflection_pad1d(input: Tensor, padding) -> Tensor:
    return _padded(ReflectionPad1d, input, padding)


def reflection_pad2d(input: Tensor, padding) -> Tensor:
    return _padded(ReflectionPad2d, input, padding)


def replication_pad1d(input: Tensor, padding) -> Tensor:
    return _padded(ReplicationPad1d, input, padding)


def replication_pad2d(input: Tensor, padding) -> Tensor:
    return _padded(ReplicationPad2d, input, padding)


def _pad_backward(op: type, grad_output: Tensor, self: Tensor, padding) -> Tensor:
    kernels_for((grad_output, self), op)
    if self._data.ndim == 0:
        if op is ReflectionPad3dBackward:
            raise RuntimeError("Expected input.dim() > 3 to be true, but got false.  (Could this "
                               "error message be improved?  If so, please report an enhancement "
                               "request to PyTorch.)")
        dim = 0 if op is ReplicationPad3dBackward else 1
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    _check_valid_input(self, op.forward_op.dims, tuple(padding))
    if grad_output._data.dtype.kind not in "fcV":  # ("V": bfloat16, computed widened)
        raise NotImplementedError(f"\"{op.name}\" not implemented for "
                                  f"'{_type_name(grad_output)}'")
    return apply(op, (grad_output, self), (grad_output._data,), shape=tuple(self._data.shape),
                 pad=tuple(int(p) for p in padding))


@export(aten=True)
def reflection_pad1d_backward(grad_output: Tensor, self: Tensor, padding) -> Tensor:
    """ATen's ``reflection_pad1d_backward``."""
    return _pad_backward(ReflectionPad1dBackward, grad_output, self, padding)


@export(aten=True)
def reflection_pad2d_backward(grad_output: Tensor, self: Tensor, padding) -> Tensor:
    return _pad_backward(ReflectionPad2dBackward, grad_output, self, padding)


@export(aten=True)
def replication_pad1d_backward(grad_output: Tensor, self: Tensor, padding) -> Tensor:
    return _pad_backward(ReplicationPad1dBackward, grad_output, self, padding)


@export(aten=True)
def replication_pad2d_backward(grad_output: Tensor, self: Tensor, padding) -> Tensor:
    return _pad_backward(ReplicationPad2dBackward, grad_output, self, padding)


# ---------------------------------------------------------------------- circular
def _pad_circular(input: Tensor, pad) -> Tensor:
    """ATen's ``_pad_circular``: the input copied into the middle of a new tensor, then the
    borders copied from its far side (each copy a ``CopySlices`` node)."""
    shape = tuple(input._data.shape)
    ndim = len(shape)
    n_padded = len(pad) // 2
    n_kept = ndim - n_padded
    if n_kept not in (1, 2):
        raise RuntimeError("Invalid padding size, expected 1 or 2 non-padded dimensions, which "
                           f"would be equivalent to padding of length {(ndim - 1) * 2} or "
                           f"{(ndim - 2) * 2} respectively but got {len(pad)}")
    out_shape = list(shape)
    for i in range(n_padded):
        left, right = pad[2 * (n_padded - i - 1)], pad[2 * (n_padded - i - 1) + 1]
        size = shape[n_kept + i]
        out_shape[n_kept + i] = size + left + right
        if not (left <= size and right <= size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out_shape[n_kept + i] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = empty(tuple(out_shape), dtype=input.dtype, device=input.device)
    dst, src = [slice(None)] * ndim, [slice(None)] * ndim
    for i in range(n_padded):
        dim = n_padded - i + n_kept - 1
        left, right = pad[2 * i], pad[2 * i + 1]
        dst[dim] = slice(max(left, 0), out_shape[dim] - max(right, 0))
        src[dim] = slice(max(-left, 0), shape[dim] - max(-right, 0))
    # (assignments, which refuse a copy between overlapping blocks of memory as PyTorch's copy_)
    out[tuple(dst)] = input[tuple(src)]
    for i in range(n_padded):
        dim = n_padded - i + n_kept - 1
        left, right = pad[2 * i], pad[2 * i + 1]
        before = (slice(None),) * dim
        if left > 0:
            far = out_shape[dim] - max(right, 0)
            out[before + (slice(0, left),)] = out[before + (slice(far - left, far),)]
        if right > 0:
            near = max(left, 0)
            out[before + (slice(out_shape[dim] - right, out_shape[dim]),)] = \
                out[before + (slice(near, near + right),)]
    return out


# ---------------------------------------------------------------------- F.pad
_SUPPORTED = ("\nSupported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
_MODES = ("constant", "reflect", "replicate", "circular")


@export(function=False, functional=True)
def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """``input`` padded by ``pad`` = (left, right) of the last dimension, then (top, bottom) of
    the one before, ...: with ``value`` ('constant', any number of dimensions; negative pads
    crop), by reflection about the edge ('reflect'), by repeating the edge ('replicate') or by
    wrapping around ('circular'), as ``torch.nn.functional.pad``."""
    if not isinstance(pad, (list, tuple)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, numbers.Integral):
            raise TypeError("pad(): argument 'pad' (position 2) must be tuple of ints, but found "
                            f"element of type {type(p).__name__} at pos {i}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    ndim = input._data.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > ndim * 2:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{ndim}")
    if mode == "constant":
        return constant_pad_nd(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if len(pad) == 2 and ndim in (2, 3):
        if mode == "circular":
            return _pad_circular(input, pad)
        return (reflection_pad1d if mode == "reflect" else replication_pad1d)(input, pad)
    if len(pad) == 4 and ndim in (3, 4):
        if mode == "circular":
            return _pad_circular(input, pad)
        return (reflection_pad2d if mode == "reflect" else replication_pad2d)(input, pad)
    if len(pad) == 6 and ndim in (4, 5):
        if mode == "circular":
            return _pad_circular(input, pad)
        return (reflection_pad3d if mode == "reflect" else replication_pad3d)(input, pad)
    raise NotImplementedError(f"Padding size {len(pad)} is not supported for {ndim}D input "
                              f"tensor.{_SUPPORTED}")
