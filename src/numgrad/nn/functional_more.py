"""``nn.functional``, round three: distances and similarities, group / instance / RMS / local
response normalisation, more activations, the margin, embedding and likelihood losses, the
channel-wise and alpha dropouts and ``bilinear``.

Each is a composite of numgrad's ops, written as PyTorch writes it (ATen's composite, or
``torch.nn.functional``'s Python), so values, gradients, second derivatives and, for the
composites, the ``grad_fn`` node are PyTorch's. Where PyTorch has a fused node of its own
(``NativeGroupNormBackward0``, ``PreluKernelBackward0``, ``GluBackward0``,
``SoftshrinkBackward0``, ``HardshrinkBackward0``, ``ThresholdBackward0``,
``RreluWithNoiseBackward0``, ``SoftMarginLossBackward0``, ``MultiMarginLossBackward0``) it is
one op of ``ops/nn_more.py`` with that node, its forward a few existing kernels.
"""
from __future__ import annotations

import math
import warnings

from .. import ops
from .._dtype import bool_ as _bool
from .._dtype import float64 as _float64
from ..creation import empty_like as _empty_like
from ..creation import ones_like as _ones_like
from ..creation import zeros as _zeros
from ..creation import zeros_like as _zeros_like
from ..ops import nn_more as _nn
from ..ops.loss import _type_name
from ..tensor import Tensor

__all__ = [
    "normalize", "cosine_similarity", "pairwise_distance", "group_norm", "instance_norm",
    "rms_norm", "local_response_norm", "prelu", "glu", "softmin", "softshrink", "hardshrink",
    "threshold", "threshold_", "rrelu", "rrelu_", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss", "dropout1d",
    "dropout2d", "dropout3d", "alpha_dropout", "bilinear", "pdist", "feature_alpha_dropout",
]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        from .functional import _legacy_reduction

        return _legacy_reduction(size_average, reduce, stacklevel=4)
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


def _dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


# ------------------------------------------------------------------ distances and similarities
def _norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """``linalg.vector_norm(x, p, dim, keepdim)``: ``Tensor.norm`` for p=2, else composed."""
    p = float(p)
    if p == 2.0:
        return x.norm(2, dim, keepdim=keepdim)
    a = x.abs()
    if p == math.inf:
        return a.amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return a.amin(dim, keepdim=keepdim)
    if p == 0.0:
        return (a != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == 1.0:
        return a.sum(dim, keepdim=keepdim)
    return (a ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim`` (node ``DivBackward0``)."""
    denom = _norm(input, p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    import numgrad

    return numgrad.div(input, denom, out=out)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``, as ATen
    computes it: each input divided by its clamped norm first, then the product summed
    (node ``SumBackward1``)."""
    shape = _broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = _norm(x1, 2, dim, keepdim=True).clamp(min=eps)
    n2 = _norm(x2, 2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _broadcast_shapes(a, b) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dimension (ATen's ``pairwise_distance``)."""
    out_dim = max(x1.ndim, x2.ndim)
    if out_dim == 0:  # (two numbers: ATen takes the norm over dimension 0 of their difference)
        return (x1 - x2 + eps).abs() if p != 0 else ((x1 - x2 + eps) != 0).to(x1.dtype)
    return _norm(x1 - x2 + eps, p, out_dim - 1, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distances between the rows of an ``(N, M)`` input, each pair ``i < j``
    once, in row-major order: ``N (N - 1) / 2`` values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    from ..ops.indexing_more import triu_indices

    i, j = triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    return _norm(input[i] - input[j], p, 1)


# ------------------------------------------------------------------ normalisation
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises each sample's ``num_groups`` groups of channels (biased variance plus
    ``eps``), then ``* weight + bias`` per channel."""
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    size = list(input.shape)
    prods = size[0] * size[1] // num_groups
    for s in size[2:]:
        prods *= s
    if prods == 1:
        raise ValueError(
            "Expected more than 1 value per channel when training, got input size "
            f"{[size[0] * size[1] // num_groups, num_groups] + size[2:]}")
    n, c = size[0], size[1]
    _check_float("GroupNormKernelImpl", input, suffix=False)
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {_sizes(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {_sizes(t.shape)} and input of shape "
                f"{_sizes(input.shape)}")
    if input.numel():
        return _nn.native_group_norm(input, weight, bias, num_groups, eps)
    x = input.reshape(n, num_groups, (input.numel() // n if n else 0) // num_groups
                      if n else _prod(size[1:]) // num_groups)  # (no elements: the composite)
    mean = x.mean(-1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdim=True)
    out = (centred * ops.rsqrt(var + eps)).reshape(input.shape)
    channel = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(channel)
    if bias is not None:
        out = out + bias.reshape(channel)
    return out


def _prod(sizes) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def _sizes(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalises each channel of each sample over its spatial dimensions: ATen's
    ``instance_norm``, a ``batch_norm`` of the input viewed as ``(1, N * C, *)`` with the
    running statistics repeated per sample (and averaged back over the batch)."""
    if use_input_stats:
        size = list(input.shape)
        prods = 1
        for s in size[2:]:
            prods *= s
        if prods == 1:
            raise ValueError(
                "Expected more than 1 spatial element when training, got input size "
                f"{input.size()}")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    from .functional import batch_norm

    b, c = input.shape[0], input.shape[1]
    shape = (1, b * c) + tuple(input.shape[2:])

    def rep(t):
        return None if t is None else t.repeat(b)

    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(input.reshape(shape), rm, rv, rep(weight), rep(bias), use_input_stats,
                     momentum, eps)
    if use_input_stats:
        from ..autograd import grad_mode

        with grad_mode.no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.view(b, c).mean(0))
            if running_var is not None:
                running_var.copy_(rv.view(b, c).mean(0))
    return out.view(input.shape)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``input * rsqrt(mean(input**2) + eps)`` over the trailing ``normalized_shape``
    dimensions, times ``weight`` (node ``MulBackward0``); ``eps`` defaults to the machine
    epsilon of the input's float type (float32's for float32)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if n == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < n or tuple(input.shape[input.ndim - n:]) != shape:
        star = "*" + ", ".join(str(s) for s in shape)  # (PyTorch's rms_norm writes [*4, 5])
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [{star}], but got "
            f"input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    if eps is None:
        eps = 2.220446049250313e-16 if input.dtype == _float64 else 1.1920928955078125e-07
    dims = tuple(range(input.ndim - n, input.ndim))
    out = input * ops.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Divides each element by ``(k + alpha / size * sum of squares over the ``size``
    neighbouring channels) ** beta``, as ``torch.nn.functional``'s (node ``DivBackward0``)."""
    from .functional import avg_pool2d, pad

    dim = input.dim()
    if dim < 3:
        raise ValueError(  # (PyTorch's message, its spaces included)
            "Expected 3D or higher dimensionality                          input (got "
            f"{dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    sizes = input.shape
    # (ATen's avg_pool3d over (size, 1, 1) of (N, 1, C, H, W...) is an avg_pool2d over (size, 1)
    # of the spatial dimensions flattened)
    div = div.reshape(sizes[0], 1, sizes[1], -1)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    div = div.reshape(sizes)
    div = (div * alpha + k) ** beta
    return input / div


# ------------------------------------------------------------------ activations
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``, with one weight or one per channel
    (dimension 1)."""
    if input.ndim == 0 and weight.numel() != 1:
        raise RuntimeError("Not allow zero-dim input tensor.")
    _check_float("prelu", input)
    if weight.dtype != input.dtype:
        raise RuntimeError("prelu: Type promoting not supported. Got "
                           f"{_type_name(input)} and {_type_name(weight)}")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if input.ndim >= 2 and weight.numel() != 1:
        w = weight.reshape((1, channels) + (1,) * (input.ndim - 2))
    else:
        w = weight.reshape(()) if input.ndim == 0 or weight.numel() == 1 else weight
    return _nn.prelu(input, w)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` for the two halves ``a``, ``b`` of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _dim(dim, input.ndim)
    _check_float("glu", input)
    if input.shape[d] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return _nn.glu(input, d)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-input)`` along ``dim`` (node ``SoftmaxBackward0``)."""
    if dim is None:
        from .functional import _softmax_dim

        dim = _softmax_dim("softmin", input.ndim, _stacklevel + 1)
    return ops.softmax(-input, dim, dtype=dtype)


def _check_float(name: str, input: Tensor, suffix: bool = True) -> None:
    if not input.dtype.is_floating_point:
        from ..ops.loss import _type_name

        if suffix:
            name += "_cpu" if input.device.type == "cpu" else "_cuda"
        raise NotImplementedError(f"\"{name}\" not implemented for '{_type_name(input)}'")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (NaN kept)."""
    _check_float("softshrink_check", input, suffix=False)
    top = 1.79769e+308 if input.dtype == _float64 else 3.40282e+38
    if not 0 <= lambd <= (1.7976931348623157e308 if input.dtype == _float64
                          else 3.4028234663852886e38):
        from ..ops.loss import _type_name

        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{_type_name(input)}, but found {lambd:g}")
    return _nn.softshrink(input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0 (NaN kept)."""
    _check_float("hardshrink", input)
    return _nn.hardshrink(input, lambd)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value`` (NaN kept)."""
    if input.dtype == _bool:
        _check_float("threshold", input)
    if inplace:
        return threshold_(input, threshold, value)
    return _nn.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    if input.dtype == _bool:
        _check_float("threshold", input)
    return _nn.threshold_(input, threshold, value)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomised leaky ReLU: in training, each non-positive element times a slope drawn from
    U(lower, upper) with numgrad's generator; in eval, ``leaky_relu`` with the mean slope."""
    if lower > upper:
        raise RuntimeError(
            "Lower bound should be less than or equal to the upper bound")
    _check_float("leaky_relu" if not training else "rrelu_with_noise_out", input)
    if training:
        noise = _empty_like(input.detach()).uniform_(lower, upper)
    else:
        noise = (lower + upper) / 2
    if inplace:
        return _nn.rrelu_with_noise_(input, noise)
    return _nn.rrelu_with_noise(input, noise)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, True)


# ------------------------------------------------------------------ losses
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _apply_reduction((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = _zeros_like(input)
    margin_clamp = (margin - input).clamp(min=0)
    output_margin = ops.where(target != 1, margin_clamp, zeros)
    output_self = ops.where(target != -1, input, zeros)
    return _apply_reduction(output_margin + output_self, reduction)


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
    output_neg = ops.where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _apply_reduction(output_pos + output_neg, reduction)


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
    return _apply_reduction((margin + dist_pos - dist_neg).clamp(min=0), reduction)


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
    from ..autograd import grad_mode

    if t is not None and t.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(
            f"The function '{function}' is not differentiable with respect to argument "
            f"'{name}'. This input cannot have requires_grad True.")


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    from ..ops.loss import check_reduction

    check_reduction(reduction)
    _not_differentiable("soft_margin_loss", "target", target)
    if input.dtype == _bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_type_name(input)}")
    from ..ops._promote import broadcast_shapes

    broadcast_shapes(tuple(input.shape), tuple(target.shape))  # (PyTorch's error)
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    return _nn.soft_margin_loss(input, target, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """``-(t log sigmoid(x) + (1 - t) log sigmoid(-x))``, weighted, averaged over the classes
    (the last dimension), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    from ..ops.activation import log_sigmoid

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
    from ..ops.loss import check_reduction

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


# ------------------------------------------------------------------ dropout
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool = True) -> Tensor:
    """ATen's ``feature_dropout``: one Bernoulli draw per (sample, channel), broadcast over
    the remaining dimensions, scaled by ``1 / (1 - p)`` (unbatched: per channel)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    lead = 2 if batched else 1
    if input.ndim < lead:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:
        noise = _zeros_like(input.detach())
    else:
        shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
        noise = _zeros(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
        noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _feature_dropout(input, p, training, inplace, batched=inp_dim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, H, W)`` input with probability ``p`` (a 3-D input
    is taken as ``(N, C, L)``, with PyTorch's warning)."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with
    probability ``p``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    if inp_dim == 5:
        return _feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace, batched=inp_dim == 5)


_ALPHA = 1.7580993408473766


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's mean and variance: dropped elements are set to SELU's negative
    saturation, then all are scaled and shifted (ATen's ``alpha_dropout``; node
    ``AddBackward0``)."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` of whole channels: one draw per (sample, channel), broadcast over the
    remaining dimensions (ATen's ``feature_alpha_dropout``)."""
    return _alpha_dropout(input, p, training, inplace, True)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                   feature: bool) -> Tensor:
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1:
        return input.mul_(0.0) if inplace else input * _zeros_like(input.detach())
    if feature:
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
        noise = _zeros(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    else:
        noise = _empty_like(input.detach()).bernoulli_(1 - p)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
    noise = noise * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


# ------------------------------------------------------------------ bilinear
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``."""
    if input1.dim() != input2.dim():
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(
                "bilinear(): input batch dimensions do not match: got "
                f"{input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
            f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
            f"expected {weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but "
            f"expected {weight.shape[0]}")
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    # (x1 W_o) . x2 for each output o: one matrix product, then a product summed
    o, i, j = weight.shape
    t = ops.matmul(x1, weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    out = (t * x2.unsqueeze(1)).sum(-1).reshape(lead + (o,))
    return out if bias is None else out + bias
