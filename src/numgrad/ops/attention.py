"""Scaled dot-product attention as one op, PyTorch's ``_scaled_dot_product_flash_attention_for_cpu``
and its node ``ScaledDotProductFlashAttentionForCpuBackward0``: the forward keeps only the output
and each query row's logsumexp, the backward recomputes the weights from them
(``K.attention_forward``/``attention_backward``, ``kernels/cpu/attention.py``).

``nn.functional.scaled_dot_product_attention`` takes it where PyTorch 2.13 on the CPU takes its
flash kernel (4-D CPU inputs of one head size, the batch and heads equal or grouped with
``enable_gqa``, no dropout, a 2-D or 4-D mask that needs no gradient, non-empty); elsewhere, on
CUDA included, it composes matmul and softmax (PyTorch's math path). The backward recorded for a
second derivative (``create_graph=True``) is that composite, differentiable again."""
from __future__ import annotations

import math

from .._dtype import bool_
from ..autograd import grad_mode
from ..creation import ones
from ..tensor import Tensor
from . import _jvp
from .registry import Op, Sample, apply, kernels_of, register


def _F(m):
    return m.nn.functional


class _RowStats:
    """The logsumexp of each query row as the forward computed it (kept by the node for the
    backward, PyTorch's ``_saved_logsumexp``)."""

    __slots__ = ("lse",)

    def __init__(self):
        self.lse = None


def _bool_mask(m, rows, cols):
    return m.arange(rows * cols).reshape(rows, cols) % 3 != 1


def _float_mask(m, q, *shape):
    return m.linspace(-1.0, 1.0, math.prod(shape), dtype=q.dtype).reshape(shape)


@register
class ScaledDotProductFlashAttentionForCpu(Op):
    """``softmax(q @ kᵀ * scale + bias) @ v`` of 4-D ``q`` (B, Hq, L, E), ``k``/``v`` (B, Hk, S,
    E) with Hk dividing Hq; inputs ``(q, k, v, attn_mask or None)``."""

    name = "_scaled_dot_product_flash_attention_for_cpu"
    node = "ScaledDotProductFlashAttentionForCpuBackward0"
    save_inputs = (0, 1, 2, 3)
    save_output = True
    jvp = _jvp.transposed_backward
    samples = (
        Sample(lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v),
               ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4))),
        Sample(lambda m, q, k, v: _F(m).scaled_dot_product_attention(
            q.transpose(1, 2), k, v, is_causal=True, scale=0.7),
            ((1, 4, 2, 3), (1, 2, 4, 3), (1, 2, 4, 3))),
        Sample(lambda m, q, k, v: _F(m).scaled_dot_product_attention(
            q, k, v, attn_mask=_bool_mask(m, 3, 4)), ((1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2))),
        Sample(lambda m, q, k, v: _F(m).scaled_dot_product_attention(
            q, k, v, attn_mask=_float_mask(m, q, 1, 1, 3, 4), enable_gqa=True),
            ((1, 4, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2))),
    )

    @staticmethod
    def forward(K, q, k, v, mask, *, is_causal, scale, stats):
        out, stats.lse = K.attention_forward(q, k, v, mask, is_causal, _scale(q, scale))
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, mask, out = ctx.saved_tensors
        p = ctx.params
        needs = ctx.needs_input_grad[:3]
        scale = _scale(q._data, p["scale"])
        if not grad_mode.state.enabled:  # (a plain backward: the fused kernels)
            K = kernels_of(grad._data)
            grads = K.attention_backward(grad._data, q._data, k._data, v._data, out._data,
                                         p["stats"].lse, None if mask is None else mask._data,
                                         p["is_causal"], scale, needs)
            return tuple(None if g is None else Tensor._wrap(g) for g in grads) + (None,)
        return _backward_composite(grad, q, k, v, mask, p["is_causal"], scale, needs) + (None,)


def _scale(q, scale) -> float:
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _backward_composite(grad, q, k, v, mask, causal, scale, needs):
    """The gradients in numgrad's ops (recorded with ``create_graph=True``: differentiable
    again), the weights recomputed with PyTorch's safe softmax."""
    groups = q.shape[1] // k.shape[1]
    kr = k.repeat_interleave(groups, 1) if groups > 1 else k
    vr = v.repeat_interleave(groups, 1) if groups > 1 else v
    weights = attention_weights(q, kr, mask, causal, scale)
    dq = dk = dv = None
    if needs[1] or needs[0]:
        dp = grad @ vr.transpose(-2, -1)
        ds = weights * (dp - (dp * weights).sum(-1, keepdim=True)) * scale
        dq = ds @ kr if needs[0] else None
        dk = _group_sum(ds.transpose(-2, -1) @ q, groups) if needs[1] else None
    if needs[2]:
        dv = _group_sum(weights.transpose(-2, -1) @ grad, groups)
    return dq, dk, dv


def _group_sum(x: Tensor, groups: int) -> Tensor:
    """``x`` (B, Hq, ...) summed over each key head's group of ``groups`` query heads."""
    if groups == 1:
        return x
    return x.unflatten(1, (x.shape[1] // groups, groups)).sum(2)


def attention_weights(q, k, mask, causal: bool, scale: float) -> Tensor:
    """``softmax(q @ kᵀ * scale + bias)`` in numgrad's ops, a row whose every key is masked all
    0 (PyTorch's safe softmax); ``bias`` from a bool or float ``mask`` and ``causal``."""
    scores = (q @ k.transpose(-2, -1)) * scale
    hide = None
    if causal:
        hide = ones((q.shape[-2], k.shape[-2]), dtype=bool_, device=q.device).tril()
        hide = hide.logical_not()
    if mask is not None and mask.dtype == bool_:
        hide = mask.logical_not() if hide is None else hide.logical_or(mask.logical_not())
    if hide is not None:
        scores = scores.masked_fill(hide, float("-inf"))
    if mask is not None and mask.dtype != bool_:
        scores = scores + mask
    if mask is None:  # (a causal row always keeps its first key)
        return scores.softmax(-1)
    masked = (scores == float("-inf")).all(-1, keepdim=True)
    return masked.logical_not() * scores.masked_fill(masked, 0.0).softmax(-1)


def flash_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask, is_causal: bool,
                    scale) -> Tensor:
    """The op on tensors the caller checked (``nn.functional.scaled_dot_product_attention``)."""
    mask = attn_mask
    return apply(ScaledDotProductFlashAttentionForCpu, (query, key, value, mask),
                 (query._data, key._data, value._data, None if mask is None else mask._data),
                 is_causal=bool(is_causal), scale=scale, stats=_RowStats())
