"""Cumulative ops along one dimension: ``cumsum`` and ``cumprod``.

Both keep PyTorch's dtype rules (integers and bools accumulate in int64 unless ``dtype`` says
otherwise) and node names. ``cumsum``'s backward is the reversed cumulative sum of the gradient
(an op of its own here, recorded, so second derivatives work). ``cumprod``'s backward is
PyTorch's: ``reversed_cumsum(grad * out) / input`` without zeros; with zeros, the exact per-line
formula (a kernel when no graph is recorded, else PyTorch's O(n²) composite, differentiable).
"""
from __future__ import annotations

import numpy as np
from .._dtype import FLOAT, c_name

from ..autograd import grad_mode
from ..autograd.graph import keep_given
from ..tensor import Tensor, _wrap_dim
from . import _jvp
from .elementwise import holomorphic_backward
from ._names import export
from .registry import Op, Sample, apply, kernels_for, register
from .shape import cat
from .reduction import differentiable_dtype


class _Scan(Op):
    on_cuda = True
    mul = False

    @classmethod
    def forward(cls, K, a, *, dim, reverse=False):
        return K.cumulative(a, dim, cls.mul, reverse)


@register
class Cumsum(_Scan):
    name, node = "cumsum", "CumsumBackward0"
    complex_ok = True
    jvp = _jvp.linear
    samples = (
        Sample(lambda m, a: a.cumsum(1), ((3, 4),)),
        Sample(lambda m, a: m.cumsum(a.t(), dim=-1, dtype=m.float64), ((3, 2),)),
        Sample(lambda m, a: m.cumsum(a, 0), ((),)),
    )

    @staticmethod
    def backward(ctx, grad):
        shape = ctx.input_shapes[0]
        dim = ctx.params["dim"]
        if not shape or shape[dim] <= 1:
            return (grad,)
        return (_cumsum(grad, dim, not ctx.params.get("reverse", False)),)


def _cumsum(t: Tensor, dim: int, reverse: bool) -> Tensor:
    return apply(Cumsum, (t,), (t._data,), dim=dim, reverse=reverse)


@register
class Cumprod(_Scan):
    name, node = "cumprod", "CumprodBackward0"
    jvp = _jvp.cumprod
    mul = True
    save_inputs = (0,)
    save_output = True
    samples = (
        Sample(lambda m, a: a.cumprod(1), ((3, 4),), low=0.5, high=1.5),
        Sample(lambda m, a: m.cumprod(a.t(), 0), ((3, 2),), low=-1.5, high=1.5),
        # zeros in the input (first, middle, repeated): PyTorch's exact gradient
        Sample(lambda m, a: (a * m.tensor([[1., 0., 1., 1.], [0., 1., 0., 1.]], dtype=a.dtype,
                                          device=a.device)).cumprod(-1), ((2, 4),),
               gradgrad=False),
    )

    complex_ok = True

    @staticmethod
    def backward(ctx, grad):
        if grad._data.dtype.kind == "c":
            return holomorphic_backward(Cumprod._backward, ctx, grad)
        return Cumprod._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad):
        x, out = ctx.saved_tensors
        shape = ctx.input_shapes[0]
        dim = ctx.params["dim"]
        if not shape or shape[dim] <= 1:
            return (grad,)
        K = kernels_for((grad,))
        if not grad_mode.state.enabled:  # one pass, zeros handled (no sync to look for them)
            return (Tensor._wrap(K.cumprod_backward(x._data, out._data, grad._data, dim)),)
        if not K.any_equal(x._data, 0):
            return (_cumsum(out * grad, dim, True) / x,)
        return (_cumprod_grad_composite(x, grad, dim),)


def _cumprod_grad_composite(x: Tensor, grad: Tensor, dim: int) -> Tensor:
    """PyTorch's twice-differentiable cumprod gradient for inputs with zeros: one slice at a
    time, ``sum_j grad[j] * prod_{i<=j, i != k} x[i]`` from the products before ``k`` and the
    cumulative products after it."""
    n = x._data.shape[dim]
    parts = []
    for k in range(n):
        until = x.narrow(dim, 0, k).prod(dim, keepdim=True)
        omitted = cat([until, cumprod(x.narrow(dim, k + 1, n - k - 1), dim) * until], dim)
        parts.append((grad.narrow(dim, k, n - k) * omitted).sum(dim, keepdim=True))
    return cat(parts, dim)


def _scan(op, input: Tensor, dim, dtype) -> Tensor:
    if dtype is not None:
        differentiable_dtype(input, dtype)
        input = input.to(dtype)
    elif input.dtype._category < FLOAT and input._data.dtype != np.int64:
        input = input.to(np.int64)  # integers and bools accumulate in int64, as PyTorch
    d = (_wrap_dim(int(dim), input._data.ndim) % max(input._data.ndim, 1))
    out = apply(op, (input,), (input._data,), dim=d, reverse=False)
    if d != dim:  # (PyTorch's node shows the dim as given)
        keep_given(out, dim=int(dim))
    return out


@export(method=True, out=True)
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """The cumulative sum along ``dim``: ``out[i] = input[0] + ... + input[i]``."""
    return _scan(Cumsum, input, dim, dtype)


@export(method=True, out=True)
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """The cumulative product along ``dim``: ``out[i] = input[0] * ... * input[i]``."""
    return _scan(Cumprod, input, dim, dtype)


def _scan_inplace(name: str, fn, saves_self: bool):
    def inplace(input: Tensor, dim: int, *, dtype=None) -> Tensor:
        from .inplace import _write

        if dtype is not None and dtype is not input.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {c_name(input._data.dtype)}"
                               f" and output tensor dtype {c_name(dtype.np)} should match")
        if input._data.dtype == np.bool_:  # (the sum's int64 would not fit: PyTorch's refusal)
            raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
        return _write(input, fn, dim, saves_self=saves_self)

    inplace.__name__ = inplace.__qualname__ = name + "_"
    inplace.__doc__ = (f"``{name}`` in place; ``dtype``, if given, must be the tensor's own (as "
                       "PyTorch's).")
    return inplace


cumsum_ = export(_scan_inplace("cumsum", cumsum, False), "cumsum_", function=False, method=True)
cumprod_ = export(_scan_inplace("cumprod", cumprod, True), "cumprod_", function=False,
                  method=True)
