"""``nn.functional``'s losses beyond the fused ones of ``ops/loss.py``: ``margin_ranking_loss``,
``hinge_embedding_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss`` and
``triplet_margin_with_distance_loss`` (any distance), ``poisson_nll_loss``, ``gaussian_nll_loss``,
``soft_margin_loss`` and ``multi_margin_loss`` (one op each, ``SoftMarginLossBackward0``,
``MultiMarginLossBackward0``, from ``ops/nn_functional.py``), ``multilabel_soft_margin_loss``,
``multilabel_margin_loss`` (the multi-class, multi-label hinge loss) and ``linear_cross_entropy``
(a linear layer, then ``cross_entropy``).

The composites are written as PyTorch writes them (``torch.nn.functional``'s Python, ATen's
kernels as sums of hinges), so values, gradients, second derivatives and nodes are PyTorch's.
"""
from __future__ import annotations

import math

import numgrad
from .. import ops
from .._dtype import bool_ as _bool
from ..creation import ones_like as _ones_like
from ..creation import zeros_like as _zeros_like
from ..ops import nn_functional as _nn
from ..ops.loss import _type_name
from ..tensor import Tensor
from .functional_activation import _check_float
from .functional_distance import pairwise_distance
from ..ops.loss import check_reduction
from ..ops.elementwise import minimum, where
from ..autograd import grad_mode
from ..ops._promote import broadcast_shapes
from ..ops.activation import log_sigmoid
from ..ops._names import export as _export


_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return numgrad.nn.functional._legacy_reduction(size_average, reduce, stacklevel=4)
    return reduction


def _apply_reduction(loss: Tensor, reduction: str) -> Tensor:
    """ATen's ``apply_loss_reduction`` (an unknown mode: PyTorch's enum error)."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


@_export
def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index=None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; a weight of
    shape ``(C, d1, ..., dK, in_features)`` gives the K-dimensional loss. ``options`` (PyTorch's
    chunking of the batch, to save memory) changes no value and is accepted as it is."""
    cross_entropy = numgrad.nn.functional.cross_entropy
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {linear_weight.shape[-1]}, "
                           "respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    logits = input @ linear_weight.reshape(-1, in_features).mT
    logits = logits.reshape(logits_shape)
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(logits, target, weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


@_export
def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for a distance ``d`` (``pairwise_distance`` by
    default); ``swap``: ``d(a, n)`` is the smaller of it and ``d(p, n)``."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.ndim, positive.ndim, negative.ndim)
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {dims[0]}D, positive "
                           f"{dims[1]}D, and negative {dims[2]}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = minimum(to_negative, distance(positive, negative))
    loss = (margin + to_positive - to_negative).clamp_min(0)
    return _reduce(loss, reduction)


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


@_export
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over each sample's target classes ``y_j``
    (``target``'s leading values up to the first -1) and its other classes ``i``."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    n = input.ndim
    if not (n == 2 and input.shape[1] != 0 or n == 1 and input.shape[0] != 0 or n == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {_sizes(input.shape)}")
    dim = 1 if n == 0 else input.shape[-1]
    if n <= 1:
        ok = target.ndim <= 1 and target.numel() == dim
    else:
        ok = target.ndim == 2 and tuple(target.shape) == tuple(input.shape)
    if not ok:
        raise RuntimeError(f"inconsistent target size: {_sizes(target.shape)} for input of "
                           f"size: {_sizes(input.shape)}")
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target)}")
    x = input.reshape(-1, dim)
    y = target.reshape(-1, dim)
    # the target classes: each row's values before its first -1
    listed = (y != -1).to(y.dtype).cumprod(1) > 0
    if bool((listed & ((y < 0) | (y >= dim))).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    classes = y.clamp(0, dim - 1)
    is_target = x.new_zeros(x.shape).detach().scatter_add(1, classes, listed.to(x.dtype)) > 0
    picked = x.gather(1, classes)  # x[y_j], one column a listed position
    hinge = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    counted = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = where(counted, hinge, 0.0).sum((1, 2)) / dim
    loss = loss.reshape(()) if n <= 1 else loss
    return _reduce(loss, reduction)


def _scalar_name(t: Tensor) -> str:
    return {"float32": "Float", "float64": "Double", "int32": "Int", "bool": "Bool"}.get(
        t.dtype.name, t.dtype.name)


@_export
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _apply_reduction((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@_export
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = _zeros_like(input)
    margin_clamp = (margin - input).clamp_min(0)
    output_margin = ops.where(target != 1, margin_clamp, zeros)
    output_self = ops.where(target != -1, input, zeros)
    return _apply_reduction(output_margin + output_self, reduction)


@_export
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1``, reduced (ATen's formula, with its 1e-12 in the norms)."""
    reduction = _reduction(size_average, reduce, reduction)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(
            "1D target tensor expects 2D input tensors, but found inputs with sizes "
            f"{_sizes(input1.shape)} and {_sizes(input2.shape)}.")
    if targ_dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(
            "0D target tensor expects 1D input tensors, but found inputs with sizes "
            f"{_sizes(input1.shape)} and {_sizes(input2.shape)}.")
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + 1e-12
    mag_square2 = (input2 * input2).sum(targ_dim) + 1e-12
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = _zeros_like(cos)
    output_pos = ops.where(target == 1, 1 - cos, zeros)
    output_neg = ops.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _apply_reduction(output_pos + output_neg, reduction)


@_export
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with ``pairwise_distance`` (``swap``: the smaller
    of ``d(a, n)`` and ``d(p, n)``), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D "
            "inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ops.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _apply_reduction((margin + dist_pos - dist_neg).clamp_min(0), reduction)


@_export
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input +
    eps)``, plus Stirling's term where ``full`` and ``target > 1``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _apply_reduction(loss, reduction)


@_export
def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 * (log(var) + (input - target)**2 / var)`` (plus ``0.5 log(2 pi)`` where
    ``full``), ``var`` clamped to ``eps`` without gradient, reduced; ``var`` may have one
    dimension fewer or one of size 1 (homoscedastic)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    # (PyTorch clamps a clone in place under no_grad: the gradient flows as if unclamped)
    clamped = var.detach().clamp(min=eps)
    var = var + (clamped - var.detach())
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


def _not_differentiable(function: str, name: str, t) -> None:
    if t is not None and t.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(
            f"The function '{function}' is not differentiable with respect to argument "
            f"'{name}'. This input cannot have requires_grad True.")


@_export
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)

    check_reduction(reduction)
    _not_differentiable("soft_margin_loss", "target", target)
    if input.dtype == _bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_type_name(input)}")
    broadcast_shapes(tuple(input.shape), tuple(target.shape))  # (PyTorch's error)
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    return _nn.soft_margin_loss(input, target, reduction)


@_export
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """``-(t log sigmoid(x) + (1 - t) log sigmoid(-x))``, weighted, averaged over the classes
    (the last dimension), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * log_sigmoid(input) + (1 - target) * log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    c = input.size(class_dim)
    loss = loss.sum(class_dim) / c
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


@_export
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j])**p / C``
    (each term times ``weight[y]``), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")

    check_reduction(reduction)
    _not_differentiable("multi_margin_loss", "weight", weight)
    ndims = input.dim()
    if not ((ndims == 2 and input.shape[1] != 0) or (ndims == 1 and input.shape[0] != 0)
            or ndims == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {_sizes(input.shape)}")
    nframe = 1 if ndims <= 1 else input.shape[0]
    dim = 1 if ndims == 0 else input.shape[ndims - 1]
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{nframe}], but got "
            f"{_sizes(target.shape)}. Input has shape {_sizes(input.shape)}.")
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == dim):
        raise RuntimeError(
            f"inconsistent weight size, expected {dim} but got {_sizes(weight.shape)}")
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target)}")
    _check_float("multi_margin_loss_cpu_kernel", input, suffix=False)
    if target.device.type == "cpu" and target.numel():
        # (PyTorch's CPU check, on the host values: validation, not traced by numgrad.compile)
        t = target._data
        if t.min() < 0 or t.max() >= dim:
            raise RuntimeError("target out of range")
    return _nn.multi_margin_loss(input, target, p, margin, weight, reduction, nframe, dim)
