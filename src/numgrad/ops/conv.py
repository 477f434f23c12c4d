"""Convolution: ``conv1d``, ``conv2d``, ``conv3d``, the transposed ``conv_transpose1d/2d/3d`` and
ATen's ``convolution``, with PyTorch's signatures, argument checks and messages, and its node
names.

A transposed convolution is the adjoint of a convolution: its forward is the convolution's
input gradient (``conv_backward_input``, the col2im of ``W.T @ x``), its input's gradient the
convolution of ``grad`` with the same weight, its weight's gradient the convolution's weight
gradient with the roles of ``x`` and ``grad`` swapped; so it reuses the three ops below (node
``ConvolutionBackward0`` for its forward, ``ConvolutionBackwardBackward0`` for its gradients, as
PyTorch's).

Three ops, each bilinear, whose derivatives are one another, so that every order of derivative
is recorded (``gradgradcheck`` passes, as PyTorch's convolution double backward):

- ``convolution`` (node ``ConvolutionBackward0``): ``y = conv(x, w) + b``;
- ``convolution_backward_input`` (``ConvolutionBackwardBackward0``, as the gradients PyTorch
  records with ``create_graph=True``): ``dL/dx = conv_backward_input(g, w)``, the adjoint of
  ``conv(., w)``; its derivative in ``g`` is ``conv(., w)``, in ``w`` the weight gradient;
- ``convolution_backward_weight`` (``ConvolutionBackwardBackward0``): ``dL/dw =
  conv_backward_weight(g, x)``; its derivative in ``g`` is ``conv(x, .)``, in ``x`` the input
  gradient.

The bias gradient is ``g.sum`` over the batch and the spatial dimensions. ``conv1d`` is the 2-D
kernel on a unit height: the ops view a 1-D input as ``(N, C, 1, L)`` inside their forward (the
node is the same ``ConvolutionBackward0``, the output ``(N, O, L)``). Padding is four numbers
(top, bottom, left, right), so that PyTorch's ``padding='same'`` with an even dilated kernel,
which needs one more on the far side, is computed in place (PyTorch pads a copy of the input).
"""
from __future__ import annotations

import numpy as np

from .._dtype import c_name, torch_name
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register



def _F(m):
    return m.nn.functional


def _params(p):
    return dict(stride=p["stride"], padding=p["padding"], dilation=p["dilation"],
                groups=p["groups"], one_d=p["one_d"])


def _as_2d(K, a, one_d):
    return K.unsqueeze(a, 2) if one_d else a


def _shape_2d(shape, one_d):
    shape = tuple(shape)
    return shape[:2] + (1,) + shape[2:] if one_d else shape


@register
class Convolution(Op):
    """``out[n, o] = bias[o] + sum_c,i,j weight[o, c, i, j] * x[n, g*C/G + c, y*s - p + i*d,
    ...]``: PyTorch's (non-transposed) convolution, 1-D or 2-D."""

    name, node = "convolution", "ConvolutionBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 0}  # x only for the weight's gradient, w only for the input's
    samples = (
        Sample(lambda m, x, w, b: _F(m).conv2d(x, w, b, stride=(2, 1), padding=1,
                                               dilation=(1, 2)), ((2, 2, 5, 5), (3, 2, 3, 2), (3,))),
        Sample(lambda m, x, w: _F(m).conv2d(x, w, groups=2, padding="same"),
               ((1, 4, 3, 4), (4, 2, 2, 3))),
        Sample(lambda m, x, w, b: _F(m).conv1d(x, w, b, stride=2, padding=1, dilation=2),
               ((2, 2, 7), (4, 2, 3), (4,))),
        # (depth C*kh = 64: the forward and weight gradient by shifted rows, kernels/cpu/conv.py)
        Sample(lambda m, x, w: _F(m).conv2d(x, w, padding=(1, 0)), ((1, 32, 3, 4), (2, 32, 2, 3))),
    )

    @staticmethod
    def forward(K, x, w, b, *, stride, padding, dilation, groups, one_d):
        out = K.conv.conv_forward(_as_2d(K, x, one_d), _as_2d(K, w, one_d), b, stride, padding,
                                  dilation, groups)
        return K.squeeze(out, (2,)) if one_d else out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors[:2]
        return _gradients(grad, x, w, *ctx.input_shapes[:2], _params(ctx.params),
                          ctx.needs_input_grad, False)


def _bias_dims(grad: Tensor) -> tuple:
    return (0,) + tuple(range(2, grad._data.ndim))


@register
class ConvolutionTranspose(Op):
    """``out = conv_backward_input(x, weight) + bias``: PyTorch's transposed convolution, 1-D,
    2-D or 3-D (weight ``(C_in, C_out / groups, *kernel)``), to an output of ``output_shape``
    (its output padding decided there)."""

    name, node = "convolution_transpose", "ConvolutionBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 0}
    samples = (
        Sample(lambda m, x, w, b: _F(m).conv_transpose2d(x, w, b, stride=(2, 1), padding=1,
                                                         output_padding=(1, 0), dilation=(1, 2)),
               ((2, 2, 3, 3), (2, 3, 3, 2), (3,))),
        Sample(lambda m, x, w: _F(m).conv_transpose1d(x, w, stride=2, groups=2),
               ((2, 4, 4), (4, 1, 3))),
        Sample(lambda m, x, w, b: _F(m).conv_transpose3d(x, w, b, stride=2, padding=(1, 0, 0)),
               ((1, 2, 2, 2, 2), (2, 2, 2, 2, 2), (2,)), gradgrad=False),
    )

    @staticmethod
    def forward(K, x, w, b, *, output_shape, stride, padding, dilation, groups, one_d):
        out = K.conv.conv_backward_input(_as_2d(K, x, one_d), _as_2d(K, w, one_d),
                                         _shape_2d(output_shape, one_d), stride, padding,
                                         dilation, groups)
        if one_d:
            out = K.squeeze(out, (2,))
        if b is not None:
            out = K.binary(K.ADD, out, K.reshape_view(b, (b.shape[0],) + (1,) * (out.ndim - 2)))
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors[:2]
        return _gradients(grad, x, w, *ctx.input_shapes[:2], _params(ctx.params),
                          ctx.needs_input_grad, True)


@register
class ConvolutionTransposeBackwardInput(Convolution):
    """The input's gradient of ``convolution_transpose``: the convolution of ``grad`` with the
    weight (``Convolution`` itself, under the node name PyTorch gives that gradient)."""

    name, node = "convolution_transpose_backward_input", "ConvolutionBackwardBackward0"
    jvp = _jvp.transposed_backward
    samples = (
        Sample(lambda m, x, w, v: m.autograd.grad(
            _F(m).conv_transpose2d(x, w, stride=2, padding=1), x, v, create_graph=True)[0],
            ((1, 2, 3, 2), (2, 2, 2, 3), (1, 2, 4, 3))),
    )


@register
class ConvolutionBackwardInput(Op):
    """The input's gradient of ``convolution``, from the output's gradient and the weight (the
    transposed convolution of ``grad`` with ``weight``)."""

    name, node = "convolution_backward_input", "ConvolutionBackwardBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 0}
    samples = (
        Sample(lambda m, g, w: m.ops.convolution_backward(
            g, m.zeros(2, 4, 5, 5, dtype=g.dtype, device=g.device), w, None, [2, 1], [1, 0],
            [1, 2], False, [0, 0], 2, [True, False, False])[0], ((2, 6, 3, 3), (6, 2, 2, 2))),
    )

    @staticmethod
    def forward(K, grad, w, *, input_shape, stride, padding, dilation, groups, one_d):
        out = K.conv.conv_backward_input(_as_2d(K, grad, one_d), _as_2d(K, w, one_d),
                                         _shape_2d(input_shape, one_d), stride, padding,
                                         dilation, groups)
        return K.squeeze(out, (2,)) if one_d else out

    @staticmethod
    def backward(ctx, gg):
        grad, w = ctx.saved_tensors
        need_grad, need_w = ctx.needs_input_grad
        p = _params(ctx.params)
        # (As ATen's _convolution_double_backward: no gradient for grad_output from an empty
        # input.)
        empty = 0 in ctx.params["input_shape"]
        return (_convolution(gg, w, None, p) if need_grad and not empty else None,
                _backward_weight(grad, gg, ctx.input_shapes[1], p) if need_w else None)


@register
class ConvolutionBackwardWeight(Op):
    """The weight's gradient of ``convolution``, from the output's gradient and the input (the
    correlation of ``x`` with ``grad``, summed over the batch)."""

    name, node = "convolution_backward_weight", "ConvolutionBackwardBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    save_only_for = {0: 1, 1: 0}
    samples = (
        Sample(lambda m, g, x: m.ops.convolution_backward(
            g, x, m.zeros(4, 1, 2, 3, dtype=g.dtype, device=g.device), None, [1, 2], [1, 1],
            [2, 1], False, [0, 0], 2, [False, True, False])[1], ((2, 4, 4, 2), (2, 2, 4, 3))),
    )

    @staticmethod
    def forward(K, grad, x, *, weight_shape, stride, padding, dilation, groups, one_d):
        out = K.conv.conv_backward_weight(_as_2d(K, grad, one_d), _as_2d(K, x, one_d),
                                          _shape_2d(weight_shape, one_d), stride, padding,
                                          dilation, groups)
        return K.squeeze(out, (2,)) if one_d else out

    @staticmethod
    def backward(ctx, gg):
        grad, x = ctx.saved_tensors
        need_grad, need_x = ctx.needs_input_grad
        p = _params(ctx.params)
        if 0 in ctx.input_shapes[1]:  # (an empty input: none, as ATen's double backward)
            return None, None
        # (a transposed convolution's weight gradient is this op of its input and its output's
        # gradient: the correlation gives its input's shape cut where an output padding was
        # not under the stride)
        return (_cut(_convolution(x, gg, None, p), ctx.input_shapes[0]) if need_grad else None,
                _backward_input(grad, gg, ctx.input_shapes[1], p) if need_x else None)


def _convolution(x, w, b, p):
    return apply(Convolution, (x, w, b), (x._data, w._data, None if b is None else b._data), **p)


def _backward_input(grad, w, input_shape, p):
    return apply(ConvolutionBackwardInput, (grad, w), (grad._data, w._data),
                 input_shape=tuple(input_shape), **p)


def _backward_weight(grad, x, weight_shape, p):
    return apply(ConvolutionBackwardWeight, (grad, x), (grad._data, x._data),
                 weight_shape=tuple(weight_shape), **p)


def _gradients(grad, x, w, input_shape, weight_shape, p, mask, transposed: bool) -> tuple:
    """The gradients of a convolution (transposed or not) of ``x`` with ``w`` with respect to
    its input, weight and bias (None where ``mask`` says so), from the output's ``grad``."""
    grad_x = grad_w = grad_b = None
    if mask[0]:
        grad_x = (_transposed_backward_input(grad, w, input_shape, p) if transposed
                  else _backward_input(grad, w, input_shape, p))
    if mask[1]:
        grad_w = (_backward_weight(x, grad, weight_shape, p) if transposed
                  else _backward_weight(grad, x, weight_shape, p))
    if mask[2]:
        grad_b = grad.sum(_bias_dims(grad))
    return grad_x, grad_w, grad_b


def _transposed_backward_input(grad, w, input_shape, p):
    """The input's gradient of a transposed convolution (the convolution of ``grad`` with
    ``w``), cut to ``input_shape`` where an output padding was not under the stride."""
    return _cut(apply(ConvolutionTransposeBackwardInput, (grad, w, None),
                      (grad._data, w._data, None), **p), input_shape)


def _cut(t, shape):
    """``t`` cut to ``shape`` along its spatial dimensions (where it is larger)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    return t[(slice(None),) * 2 + tuple(slice(0, v) for v in shape[2:])]


def _kernel_params(stride, pads, dilation, groups: int, one_d: bool) -> dict:
    """The ops' keyword arguments: a 1-D convolution as a 2-D one on a unit height (stride and
    dilation 1, no padding, along it)."""
    if one_d:
        stride, dilation, pads = [1] + stride, [1] + dilation, [0, 0] + pads
    return dict(stride=tuple(stride), padding=tuple(pads), dilation=tuple(dilation),
                groups=groups, one_d=one_d)


# ---------------------------------------------------------------------- arguments and checks
def _type_name(t: Tensor) -> str:
    return torch_name(t._data.dtype)


def _ints(value, name: str):
    """An int or a sequence of ints as a list (PyTorch's ``IntArrayRef``)."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, str):
        raise TypeError(f"{name} must be an int or a tuple of ints, not {type(value).__name__}")
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    try:
        items = list(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an int or a tuple of ints, not {type(value).__name__}") from None
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(
                f"{name} must be an int or a tuple of ints, not a sequence holding "
                f"{type(v).__name__}")
    return [int(v) for v in items]


def _repeat_int(value, n: int):
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return [int(value)] * n
    return value


def _expand(values: list, name: str, dim: int) -> list:
    """PyTorch's ``expand_param_if_needed``: one value broadcast to ``dim``, else ``dim`` of
    them."""
    if len(values) == 1:
        return values * dim
    if len(values) != dim:
        shown = "[" + ", ".join(map(str, values)) + "]"
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {dim} values to match "
            f"the convolution dimensions, but got {name}={shown}")
    return values


def _size(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _check_arguments(input: Tensor, weight: Tensor, stride, padding, dilation, groups: int,
                     output_padding=()) -> None:
    """The checks ATen's ``check_shape_forward`` opens with, transposed or not: the values of
    ``padding``, ``stride``, ``dilation`` (and ``output_padding``), the ranks and the groups."""
    x, w = input._data, weight._data
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if x.ndim != w.ndim:
        raise RuntimeError(
            f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight "
            f"{_size(w.shape)}, but got {x.ndim}-dimensional input of size {_size(x.shape)} "
            "instead")
    if w.shape[0] < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {_size(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size [{_size(w.shape)}] instead")


def _check(input: Tensor, weight: Tensor, bias, stride, padding, dilation, groups: int) -> None:
    """ATen's ``check_shape_forward`` and ``check_input_same_type_as_parameters``, in its order:
    ``padding`` is (before, after) per spatial dimension."""
    _check_arguments(input, weight, stride, padding, dilation, groups)
    x, w = input._data, weight._data
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_size(w.shape)}, expected "
            f"input{_size(x.shape)} to have {w.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead")
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != w.shape[0]):
        raise RuntimeError(
            f"Given weight of size {_size(w.shape)}, expected bias to be 1-dimensional with "
            f"{w.shape[0]} elements, but got bias of size {_size(bias._data.shape)} instead")
    spatial = range(2, x.ndim)
    padded = [x.shape[i] + padding[2 * (i - 2)] + padding[2 * (i - 2) + 1] for i in spatial]
    kernel = [dilation[i - 2] * (w.shape[i] - 1) + 1 for i in spatial]
    if any(p < k for p, k in zip(padded, kernel)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater "
            "than actual input size")
    if x.dtype != w.dtype:
        tx, tw = input.dtype, weight.dtype
        if tx.is_floating_point and tw.is_floating_point:
            raise RuntimeError(
                f"Input type (torch.{_type_name(input)}Tensor) and weight type "
                f"(torch.{_type_name(weight)}Tensor) should be the same or input should be a "
                "MKLDNN tensor and weight is a dense tensor")
        raise RuntimeError(
            f"expected scalar type {_type_name(input)} but found {_type_name(weight)}")
    if bias is not None and bias._data.dtype != x.dtype:
        raise RuntimeError(
            f"Input type ({c_name(x.dtype)}) and bias type "
            f"({c_name(bias._data.dtype)}) should be the same")
    if x.dtype == np.bool_:
        kernel = "slow_conv3d_cpu" if x.ndim == 5 else "slow_conv2d_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _check_tensors(name: str, weight, bias) -> None:
    """PyTorch's argument parser on ``weight`` and ``bias`` of the function ``name``."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"{name}(): argument 'weight' (position 2) must be Tensor, not "
                        f"{type(weight).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{name}(): argument 'bias' (position 3) must be Tensor, not "
                        f"{type(bias).__name__}")


def _groups_and_dim(weight: Tensor, groups) -> tuple:
    """``groups`` as an int and the number of spatial dimensions, checked as ATen does."""
    groups = int(groups)
    k = weight._data.ndim
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if k - 2 <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    return groups, k - 2


def _expand_all(stride, padding, dilation, dim: int) -> tuple:
    """``stride``, ``padding`` and ``dilation`` as lists of ``dim`` ints (checked in that
    order)."""
    return (_expand(_ints(stride, "stride"), "stride", dim),
            _expand(_ints(padding, "padding"), "padding", dim),
            _expand(_ints(dilation, "dilation"), "dilation", dim))


def _pads(padding) -> list:
    """Symmetric padding per dimension as (before, after) pairs."""
    return [p for v in padding for p in (v, v)]


def _check_grad_size(g, ndim: int, expected: list) -> None:
    if g.ndim != ndim or list(g.shape[2:]) != expected:
        raise RuntimeError(
            f"grad_output[2:] shape{_size(g.shape[2:])} must be equal to output size "
            f"{' '.join(map(str, expected))}")


def _conv(input: Tensor, weight: Tensor, bias, stride, padding, dilation, groups: int,
          dim: int, arity: int | None = None) -> Tensor:
    """ATen's ``_convolution`` (and ``_convolution_same`` for ``padding='same'``) on a batched
    input with ``dim`` spatial dimensions (1 or 2). With ``arity`` (conv1d's 1, conv2d's 2), an
    int argument is first repeated that many times, as PyTorch's argument parser does for their
    ``int[2]`` parameters (so a weight of the wrong rank is reported as a stride's length)."""
    _check_tensors(f"conv{dim}d", weight, bias)
    groups, wdim = _groups_and_dim(weight, groups)
    if arity is not None:
        stride, dilation = _repeat_int(stride, arity), _repeat_int(dilation, arity)
        if not isinstance(padding, str):
            padding = _repeat_int(padding, arity)
    stride = _ints(stride, "stride")
    dilation = _ints(dilation, "dilation")
    if isinstance(padding, str) and padding not in ("valid", "same"):
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    same = isinstance(padding, str) and padding == "same"
    if same:  # (ATen's _convolution_same checks its arguments first)
        pads = _same_padding(input, weight, stride, dilation, wdim)
    stride = _expand(stride, "stride", wdim)  # (in ATen's order: stride, padding, dilation)
    if not same:
        padding = _expand(_ints(0 if padding == "valid" else padding, "padding"), "padding",
                          wdim)
        pads = _pads(padding)
    dilation = _expand(dilation, "dilation", wdim)
    if wdim > 3:
        raise NotImplementedError("numgrad has 1-D, 2-D and 3-D convolutions only")
    _check(input, weight, bias, stride, pads, dilation, groups)
    kernels_for((input, weight, bias), Convolution)  # (one device for the three)
    params = _kernel_params(stride, pads, dilation, groups, wdim == 1)
    if input._data.dtype.kind == "c":
        return _complex_convolution(lambda x, w, b: _convolution(x, w, b, params), input,
                                    weight, bias)
    return _convolution(input, weight, bias, params)


def _complex_convolution(conv, input: Tensor, weight: Tensor, bias) -> Tensor:
    """A convolution of complex tensors as PyTorch's ``complex_convolution``: three real ones
    (Gauss's trick), ``a = conv(xr, wr, br)``, ``b = conv(xi, wi)``, ``c = conv(xr + xi,
    wr + wi, br + bi)``, the result ``a - b + i (c - a - b)``; its gradients the real
    convolutions', through the parts' views."""
    xr, xi, wr, wi = input.real, input.imag, weight.real, weight.imag
    br = None if bias is None else bias.real
    a = conv(xr, wr, br)
    b = conv(xi, wi, None)
    c = conv(xr + xi, wr + wi, None if bias is None else br + bias.imag)
    from .complex import complex as _make_complex
    return _make_complex(a - b, c - a - b)


def _same_padding(input, weight, stride, dilation, dim):
    """``padding='same'``: ``d * (k - 1)`` in all per dimension, half before (rounded down) and
    the rest after, as ATen's ``_convolution_same``."""
    k = weight._data.ndim
    if k != input._data.ndim:
        raise RuntimeError(
            f"Expected {k}-dimensional input for {k}-dimensional weight{_size(weight.shape)}, "
            f"but got {input._data.ndim}-dimensional input of size {_size(input.shape)} instead")
    if len(stride) not in (1, dim):
        raise RuntimeError(f"stride cannot broadcast to {dim} dimensions")
    if len(dilation) not in (1, dim):
        raise RuntimeError(f"dilation cannot broadcast to {dim} dimensions")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads = []
    for i in range(dim):
        d = dilation[0] if len(dilation) == 1 else dilation[i]
        total = d * (weight._data.shape[i + 2] - 1)
        pads += [total // 2, total - total // 2]
    return pads


def _batched(name: str, input: Tensor, dim: int, call):
    """PyTorch's unbatched inputs: a ``(C, *spatial)`` input runs as a batch of one, and the
    batch dimension is squeezed off the result (``SqueezeBackward1``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    ndim = input._data.ndim
    if ndim not in (dim + 1, dim + 2):
        raise RuntimeError(
            f"Expected {dim + 1}D (unbatched) or {dim + 2}D (batched) input to {name}, but got "
            f"input of size: {_size(input.shape)}")
    if ndim == dim + 1:
        return call(input.unsqueeze(0)).squeeze(0)
    return call(input)


@export(functional=True)
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """The 3-D cross-correlation of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with
    ``weight`` ``(O, C / groups, kd, kh, kw)``, plus ``bias`` ``(O,)``; ``stride``, ``padding``
    and ``dilation`` ints or triples, ``padding`` also 'valid' or 'same' (stride 1 only)."""
    return _batched("conv3d", input, 3, lambda x: _conv(x, weight, bias, stride, padding,
                                                          dilation, groups, 3, 3))


@export(functional=True)
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """The 1-D cross-correlation of ``input`` ``(N, C, L)`` or ``(C, L)`` with ``weight``
    ``(O, C / groups, k)``, plus ``bias`` ``(O,)``; ``padding`` an int, a 1-tuple, 'valid' or
    'same' (stride 1 only)."""
    return _batched("conv1d", input, 1, lambda x: _conv(x, weight, bias, stride, padding,
                                                          dilation, groups, 1, 1))


@export(functional=True)
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """The 2-D cross-correlation of ``input`` ``(N, C, H, W)`` or ``(C, H, W)`` with ``weight``
    ``(O, C / groups, kh, kw)``, plus ``bias`` ``(O,)``; ``stride``, ``padding`` and
    ``dilation`` ints or pairs, ``padding`` also 'valid' or 'same' (stride 1 only)."""
    return _batched("conv2d", input, 2, lambda x: _conv(x, weight, bias, stride, padding,
                                                          dilation, groups, 2, 2))


def _check_transposed(input: Tensor, weight: Tensor, bias, stride, padding, output_padding,
                      dilation, groups: int) -> None:
    """ATen's ``check_shape_forward`` for ``transposed=True`` and the transposed kernels' own
    checks (the output padding, the output size), in PyTorch's order."""
    _check_arguments(input, weight, stride, padding, dilation, groups, output_padding)
    x, w = input._data, weight._data
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size(w.shape)}, expected input"
            f"{_size(x.shape)} to have {w.shape[0]} channels, but got {x.shape[1]} channels "
            "instead")
    out_c = w.shape[1] * groups
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != out_c):
        raise RuntimeError(
            f"Given transposed=1, weight of size {_size(w.shape)}, expected bias to be "
            f"1-dimensional with {out_c} elements, but got bias of size "
            f"{_size(bias._data.shape)} instead")
    if x.dtype != w.dtype:
        raise RuntimeError(
            f"expected scalar type {_type_name(input)} but found {_type_name(weight)}")
    if bias is not None and bias._data.dtype != x.dtype:
        raise RuntimeError(
            f"Input type (torch.{_type_name(input)}Tensor) and bias type "
            f"(torch.{_type_name(bias)}Tensor) should be the same or input should be a MKLDNN "
            "tensor and bias is a dense tensor")
    if x.dtype == np.bool_:
        raise NotImplementedError("\"slow_conv_transpose2d_out_cpu\" not implemented for 'Bool'")
    names = ("depth", "height", "width")[3 - max(len(stride), 2):]
    op2 = list(output_padding) if len(stride) > 1 else [0] + list(output_padding)
    st2 = list(stride) if len(stride) > 1 else [1] + list(stride)
    dl2 = list(dilation) if len(stride) > 1 else [1] + list(dilation)
    if any(o >= s and o >= d for o, s, d in zip(op2, st2, dl2)):
        parts = [f"output_padding_{n}: {v}" for n, v in zip(names, op2)]
        parts += [f"stride_{n}: {v}" for n, v in zip(names, st2)]
        parts += [f"dilation_{n}: {v}" for n, v in zip(names, dl2)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got {' '.join(parts)}")
    out = _transposed_size(x.shape, w.shape, stride, padding, output_padding, dilation)
    if any(v < 1 for v in out):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). Calculated "
            f"output size per channel: ({' x '.join(map(str, out))}). Output size is too small")


def _transposed_size(xshape, wshape, stride, padding, output_padding, dilation) -> list:
    return [(xshape[i + 2] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (wshape[i + 2] - 1)
            + output_padding[i] + 1 for i in range(len(stride))]


def _conv_transposed(input: Tensor, weight: Tensor, bias, stride, padding, output_padding,
                     groups: int, dilation, name: str, arity: int | None = None) -> Tensor:
    """ATen's ``_convolution`` with ``transposed=True`` on a batched input."""
    _check_tensors(name, weight, bias)
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    groups, wdim = _groups_and_dim(weight, groups)
    if arity is not None:
        stride, padding, dilation = (_repeat_int(v, arity) for v in (stride, padding, dilation))
        output_padding = _repeat_int(output_padding, arity)
    stride, padding, dilation = _expand_all(stride, padding, dilation, wdim)
    output_padding = _expand(_ints(output_padding, "output_padding"), "output_padding", wdim)
    if wdim > 3:
        raise NotImplementedError("numgrad has 1-D, 2-D and 3-D convolutions only")
    _check_transposed(input, weight, bias, stride, padding, output_padding, dilation, groups)
    kernels_for((input, weight, bias), ConvolutionTranspose)
    out_shape = [input._data.shape[0], weight._data.shape[1] * groups] + _transposed_size(
        input._data.shape, weight._data.shape, stride, padding, output_padding, dilation)
    params = _kernel_params(stride, _pads(padding), dilation, groups, wdim == 1)

    def transposed(x, w, b):
        return apply(ConvolutionTranspose, (x, w, b),
                     (x._data, w._data, None if b is None else b._data),
                     output_shape=tuple(out_shape), **params)

    if input._data.dtype.kind == "c":
        return _complex_convolution(transposed, input, weight, bias)
    return transposed(input, weight, bias)


@export(functional=True)
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The 1-D transposed convolution ("deconvolution") of ``input`` ``(N, C_in, L)`` or
    ``(C_in, L)`` with ``weight`` ``(C_in, C_out / groups, k)``, plus ``bias`` ``(C_out,)``:
    the adjoint of ``conv1d``; ``output_padding`` adds to one side of the output."""
    return _batched("conv_transpose1d", input, 1, lambda x: _conv_transposed(
        x, weight, bias, stride, padding, output_padding, groups, dilation, "conv_transpose1d",
        1))


@export(functional=True)
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The 2-D transposed convolution of ``input`` ``(N, C_in, H, W)`` or ``(C_in, H, W)`` with
    ``weight`` ``(C_in, C_out / groups, kh, kw)``, plus ``bias`` ``(C_out,)``: the adjoint of
    ``conv2d``."""
    return _batched("conv_transpose2d", input, 2, lambda x: _conv_transposed(
        x, weight, bias, stride, padding, output_padding, groups, dilation, "conv_transpose2d",
        2))


@export(functional=True)
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The 3-D transposed convolution of ``input`` ``(N, C_in, D, H, W)`` or
    ``(C_in, D, H, W)`` with ``weight`` ``(C_in, C_out / groups, kd, kh, kw)``, plus ``bias``
    ``(C_out,)``: the adjoint of ``conv3d``."""
    return _batched("conv_transpose3d", input, 3, lambda x: _conv_transposed(
        x, weight, bias, stride, padding, output_padding, groups, dilation, "conv_transpose3d",
        3))


@export
def convolution(input: Tensor, weight: Tensor, bias, stride, padding, dilation, transposed: bool,
                output_padding, groups: int) -> Tensor:
    """ATen's ``convolution`` (a batched input), transposed or not."""
    if transposed:
        return _conv_transposed(input, weight, bias, stride, padding, output_padding, groups,
                                dilation, "convolution")
    return _conv(input, weight, bias, stride, padding, dilation, groups,
                 weight._data.ndim - 2)


def _check_backward(grad_output: Tensor, input: Tensor, weight: Tensor, stride, pads,
                    dilation) -> None:
    """ATen's checks of ``convolution_backward``'s gradient and dtypes (after the forward's)."""
    g, x, w = grad_output._data, input._data, weight._data
    expected = [(x.shape[i] + pads[2 * (i - 2)] + pads[2 * (i - 2) + 1]
                 - dilation[i - 2] * (w.shape[i] - 1) - 1) // stride[i - 2] + 1
                for i in range(2, x.ndim)]
    _check_grad_size(g, x.ndim, expected)
    dtypes = {g.dtype, x.dtype, w.dtype}
    if len(dtypes) > 1:
        raise RuntimeError(
            f"expected scalar type {_type_name(input)} but found "
            f"{_type_name(grad_output if g.dtype != x.dtype else weight)}")
    if x.dtype == np.bool_:
        raise NotImplementedError("\"slow_conv_dilated<>\" not implemented for 'Bool'")


@export(aten=True)
def convolution_backward(grad_output: Tensor, input: Tensor, weight: Tensor, bias_sizes, stride,
                         padding, dilation, transposed: bool, output_padding, groups: int,
                         output_mask) -> tuple:
    """ATen's ``convolution_backward``: the gradients of ``convolution`` with respect to its
    input, weight and bias (None where ``output_mask`` says so), from the output's gradient;
    recorded, so they can be differentiated again."""
    if transposed:
        return _convolution_backward_transposed(grad_output, input, weight, stride, padding,
                                                dilation, output_padding, groups, output_mask)
    for t, name in ((grad_output, "grad_output"), (input, "input"), (weight, "weight")):
        if not isinstance(t, Tensor):
            raise TypeError(f"convolution_backward(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    groups = int(groups)
    if weight._data.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = weight._data.ndim - 2
    stride, padding, dilation = _expand_all(stride, padding, dilation, dim)
    pads = _pads(padding)
    _check(input, weight, None, stride, pads, dilation, groups)
    if dim > 3:
        raise NotImplementedError("numgrad has 1-D, 2-D and 3-D convolutions only")
    _check_backward(grad_output, input, weight, stride, pads, dilation)
    p = _kernel_params(stride, pads, dilation, groups, dim == 1)
    kernels_for((grad_output, input, weight), Convolution)
    return _gradients(grad_output, input, weight, input.shape, weight.shape, p, output_mask,
                      False)


def _convolution_backward_transposed(grad_output, input, weight, stride, padding, dilation,
                                     output_padding, groups, output_mask) -> tuple:
    """``convolution_backward`` with ``transposed=True``: the input's gradient is the
    convolution of ``grad_output`` with the weight, the weight's the convolution's weight
    gradient with ``input`` as the output's gradient."""
    groups = int(groups)
    dim = weight._data.ndim - 2
    stride, padding, dilation = _expand_all(stride, padding, dilation, dim)
    output_padding = _expand(_ints(output_padding, "output_padding"), "output_padding", dim)
    _check_transposed(input, weight, None, stride, padding, output_padding, dilation, groups)
    expected = _transposed_size(input._data.shape, weight._data.shape, stride, padding,
                                output_padding, dilation)
    _check_grad_size(grad_output._data, input._data.ndim, expected)
    p = _kernel_params(stride, _pads(padding), dilation, groups, dim == 1)
    kernels_for((grad_output, input, weight), ConvolutionTranspose)
    return _gradients(grad_output, input, weight, input._data.shape, weight.shape, p,
                      output_mask, True)


# ---------------------------------------------------------------------- unfold and fold
@register
class Im2Col(Op):
    """``F.unfold``: the sliding ``kernel`` blocks of ``x`` (N, C, H, W) as columns,
    (N, C*kh*kw, L). Linear; its adjoint is ``col2im`` with the same arguments."""

    complex_ok = True
    name, node = "im2col", "Im2ColBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, x: _F(m).unfold(x, 2), ((2, 2, 3, 4),)),
        Sample(lambda m, x: _F(m).unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
               ((2, 4, 5),)),
    )

    @staticmethod
    def forward(K, x, *, kernel, dilation, padding, stride, size):
        return K.conv.unfold(x, kernel, dilation, padding, stride)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (apply(Col2Im, (grad,), (grad._data,), **p),)


@register
class Col2Im(Op):
    """``F.fold``: columns (N, C*kh*kw, L) summed back into (N, C, *size), the adjoint of
    ``im2col``."""

    complex_ok = True
    name, node = "col2im", "Col2ImBackward0"
    jvp = _jvp.linear
    on_cuda = True
    samples = (
        Sample(lambda m, c: _F(m).fold(c, (3, 4), 2), ((2, 8, 6),)),
        Sample(lambda m, c: _F(m).fold(c, (4, 5), (2, 3), dilation=(1, 2), padding=1,
                                       stride=(2, 1)), ((12, 9),)),
    )

    @staticmethod
    def forward(K, cols, *, kernel, dilation, padding, stride, size):
        return K.conv.fold(cols, size, kernel, dilation, padding, stride)

    @staticmethod
    def backward(ctx, grad):
        return (apply(Im2Col, (grad,), (grad._data,), **ctx.params),)


def _pair_arg(value, name: str) -> tuple:
    """PyTorch's ``_pair`` and ATen's length check of an ``int[2]`` argument."""
    if isinstance(value, (list, tuple)):
        values = tuple(int(v) for v in value)
    else:
        values = (int(value),) * 2
    if len(values) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(values)}")
    return values


def _block_checks(kernel, dilation, padding, stride, fold: bool) -> None:
    checks = [("kernel size", "kernel", kernel, lambda v: v > 0, "greater than zero"),
              ("dilation", "dilation", dilation, lambda v: v > 0, "greater than zero"),
              ("padding", "pad", padding, lambda v: v >= 0, "non-negative"),
              ("stride", "stride", stride, lambda v: v > 0, "greater than zero")]
    if fold:
        checks = [checks[0], checks[3], checks[1], checks[2]]
    for what, short, values, ok, must in checks:
        if not all(ok(v) for v in values):
            raise RuntimeError(f"{what} should be {must}, but got {short}_height: {values[0]} "
                               f"{short}_width: {values[1]}")


def _block_args(kernel_size, dilation, padding, stride, fold: bool) -> tuple:
    """The four ``int[2]`` arguments of ``unfold`` / ``fold`` as pairs, checked."""
    kernel = _pair_arg(kernel_size, "kernel_size")
    dil = _pair_arg(dilation, "dilation")
    pad = _pair_arg(padding, "padding")
    st = _pair_arg(stride, "stride")
    _block_checks(kernel, dil, pad, st, fold)
    return kernel, dil, pad, st


def _blocks(size, kernel, dil, pad, st) -> list:
    """The number of sliding blocks along each of the two dimensions of ``size``."""
    return [(v + 2 * p - (d * (k - 1) + 1)) // s + 1
            for v, k, d, p, s in zip(size, kernel, dil, pad, st)]


def _apply_block(op, kernel_name: str, input: Tensor, kernel, dil, pad, st, size) -> Tensor:
    """``op`` (``Im2Col`` or ``Col2Im``) on a float or bool ``input`` (ATen's kernel
    ``kernel_name`` refuses the others)."""
    if input._data.dtype.kind not in "fbcV":  # ("V": bfloat16, computed widened)
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for "
                                  f"'{_type_name(input)}'")
    kernels_for((input,), op)
    return apply(op, (input,), (input._data,), kernel=kernel, dilation=dil, padding=pad,
                 stride=st, size=size)


@export(function=False, functional=True)
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The sliding blocks of ``input`` (N, C, H, W) or (C, H, W) as columns: (N, C*kh*kw, L)
    (``F.unfold``, ATen's ``im2col``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"im2col(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    kernel, dil, pad, st = _block_args(kernel_size, dilation, padding, stride, False)
    shape = tuple(input._data.shape)
    if len(shape) == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    if len(shape) not in (3, 4) or any(v == 0 for v in shape[-3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {_size(shape)}")
    h, w = shape[-2:]
    blocks = _blocks((h, w), kernel, dil, pad, st)
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(
            f"Given input with spatial size ({h}, {w}), kernel_size=({kernel[0]}, {kernel[1]}), "
            f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), calculated shape of "
            f"the array of sliding blocks as ({blocks[0]}, {blocks[1]}), but its components must "
            "be at least one.")
    return _apply_block(Im2Col, "im2col_out_cpu", input, kernel, dil, pad, st, (h, w))


@export(function=False, functional=True)
def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Columns (N, C*kh*kw, L) or (C*kh*kw, L) summed into (N, C, *output_size): the adjoint
    of ``unfold`` (``F.fold``, ATen's ``col2im``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"col2im(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    size = _pair_arg(output_size, "output_size")
    kernel, dil, pad, st = _block_args(kernel_size, dilation, padding, stride, True)
    shape = tuple(input._data.shape)
    if len(shape) not in (2, 3) or any(v == 0 for v in shape[-2:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{_size(shape)}")
    rows, length = shape[-2:]
    if rows % (kernel[0] * kernel[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={rows} and "
                           f"kernel_size=({kernel[0]}, {kernel[1]}).")
    blocks = _blocks(size, kernel, dil, pad, st)
    if blocks[0] < 1 or blocks[1] < 1:
        blocks = [max(b, 0) for b in blocks]
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
            f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), stride=({st[0]}, "
            f"{st[1]}), expected size of input's dimension 2 to match the calculated number of "
            f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
            f"input.size(2)={length}.")
    return _apply_block(Col2Im, "col2im_out_cpu", input, kernel, dil, pad, st, size)
