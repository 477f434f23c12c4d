"""``linear`` under ``vmap`` with a weight shared by the examples but differentiated per example.

Inside ``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)`` the parameters are expanded
along the batch (``func._differentiable``: each example its own copy, so that the physical
gradient is the batch of per-example gradients). Run as it stands, ``linear`` would multiply each
example by its copy of the weight: a batch of matrix-vector products instead of one
matrix-matrix product. Here the product is one GEMM with the shared weight (the expanded
physical weight has stride 0 along the batch), and the backward gives the expanded weight its
per-example gradient, ``g^T x`` per example (one batched product): PyTorch's "expanded weights"
(Opacus) way of computing per-sample gradients.
"""
from __future__ import annotations

from .. import addmm as _addmm
from ..autograd.function import Function
from ..ops import registry


class _ExpandedLinear(Function):
    """``x @ w[0].T + b[0]`` for ``x`` (B, ..., in) and ``w`` (B, out, in) and ``b`` (B, out)
    expanded along B; per-example gradients for ``w`` and ``b``."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        flat = x.reshape((-1, x.shape[-1]))  # (every row of every example: one GEMM)
        out = flat.matmul(w[0].t()) if b is None else _addmm(b[0], flat, w[0].t())
        return out.reshape((*tuple(x.shape)[:-1], w.shape[1]))

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        grad_x = None
        if need_x:
            grad_x = grad.reshape((-1, grad.shape[-1])).matmul(w[0]).reshape(tuple(x.shape))
        grad_w = grad_b = None
        if need_w or need_b:
            g = grad.reshape((grad.shape[0], -1, grad.shape[-1]))  # (B, rows, out)
        if need_w:
            xs = x.reshape((x.shape[0], -1, x.shape[-1]))  # (B, rows, in)
            if xs.shape[1] == 1:  # (one row per example: an outer product, elementwise)
                grad_w = g.transpose(1, 2) * xs
            else:
                grad_w = g.transpose(1, 2).matmul(xs)
        if need_b and ctx.has_bias:
            grad_b = g.sum(1)
        return grad_x, grad_w, grad_b


def linear(vx, vw, vb):
    """The physical result of ``linear`` on the physical (batch-first) values ``vx``, ``vw`` and
    ``vb`` (None for no bias) of a vmap level's arguments, by ``_ExpandedLinear``, or None where
    it does not apply: the weight (and bias) not expanded along the batch, or forward AD on
    (whose rules see the ops, not this Function)."""
    if registry._forward_ad is not None:
        return None
    if type(vx).__name__ == "BatchedTensor" or type(vw).__name__ == "BatchedTensor" or \
            vw.ndim != 3 or vx.ndim < 2 or (vb is not None and (vb.ndim != 2 or vb.stride(0))):
        return None
    return _ExpandedLinear.apply(vx, vw, vb)
