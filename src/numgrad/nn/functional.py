"""``numgrad.nn.functional``: PyTorch's functional forms of the layers and losses, with its
signatures (``import numgrad.nn.functional as F``)."""
from __future__ import annotations

import math
import sys as _sys
import warnings

import numpy as np

from .. import ops
from .._dtype import bool_ as _bool
from ..creation import empty_like as _empty_like
from ..creation import zeros_like as _zeros_like
from ..ops import loss as _loss
from ..ops.loss import _legacy_reduction  # (nn.functional._legacy_reduction, as before)
from ..ops._names import export as _export
from ..ops._names import facade as _facade
from ..autograd.graph import keep_given as _keep_given
from ..tensor import Tensor
from ..ops import activation as _act
from ..ops import normalization as _normalization
from ..ops import indexing as _indexing
from ..ops import conv as _conv
from ..ops import counting as _counting
from ..ops import grid_sample as _grid_sample
from ..ops import padding as _padding
from ..ops import pooling as _pooling
from ..ops import upsample as _upsample
from . import functional_activation, functional_bilinear, functional_distance
from . import functional_dropout, functional_losses, functional_normalization
from .functional_distance import *  # noqa: F401,F403  (normalize, pdist ...)
from .functional_normalization import *  # noqa: F401,F403  (group_norm, rms_norm ...)
from .functional_activation import *  # noqa: F401,F403  (prelu, glu, softshrink ...)
from .functional_activation import _softmax_dim
from .functional_losses import *  # noqa: F401,F403  (margin_ranking_loss ...)
from .functional_dropout import *  # noqa: F401,F403  (dropout2d, alpha_dropout ...)
from .functional_bilinear import *  # noqa: F401,F403
from .functional_unpool import *  # noqa: F401,F403  (max_unpool1d/2d/3d)
from .functional_embedding import *  # noqa: F401,F403  (embedding_bag)
from .functional_fractional_pool import *  # noqa: F401,F403  (fractional_max_pool2d/3d)
from .functional_ctc import *  # noqa: F401,F403  (ctc_loss)
from .functional_attention import *  # noqa: F401,F403  (scaled_dot_product_attention ...)
from .functional_attention import _canonical_mask, _none_or_dtype  # noqa: F401
from .. import overrides as _overrides
from ..creation import tensor
from ..ops.inplace import _write
from ..autograd import grad_mode

# The ops' functional forms, each declared in its ops module with ``export(functional=)``
# (ops/_names.py): convolutions, fold/unfold, pooling, padding, resampling, the fused losses,
# batch_norm, grid sampling and one_hot.
_FROM_OPS = _facade("functional", (_conv, _pooling, _padding, _upsample, _loss, _normalization,
                                   _grid_sample, _counting))
globals().update(_FROM_OPS)


@_export
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(0, x)`` elementwise; with ``inplace``, written into ``input``."""
    if inplace:
        return input.relu_()
    return ops.relu(input)


@_export
def sigmoid(input: Tensor) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-x))``, elementwise."""
    return ops.sigmoid(input)


@_export
def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent, elementwise."""
    return ops.tanh(input)


@_export
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (which, if omitted, is chosen as PyTorch's
    deprecated rule does, with its warning)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return ops.softmax(input, dim, dtype=dtype)


@_export
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return ops.log_softmax(input, dim, dtype=dtype)


@_export
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: for a 2-D input with a bias one ``addmm`` (node
    ``AddmmBackward0``), for a contiguous 3-D one the ``addmm`` of its rows viewed back
    (``ViewBackward0``), as PyTorch; else a matrix product, plus the bias."""
    if bias is not None and input.dim() == 2 and bias.dim() <= 2:
        return ops.addmm(bias, input, weight.t())
    if bias is not None and input.dim() == 3 and bias.dim() <= 1 and weight.dim() == 2 and \
            input.is_contiguous():  # (PyTorch's fused path: addmm of the rows, then a view)
        rows, cols = input.shape[0] * input.shape[1], input.shape[2]
        out = ops.addmm(bias, input.view(rows, cols), weight.t())
        return out.view(input.shape[0], input.shape[1], out.shape[1])
    out = ops.matmul(input, weight.t())
    return out if bias is None else out + bias


@_export
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


@_export
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """The negative log likelihood loss: ``-weight[t] * input[n, t]`` for log-probabilities
    ``input`` ((N, C), (C,) or (N, C, d1, ...)) and int64 class indices ``target`` ((N,), ()
    or (N, d1, ...)), reduced by
    ``reduction``; 'mean' divides by the total weight of the targets that are not
    ``ignore_index``."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _loss.nll_loss(input, target, weight, ignore_index, reduction)


@_export
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


# ----------------------------------------------------------------------------------- activations
# Each one op with PyTorch's node (ops/activation.py): one fused forward kernel and a backward op
# of its own, so that second derivatives work.


def _in_place(input: Tensor, fn, *args) -> Tensor:
    """``inplace=True`` for the activations PyTorch writes through its out-of-place kernel
    (``silu``, ``mish``, ``hardswish``, ``hardsigmoid``): computed, then written into ``input``
    with the op's own node (``SiluBackward0`` ...)."""
    return _write(input, fn, *args)


@_export
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x``; the gradient at 0 is
    ``negative_slope``, as PyTorch's (``inplace``: ``LeakyReluBackward1``, saving the output)."""
    if inplace:
        return _act.leaky_relu_(input, negative_slope)
    return _act.leaky_relu(input, negative_slope)


@_export
def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _act.leaky_relu_(input, negative_slope)


@_export
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``; the gradient at 0 is ``alpha``."""
    if inplace:
        return _act.elu_(input, alpha)
    out = _act.elu(input, alpha)
    if type(alpha) is int:  # (PyTorch's node shows the number as given)
        _keep_given(out, alpha=alpha)
    return out


@_export
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _act.elu_(input, alpha)


@_export
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with SELU's constants (node ``EluBackward0``, as PyTorch's)."""
    return _act.selu_(input) if inplace else _act.selu(input)


@_export
def selu_(input: Tensor) -> Tensor:
    return _act.selu_(input)


@_export
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return _act.celu_(input, alpha) if inplace else _act.celu(input, alpha)


@_export
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _act.celu_(input, alpha)


@_export
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``, elementwise."""
    return _in_place(input, _act.silu) if inplace else _act.silu(input)


@_export
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``, elementwise."""
    return _in_place(input, _act.mish) if inplace else _act.mish(input)


@_export
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``, elementwise."""
    return _in_place(input, _act.hardswish) if inplace else _act.hardswish(input)


@_export
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``, elementwise (its second derivative raises, as PyTorch's)."""
    return _in_place(input, _act.hardsigmoid) if inplace else _act.hardsigmoid(input)


@_export
def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, computed as ``min(x, 0) - log1p(exp(-|x|))``."""
    return _act.log_sigmoid(input)


@_export
def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)`` (a composite in PyTorch too: node ``DivBackward0``)."""
    if input.dtype == _bool:
        device = "cpu" if input.device.type == "cpu" else "cuda"
        raise NotImplementedError(f"\"abs_{device}\" not implemented for 'Bool'")
    return input / (input.abs() + 1)


@_export
def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)`` (a composite in PyTorch too: node ``SubBackward0``)."""
    return input - input.tanh()


@_export
def softplus(input: Tensor, beta: float = 1, threshold: float = 20) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``, as
    PyTorch; its gradient is ``sigmoid(beta * x)`` (0.5 at 0)."""
    out = _act.softplus(input, beta, threshold)
    if type(beta) is int or type(threshold) is int:  # (PyTorch's node shows them as given)
        _keep_given(out, beta=beta, threshold=threshold)
    return out


@_export
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``; the gradient is 1 strictly inside and 0 at
    and beyond the bounds, as PyTorch's ``hardtanh_backward``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _act.hardtanh_(input, min_val, max_val)
    return _act.hardtanh(input, min_val, max_val)


@_export
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


@_export
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``hardtanh(input, 0, 6)``."""
    if inplace:
        return hardtanh(input, 0.0, 6.0, True)
    out = hardtanh(input, 0.0, 6.0)
    _keep_given(out, lo=0, hi=6)  # (PyTorch's relu6 is ``hardtanh(input, 0, 6)``, ints shown)
    return out


@_export
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """The Gaussian error linear unit ``x * Phi(x)`` (``approximate='tanh'``:
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``), as PyTorch."""
    return _act.gelu(input, approximate)


# ----------------------------------------------------------------------------------- layers
@_export
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``, as
    PyTorch: ``input * noise`` with ``noise = bernoulli(1 - p) / (1 - p)``, so the gradient is
    ``noise``. Identity (the input itself) when not ``training`` or ``p == 0``; zeros for
    ``p == 1``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        noise = _zeros_like(input)
    else:
        noise = _empty_like(input).bernoulli_(1 - p)
        noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


@_export
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of ``weight`` picked by the int64 indices ``input`` (``weight[input]``); the
    entries at ``padding_idx`` contribute no gradient; with ``max_norm``, the picked rows whose
    ``norm_type``-norm exceeds it are first renormalised in place (PyTorch's
    ``embedding_renorm_``); ``scale_grad_by_freq`` divides each row's gradient by its count in
    ``input``. One node, ``EmbeddingBackward0``, as in PyTorch (``ops/indexing.py``)."""
    if weight.ndim != 2:
        if weight.ndim == 0 and weight.requires_grad and grad_mode.state.enabled:
            # (PyTorch's autograd reads the weight's size 0 first, for its node)
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError("'weight' must be 2-D")
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    if sparse:
        raise NotImplementedError("embedding(sparse=True): numgrad has no sparse gradients")
    if input.dtype.is_floating_point or input.dtype == _bool:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{_loss._type_name(input)}Tensor instead (while "
            "checking arguments for embedding)")  # (PyTorch's legacy type name, as embedding_bag)
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _indexing.embedding(weight, input, -1 if padding_idx is None else padding_idx,
                               scale_grad_by_freq)


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: each distinct row of ``weight`` in ``input`` whose norm
    exceeds ``max_norm`` is scaled by ``max_norm / (norm + 1e-7)``, in place, unrecorded."""
    rows = np.unique(input.detach().cpu().numpy().reshape(-1))
    with grad_mode.no_grad():
        index = tensor(rows, device=weight.device)
        picked = weight[index]
        norms = _vector_norm(picked, norm_type, dim=1)
        scale = ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[index] = picked * scale.unsqueeze(1)


def _vector_norm(x: Tensor, ord: float, dim=None) -> Tensor:
    """``linalg.vector_norm(x, ord, dim)`` from numgrad's ops."""
    ord = float(ord)
    if ord == 2.0 and dim is None:  # (before |x|, which this one does not need: clip_grad_norm_
        return x.norm()             # made it of every gradient, 2M entries in the word-LM's)
    a = x.abs()
    if ord == 2.0:
        return (a * a).sum(dim).sqrt()
    if ord == math.inf:
        return a.amax(dim) if dim is not None else a.max()
    if ord == -math.inf:
        return a.amin(dim) if dim is not None else a.min()
    if ord == 0.0:
        return (a != 0).to(x.dtype).sum(dim)
    if ord == 1.0:
        return a.sum(dim)
    return (a ** ord).sum(dim) ** (1.0 / ord)


@_export
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises over the last ``len(normalized_shape)`` dimensions: ``(x - mean) /
    sqrt(var + eps)`` with the biased variance, then ``* weight + bias`` (elementwise). One
    node, ``NativeLayerNormBackward0``, as in PyTorch (``ops/normalization.py``)."""
    shape = _layer_norm_shape(input, normalized_shape, weight, bias)
    return _normalization.layer_norm(input, shape, weight, bias, eps)


def _layer_norm_shape(input: Tensor, normalized_shape, weight, bias) -> tuple:
    """``normalized_shape`` as a tuple, checked against the shapes of ``input``, ``weight`` and
    ``bias`` (PyTorch's messages)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    listed = list(shape)
    if n == 0 or input.ndim < n or tuple(input.shape[input.ndim - n:]) != shape:
        star = ", ".join(["*"] + [str(s) for s in shape])
        raise RuntimeError(
            f"Given normalized_shape={listed}, expected input with shape [{star}], but got "
            f"input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(t.shape)} and normalized_shape = {listed}")
    return shape


# This module's own functions (declared with @_export: its __all__ so far), the ops' forms, and
# those of nn/functional_<concept>.py: distances, normalisations, activations, dropouts, bilinear,
# losses, unpooling, embedding_bag, fractional pooling, CTC and attention (composites of matmul,
# softmax, where and dropout).
__all__ += list(_FROM_OPS)  # noqa: F821  (filled by @_export)
for _module in [_sys.modules[f"{__name__}_{concept}"] for concept in (
        "distance", "normalization", "activation", "dropout", "bilinear", "losses", "unpool",
        "embedding", "fractional_pool", "ctc", "attention")]:
    __all__ += _module.__all__

# The dispatching forms of the functions above (``__torch_function__``: numgrad/overrides.py).
_overrides.wrap_namespace(_sys.modules[__name__], "torch.nn.functional.", python_style=True)
