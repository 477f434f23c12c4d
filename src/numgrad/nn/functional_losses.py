"""Losses composed of other functions: ``linear_cross_entropy`` (a linear layer, then
``cross_entropy``), ``triplet_margin_with_distance_loss`` (any distance) and
``multilabel_margin_loss`` (the multi-class, multi-label hinge loss).

Written as PyTorch writes them (``torch.nn.functional``'s Python, ATen's kernels as sums of
hinges), so values, gradients and second derivatives are PyTorch's.
"""
from __future__ import annotations

from ..tensor import Tensor

__all__ = ["linear_cross_entropy", "triplet_margin_with_distance_loss",
           "multilabel_margin_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index=None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; a weight of
    shape ``(C, d1, ..., dK, in_features)`` gives the K-dimensional loss. ``options`` (PyTorch's
    chunking of the batch, to save memory) changes no value and is accepted as it is."""
    from .functional import cross_entropy

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


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for a distance ``d`` (``pairwise_distance`` by
    default); ``swap``: ``d(a, n)`` is the smaller of it and ``d(p, n)``."""
    from .functional_more import pairwise_distance

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
        from ..ops.elementwise import minimum

        to_negative = minimum(to_negative, distance(positive, negative))
    loss = (margin + to_positive - to_negative).clamp_min(0)
    return _reduce(loss, reduction)


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over each sample's target classes ``y_j``
    (``target``'s leading values up to the first -1) and its other classes ``i``."""
    from .functional_more import _reduction

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
    from ..ops.elementwise import where

    loss = where(counted, hinge, 0.0).sum((1, 2)) / dim
    loss = loss.reshape(()) if n <= 1 else loss
    return _reduce(loss, reduction)


def _scalar_name(t: Tensor) -> str:
    return {"float32": "Float", "float64": "Double", "int32": "Int", "bool": "Bool"}.get(
        t.dtype.name, t.dtype.name)

