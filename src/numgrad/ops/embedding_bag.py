"""``embedding_bag`` as one op, PyTorch's ``_embedding_bag``: each bag's rows of ``weight``
summed (times their per-sample weights), averaged or maxed by one kernel, recorded as one node,
``EmbeddingBagBackward0``, whose ``_saved_*`` are PyTorch's (``result1`` the bag of each
position, ``result2`` the bag sizes, ``result3`` the rows max mode picked, per bag and column).

Its gradients are PyTorch's dense ones and, as PyTorch's, not themselves differentiable. The
checks of the arguments are ``nn.functional.embedding_bag``'s.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..autograd import grad_mode
from .registry import Op, Sample, apply, kernels_of, register

_grad = grad_mode.state

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _F(m):
    return m.nn.functional


@register
class EmbeddingBag(Op):
    """``(bags, D)``: the bags of rows of ``weight`` (input 0) that ``indices`` names, reduced by
    ``mode`` (0 sum, 1 mean, 2 max), each row times its entry of ``per_sample_weights`` (input 1,
    sum mode) where given; ``padding_idx`` (-1: none) left out. The forward also keeps PyTorch's
    other three results in ``results`` for the backward and the node's fields."""

    name, node = "embedding_bag", "EmbeddingBagBackward0"
    save_inputs = (0, 1)
    save_only_for = {0: 1}  # (the weight only for the per-sample weights' gradient, as PyTorch)
    samples = (
        Sample(lambda m, w: _F(m).embedding_bag(
            m.tensor([1, 2, 4, 4, 3, 0, 4], device=w.device), w,
            m.tensor([0, 2, 2, 5], device=w.device), mode="sum"), ((5, 3),)),
        Sample(lambda m, w: _F(m).embedding_bag(
            m.tensor([[1, 2, 1], [4, 0, 4]], device=w.device), w, mode="mean", padding_idx=4),
            ((5, 2),)),
        Sample(lambda m, w: _F(m).embedding_bag(
            m.tensor([1, 2, 4, 4, 3, 0], device=w.device), w,
            m.tensor([0, 2, 2, 5, 6], device=w.device), mode="max", padding_idx=3,
            include_last_offset=True), ((5, 3),)),
        Sample(lambda m, w, s: _F(m).embedding_bag(
            m.tensor([1, 2, 4, 1, 3, 0], device=w.device), w,
            m.tensor([0, 3, 3], device=w.device), mode="sum", per_sample_weights=s,
            padding_idx=0), ((5, 2), (6,))),
    )

    @staticmethod
    def forward(K, weight, psw, *, indices, offsets, bags, mode, padding_idx,
                include_last_offset, scale_grad_by_freq, sparse, results):
        out, *rest = K.embedding_bag_forward(weight, indices, offsets, bags, mode, psw,
                                             padding_idx)
        results[:] = rest
        return out

    @staticmethod
    def backward(ctx, grad):
        p = ctx.params
        weight, psw = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if _grad.enabled:  # (create_graph: the same sums, of recorded ops)
            return _recorded_backward(p, grad, weight, psw, needs, ctx.input_shapes[0])
        K = kernels_of(grad._data)
        _, size, arg = p["results"]
        gw = gp = None
        if needs[0]:
            gw = Tensor._wrap(K.embedding_bag_backward(
                grad._data, p["indices"], p["offsets"], p["bags"], p["mode"],
                None if psw is None else psw._data, p["padding_idx"], size, arg,
                p["scale_grad_by_freq"], ctx.input_shapes[0][0]))
        if needs[1]:
            gp = Tensor._wrap(K.embedding_bag_per_sample_weights_backward(
                grad._data, weight._data, p["indices"], p["offsets"], p["bags"],
                tuple(psw._data.shape), p["padding_idx"]))
        return gw, gp


def _recorded_backward(p, grad, weight, psw, needs, shape):
    """The backward's gradients made of recorded ops (index_select, index_add, scatter_add), so
    that they are differentiable (``create_graph``): the kernels' sums, term by term. (PyTorch's
    are not differentiable; numgrad's composed embedding_bag's were, and stay so.)"""
    offset2bag, size, arg = p["results"]
    idx = np.ascontiguousarray(p["indices"], dtype=np.int64).reshape(-1)
    dt = grad._data.dtype
    gw = gp = None
    if p["mode"] == 2:
        if needs[0]:
            nonempty = Tensor._wrap((size > 0).astype(dt).reshape(-1, 1))
            gw = grad.new_zeros(shape).scatter_add(0, Tensor._wrap(arg), grad * nonempty)
        return gw, gp
    keep = (idx != p["padding_idx"]).astype(dt)
    rows = grad.index_select(0, Tensor._wrap(offset2bag))  # (each position's bag's gradient)
    if needs[0]:
        coef = keep.copy()
        if p["mode"] == 1:
            coef /= np.maximum(size, 1)[offset2bag]
        if p["scale_grad_by_freq"]:
            coef /= np.bincount(idx, minlength=shape[0])[idx]
        scaled = rows * Tensor._wrap(coef.reshape(-1, 1))
        if psw is not None:
            scaled = scaled * psw.reshape(-1, 1)
        gw = grad.new_zeros(shape).index_add(0, Tensor._wrap(idx), scaled)
    if needs[1]:
        picked = weight.index_select(0, Tensor._wrap(idx))
        gp = ((rows * picked).sum(1) * Tensor._wrap(keep)).reshape(psw.shape)
    return gw, gp


def embedding_bag(weight: Tensor, indices: Tensor, offsets, bags: int, mode: str,
                  per_sample_weights, padding_idx: int, include_last_offset: bool,
                  scale_grad_by_freq: bool, sparse: bool) -> Tensor:
    """The ``EmbeddingBag`` op (``nn.functional.embedding_bag`` checked the arguments;
    ``padding_idx`` non-negative, or -1 for none; ``offsets`` None for a 2-D input, whose rows
    are the bags)."""
    psw = per_sample_weights
    return apply(EmbeddingBag, (weight, psw), (weight._data, None if psw is None else psw._data),
                 indices=indices._data, offsets=None if offsets is None else offsets._data, bags=int(bags), mode=_MODES[mode],
                 padding_idx=int(padding_idx), include_last_offset=bool(include_last_offset),
                 scale_grad_by_freq=bool(scale_grad_by_freq), sparse=bool(sparse), results=[])
