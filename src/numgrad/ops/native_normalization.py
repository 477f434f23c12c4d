"""ATen's normalisation functions that also return their statistics, as PyTorch exposes them:
``native_layer_norm`` and ``native_batch_norm``/``_native_batch_norm_legit`` (the output, the
mean and the inverse standard deviation, the latter two not differentiable, as PyTorch's) and
``native_group_norm`` (its statistics differentiable, as PyTorch's).

``native_layer_norm`` is the layer norm op itself (``ops/normalization.py``), its statistics
those its forward kernel computed; the others' output is ``nn.functional``'s own op (its node, its
gradient), their statistics composed of numgrad's reductions.
"""
from __future__ import annotations

from ..tensor import Tensor
from . import normalization as _normalization
from ._names import alias, export
import numgrad


def _functional():
    from ..nn import functional

    return functional


def _rstd(x: Tensor, dims: tuple, eps: float):
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    return mean, (var + eps).rsqrt()


@export
def native_layer_norm(input: Tensor, normalized_shape, weight, bias, eps: float):
    """``(layer_norm(input), mean, rstd)``, the statistics shaped to broadcast against
    ``input`` (size 1 in the normalised dimensions)."""
    shape = tuple(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    shape = _functional()._layer_norm_shape(input, shape, weight, bias)
    return _normalization.layer_norm(input, shape, weight, bias, eps, with_stats=True)


@export
def native_batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
                      momentum: float, eps: float):
    """``(batch_norm(input), save_mean, save_invstd)``: the batch's per-channel statistics in
    training (the running ones updated in place), empty tensors in evaluation."""
    out = _functional().batch_norm(input, running_mean, running_var, weight, bias, training,
                                   momentum, eps)
    x = input.detach()
    if training:
        dims = (0,) + tuple(range(2, x.ndim))
        mean, invstd = _rstd(x, dims, eps)
        return out, mean.reshape(-1), invstd.reshape(-1)
    return out, x.new_empty((0,)), x.new_empty((0,))


_native_batch_norm_legit = alias(native_batch_norm, "_native_batch_norm_legit")


@export(aten=True)
def _batch_norm_with_update(input: Tensor, weight, bias, running_mean: Tensor,
                            running_var: Tensor, momentum: float, eps: float):
    """ATen's ``_batch_norm_with_update``: ``native_batch_norm`` in training (the running
    statistics updated in place), and the empty ``reserve`` tensor of cuDNN's kernels."""
    out, mean, invstd = native_batch_norm(input, weight, bias, running_mean, running_var, True,
                                          momentum, eps)
    # (PyTorch's reserve is uint8, a dtype numgrad gains in issue 35; bool until then)
    reserve = input.new_empty((0,), dtype=getattr(numgrad, "uint8", numgrad.bool))
    return out, mean, invstd, reserve


@export
def native_group_norm(input: Tensor, weight, bias, N: int, C: int, HxW: int, group: int,
                      eps: float):
    """``(group_norm(input), mean, rstd)``, the statistics of shape ``(N, group)``."""
    out = _functional().group_norm(input, group, weight, bias, eps)
    mean, rstd = _rstd(input.reshape(N, group, -1), (2,), eps)
    return out, mean.reshape(N, group), rstd.reshape(N, group)
