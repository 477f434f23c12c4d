"""Batch and layer normalisation as PyTorch's one node each, ``NativeBatchNormBackward0`` and
``NativeLayerNormBackward0``: the statistics, the normalisation and its backward are kernels
(``K.batch_norm_stats``, ``batch_norm_forward``, ``batch_norm_backward``: one or two passes per
channel on the CPU; ``K.layer_norm_forward``/``layer_norm_backward``: one kernel each, a row at a
time, the forward's row statistics kept for the backward), not a dozen elementwise ops and their
nodes. The backward recorded for a second derivative (``create_graph=True``) is the same formula
in differentiable ops."""
from __future__ import annotations

import math

from .. import _lowp
from .._dtype import torch_name
from ..autograd import grad_mode
from ..autograd.graph import keep_given
from ..tensor import Tensor
from . import _jvp
from ._names import export
from .registry import Op, Sample, apply, kernels_for, kernels_of, register


def _F(m):
    return m.nn.functional


def _verify_batch_size(size) -> None:
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}")


@register
class NativeBatchNorm(Op):
    """``(x - mean) * invstd * weight + bias`` per channel (dimension 1), the statistics given as
    params (the batch's, computed from ``x`` by the caller, when ``training``; else the running
    ones); ``weight``/``bias`` None are 1 and 0."""

    name, node = "native_batch_norm", "NativeBatchNormBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1)
    samples = (
        Sample(lambda m, x, w, b: _F(m).batch_norm(x, None, None, w, b, training=True),
               ((4, 3), (3,), (3,))),
        Sample(lambda m, x: _F(m).batch_norm(x, None, None, training=True), ((3, 2, 2, 3),)),
        Sample(lambda m, x, w, b: _F(m).batch_norm(
            x, m.zeros(2, dtype=x.dtype, device=x.device) + 0.25,
            m.ones(2, dtype=x.dtype, device=x.device) * 1.5, w, b),
            ((3, 2, 4), (2,), (2,))),
    )

    @staticmethod
    def forward(K, x, weight, bias, *, mean, invstd, training, eps):
        return K.batch_norm_forward(x, mean, invstd, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        p = ctx.params
        need_x, need_w, need_b = ctx.needs_input_grad
        if not grad_mode.state.enabled:  # (a plain backward: one kernel)
            K = kernels_of(grad._data)
            w = weight._data if weight is not None else K.full(p["mean"].shape, 1.0,
                                                               p["mean"].dtype)
            gx, gw, gb = _lowp.wider(K.batch_norm_backward, grad._data, x._data, p["mean"],
                                     p["invstd"], w, p["training"])
            return (Tensor._wrap(gx) if need_x else None, Tensor._wrap(gw) if need_w else None,
                    Tensor._wrap(gb) if need_b else None)
        return _backward_differentiable(ctx, grad, x, weight, need_x, need_w, need_b)


def _backward_differentiable(ctx, grad, x, weight, need_x, need_w, need_b):
    """The backward in ops (recorded with ``create_graph=True``: twice differentiable), the
    batch's statistics recomputed from ``x`` so that their dependence on it is differentiated."""
    p = ctx.params
    channels = x.shape[1]
    view = (1, channels) + (1,) * (x.ndim - 2)
    dims = (0,) + tuple(range(2, x.ndim))
    count = x.numel() // channels if channels else 0
    if p["training"]:
        centred = x - x.mean(dims, keepdim=True)
        invstd = ((centred * centred).mean(dims, keepdim=True) + p["eps"]).rsqrt()
    else:
        centred = x - Tensor._wrap(p["mean"]).reshape(view)
        invstd = Tensor._wrap(p["invstd"]).reshape(view)
    xhat = centred * invstd
    total = grad.sum(dims, keepdim=True)
    dot = (grad * xhat).sum(dims, keepdim=True)
    grad_x = None
    if need_x:
        scale = invstd if weight is None else invstd * weight.reshape(view)
        if p["training"]:
            grad_x = (grad - total / count - xhat * (dot / count)) * scale
        else:
            grad_x = grad * scale
    return (grad_x, dot.reshape(channels) if need_w else None,
            total.reshape(channels) if need_b else None)


@export(function=False, functional=True)
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalises each channel (dimension 1) over the batch and spatial dimensions. In
    ``training`` (or without running statistics) with the batch's mean and biased variance,
    updating ``running_mean``/``running_var`` in place (if given) as
    ``(1 - momentum) * running + momentum * batch``, with the unbiased variance; otherwise with
    the running statistics. Then ``* weight + bias`` per channel. One node,
    ``NativeBatchNormBackward0``, as in PyTorch."""
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if input.numel() == 0 and input.ndim < 2 and weight is None and bias is None:
        return input.clone()  # (ATen's path for no elements comes first there: no checks)
    # ATen's checks, in its order (its number of features is 0 below two dimensions)
    channels = input.shape[1] if input.ndim >= 2 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None:
            if t.numel() != channels:
                raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
        elif not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            if input.numel() == 0:
                raise IndexError(f"select(): index 0 out of range for tensor of size "
                                 f"[{t.numel()}] at dimension 0")
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(input.ndim, 1)}, {max(input.ndim, 1) - 1}], but got 1)")
    x = input._data
    if x.dtype.kind not in "fV":  # ("V": bfloat16, numgrad._lowp)
        raise NotImplementedError(f"\"batch_norm\" not implemented for '{torch_name(x.dtype)}'")
    for t in (weight, bias, running_mean, running_var):
        if t is not None and t._data.dtype != x.dtype:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of "
                               f"{torch_name(x.dtype)}")
    if input.numel() == 0:  # ATen's path for no elements (a graph of its own; no statistics)
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    K = kernels_for((input, weight, bias, running_mean, running_var), NativeBatchNorm)
    batch_stats = training or running_mean is None or running_var is None
    # (float16, bfloat16: the statistics in float32, PyTorch's opmath, ``numgrad._lowp``)
    wide = _lowp.widened(K, (x,) if batch_stats else (running_mean._data, running_var._data))[0]
    if batch_stats:
        mean, var, invstd = K.batch_norm_stats(wide[0], float(eps))
        if training and (running_mean is not None or running_var is not None):
            _update_running(running_mean, running_var, mean, var, x.size // channels, momentum)
    else:
        mean = wide[0]
        invstd = K.unary(K.RSQRT, K.binary(K.ADD, wide[1], wide[1].dtype.type(eps)))
    w = weight._data if weight is not None else K.full((channels,), 1.0, mean.dtype)
    b = bias._data if bias is not None else K.full((channels,), 0.0, mean.dtype)
    out = apply(NativeBatchNorm, (input, weight, bias), (x, w, b), mean=mean, invstd=invstd,
                training=bool(batch_stats), eps=float(eps))
    if out._grad_fn is not None:  # (PyTorch's node keeps the running statistics too)
        keep_given(out, running_mean=running_mean, running_var=running_var)
    return out


def _update_running(running_mean, running_var, mean, var, count, momentum) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` in place, with the batch's
    unbiased variance, as PyTorch's kernel updates them (bumping their versions)."""
    with grad_mode.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(Tensor._wrap(mean) * momentum)
        if running_var is not None:
            unbiased = Tensor._wrap(var) * (count / max(count - 1, 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)


class _RowStats:
    """Each row's mean and rstd as the layer norm's forward computed them ((rows,) arrays): kept
    by its node for the backward (``_saved_result1``/``_saved_result2``)."""

    __slots__ = ("mean", "rstd")

    def __init__(self):
        self.mean = self.rstd = None


@register
class NativeLayerNorm(Op):
    """``(x - mean) * rstd * weight + bias`` over the last ``len(normalized_shape)`` dimensions,
    the statistics each row's (biased variance); ``weight``/``bias`` None are 1 and 0. The forward
    fills ``stats`` (a ``_RowStats``) for the backward."""

    name, node = "native_layer_norm", "NativeLayerNormBackward0"
    jvp = _jvp.transposed_backward
    on_cuda = True
    save_inputs = (0, 1, 2)
    samples = (
        Sample(lambda m, x, w, b: _F(m).layer_norm(x, (3,), w, b), ((4, 3), (3,), (3,))),
        Sample(lambda m, x: _F(m).layer_norm(x, (2, 3), eps=1e-3), ((2, 2, 3),)),
        Sample(lambda m, x, w: _F(m).layer_norm(x.transpose(0, 1), (4,), w), ((4, 3), (4,))),
        Sample(lambda m, x, b: _F(m).layer_norm(x, (5,), None, b), ((2, 5), (5,))),
    )

    @staticmethod
    def forward(K, x, weight, bias, *, normalized_shape, eps, stats):
        n = math.prod(normalized_shape)
        rows = x.size // n if n else math.prod(x.shape[:x.ndim - len(normalized_shape)])
        if not n:  # (rows of no elements: PyTorch's mean 0 and rstd NaN)
            stats.mean, stats.rstd = K.zeros((rows,), x.dtype), K.full((rows,), math.nan, x.dtype)
            return K.zeros(x.shape, x.dtype)
        w = weight if weight is not None else K.full((n,), 1.0, x.dtype)
        b = bias if bias is not None else K.full((n,), 0.0, x.dtype)
        out, stats.mean, stats.rstd = K.layer_norm_forward(x, w, b, eps, n)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        p = ctx.params
        need_x, need_w, need_b = ctx.needs_input_grad
        shape = p["normalized_shape"]
        n = math.prod(shape)
        stats = p["stats"]
        if not grad_mode.state.enabled and n and stats.mean.dtype == x._data.dtype:
            # (a plain backward: one kernel; float16/bfloat16, whose forward ran widened, and
            # second derivatives take the formula in ops)
            K = kernels_of(grad._data)
            dt = x._data.dtype
            w = weight._data if weight is not None else K.full((n,), 1.0, dt)
            gx, gw, gb = K.layer_norm_backward(grad._data, x._data, stats.mean, stats.rstd, w, n,
                                               need_x)
            return (Tensor._wrap(gx) if need_x else None,
                    Tensor._wrap(K.reshape_view(gw, shape)) if need_w else None,
                    Tensor._wrap(K.reshape_view(gb, shape)) if need_b else None)
        return _layer_norm_backward_differentiable(grad, x, weight, shape, p["eps"], need_x,
                                                   need_w, need_b)


def _layer_norm_backward_differentiable(grad, x, weight, shape, eps, need_x, need_w, need_b):
    """The layer norm's backward in ops (recorded with ``create_graph=True``: twice
    differentiable), the statistics recomputed from ``x`` so that their dependence on it is
    differentiated."""
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    lead = tuple(range(x.ndim - len(shape)))
    centred = x - x.mean(dims, keepdim=True)
    rstd = ((centred * centred).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = centred * rstd
    grad_x = None
    if need_x:
        gw = grad * weight if weight is not None else grad
        grad_x = (gw - gw.mean(dims, keepdim=True)
                  - xhat * (gw * xhat).mean(dims, keepdim=True)) * rstd
    grad_w = (grad * xhat).sum(lead) if need_w and lead else (grad * xhat) if need_w else None
    grad_b = grad.sum(lead) if need_b and lead else grad if need_b else None
    return grad_x, grad_w, grad_b


def layer_norm(input: Tensor, shape: tuple, weight, bias, eps: float, with_stats: bool = False):
    """``NativeLayerNorm`` of ``input`` (the caller checked the shapes); with ``with_stats``,
    ``(out, mean, rstd)``, the statistics shaped to broadcast against ``input`` (size 1 in the
    normalised dimensions), not differentiable."""
    x = input._data
    if x.dtype.kind not in "fV":  # ("V": bfloat16, numgrad._lowp)
        raise NotImplementedError(
            f"\"LayerNormKernelImpl\" not implemented for '{torch_name(x.dtype)}'")
    for t in (weight, bias):
        if t is not None and t._data.dtype != x.dtype:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of "
                               f"{torch_name(x.dtype)}")
    stats = _RowStats()
    out = apply(NativeLayerNorm, (input, weight, bias),
                (x, None if weight is None else weight._data, None if bias is None else bias._data),
                normalized_shape=tuple(shape), eps=float(eps), stats=stats)
    if not with_stats:
        return out
    stat_shape = stats_shape(x.shape, len(shape))
    K = kernels_of(stats.mean)
    mean, rstd = (Tensor._wrap(K.reshape_view(s, stat_shape)) for s in (stats.mean, stats.rstd))
    if mean.dtype != input.dtype:  # (float16, bfloat16: computed in float32, given as PyTorch's)
        mean, rstd = mean.to(input.dtype), rstd.to(input.dtype)
    return out, mean, rstd


def stats_shape(shape: tuple, k: int) -> tuple:
    """The shape of a layer norm's statistics: ``shape`` with its last ``k`` sizes 1."""
    return tuple(shape[:len(shape) - k]) + (1,) * k
