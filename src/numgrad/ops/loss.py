"""Loss functions as ops: ``nll_loss`` and ``mse_loss`` (``numgrad.nn.functional`` wraps them with
PyTorch's full signatures; ``cross_entropy`` is ``nll_loss`` of ``log_softmax``).

``nll_loss`` gathers one value per row by class index; its backward scatters the gradient back, and
is an op of its own (``nll_loss_backward``, as ATen's) whose derivative is ``nll_loss`` again, so
second derivatives work. ``mse_loss``'s backward is a tensor formula, differentiable as it stands.
"""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..compiler.traced import note_created
from ..tensor import Tensor


def _created(array):
    note_created(array)
    return array
from ._promote import binary_operands
from .registry import Op, Sample, apply, kernels_for, register

REDUCTIONS = ("none", "mean", "sum")
_ATEN_REDUCTION = {0: "none", 1: "mean", 2: "sum"}  # at::Reduction::Reduction
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
               "bool": "Bool"}


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
    on_cuda = True
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
    def forward(K, x, *, target, weight, ignore_index, reduction):
        return K.loss.nll_loss_forward(x, target, weight, ignore_index, reduction)

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        return (_nll_loss_backward(grad, None, ctx.input_shapes[0], p["target"], p["weight"],
                                   p["ignore_index"], p["reduction"], None),)


@register
class NllLossBackward(Op):
    """The gradient of ``nll_loss``: ``grad`` scattered to each row's target class. It is linear
    in ``grad`` and its adjoint is ``nll_loss``; ``self`` (the loss's input) gives only a shape."""

    name, node = "nll_loss_backward", "NllLossBackwardBackward0"
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
            from ..creation import _place

            grad_self = Tensor._wrap(_place(_created(np.zeros(p["shape"], grad._data.dtype)),
                                            grad.device))
        return grad_grad, grad_self


def _nll_loss_backward(grad, self, shape, target, weight, ignore_index, reduction, total_weight):
    return apply(NllLossBackward, (grad, self), (grad._data,), shape=tuple(shape), target=target,
                 weight=weight, ignore_index=ignore_index, reduction=reduction,
                 total_weight=total_weight)


def _type_name(t: Tensor) -> str:
    return _TYPE_NAMES[t._data.dtype.name]


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
    _check_nll_args(input, target, weight)
    K = kernels_for((input, target, weight), NllLoss)  # (one device for the three)
    return apply(NllLoss, (input,), (input._data,), target=K.copy(target._data),
                 weight=None if weight is None else K.copy(weight._data),
                 ignore_index=int(ignore_index), reduction=reduction)


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
        return K.binary(K.DIV, total, np.array(squares.size, squares.dtype))

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
    if a.dtype.kind != "f":
        kernel = "mse_cpu" if isinstance(a, np.ndarray) else "mse_cuda"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_type_name(Tensor._wrap(a))}'")
    return apply(MseLoss, (input, target), (a, b), reduction=reduction)


# Nothing here joins the top-level namespace (PyTorch has these only in ``nn.functional``).
__all__ = []
METHODS = ()
