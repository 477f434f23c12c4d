"""Scans with indices and the stable log-sum-exp scan: ``cummax``/``cummin`` (values and indices;
the gradient goes back to the indices) and ``logcumsumexp`` (PyTorch's stable, twice
differentiable backward), on the kernels ``K.cum_extreme`` and ``K.logcumsumexp_dim``
(``kernels/*/scan.py``).
"""
from __future__ import annotations

import numpy as np

from .._dtype import torch_name
from ..autograd.graph import keep_given
from ..tensor import Tensor
from ._names import export
from .gather import ScatterAdd, _scatter_into_zeros
from .reduction import _ValuesIndices
from . import _jvp
from .registry import Op, Sample, apply, kernels_for, register
from .sorting import _Selecting
from ._common import _dim, _ops


# ------------------------------------------------------------------ scans
class _CummaxResult(_ValuesIndices):
    _name = "cummax"


class _CumminResult(_ValuesIndices):
    _name = "cummin"


class _CumExtreme(_Selecting):
    """The running extremes (computed with their indices before the op runs); PyTorch's
    backward adds each gradient at the index it came from (indices repeat)."""

    jvp = _jvp.transposed_backward
    save_inputs = (0,)  # (not read by the backward: PyTorch's node keeps it, ``_saved_self``)

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        if not shape:
            return (grad,)
        return (_scatter_into_zeros(shape, ctx.params["dim"], ctx.params["indices"], grad,
                                    ScatterAdd),)


@register
class Cummax(_CumExtreme):
    name, node = "cummax", "CummaxBackward0"
    samples = (
        Sample(lambda m, a: m.cummax(a, 1)[0], ((3, 4),)),
        Sample(lambda m, a: a.t().cummax(dim=-2).values, ((3, 4),)),
        Sample(lambda m, a: m.cummax(a, 0).values, ((),)),
    )


@register
class Cummin(_CumExtreme):
    name, node = "cummin", "CumminBackward0"
    samples = (
        Sample(lambda m, a: m.cummin(a, 0)[0], ((3, 4),)),
        Sample(lambda m, a: a.cummin(-1).values, ((5,),)),
    )


def _cum_extreme(op, result, input: Tensor, dim, take_max: bool):
    if input._data.dtype.kind == "c":  # (complex numbers have no order: PyTorch's refusal)
        raise NotImplementedError(f'"{op.name}_cpu" not implemented for '
                                  f"'{torch_name(input._data.dtype)}'")
    d = _dim(input, dim)
    K = kernels_for((input,), op)
    values, indices = K.cum_extreme(input._data, d, take_max)
    out = apply(op, (input,), (values,), dim=d, indices=indices)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return result(out, Tensor._wrap(indices))


@export(method=True)
def cummax(input: Tensor, dim: int):
    """``(values, indices)``: the running maximum along ``dim`` and the index where it was last
    reached (a NaN stays the maximum from where it appears)."""
    return _cum_extreme(Cummax, _CummaxResult, input, dim, True)


@export(method=True)
def cummin(input: Tensor, dim: int):
    """``(values, indices)``: the running minimum along ``dim`` and the index where it was last
    reached."""
    return _cum_extreme(Cummin, _CumminResult, input, dim, False)


@register
class Logcumsumexp(Op):
    name, node = "logcumsumexp", "LogcumsumexpBackward0"
    complex_ok = True
    on_cuda = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: m.logcumsumexp(a, 1), ((3, 4),)),
        Sample(lambda m, a: a.t().logcumsumexp(dim=0), ((3, 4),), gradgrad=False),
        Sample(lambda m, a: a.logcumsumexp(-1), ((),)),
    )

    @staticmethod
    def forward(K, a, *, dim):
        return K.logcumsumexp_dim(a, dim)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.params["dim"]
        if not grad._data.ndim or not grad._data.size:
            return (grad,)
        ops = _ops()
        lowest = float(np.finfo(grad._data.dtype).min)

        def reverse_lcse(t):
            return ops.flip(logcumsumexp(ops.flip(t, (dim,)), dim), (dim,))

        if grad._data.dtype.kind == "c":  # (PyTorch's: no split by sign, the log of conj(grad))
            return ((reverse_lcse(grad.conj().log() - out) + x).exp().conj(),)
        log_abs = grad.abs().log()
        floor = Tensor._wrap(kernels_for((grad,)).full((), lowest, grad._data.dtype))
        pos = ops.where(grad > 0, log_abs, floor)
        neg = ops.where(grad < 0, log_abs, floor)
        return ((reverse_lcse(pos - out) + x).exp() - (reverse_lcse(neg - out) + x).exp(),)

    @staticmethod
    def jvp(ctx, t):
        """The running softmax-weighted sum of the tangent, PyTorch's formula: with ``e =
        exp(x - max(x))`` along ``dim``, ``cumsum(e * t) / (cumsum(e) + 1e-13)`` (so NaN and
        infinities spread as there)."""
        x, _ = ctx.saved_tensors
        dim = ctx.params["dim"]
        if not t._data.size:
            return t
        e = (x - (x.real if x.dtype.is_complex else x).amax(dim, keepdim=True)).exp()
        return (e * t).cumsum(dim) / (e.cumsum(dim) + 1e-13)


@export(method=True)
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """The running ``log(sum(exp(input)))`` along ``dim``, computed stably (of complex
    elements: a running ``logaddexp``, PyTorch's)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{torch_name(input._data.dtype)}'")
    d = _dim(input, dim)
    out = apply(Logcumsumexp, (input,), (input._data,), dim=d)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return out

