"""Batch normalisation as PyTorch's one node, ``NativeBatchNormBackward0``: the statistics, the
normalisation and its backward are kernels (``K.batch_norm_stats``, ``batch_norm_forward``,
``batch_norm_backward``: one or two passes per channel on the CPU), not a dozen elementwise ops
and their nodes. The backward recorded for a second derivative (``create_graph=True``) is the same
formula in differentiable ops."""
from __future__ import annotations

from .._dtype import torch_name
from ..autograd import grad_mode
from ..tensor import Tensor
from . import _jvp
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
            w = weight._data if weight is not None else K.full(p["mean"].shape, 1.0, x._data.dtype)
            gx, gw, gb = K.batch_norm_backward(grad._data, x._data, p["mean"], p["invstd"], w,
                                               p["training"])
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
    if batch_stats:
        mean, var, invstd = K.batch_norm_stats(x, float(eps))
        if training and (running_mean is not None or running_var is not None):
            _update_running(running_mean, running_var, mean, var, x.size // channels, momentum)
    else:
        mean = running_mean._data
        invstd = K.unary(K.RSQRT, K.binary(K.ADD, running_var._data, x.dtype.type(eps)))
    w = weight._data if weight is not None else K.full((channels,), 1.0, x.dtype)
    b = bias._data if bias is not None else K.full((channels,), 0.0, x.dtype)
    return apply(NativeBatchNorm, (input, weight, bias), (x, w, b), mean=mean, invstd=invstd,
                 training=bool(batch_stats), eps=float(eps))


def _update_running(running_mean, running_var, mean, var, count, momentum) -> None:
    """``running = (1 - momentum) * running + momentum * batch`` in place, with the batch's
    unbiased variance, as PyTorch's kernel updates them (bumping their versions)."""
    with grad_mode.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(Tensor._wrap(mean) * momentum)
        if running_var is not None:
            unbiased = Tensor._wrap(var) * (count / max(count - 1, 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)


__all__ = []
METHODS = ()
