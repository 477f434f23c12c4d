"""``numgrad.nn.functional``: PyTorch's functional forms of the layers and losses, with its
signatures (``import numgrad.nn.functional as F``)."""
from __future__ import annotations

import warnings

from .. import ops
from ..creation import zeros_like as _zeros_like
from ..ops import loss as _loss
from ..tensor import Tensor

__all__ = [
    "relu", "sigmoid", "tanh", "softmax", "log_softmax", "linear", "mse_loss", "nll_loss",
    "cross_entropy", "smooth_l1_loss", "binary_cross_entropy_with_logits",
]


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


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(0, x)`` elementwise; with ``inplace``, written into ``input``."""
    if inplace:
        return input.relu_()
    return ops.relu(input)


def sigmoid(input: Tensor) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-x))``, elementwise."""
    return ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent, elementwise."""
    return ops.tanh(input)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (which, if omitted, is chosen as PyTorch's
    deprecated rule does, with its warning)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return ops.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return ops.log_softmax(input, dim, dtype=dtype)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: for a 2-D input with a bias one ``addmm`` (node
    ``AddmmBackward0``), as PyTorch; else a matrix product, plus the bias."""
    if bias is not None and input.dim() == 2 and bias.dim() <= 2:
        return ops.addmm(bias, input, weight.t())
    out = ops.matmul(input, weight.t())
    return out if bias is None else out + bias


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """The mean (or sum, or each, by ``reduction``) of the squared differences, optionally
    weighted per element."""
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=2)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if weight is None:
        return _loss.mse_loss(input, target, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    weighted = (input - target) ** 2 * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """The negative log likelihood loss: ``-weight[t] * input[n, t]`` for log-probabilities
    ``input`` ((N, C) or (C,)) and int64 class indices ``target`` ((N,) or ()), reduced by
    ``reduction``; 'mean' divides by the total weight of the targets that are not
    ``ignore_index``."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _loss.nll_loss(input, target, weight, ignore_index, reduction)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """The cross entropy of logits ``input`` and ``target``: int64 class indices
    (``nll_loss(log_softmax(input, 1), target)``) or, when ``target`` has ``input``'s shape,
    class probabilities. ``label_smoothing`` mixes the target with the uniform distribution."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    _loss.check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    logp = ops.log_softmax(input, class_dim)
    if isinstance(target, Tensor) and target.shape == input.shape:
        return _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing,
                                            class_dim)
    loss = _loss.nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0.0:
        return loss
    smooth = _smoothing_term(logp, target, weight, ignore_index, reduction, class_dim)
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / logp.shape[class_dim])


def _class_weight(weight: Tensor, ndim: int) -> Tensor:
    """``weight`` shaped to broadcast along the class dimension (1 for a batch)."""
    return weight if ndim == 1 else weight.reshape((1, -1) + (1,) * (ndim - 2))


def _cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, class_dim):
    if not target.dtype.is_floating_point:
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got "
            f"{_loss._type_name(target)}")
    n_classes = logp.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = logp * target
    if weight is not None:
        terms = terms * _class_weight(weight, logp.ndim)
    if reduction == "none":
        return -terms.sum(class_dim)
    total = -terms.sum()
    if reduction == "sum":
        return total
    return total / (logp.numel() // n_classes) if logp.numel() else total * float("nan")


def _smoothing_term(logp, target, weight, ignore_index, reduction, class_dim):
    """PyTorch's smoothing loss for class-index targets: ``-sum_c weight[c] * logp[n, c]`` per
    row, 0 on ignored rows, reduced as ``nll_loss`` reduces (so 'mean' divides by the same
    total weight)."""
    kept = (target != ignore_index).detach()  # tensor ops: on the target's device, no sync
    kept_f = kept.to(logp.dtype)
    per_class = logp if weight is None else logp * _class_weight(weight, logp.ndim)
    smooth = -per_class.sum(class_dim) * kept_f
    if reduction == "none":
        return smooth
    if reduction == "sum":
        return smooth.sum()
    if weight is None:
        divisor = kept_f.sum()
    else:  # (an ignored row's target may be out of range: index with class 0, weighted by 0)
        divisor = (weight.detach()[target * kept.to(target.dtype)] * kept_f).sum()
    # nan when the divisor is 0 (every row ignored), chosen on the device
    divisor = ops.where(divisor == 0, float("nan"), divisor)
    return smooth.sum() / divisor


def _reduced(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _size_warning(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", UserWarning, stacklevel=3)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """PyTorch's smooth L1 loss: ``0.5 * z**2 / beta`` where ``z = |input - target| < beta``,
    else ``z - 0.5 * beta`` (``beta=0``: the L1 loss), reduced by ``reduction``.

    A composite of elementwise ops (its node is the reduction's, not PyTorch's
    ``SmoothL1LossBackward0``); its gradient is PyTorch's: ``(input - target) / beta`` inside,
    ``sign(input - target)`` outside."""
    _size_warning(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    _loss.check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    z = (input - target).abs()
    if beta == 0:
        return _reduced(z, reduction)
    return _reduced(ops.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta), reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """The binary cross entropy of logits ``input`` and probabilities ``target``, computed as
    PyTorch computes it: ``(1 - target) * input - log_weight * log_sigmoid(input)`` with
    ``log_weight = (pos_weight - 1) * target + 1`` (1 without ``pos_weight``), times ``weight``
    elementwise, reduced by ``reduction``; ``log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))``.

    A composite of elementwise ops (its node is the reduction's, not PyTorch's
    ``BinaryCrossEntropyWithLogitsBackward0``); its gradient, ``sigmoid(input) - target``
    (weighted), comes out as a difference of terms near 1, so it is PyTorch's to the rounding of
    1 (about 6e-8 in float32), not relative to the tiny values of saturated logits (at -30 with
    target 0: 0 here, 9.4e-14 from PyTorch's fused backward)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    _loss.check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    log_sigmoid = ops.minimum(input, _zeros_like(input)) - ops.log1p(ops.exp(-input.abs()))
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sigmoid
    if weight is not None:
        loss = loss * weight
    return _reduced(loss, reduction)
