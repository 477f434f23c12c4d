"""Loss functions as ops: ``nll_loss`` and ``mse_loss`` (``numgrad.nn.functional`` wraps them with
PyTorch's full signatures; ``cross_entropy`` is ``nll_loss`` of ``log_softmax``).

``nll_loss`` gathers one value per row by class index; its backward scatters the gradient back, and
is an op of its own (``nll_loss_backward``, as ATen's) whose derivative is ``nll_loss`` again, so
second derivatives work. ``mse_loss``'s backward is a tensor formula, differentiable as it stands.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _lowp, dispatch
from ..autograd import grad_mode
from ..dispatch import note_created
from .._dtype import torch_name
from ..tensor import Tensor
from ._names import export
from ._promote import broadcast_shapes
from .._dtype import result_type


def _created(array):
    note_created(array)
    return array
from ._promote import binary_operands
from .elementwise import where
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from ..creation import ones_like, _place

REDUCTIONS = ("none", "mean", "sum")
_ATEN_REDUCTION = {0: "none", 1: "mean", 2: "sum"}  # at::Reduction::Reduction


def _F(m):
    """``numgrad.nn.functional`` or ``torch.nn.functional``, for the samples."""
    return m.nn.functional


def _weights(m, x, n):
    return m.linspace(0.5, 2.0, n, dtype=x.dtype, device=x.device)


def _t(m, x, values):
    """Class-index targets on ``x``'s device."""
    return m.tensor(values, device=x.device)


def _total_weight(x, value):
    """ATen's ``total_weight`` argument: a scalar of ``x``'s dtype."""
    return (x.sum() * 0 + value).detach()


@register
class NllLoss(Op):
    """``-weight[t] * input[n, t]`` per row, reduced; rows whose target is ``ignore_index`` count
    for nothing (and 'mean' divides by the weights of the rows that count)."""

    name, node = "nll_loss", "NllLossBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0,)  # (unread by the backward: PyTorch's node keeps it, ``_saved_self``)
    samples = (
        Sample(lambda m, x: _F(m).nll_loss(x, _t(m, x, [0, 2, 1, 4])), ((4, 5),)),
        Sample(lambda m, x: _F(m).nll_loss(x, _t(m, x, [3, 3, 0]), reduction="sum"), ((3, 4),)),
        Sample(lambda m, x: _F(m).nll_loss(x, _t(m, x, [1, 0, 2]), reduction="none"), ((3, 4),)),
        Sample(lambda m, x: _F(m).nll_loss(x, _t(m, x, [0, 2, 1, 4]), weight=_weights(m, x, 5),
                                           ignore_index=2), ((4, 5),)),
        Sample(lambda m, x: _F(m).nll_loss(x, _t(m, x, [0, 2, 1, 4]), weight=_weights(m, x, 5),
                                           reduction="none"), ((4, 5),)),
        Sample(lambda m, x: _F(m).nll_loss(x, _t(m, x, 3)), ((5,),)),
        Sample(lambda m, x: _F(m).cross_entropy(x, _t(m, x, [0, 2, 1, 2])), ((4, 3),)),
        Sample(lambda m, x: _F(m).cross_entropy(x * 30, _t(m, x, [1, 0, 1]), reduction="sum"),
               ((3, 2),)),
    )

    @staticmethod
    def forward(K, x, *, target, weight, ignore_index, reduction, half=None):
        if half is not None and reduction == "mean" and isinstance(x, np.ndarray):
            # (a float16 or bfloat16 input, run widened: PyTorch's kernel rounds the sum and
            # the total weight to the dtype before it divides)
            total = _half_total_weight(half, target, weight, ignore_index)
            if total is not None:
                loss = K.loss.nll_loss_forward(x, target, weight, ignore_index, "sum")
                loss = _lowp.to_float(_lowp.f32_to_bf16(loss) if half == _lowp.BF16 else
                                      loss.astype(half))
                with np.errstate(invalid="ignore", divide="ignore"):  # (all ignored: NaN)
                    return np.asarray(loss / _lowp.to_float(total), x.dtype)
        return K.loss.nll_loss_forward(x, target, weight, ignore_index, reduction)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        reduction = p["reduction"]
        if reduction == "mean" and grad._data.dtype.char in "eV":  # (float16, bfloat16)
            # (PyTorch's kernel divides the gradient by the total weight, rounded to the
            # dtype as its forward returns it, in the dtype, then multiplies by the weights:
            # two roundings, where the float32 kernel's one product would round once)
            total = _half_total_weight(grad._data.dtype, p["target"], p["weight"],
                                       p["ignore_index"])
            if total is not None:
                grad, reduction = grad / Tensor._wrap(total), "sum"
        return (_nll_loss_backward(grad, None, ctx.input_shapes[0], p["target"], p["weight"],
                                   p["ignore_index"], reduction, None),)

    @staticmethod
    def through(node, child, grad):
        """The gradient of ``x`` in ``nll_loss(log_softmax(x, -1))`` (``cross_entropy``) in one
        pass over the rows (``kernels/cpu/loss.py``, ``nll_log_softmax_backward``), where the
        log-softmax's node is this one's input's and its output is a float array in rows: the
        two backwards' values without the one-hot gradient of the log-probabilities between
        them (a 700 x 10k float32 one: written, then read twice)."""
        if child.op.name != "log_softmax":
            return None
        (out,) = child.saved_tensors
        o, g = out._data, grad._data
        if (not isinstance(o, np.ndarray) or not isinstance(g, np.ndarray)
                or child.params["dim"] != o.ndim - 1 or o.ndim not in (1, 2) or not o.size
                or o.dtype != g.dtype or o.dtype.kind != "f" or o.dtype.itemsize < 4
                or not o.flags.c_contiguous or o.shape != tuple(node.input_shapes[0])):
            return None
        p = node.params
        K = kernels_for((grad, out))
        return (Tensor._wrap(K.loss.nll_log_softmax_backward(
            g, o, p["target"], p["weight"], p["ignore_index"], p["reduction"])),)


@register
class NllLossBackward(Op):
    """The gradient of ``nll_loss``: ``grad`` scattered to each row's target class. It is linear
    in ``grad`` and its adjoint is ``nll_loss``; ``self`` (the loss's input) gives only a shape."""

    name, node = "nll_loss_backward", "NllLossBackwardBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    samples = (
        Sample(lambda m, g, x: m.ops.nll_loss_backward(
            g, x, _t(m, x, [0, 2, 1]), None, 0, -100, _total_weight(x, 0.0)), ((3,), (3, 4))),
        Sample(lambda m, g, x: m.ops.nll_loss_backward(
            g.sum(), x, _t(m, x, [0, 2, 1]), _weights(m, x, 4), 1, -100, _total_weight(x, 3.0)),
            ((2,), (3, 4))),
        Sample(lambda m, g, x: m.ops.nll_loss_backward(
            g.sum(), x, _t(m, x, [3, 1, 1]), None, 2, 1, _total_weight(x, 1.0)), ((2,), (3, 4))),
    )

    @staticmethod
    def forward(K, grad, *, shape, target, weight, ignore_index, reduction, total_weight):
        return K.loss.nll_loss_backward(grad, shape, target, weight, ignore_index, reduction,
                                        total_weight)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        need_grad, need_self = ctx.needs_input_grad
        grad_grad = None
        if need_grad:
            grad_grad = apply(NllLoss, (grad,), (grad._data,), target=p["target"],
                              weight=p["weight"], ignore_index=p["ignore_index"],
                              reduction=p["reduction"])
        # PyTorch's derivative for ``self`` is zeros: the gradient does not depend on the input.
        grad_self = None
        if need_self:
            grad_self = Tensor._wrap(_place(_created(np.zeros(p["shape"], grad._data.dtype)),
                                            grad.device))
        return grad_grad, grad_self


def _half_total_weight(np_dtype, target, weight, ignore_index):
    """The total weight of a float16 or bfloat16 'mean' loss as PyTorch's backward divides by it:
    summed in float32 and rounded to the dtype (ATen's forward returns it in the input's dtype),
    a 0-d array of that dtype (None where ``target`` is not on the CPU or holds a class out of
    range: the kernel's own sum, and its error)."""
    if not isinstance(target, np.ndarray):
        return None
    t = target.reshape(-1)
    t = t[t != ignore_index]
    if weight is None:
        total = np.float32(t.size)
    else:
        w = _lowp.to_float(np.asarray(weight)).reshape(-1)
        if t.size and (t.min() < 0 or t.max() >= w.size):  # (the kernel says which)
            return None
        total = np.sum(w[t], dtype=np.float32)
    total = np.asarray(total, np.float32)
    return _lowp.f32_to_bf16(total) if np_dtype == _lowp.BF16 else total.astype(np_dtype)


def _nll_loss_backward(grad, self, shape, target, weight, ignore_index, reduction, total_weight):
    return apply(NllLossBackward, (grad, self), (grad._data,), shape=tuple(shape), target=target,
                 weight=weight, ignore_index=ignore_index, reduction=reduction,
                 total_weight=total_weight)


def _type_name(t: Tensor) -> str:
    return torch_name(t._data.dtype)


def check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_nll_args(input: Tensor, target: Tensor, weight) -> None:
    """PyTorch's checks, in its order (the shapes, then the input's dtype, as its kernel
    dispatches on it), with its exception classes and messages."""
    if not isinstance(target, Tensor):
        raise TypeError(
            f"nll_loss(): argument 'target' must be Tensor, not {type(target).__name__}")
    x, t = input._data, target._data
    if x.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if target._data.dtype != np.int64:
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_type_name(target)}")
    if x.ndim > 2:
        raise NotImplementedError(
            f"nll_loss supports a (C,) or (N, C) input so far, got {x.ndim} dimensions; for "
            "(N, C, d1, ...) inputs, move the class dimension last and flatten to (N*d1*..., C)"
        )
    if x.ndim == 1:
        if t.ndim > 1 or t.size != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{t.shape[0] if t.ndim else 0}")
    elif t.ndim == 0 or t.shape[0] != x.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
            f"({t.shape[0] if t.ndim else 1})."
        )
    elif t.ndim != 1:
        raise RuntimeError("1D target tensor expected, multi-target not supported")
    if weight is not None:
        n_classes = x.shape[x.ndim - 1]
        if weight._data.ndim != 1 or weight._data.shape[0] != n_classes:
            raise RuntimeError(
                f"weight tensor should be defined either for all {n_classes} classes or no classes "
                f"but got weight tensor of shape: {list(weight._data.shape)}"
            )
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"nll_loss_out_frame\" not implemented for '{_type_name(input)}'")
    if weight is not None:
        if weight.dtype is not input.dtype:
            raise RuntimeError(
                f"expected scalar type {_type_name(input)} but found {_type_name(weight)}"
            )
        if weight._requires_grad and grad_mode.state.enabled:
            raise RuntimeError(
                "The function 'nll_loss_forward' is not differentiable with respect to argument "
                "'weight'. This input cannot have requires_grad True."
            )


def _check_nll_backward_args(grad: Tensor, self: Tensor, target: Tensor, weight, reduction: str,
                             total_weight: Tensor) -> None:
    """PyTorch's checks of ``nll_loss_backward``'s arguments (its meta function's, then its
    kernel's dtypes), with its messages."""
    x, t = self._data, target._data
    if x.ndim == 0 or x.ndim > 2:
        raise RuntimeError("input tensor should be 1D or 2D")
    if t.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if not (x.ndim == 1 and t.ndim == 0) and (t.ndim == 0 or x.shape[0] != t.shape[0]):
        raise RuntimeError(
            f"size mismatch (got input: {list(x.shape)}, target: {list(t.shape)})")
    if total_weight._data.size != 1:
        raise RuntimeError(
            "expected total_weight to be a  single element tensor, got: "
            f"{list(total_weight._data.shape)} ({total_weight._data.size} elements)")
    if weight is not None and weight._data.size != x.shape[x.ndim - 1]:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    g = grad._data
    if reduction == "none" and x.ndim == 2:
        if g.ndim != 1 or g.shape[0] != x.shape[0]:
            raise RuntimeError(
                f"Expected a tensor of dimension 1 and tensor.size[0] == {x.shape[0]} but got: "
                f"dimension {g.ndim} and tensor.size[0] = {g.shape[0] if g.ndim else 1}")
    elif g.ndim > 1 or g.size != 1:
        raise RuntimeError(
            f"Expected a single element grad_output tensor, but got: {list(g.shape)}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"nll_loss_backward_out_frame\" not implemented for '{_type_name(self)}'")
    if t.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target)}")
    for other in (grad, weight, total_weight):
        if other is not None and other.dtype is not self.dtype:
            raise RuntimeError(
                f"expected scalar type {_type_name(self)} but found {_type_name(other)}")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """The negative log likelihood loss of log-probabilities ``input`` ((C,) or (N, C)) and class
    indices ``target`` (int64, () or (N,)), optionally weighted per class."""
    check_reduction(reduction)
    if isinstance(input, Tensor) and isinstance(target, Tensor) and input.ndim > 2:
        return _nll_loss_nd(input, target, weight, ignore_index, reduction)
    _check_nll_args(input, target, weight)
    K = kernels_for((input, target, weight), NllLoss)  # (one device for the three)
    half = input._data.dtype if input._data.dtype.char in "eV" else None  # (float16, bfloat16)
    return apply(NllLoss, (input,), (input._data,), target=K.copy(target._data),
                 weight=None if weight is None else K.copy(weight._data),
                 ignore_index=int(ignore_index), reduction=reduction, half=half)


def _nll_loss_nd(input: Tensor, target: Tensor, weight, ignore_index: int, reduction: str):
    """The K-dimensional loss (input (N, C, d1, ...), target (N, d1, ...)): the (N*d1*..., C)
    loss of the class dimension moved last, as ATen's nll_loss_nd reshapes it; 'none' gives
    (N, d1, ...)."""
    n = input.shape[0]
    if target.ndim == 0 or target.shape[0] != n:
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 1}).")
    out_size = [n, *input.shape[2:]]
    if tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {out_size}, got {list(target.shape)}")
    flat = input.movedim(1, -1).reshape(-1, input.shape[1])
    loss = nll_loss(flat, target.reshape(-1), weight, ignore_index, reduction)
    return loss.reshape(out_size) if reduction == "none" else loss


@export(aten=True)
def nll_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, weight, reduction: int,
                      ignore_index: int, total_weight: Tensor) -> Tensor:
    """ATen's ``nll_loss_backward`` (``reduction`` as ATen's integer: 0 none, 1 mean, 2 sum): the
    gradient of ``nll_loss`` with respect to its input ``self``, from the loss's gradient."""
    _check_nll_backward_args(grad_output, self, target, weight, _ATEN_REDUCTION[int(reduction)],
                             total_weight)
    K = kernels_for((grad_output, self, target, weight, total_weight), NllLossBackward)
    return _nll_loss_backward(  # (total_weight's data on its device: no sync in the backward)
        grad_output, self, self._data.shape, K.copy(target._data),
        None if weight is None else K.copy(weight._data), int(ignore_index),
        _ATEN_REDUCTION[int(reduction)], K.copy(total_weight._data),
    )


@register
class MseLoss(Op):
    """The squared differences ``(input - target)**2``, reduced; both operands broadcast."""

    name, node = "mse_loss", "MseLossBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, x, y: _F(m).mse_loss(x, y), ((3, 4), (3, 4))),
        Sample(lambda m, x, y: _F(m).mse_loss(x, y, reduction="sum"), ((5,), (5,))),
        Sample(lambda m, x, y: _F(m).mse_loss(x, y, reduction="none"), ((2, 3), (2, 3))),
        Sample(lambda m, x: _F(m).mse_loss(x, m.zeros(2, 3, dtype=x.dtype, device=x.device) + 0.5), ((2, 3),)),
        Sample(lambda m, x: m.nn.MSELoss(reduction="sum")(x.sum(1), x.mean(1).exp()), ((3, 4),)),
    )

    @staticmethod
    def forward(K, x, t, *, reduction):
        diff = K.binary(K.SUB, x, t)
        squares = K.binary(K.MUL, diff, diff)
        if reduction == "none":
            return squares
        total = K.sum_dims(squares, tuple(range(squares.ndim)), False)
        if reduction == "sum":
            return total
        if squares.size == 0:
            return np.array(np.nan, squares.dtype)
        return K.binary(K.DIV, total, dispatch.number_array(squares.size, squares.dtype))

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        scale = 2.0
        if ctx.params["reduction"] == "mean":
            count = int(np.prod(np.broadcast_shapes(*ctx.input_shapes), dtype=np.int64))
            scale = 2.0 / count if count else float("nan")
        grad_x = (x - t) * (grad * scale)
        return (grad_x if need_x else None), (-grad_x if need_t else None)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The mean (or sum, or each) of the squared differences of ``input`` and ``target``."""
    check_reduction(reduction)
    a, b = binary_operands(input, target)
    if a.dtype.kind not in "fV":  # ("V": bfloat16, numgrad._lowp)
        kernel = "mse_cpu" if isinstance(a, np.ndarray) else "mse_cuda"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_type_name(Tensor._wrap(a))}'")
    return apply(MseLoss, (input, target), (a, b), reduction=reduction)


# ------------------------------------------------------------------ pointwise losses
# huber_loss, smooth_l1_loss, binary_cross_entropy and binary_cross_entropy_with_logits: each one
# fused kernel (``K.loss.pointwise_loss``) and PyTorch's node; the first three have backward ops
# of their own (``*_backward``, one kernel each, as ATen's) whose derivatives are tensor
# formulas, so second derivatives work; binary_cross_entropy_with_logits' backward is PyTorch's
# composite formula.
_HUBER, _SMOOTH_L1, _BCE, _BCE_LOGITS = 0, 1, 2, 3  # (the kernels' ``kind``)
_ATEN_ENUM = {"none": 0, "mean": 1, "sum": 2}


class _Pointwise(Op):
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    kind = 0

    @classmethod
    def forward(cls, K, x, t, *, reduction, param=0.0, weight=None, pos_weight=None):
        return K.loss.pointwise_loss(cls.kind, x, t, weight, pos_weight, param, reduction)


class _PointwiseBackward(Op):
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1, 2)
    kind = 0

    @classmethod
    def forward(cls, K, g, x, t, *, reduction, param=0.0, weight=None):
        return K.loss.pointwise_loss_backward(cls.kind, g, x, t, weight, param, reduction)


def _pw_backward(op, grad, x, t, params):
    """``op`` (a ``_PointwiseBackward``) of ``grad`` at ``x`` and ``t``."""
    return apply(op, (grad, x, t), (grad._data, x._data, t._data),
                 reduction=params["reduction"], param=params.get("param", 0.0),
                 weight=params.get("weight"))


def _grad_of_grad_output(op, gg, g, x, t, params):
    """The derivative of a pointwise backward op with respect to its ``grad_output``: the op
    again for 'none', else the sum of ``gg`` times its value at a gradient of one (PyTorch's
    ``*_double_backward_grad_output``)."""
    if params["reduction"] == "none":
        return _pw_backward(op, gg, x, t, params)

    return (_pw_backward(op, ones_like(g), x, t, params) * gg).sum()


def _weight_tensor(array):
    return None if array is None else Tensor._wrap(array)


@register
class HuberLoss(_Pointwise):
    """``0.5 z**2`` where ``z = |input - target| < delta``, else ``delta (z - 0.5 delta)``."""

    name, node, kind = "huber_loss", "HuberLossBackward0", _HUBER
    samples = (
        Sample(lambda m, x, y: _F(m).huber_loss(x, y * 2), ((3, 4), (3, 4))),
        Sample(lambda m, x: _F(m).huber_loss(x, _weights(m, x, 6) - 1.0, reduction="sum", delta=0.5),
               ((6,),)),
        Sample(lambda m, x, y: _F(m).huber_loss(x * 2, y, reduction="none", delta=1.5),
               ((2, 3), (2, 3))),
    )

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        p = ctx.params
        return ((_pw_backward(HuberLossBackward, grad, x, t, p) if need_x else None),
                (_pw_backward(HuberLossBackward, grad, t, x, p) if need_t else None))


@register
class HuberLossBackward(_PointwiseBackward):
    name, node, kind = "huber_loss_backward", "HuberLossBackwardBackward0", _HUBER
    samples = (
        Sample(lambda m, g, x, y: m.ops.huber_loss_backward(g, x, y * 2, 0, 1.0),
               ((3, 4), (3, 4), (3, 4))),
        Sample(lambda m, g, x, y: m.ops.huber_loss_backward(g.sum(), x, y, 1, 0.5),
               ((2,), (5,), (5,))),
    )

    @staticmethod
    def backward(ctx, gg):
        return _huber_like_double_backward(HuberLossBackward, ctx, gg, 1.0)


def _huber_like_double_backward(op, ctx, gg, scale):
    """PyTorch's ``huber_loss_double_backward`` (``smooth_l1_loss``'s divides by beta): ``gg *
    grad`` where ``|x - t|`` is inside the quadratic part, 0 elsewhere."""
    g, x, t = ctx.saved_tensors
    p = ctx.params
    need_g, need_x, need_t = ctx.needs_input_grad
    grad_g = _grad_of_grad_output(op, gg, g, x, t, p) if need_g else None
    grad_x = grad_t = None
    if need_x or need_t:
        inside = ((x - t).abs() < p["param"]).detach().to(x.dtype)
        inner = gg * g * inside  # (a product, as PyTorch's: NaN and inf pass)
        if scale != 1.0:
            inner = inner / scale
        if p["reduction"] == "mean":
            inner = inner / x.numel()
        grad_x = inner if need_x else None
        grad_t = -inner if need_t else None
    return grad_g, grad_x, grad_t


@register
class SmoothL1Loss(_Pointwise):
    """``0.5 z**2 / beta`` where ``z = |input - target| < beta``, else ``z - 0.5 beta``."""

    name, node, kind = "smooth_l1_loss", "SmoothL1LossBackward0", _SMOOTH_L1
    samples = (
        Sample(lambda m, x, y: _F(m).smooth_l1_loss(x, y), ((3, 4), (3, 4))),
        Sample(lambda m, x: _F(m).smooth_l1_loss(x, _weights(m, x, 6) - 1.0, reduction="sum",
                                                 beta=0.5), ((6,),)),
        Sample(lambda m, x, y: _F(m).smooth_l1_loss(x, y, reduction="none", beta=2.0),
               ((2, 3), (2, 3))),
    )

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        p = ctx.params
        return ((_pw_backward(SmoothL1LossBackward, grad, x, t, p) if need_x else None),
                (_pw_backward(SmoothL1LossBackward, grad, t, x, p) if need_t else None))


@register
class SmoothL1LossBackward(_PointwiseBackward):
    name, node, kind = "smooth_l1_loss_backward", "SmoothL1LossBackwardBackward0", _SMOOTH_L1
    samples = (
        Sample(lambda m, g, x, y: m.ops.smooth_l1_loss_backward(g, x, y, 0, 1.5),
               ((3, 4), (3, 4), (3, 4))),
        Sample(lambda m, g, x, y: m.ops.smooth_l1_loss_backward(g.sum(), x, y, 1, 1.0),
               ((2,), (5,), (5,))),
    )

    @staticmethod
    def backward(ctx, gg):
        return _huber_like_double_backward(SmoothL1LossBackward, ctx, gg, ctx.params["param"])


@register
class BinaryCrossEntropy(_Pointwise):
    """``-w (t log x + (1 - t) log(1 - x))``, each log clamped to -100 (PyTorch's)."""

    name, node, kind = "binary_cross_entropy", "BinaryCrossEntropyBackward0", _BCE
    samples = (
        Sample(lambda m, x, y: _F(m).binary_cross_entropy(x, y), ((3, 4), (3, 4)), low=0.05,
               high=0.95),
        Sample(lambda m, x, y: _F(m).binary_cross_entropy(x, y, weight=_weights(m, x, 5),
                                                         reduction="sum"), ((5,), (5,)),
               low=0.05, high=0.95),
        Sample(lambda m, x, y: _F(m).binary_cross_entropy(
            x, y, weight=_weights(m, x, 3), reduction="none"), ((2, 3), (2, 3)), low=0.05,
            high=0.95),
    )

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        p = ctx.params
        grad_x = _pw_backward(BinaryCrossEntropyBackward, grad, x, t, p) if need_x else None
        grad_t = None
        if need_t:  # PyTorch's binary_cross_entropy_target_backward: -logit(x) * grad
            grad_t = -(x / (1 - x)).log() * grad
            if p["weight"] is not None:
                grad_t = grad_t * _weight_tensor(p["weight"])
            if p["reduction"] == "mean":
                grad_t = grad_t / t.numel()
        return grad_x, grad_t


@register
class BinaryCrossEntropyBackward(_PointwiseBackward):
    name, node, kind = ("binary_cross_entropy_backward", "BinaryCrossEntropyBackwardBackward0",
                        _BCE)
    samples = (
        Sample(lambda m, g, x, y: m.ops.binary_cross_entropy_backward(g, x, y, None, 0),
               ((3, 4), (3, 4), (3, 4)), low=0.05, high=0.95),
        Sample(lambda m, g, x, y: m.ops.binary_cross_entropy_backward(
            g.sum(), x, y, _weights(m, x, 5), 1), ((2,), (5,), (5,)), low=0.05, high=0.95),
    )

    @staticmethod
    def backward(ctx, gg):
        # PyTorch's binary_cross_entropy_double_backward(_target) and _grad_output
        g, x, t = ctx.saved_tensors
        p = ctx.params
        w = _weight_tensor(p["weight"])
        need_g, need_x, need_t = ctx.needs_input_grad
        mean = p["reduction"] == "mean"
        grad_g = (_grad_of_grad_output(BinaryCrossEntropyBackward, gg, g, x, t, p)
                  if need_g else None)
        grad_x = grad_t = None
        if need_x:
            eps = 1e-12
            grad_x = (x * x - 2 * x * t + t) / ((x + eps) ** 2 * (1 - x + eps) ** 2) * (g * gg)
            if w is not None:
                grad_x = grad_x * w
            if mean:
                grad_x = grad_x / x.numel()
        if need_t:
            grad_t = -gg * g
            if w is not None:
                grad_t = grad_t * w
            grad_t = grad_t / ((1 - x) * x).clamp(min=1e-12)
            if mean:
                grad_t = grad_t / x.numel()
        return grad_g, grad_x, grad_t


@register
class BinaryCrossEntropyWithLogits(_Pointwise):
    """``(1 - t) x - (1 + (pos_weight - 1) t) log_sigmoid(x)``, times ``weight``."""

    name, node, kind = ("binary_cross_entropy_with_logits",
                        "BinaryCrossEntropyWithLogitsBackward0", _BCE_LOGITS)
    samples = (
        Sample(lambda m, x: _F(m).binary_cross_entropy_with_logits(
            x * 3, _weights(m, x, 12).reshape(3, 4) / 2), ((3, 4),)),
        Sample(lambda m, x, y: _F(m).binary_cross_entropy_with_logits(
            x, y, pos_weight=_weights(m, x, 3), reduction="sum"), ((2, 3), (2, 3)), low=0.0,
            high=1.0),
        Sample(lambda m, x, y: _F(m).binary_cross_entropy_with_logits(
            x * 10, y, weight=_weights(m, x, 3), pos_weight=2.5 - _weights(m, x, 3),
            reduction="none"), ((2, 3), (2, 3)), low=0.0, high=1.0),
    )

    @staticmethod
    def backward(ctx, grad):
        # PyTorch's binary_cross_entropy_with_logits_backward and its _target_backward
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad
        p = ctx.params
        w, pw = _weight_tensor(p["weight"]), _weight_tensor(p["pos_weight"])
        mean = p["reduction"] == "mean"
        grad_x = grad_t = None
        if need_x:
            if pw is not None:
                tp = pw * t
                grad_x = (tp + 1 - t) * x.sigmoid() - tp
            else:
                grad_x = x.sigmoid() - t
            if w is not None:
                grad_x = grad_x * w
            grad_x = grad_x * grad
            if mean:
                grad_x = grad_x / x.numel()
        if need_t:
            if pw is not None:
                grad_t = _log_sigmoid(-x) - _log_sigmoid(x) * pw
            else:
                grad_t = -x
            grad_t = grad_t * grad
            if w is not None:
                grad_t = grad_t * w
            if mean:
                grad_t = grad_t / t.numel()
        return grad_x, grad_t


def _log_sigmoid(x: Tensor) -> Tensor:
    """``min(x, 0) - log1p(exp(-|x|))`` (PyTorch's log_sigmoid), as tensor ops."""
    return where(x < 0, x, 0.0) - (-x.abs()).exp().log1p()


def _backward_dtype(self: Tensor, kernel: str, integers: bool, *others) -> None:
    """PyTorch's errors for a backward op's operands: of another dtype than ``self``, or of a
    type its kernel has no loop for."""
    for other in others:
        if other is not None and other.dtype is not self.dtype:
            raise RuntimeError(
                f"Found dtype {_type_name(other)} but expected {_type_name(self)}")
    kind = self._data.dtype.kind
    if kind == "b" or (kind in "iu" and not integers):
        device = "cpu" if isinstance(self._data, np.ndarray) else "cuda"
        raise NotImplementedError(
            f"\"{kernel.format(device)}\" not implemented for '{_type_name(self)}'")


def _in_place_broadcast(shape: tuple, other: tuple) -> None:
    """PyTorch's error where an in-place product with ``other`` would change ``shape``."""
    result = broadcast_shapes(shape, other)
    if result != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(result)}")


@export(aten=True)
def huber_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: int,
                        delta: float) -> Tensor:
    """ATen's ``huber_loss_backward`` (``reduction`` as ATen's integer)."""
    _backward_dtype(self, "huber_backward_{}_out", False, grad_output, target)
    return _pw_backward(HuberLossBackward, grad_output, self, target,
                        {"reduction": _ATEN_REDUCTION[int(reduction)], "param": float(delta)})


@export(aten=True)
def smooth_l1_loss_backward(grad_output: Tensor, self: Tensor, target: Tensor, reduction: int,
                            beta: float) -> Tensor:
    """ATen's ``smooth_l1_loss_backward`` (integers too, as PyTorch's CPU kernel: compared with
    and divided by ``beta`` as a float)."""
    _backward_dtype(self, "smooth_l1_backward_{}_out",
                    isinstance(self._data, np.ndarray), grad_output, target)  # (CUDA: floats)
    return _pw_backward(SmoothL1LossBackward, grad_output, self, target,
                        {"reduction": _ATEN_REDUCTION[int(reduction)], "param": float(beta)})


@export(aten=True)
def binary_cross_entropy_backward(grad_output: Tensor, self: Tensor, target: Tensor,
                                  weight=None, reduction: int = 1) -> Tensor:
    """ATen's ``binary_cross_entropy_backward``."""
    _backward_dtype(self, "binary_cross_entropy_backward", False, grad_output, target)
    if weight is not None:
        _in_place_broadcast(tuple(self.shape), tuple(weight.shape))
    K = kernels_for((grad_output, self, target, weight), BinaryCrossEntropyBackward)
    return _pw_backward(BinaryCrossEntropyBackward, grad_output, self, target,
                        {"reduction": _ATEN_REDUCTION[int(reduction)],
                         "weight": None if weight is None else K.copy(weight._data)})


# ------------------------------------------------------------------ the functional forms
def _legacy_reduction(size_average, reduce, stacklevel: int = 3) -> str:
    """The ``reduction`` meant by the deprecated ``size_average``/``reduce`` pair, with PyTorch's
    warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead.", UserWarning, stacklevel=stacklevel)
    return reduction


def _reduction_of(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce, stacklevel=4)
    return reduction


def _size_warning(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=3)


def _broadcast_pair(input: Tensor, target: Tensor, promote: bool = True):
    """``torch.broadcast_tensors(input, target)``, both in their promoted dtype (``promote``) or
    the target in the input's (``huber_loss``'s kernel casts it so)."""
    shape = broadcast_shapes(tuple(input.shape), tuple(target.shape))
    if tuple(input.shape) != shape:
        input = input.expand(shape)
    if tuple(target.shape) != shape:
        target = target.expand(shape)
    if target.dtype is not input.dtype:
        if not promote:
            return input, target.to(input.dtype)
        a, b = binary_operands(input, target)
        input = input if a.dtype == input._data.dtype else input.to(Tensor._wrap(a).dtype)
        target = target if b.dtype == target._data.dtype else target.to(Tensor._wrap(b).dtype)
    return input, target


def _castable(input: Tensor, target: Tensor) -> None:
    """PyTorch's error where the promoted type of ``input`` and ``target`` cannot be cast to the
    input's (a kernel writing its result in the input's type)."""
    both = (input, target)
    promoted = result_type([t.dtype for t in both if t.ndim], [t.dtype for t in both if not t.ndim],
                           ())
    if promoted._category > input.dtype._category:
        raise RuntimeError(f"result type {torch_name(promoted.name)} can't be cast to the "
                           f"desired output type {_type_name(input)}")


def _not_float(input: Tensor, kernel: str) -> None:
    if not input.dtype.is_floating_point:
        device = "cpu" if isinstance(input._data, np.ndarray) else "cuda"
        raise NotImplementedError(
            f"\"{kernel.format(device)}\" not implemented for '{_type_name(input)}'")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _weighted(loss: Tensor, input: Tensor, weight: Tensor, reduction: str, mean_by_weight: bool):
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum() if mean_by_weight else weighted.mean()
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


@export(function=False, functional=True)
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """The mean (or sum, or each) of ``|input - target|``: a composite, as PyTorch's (its node is
    the reduction's, or ``AbsBackward0``); with ``weight``, 'mean' divides by the weights' sum."""
    _size_warning(input, target)
    reduction = _reduction_of(size_average, reduce, reduction)
    x, t = _broadcast_pair(input, target)
    if weight is not None:
        return _weighted((x - t).abs(), input, weight, reduction, True)
    check_reduction(reduction)
    return _reduce((x - t).abs(), reduction)


@export(function=False, functional=True)
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """The Huber loss: ``0.5 z**2`` where ``z = |input - target| < delta``, else
    ``delta (z - 0.5 delta)``, reduced; one fused kernel (``HuberLossBackward0``)."""
    _size_warning(input, target)
    _castable(input, target)
    x, t = _broadcast_pair(input, target, promote=False)
    if weight is None:
        check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _not_float(x, "huber_{}")
    if weight is not None:
        loss = apply(HuberLoss, (x, t), (x._data, t._data), reduction="none", param=float(delta))
        return _weighted(loss, input, weight, reduction, False)
    return apply(HuberLoss, (x, t), (x._data, t._data), reduction=reduction, param=float(delta))


@export(function=False, functional=True)
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """The smooth L1 loss: ``0.5 z**2 / beta`` where ``z = |input - target| < beta``, else
    ``z - 0.5 beta`` (``beta=0``: ``l1_loss``), reduced; one fused kernel
    (``SmoothL1LossBackward0``)."""
    _size_warning(input, target)
    reduction = _reduction_of(size_average, reduce, reduction)
    check_reduction(reduction)
    x, t = _broadcast_pair(input, target)
    if beta == 0.0:
        return _reduce((x - t).abs(), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _not_float(x, "smooth_l1_{}")
    return apply(SmoothL1Loss, (x, t), (x._data, t._data), reduction=reduction,
                 param=float(beta))


def _broadcast_error(shape: tuple, other: tuple) -> RuntimeError:
    """``torch.broadcast_shapes(shape, other)``'s error."""
    i = 1
    for i in range(1, len(other) + 1):
        if other[-i] != 1 and (i > len(shape) or other[-i] != shape[-i]):
            break
    return RuntimeError(
        f"Attempting to broadcast a dimension of length {other[-i]} at -{i}! Mismatching "
        f"argument at index 1 had numgrad.Size({list(other)}); but expected shape should be "
        f"broadcastable to {list(shape)}")


def _not_differentiable(function: str, name: str, t: Tensor | None) -> None:
    """PyTorch's error for a weight that requires grad (these losses have no gradient for it)."""
    if t is not None and t._requires_grad and grad_mode.state.enabled:
        raise RuntimeError(
            f"The function '{function}' is not differentiable with respect to argument '{name}'. "
            "This input cannot have requires_grad True.")


def _const(K, t: Tensor | None, dtype):
    """A weight tensor's data held as a parameter (a copy, in ``dtype``)."""
    if t is None:
        return None
    return K.cast(t._data, dtype) if t._data.dtype != dtype else K.copy(t._data)


@export(function=False, functional=True)
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """The binary cross entropy of probabilities ``input`` and ``target`` (each in [0, 1]),
    ``-w (t log x + (1 - t) log(1 - x))`` with each log clamped to -100 as PyTorch does,
    reduced; one fused kernel (``BinaryCrossEntropyBackward0``)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        try:
            shape = broadcast_shapes(tuple(target.shape), tuple(weight.shape))
        except RuntimeError:
            raise _broadcast_error(tuple(target.shape), tuple(weight.shape)) from None
        if shape != tuple(target.shape):
            raise _broadcast_error(tuple(target.shape), tuple(weight.shape))
    _not_float(input, "binary_cross_entropy")
    for other in (target, weight):
        if other is not None and other.dtype is not input.dtype:
            raise RuntimeError(
                f"Found dtype {_type_name(other)} but expected {_type_name(input)}")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    K = kernels_for((input, target, weight), BinaryCrossEntropy)
    return apply(BinaryCrossEntropy, (input, target), (input._data, target._data),
                 reduction=reduction, weight=_const(K, weight, input._data.dtype))


@export(function=False, functional=True)
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """The binary cross entropy of logits ``input`` and probabilities ``target``, as PyTorch
    computes it: ``(1 - t) x - (1 + (pos_weight - 1) t) log_sigmoid(x)``, times ``weight``
    elementwise, reduced; one fused kernel (``BinaryCrossEntropyWithLogitsBackward0``)."""
    reduction = _reduction_of(size_average, reduce, reduction)
    check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")

    shape = tuple(input.shape)
    if pos_weight is not None:  # (PyTorch multiplies by these in place)
        broadcast_shapes(tuple(pos_weight.shape), shape)
        _in_place_broadcast(shape, tuple(pos_weight.shape))
    if weight is not None:
        broadcast_shapes(shape, tuple(weight.shape))
        _in_place_broadcast(shape, tuple(weight.shape))
    _not_float(input, "log_sigmoid_{}")
    if not target.dtype.is_floating_point:  # ((1 - target).mul_(input), in place, refuses it)
        raise RuntimeError(f"result type {_type_name(input)} can't be cast to the desired output "
                           f"type {_type_name(target)}")
    x, t = _broadcast_pair(input, target)
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    K = kernels_for((x, t, weight, pos_weight), BinaryCrossEntropyWithLogits)
    dt = x._data.dtype
    return apply(BinaryCrossEntropyWithLogits, (x, t), (x._data, t._data), reduction=reduction,
                 weight=_const(K, weight, dt), pos_weight=_const(K, pos_weight, dt))


@export(function=False, functional=True)
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """The Kullback-Leibler divergence of ``target`` from log-probabilities ``input``:
    ``target (log target - input)`` (``exp(target) (target - input)`` with ``log_target``),
    reduced; 'batchmean' divides the sum by the batch size (PyTorch's warning for 'mean'). A
    composite, as PyTorch's."""
    if size_average is not None or reduce is not None:
        reduction = _reduction_of(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.", UserWarning, stacklevel=2)
    inner = "sum" if reduction == "batchmean" else reduction
    check_reduction(inner)
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:  # xlogy(target, target): 0 where target is 0
        zero = (target == 0).detach()
        loss = where(zero, 0.0, target * target.log()) - target * input  # (NaN grad at 0, too)
    reduced = _reduce(loss, inner)
    if reduction == "batchmean" and input.ndim != 0:
        reduced = reduced / input.shape[0]
    return reduced


# Nothing here joins the top-level namespace (PyTorch has these only in ``nn.functional``).
__all__: list[str] = []
